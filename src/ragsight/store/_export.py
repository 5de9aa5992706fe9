"""Export a run to JSONL, CSV or Parquet: each sample's inputs beside its scores.

Every format carries the inputs (``id``, ``question``, ``contexts``, ``response``, ``reference``,
``reference_contexts``, ``retrieved_ids``, ``relevant_ids``, ``metadata``) before the metric
columns, so a filtered view reads ``df[df.faithfulness < 0.5][["question", "contexts"]]``.
JSONL keeps the values as JSON. CSV writes a list (contexts, ids, several acceptable references)
as a JSON array and metadata as a JSON object, so ragsight loads an export back unchanged;
Parquet keeps ``contexts``, ``reference_contexts`` and ``retrieved_ids`` as lists of strings and
writes ``reference``, ``relevant_ids`` and ``metadata`` as JSON text where they are not plain text
(their types vary from sample to sample, which a Parquet column cannot hold).
"""

from __future__ import annotations

import csv
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from .._score import Score
from ..dataset import (
    Sample,
    atomic_path,
    atomic_write,
    check_writable_target,
    conversation_aggregates,
    sample_level,
    strict_json,
)
from ..errors import ConfigError, MissingExtraError
from ._sqlite import Store

__all__ = ["FORMATS", "INPUT_COLUMNS", "TURN_COLUMNS", "conversation_columns", "export_run", "flat_rows", "input_columns",
           "table_rows", "write_table"]

FORMATS = ("jsonl", "csv", "parquet")
INPUT_COLUMNS = ("question", "contexts", "response", "reference", "reference_contexts", "retrieved_ids",
                 "relevant_ids", "metadata")


def _json(value: Any) -> str:
    return strict_json(value)


def input_columns(sample: Sample, form: str = "python") -> dict[str, Any]:
    """A sample's inputs as columns. ``form``: ``python`` (lists, dicts: a DataFrame), ``json``
    (JSONL), ``text`` (CSV: every list or mapping as JSON text), ``parquet`` (lists of strings
    kept, varying types as JSON text)."""
    d = sample.to_dict()
    out = {k: d[k] for k in INPUT_COLUMNS}
    if form in ("python", "json"):
        return out
    for k in ("reference", "relevant_ids"):
        if out[k] is not None and not isinstance(out[k], str):
            out[k] = _json(out[k])
    out["metadata"] = _json(out["metadata"])
    if form == "text":
        for k in ("contexts", "reference_contexts", "retrieved_ids"):
            if out[k] is not None:
                out[k] = _json(out[k])
    return out


TURN_COLUMNS = ("history", "tool_calls", "reference_tool_calls", "scenario", "expected_outcome", "system_role")


def conversation_columns(sample: Sample, form: str = "json") -> dict[str, Any]:
    """A turn's place in its conversation and what a reader needs to read it alone:
    ``conversation_id``, ``turn`` (None on the conversation's own row), ``history`` (the messages
    before this turn's question; on the conversation's own row, all its messages),
    ``tool_calls``, ``reference_tool_calls``, ``scenario``, ``expected_outcome``, ``system_role``.
    ``form`` as in :func:`input_columns`: ``text`` and ``parquet`` write the history and the
    tool calls as JSON text, so a CSV or Parquet export loads back as the same turns. Empty for a
    single-turn sample."""
    if sample.conversation_id is None:
        return {}
    d = sample.to_dict()
    out = {k: d[k] for k in ("conversation_id", "turn", *TURN_COLUMNS)}
    if form in ("text", "parquet"):
        for k in ("history", "tool_calls", "reference_tool_calls"):
            if out[k] is not None:
                out[k] = _json(out[k])
    return out


def _level_missing(sample: Sample, key: str, levels: Mapping[str, str]) -> bool:
    """The metric is of the other level than the sample (a conversation metric on a turn's
    row, a turn metric on a conversation's row): no score is expected there."""
    return levels.get(key, "turn") != sample_level(sample)


def flat_rows(store: Store, run_id: str, form: str = "text") -> list[dict[str, Any]]:
    """One flat row per sample of a stored run (see :func:`table_rows`)."""
    info = store.run(run_id)
    levels = {m["key"]: str(m.get("level", "turn")) for m in info.metrics}
    return table_rows(run_id, store.samples(run_id), store.scores(run_id), info.metric_keys, levels, form)


