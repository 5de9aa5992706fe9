"""Complete requests sampled and the sampled ones turned into samples: first the deterministic
sampling decision (trace id and seed), then the stored spans of a sampled trace read by the same
readers as ``ragsight import-traces`` (OpenInference spans, with the OpenLLMetry / GenAI names
mapped to them first); what cannot become a sample is kept as skipped with its reason.
"""

from __future__ import annotations

import sqlite3
from typing import Any

from ..integrations import traces_from_records
from . import _ledger
from ._genai import as_openinference
from ._otlp import otlp_document, span_times

__all__ = ["assemble_due"]


def _sample_of(blobs: list[bytes]) -> tuple[dict[str, Any] | None, str | None]:
    """The sample row of one trace's spans, or (None, why not)."""
    doc = as_openinference(otlp_document(blobs))
    result = traces_from_records([doc], "otlp", source="otlp")
    if result.rows:
        return result.rows[0], None
    if result.skipped:
        return None, next(iter(result.skipped))
    problems = [p.message for p in result.problems]
    return None, (problems[0] if problems else "no sample could be read from the spans")[:300]


def assemble_due(conn: sqlite3.Connection, now: float, *, settle_s: float, max_open_s: float, seed: int,
                 rate: float, max_queue: int, limit: int = 2000) -> dict[str, int]:
    """Sample the requests that are complete, and assemble and queue the sampled ones (an
    unsampled request's spans are not read: sampling comes first, so its cost follows the
    sample, not the traffic). Returns counts by new state."""
    due = _ledger.due_requests(conn, now, settle_s, max_open_s, limit)
    if not due:
        return {}
    queued = _ledger.count(conn, _ledger.PENDING)
    decisions: list[tuple[str, str, str | None, float | None, dict[str, Any] | None]] = []
    counts: dict[str, int] = {}
    for trace_id, rooted in due:
        if not _ledger.is_sampled(trace_id, seed, rate):
            decisions.append((trace_id, "unsampled", None, None, None))
            counts["unsampled"] = counts.get("unsampled", 0) + 1
            continue
        blobs = _ledger.span_blobs(conn, trace_id)
        start, _ = span_times(blobs)
        row, why = _sample_of(blobs)
        if row is not None and not rooted:
            row.setdefault("metadata", {})["incomplete"] = (
                f"no root span arrived within {max_open_s:g} s; read from the spans that came")
        if row is None:
            state, reason = "skipped", why
        elif queued >= max_queue:
            state, reason = "not_evaluated", (f"the judge could not keep up: {max_queue:,} sampled requests "
                                              "were already waiting")
        else:
            state, reason = "queued", None
            queued += 1
        decisions.append((trace_id, state, reason, start, row))
        counts[state] = counts.get(state, 0) + 1
    _ledger.decide(conn, decisions, now)
    return counts
