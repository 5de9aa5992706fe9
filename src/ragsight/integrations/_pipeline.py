"""Asking a user's pipeline every question of a test set: the loop the LangChain and LlamaIndex
adapters share (bounded concurrency, a failure recorded on its row, the rest going on)."""

from __future__ import annotations

import asyncio
import json
import time
import warnings
from collections.abc import Awaitable, Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from ..dataset import Dataset, Sample, atomic_write
from ..errors import ConfigError, InputError

__all__ = ["Capture", "PipelineRun", "PipelineWarning", "answer_each", "testset_rows"]


class PipelineWarning(UserWarning):
    """Some questions of the test set raised in the pipeline: their rows have no response."""


@dataclass
class Capture:
    """What one question gave: the answer and the documents the generator saw, in order, each
    ``{"text", "id", "score", "metadata"}`` (and ``offsets``, ``{"start", "end"}`` in its source
    document, when the library records them)."""

    answer: str | None = None
    documents: list[dict[str, Any]] = field(default_factory=list)
    extra: dict[str, Any] = field(default_factory=dict)


@dataclass
class PipelineRun:
    """The test set answered: ``rows`` (the test set's fields plus ``response``, ``contexts``,
    ``retrieved_ids`` and metadata) for ``ragsight.evaluate``; questions that failed keep their
    row, with the error in ``metadata.error`` and no response (their metrics end skipped)."""

    pipeline: str
    rows: list[dict[str, Any]]
    seconds: float

    @property
    def failed(self) -> list[dict[str, Any]]:
        return [r for r in self.rows if r["metadata"].get("error")]

    def write_jsonl(self, path: str | Path) -> Path:
        out = Path(path)
        with atomic_write(out) as f:  # on an error the previous file is intact, no temporary left
            for row in self.rows:
                f.write(json.dumps(row, ensure_ascii=False, default=str) + "\n")
        return out


def _plain_row(sample: Sample) -> dict[str, Any]:
    return {k: v for k, v in sample.to_dict().items() if v not in (None, {}, [])}


def testset_rows(testset: Any) -> list[dict[str, Any]]:
    """A test set as plain rows: a path (.jsonl, .json, .csv, .parquet), a list of dicts or
    Samples, or a Dataset; the questions are required, the other fields (id, reference,
    relevant_ids...) are passed through to the samples."""
    if isinstance(testset, (str, Path)) or not isinstance(testset, Iterable) or isinstance(testset, Dataset):
        data = Dataset.load(testset)
    else:
        items = list(testset)
        data = Dataset.load(items) if items else Dataset([])
    rows = [_plain_row(s) for s in data]
    if not rows:
        raise InputError("the test set has no usable row" + (
            f": {data.errors[0]}" if data.errors else ""))
    missing = [r["id"] for r in rows if not r.get("question")]
    if missing:
        raise InputError(f"test set row '{missing[0]}' has no question"
                         + (f" (and {len(missing) - 1} more)" if len(missing) > 1 else ""))
    return rows


def _ids(documents: Sequence[Mapping[str, Any]]) -> list[str] | None:
    ids = [d.get("id") for d in documents]
    if ids and all(i not in (None, "") for i in ids):
        return [str(i) for i in ids]
    return None


def _out_row(row: Mapping[str, Any], pipeline: str, capture: Capture | None, error: str | None,
             latency: float) -> dict[str, Any]:
    out = {k: v for k, v in row.items() if k not in ("response", "contexts", "retrieved_ids", "metadata")}
    meta = dict(row.get("metadata") or {})
    meta.update({"pipeline": pipeline, "latency_s": round(latency, 4), "error": error})
    if capture is not None:
        if capture.answer is not None:
            out["response"] = capture.answer
        out["contexts"] = [d["text"] for d in capture.documents]
        ids = _ids(capture.documents)
        if ids is not None:
            out["retrieved_ids"] = ids
        meta["documents"] = [{"id": d.get("id"), "score": d.get("score"), "metadata": d.get("metadata") or {},
                              **({"offsets": d["offsets"]} if d.get("offsets") else {})}
                             for d in capture.documents]
        meta.update(capture.extra)
    out["metadata"] = meta
    return out


async def answer_each(
    testset: Any, ask: Callable[[str], Awaitable[Capture]], *, pipeline: str, concurrency: int = 4,
    progress: Callable[[int, int], None] | None = None,
) -> PipelineRun:
    """Call ``ask`` for every question of ``testset``, at most ``concurrency`` at a time; rows come
    back in the test set's order."""
    if concurrency < 1:
        raise ConfigError(f"concurrency must be at least 1, not {concurrency}")
    rows = testset_rows(testset)
    sem = asyncio.Semaphore(concurrency)
    done = 0
    t0 = time.monotonic()

    async def one(row: Mapping[str, Any]) -> dict[str, Any]:
        nonlocal done
        async with sem:
            start = time.monotonic()
            try:
                capture: Capture | None = await ask(str(row["question"]))
                error = None
            except Exception as exc:  # the pipeline's own failure: recorded on its row
                capture, error = None, f"{type(exc).__name__}: {exc}"
            latency = time.monotonic() - start
        done += 1
        if progress is not None:
            progress(done, len(rows))
        return _out_row(row, pipeline, capture, error, latency)

    out = await asyncio.gather(*(one(r) for r in rows))
    run = PipelineRun(pipeline, list(out), time.monotonic() - t0)
    if run.failed:  # said here too: evaluate skips those rows, naming metadata.error as the reason
        errors = dict.fromkeys(str(r["metadata"]["error"]) for r in run.failed)
        first = next(iter(errors))
        warnings.warn(
            f"{pipeline}: {len(run.failed)} of {len(rows)} questions raised in the pipeline "
            f"({first[:200]}" + (f"; and {len(errors) - 1} other error(s)" if len(errors) > 1 else "")
            + "); their rows have no response and the error in metadata.error (run.failed lists them)",
            PipelineWarning, stacklevel=2)
    return run