def table_rows(run_id: str, samples: Sequence[Sample], scores: Mapping[str, Mapping[str, Score]],
               metric_keys: Sequence[str], levels: Mapping[str, str], form: str = "text") -> list[dict[str, Any]]:
    """One flat row per sample: run_id, id, the inputs (see :func:`input_columns`), and
    <metric>, <metric>__outcome, <metric>__reason columns. A run with conversations has one row
    per assistant turn and one per conversation, with ``conversation_id`` and ``turn`` after
    ``id`` and the turn's history, tool calls, scenario, expected outcome and system role after
    the inputs (see :func:`conversation_columns`); a metric of the other level than the row is
    left empty (outcome "")."""
    conv = any(s.conversation_id is not None for s in samples)
    rows = []
    for s in samples:
        row: dict[str, Any] = {"run_id": run_id, "id": s.id}
        turn = conversation_columns(s, form) if conv else {}
        if conv:
            row.update({"conversation_id": turn.get("conversation_id"), "turn": turn.get("turn")})
        row.update(input_columns(s, form))
        if conv:
            row.update({k: turn.get(k) for k in TURN_COLUMNS})
        for key in metric_keys:
            sc = scores.get(s.id, {}).get(key)
            row[key] = sc.value if sc else None
            other = sc is None and _level_missing(s, key, levels)
            row[f"{key}__outcome"] = sc.outcome.value if sc else ("" if other else "missing")
            row[f"{key}__reason"] = sc.reason if sc else ""
        rows.append(row)
    return rows


def write_table(rows: Sequence[Mapping[str, Any]], fmt: str, out: str | Path) -> Path:
    """Write :func:`table_rows` (``fmt`` ``csv`` from form ``text``, ``parquet`` from form
    ``parquet``) to a temporary file renamed over ``out`` when complete."""
    path = Path(out)
    if fmt == "csv":
        with atomic_write(path, newline="") as f:
            fields = list(rows[0]) if rows else ["run_id", "id", *INPUT_COLUMNS]
            w = csv.DictWriter(f, fieldnames=fields)
            w.writeheader()
            w.writerows(rows)
        return path
    try:
        import pandas as pd
    except ImportError as exc:
        raise MissingExtraError("Parquet export", "parquet", "pandas") from exc
    try:
        with atomic_path(path) as tmp:
            columns = list(rows[0]) if rows else ["run_id", "id", *INPUT_COLUMNS]
            pd.DataFrame(list(rows), columns=columns).to_parquet(tmp, index=False)
    except ImportError as exc:
        raise MissingExtraError("Parquet export", "parquet", "pyarrow") from exc
    return path


def export_run(store: Store, run_id: str, fmt: str, out: str | Path) -> Path:
    """Write the run's per-sample results. JSONL keeps the nested form of ``--out``: {"id",
    "run_id", the inputs, "scores": {metric: {"value", "outcome", "reason"}}, "evidence"}.

    Every format is written to a temporary file beside ``out`` and renamed over it when complete:
    an export killed midway leaves the previous file whole. JSON is strict (never a bare NaN)."""
    if fmt not in FORMATS:
        raise ConfigError(f"unknown export format '{fmt}'; use one of {', '.join(FORMATS)}")
    try:
        path = check_writable_target(out, "export file")
    except OSError as exc:
        raise ConfigError(str(exc)) from None
    if fmt == "jsonl":
        info = store.run(run_id)
        scores = store.scores(run_id)
        samples = store.samples(run_id)
        levels = {m["key"]: str(m.get("level", "turn")) for m in info.metrics}
        means = conversation_aggregates(samples, scores, [k for k in info.metric_keys if levels[k] == "turn"])
        with atomic_write(path) as f:
            for s in samples:
                per: Mapping[str, Any] = scores.get(s.id, {})
                obj = {
                    "id": s.id, "run_id": run_id, **conversation_columns(s), **input_columns(s, "json"),
                    "scores": {k: per[k].to_dict() for k in info.metric_keys if k in per},
                    "evidence": {k: per[k].evidence.to_dict() for k in info.metric_keys if k in per},
                }
                if s.conversation_id is not None and s.turn is None:
                    obj["turn_means"] = {k: v.to_dict() for k, v in means.get(s.conversation_id, {}).items()}
                f.write(strict_json(obj) + "\n")
        return path
    return write_table(flat_rows(store, run_id, "text" if fmt == "csv" else "parquet"), fmt, path)
