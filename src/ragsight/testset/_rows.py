"""The rows of a run: reading a test set (:func:`read_testset`) and writing an answered row, the
test set's fields as given with the target's answer, contexts and timings.
"""

from __future__ import annotations

import json
import os
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from ..errors import InputError
from ._reply import TargetReply

__all__ = ["answered_row", "read_testset"]


def read_testset(path: str | os.PathLike[str]) -> list[dict[str, Any]]:
    """The rows of a JSONL test set (each needs a ``question``)."""
    p = Path(path)
    if not p.is_file():
        raise InputError(f"{p}: no such file. Give the test set written by 'ragsight generate'.")
    rows: list[dict[str, Any]] = []
    for n, line in enumerate(p.read_text("utf-8-sig").splitlines(), start=1):
        if not line.strip():
            continue
        try:
            row = json.loads(line)
        except json.JSONDecodeError as exc:
            raise InputError(f"{p}, line {n}: not valid JSON ({exc.msg}).") from exc
        if isinstance(row, dict) and isinstance(row.get("turns"), list):
            users = [t for t in row["turns"] if isinstance(t, dict) and t.get("role") == "user"]
            if not users or not all(isinstance(t.get("content"), str) and t["content"].strip() for t in users):
                raise InputError(f"{p}, line {n}: a conversation needs 'turns' with user messages "
                                 '({"role": "user", "content": "..."}), each with text.')
            rows.append(row)
            continue
        q = row.get("question", row.get("user_input")) if isinstance(row, dict) else None
        if not isinstance(q, str) or not q.strip():
            raise InputError(f"{p}, line {n}: the row has no 'question' text.")
        rows.append(row)
    if not rows:
        raise InputError(f"{p}: the test set is empty.")
    return rows


_ANSWER_KEYS = ("response", "answer", "contexts", "retrieved_contexts", "retrieved_ids", "metadata")


def answered_row(
    row: Mapping[str, Any],
    target_name: str,
    reply: TargetReply | None,
    error: str | None,
    latency: float,
    elapsed: float,
    attempts: int,
) -> dict[str, Any]:
    # the test set's fields (question, reference, reference_contexts, relevant_ids, id...) as given
    out: dict[str, Any] = {k: v for k, v in row.items() if k not in _ANSWER_KEYS}
    meta = dict(row.get("metadata") or {})
    meta.update(
        {
            "latency_s": round(latency, 4),
            "elapsed_s": round(elapsed, 4),
            "target": target_name,
            "error": error,
            "attempts": attempts,
        }
    )
    if reply is not None:
        out["response"] = reply.answer
        if reply.contexts is not None:
            out["contexts"] = list(reply.contexts)
        if reply.context_ids is not None:
            out["retrieved_ids"] = list(reply.context_ids)
        if reply.context_spans is not None:
            meta["retrieved_spans"] = list(reply.context_spans)
        if reply.model:
            meta["generator_model"] = reply.model
    out["metadata"] = meta
    return out
