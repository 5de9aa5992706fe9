"""Production traces to samples: OpenTelemetry spans in the OpenInference conventions (as Phoenix,
Arize and OpenLLMetry export them) and Langfuse's trace export.

One sample per trace (one RAG request), and one conversation per session of two traces or more
(OpenInference ``session.id``, Langfuse ``sessionId``; see :func:`group_sessions`): the question, the documents the generator saw (text, id,
score, metadata), the answer and the request's latency; the trace and span ids go to the
sample's metadata so each score links back to its trace.

Formats read (``format="auto"`` tells them apart by their fields):

- ``otlp``: the OTLP JSON format (``{"resourceSpans": [...]}``), one document or one per line
  as the OpenTelemetry file exporter writes them; attribute values typed (``stringValue``...).
- ``spans``: one span per line (or a JSON array of spans, or ``{"data": [...]}``): the
  OpenTelemetry SDK's ``span.to_json()``, Phoenix's REST span and its spans-dataframe records,
  or OTLP spans written flat. Attributes flat (``retrieval.documents.0.document.content``) or
  nested.
- ``langfuse``: Langfuse traces with their observations (the public API's ``GET /traces/{id}``,
  one per line, an array, or ``{"data": [...]}``), or observations alone (grouped by
  ``traceId``).

OpenInference names read: ``openinference.span.kind`` (``RETRIEVER``, ``RERANKER``, ``LLM``,
``CHAIN``...), ``input.value``, ``output.value``, ``retrieval.documents.N.document.content`` /
``.id`` / ``.score`` / ``.metadata``, ``reranker.output_documents.N.document.*`` and
``llm.output_messages.N.message.content``.

This module holds the two entry points (:func:`import_traces`, :func:`traces_from_records`), the
cleaning of each row to strict JSON and the grouping of a session's traces; the parts are in
``_trace_files`` (the file to JSON values), ``_trace_spans`` (OTLP and flat spans read),
``_trace_openinference`` (spans to samples), ``_trace_langfuse`` and ``_trace_common`` (the
result types and the readings of values every format shares).
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from ..errors import InputError
from ._trace_common import (
    _NON_FINITE,
    _REPAIRED,
    _SURROGATE,
    TRACE_FORMATS,
    TraceImport,
    TraceProblem,
    _mend,
    _shown,
)
from ._trace_files import _detect, _items, _parquet_records, _records
from ._trace_langfuse import _langfuse
from ._trace_openinference import _openinference
from ._trace_spans import _otlp_spans, _plain_spans

__all__ = ["group_sessions", "import_traces", "traces_from_records"]


def import_traces(path: str | Path, format: str = "auto") -> TraceImport:
    """Read a trace file and rebuild one sample per RAG request. Malformed or partial traces
    are listed in ``problems`` (naming the trace id and what is missing); the other traces
    still import. Raises InputError when the file is not a trace export at all."""
    p = Path(path)
    if not p.is_file():
        raise InputError(f"{_mend(str(p))}: no such file. Give the trace export (OTLP JSON, spans JSONL or Parquet, or Langfuse).")
    if p.suffix.lower() == ".parquet":  # a Phoenix spans DataFrame saved with df.to_parquet()
        return traces_from_records(_parquet_records(p), format, source=str(p))
    values, problems = _records(p)
    return traces_from_records(values, format, source=str(p), problems=problems)


def traces_from_records(values: Sequence[Any], format: str = "auto", *, source: str = "<records>",
                        problems: Sequence[TraceProblem] = ()) -> TraceImport:
    """:func:`import_traces` on already-parsed JSON values."""
    if format not in TRACE_FORMATS:
        raise InputError(f"unknown trace format '{format}'; use one of {', '.join(TRACE_FORMATS)}")
    found = list(problems)
    items = _items(values, found)
    fmt = _detect(items, source, found) if format == "auto" else format
    result = TraceImport(source=source, format=fmt, problems=found)
    if fmt == "langfuse":
        _langfuse(items, result)
    else:
        spans = _otlp_spans(items, result) if fmt == "otlp" else _plain_spans(items, result)
        _openinference(spans, result)
    for row in result.rows:  # strict JSON and UTF-8 in the samples file, each change named
        _clean_row(row, result)
    result.sessions = {_mend(k): (None if sid is None else _mend(sid), start)
                       for k, (sid, start) in result.sessions.items()}
    group_sessions(result)
    return result


def _clean_row(row: dict[str, Any], result: TraceImport) -> None:
    """Make one row writable as strict JSON in UTF-8: a non-finite number (NaN, Infinity, a
    number out of range) becomes null and a lone surrogate U+FFFD, each named with its trace
    and field (not silently, and never a NaN in the samples file)."""
    trace_id = _mend(str(row.get("id")))
    notes: list[tuple[str, str]] = []

    def clean(value: Any, where: str) -> Any:
        if isinstance(value, float) and not math.isfinite(value):
            notes.append((_NON_FINITE, f"{where} is {_shown(value)}, not a finite number; written as null"))
            return None
        if isinstance(value, str):
            if _SURROGATE.search(value):
                notes.append((_REPAIRED, f"{where} holds a lone surrogate (invalid UTF-16); "
                              "replaced with U+FFFD"))
                return _mend(value)
            return value
        if isinstance(value, Mapping):
            out: dict[str, Any] = {}
            for k, v in value.items():
                key = str(k)
                if _SURROGATE.search(key):
                    notes.append((_REPAIRED, f"a key of {where} holds a lone surrogate (invalid UTF-16); "
                                  "replaced with U+FFFD"))
                    key = _mend(key)
                out[key] = clean(v, f"{where}.{_mend(key)}" if where else _mend(key))
            return out
        if isinstance(value, list):
            return [clean(v, f"{where}.{i}") for i, v in enumerate(value)]
        return value

    cleaned = clean(row, "")
    if notes:
        row.clear()
        row.update(cleaned)
        for kind, message in notes:
            result.repaired[kind] += 1
            result.problems.append(TraceProblem(trace_id, f"field {message}", imported=True, missing=False))


def group_sessions(result: TraceImport) -> None:
    """The traces of one session (two or more) as one conversation: a row of ``turns`` (each
    trace's question as a user turn, its answer with its documents as the assistant turn), in
    the order the traces started, with the session id as the conversation's id and each trace's
    metadata under ``metadata.traces`` (turn k is trace k). A session of one trace stays a sample:
    it has no earlier turn to read."""
    by_session: dict[str, list[int]] = {}
    for i, row in enumerate(result.rows):
        session, _ = result.sessions.get(str(row.get("id")), (None, None))
        if session is not None and "question" in row:  # an agent's conversation row stays its own
            by_session.setdefault(session, []).append(i)
    grouped = {sid: idx for sid, idx in by_session.items() if len(idx) > 1}
    if not grouped:
        return
    first = {idx[0]: sid for sid, idx in grouped.items()}
    members = {i for idx in grouped.values() for i in idx}
    out: list[dict[str, Any]] = []
    for i, row in enumerate(result.rows):
        if i not in members:
            out.append(row)
            continue
        if i not in first:
            continue
        sid = first[i]

        def start(k: int) -> float:
            t = result.sessions[str(result.rows[k]["id"])][1]
            return t if t is not None else float("inf")

        rows = [result.rows[k] for k in sorted(grouped[sid], key=lambda k: (start(k), k))]
        turns: list[dict[str, Any]] = []
        for r in rows:
            turns.append({"role": "user", "content": r["question"]})
            answer: dict[str, Any] = {"role": "assistant", "content": r.get("response") or "",
                                      "contexts": r["contexts"]}
            if "retrieved_ids" in r:
                answer["retrieved_ids"] = r["retrieved_ids"]
            turns.append(answer)
        out.append({"id": sid, "turns": turns, "metadata": {
            "session_id": sid, "trace_ids": [r["id"] for r in rows], "traces": [r["metadata"] for r in rows]}})
        result.conversations += 1
    result.rows = out
