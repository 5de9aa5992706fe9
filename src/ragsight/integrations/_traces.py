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
"""

from __future__ import annotations

import base64
import binascii
import datetime as dt
import json
import re
from collections import Counter
from collections.abc import Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from ..errors import InputError, MissingExtraError

__all__ = ["TRACE_FORMATS", "TraceImport", "TraceProblem", "group_sessions", "import_traces", "traces_from_records"]

TRACE_FORMATS = ("auto", "otlp", "spans", "langfuse")
_QUESTION_KEYS = ("question", "query", "input", "user_input", "query_str", "prompt", "text")
_ANSWER_KEYS = ("answer", "output", "result", "response", "content", "text", "output_text")
_HEX = re.compile(r"[0-9a-fA-F]+")
_DOC_KEY = re.compile(r"^(retrieval\.documents|reranker\.output_documents)\.(\d+)\.document\.(\w+)$")


@dataclass(frozen=True)
class TraceProblem:
    """Something wrong or missing in one trace (or one line of the file, ``trace_id`` None).
    ``imported``: the trace still became a sample (without what is missing)."""

    trace_id: str | None
    message: str
    imported: bool = False
    missing: bool = True  # for an imported trace: something is missing (else a caveat on what was read)

    def __str__(self) -> str:
        if self.trace_id is None:
            return f"file: {self.message}; skipped"
        if not self.imported:
            return f"trace {self.trace_id}: {self.message}; not imported"
        return f"trace {self.trace_id}: {self.message}; " + ("imported without it" if self.missing else "imported")


@dataclass
class TraceImport:
    """What a trace file gave: sample ``rows`` (plain dicts that ``evaluate`` loads), the
    ``problems`` of malformed or partial traces, and the count of traces ``skipped`` by reason."""

    source: str
    format: str
    traces: int = 0
    rows: list[dict[str, Any]] = field(default_factory=list)
    problems: list[TraceProblem] = field(default_factory=list)
    skipped: Counter[str] = field(default_factory=Counter)
    conversations: int = 0  # sessions of two traces or more, each one row of turns
    # per imported trace: its session (OpenInference session.id, Langfuse sessionId) and start
    sessions: dict[str, tuple[str | None, float | None]] = field(default_factory=dict, repr=False)

    def write_jsonl(self, path: str | Path) -> Path:
        out = Path(path)
        with out.open("w", encoding="utf-8") as f:
            for row in self.rows:
                f.write(json.dumps(row, ensure_ascii=False) + "\n")
        return out


_PARTIAL = "malformed or partial (each listed under problems)"


def _drop(result: TraceImport, trace_id: str, message: str) -> None:
    """A trace that cannot become a sample: say why, and count it as skipped."""
    result.problems.append(TraceProblem(trace_id, message))
    result.skipped[_PARTIAL] += 1


# ---- reading the file ----------------------------------------------------------------------------


def _records(path: Path) -> tuple[list[Any], list[TraceProblem]]:
    """The JSON values of a file: one document, or one per line."""
    text = path.read_text(encoding="utf-8-sig")
    stripped = text.strip()
    if not stripped:
        raise InputError(f"{path}: the file is empty.")
    try:
        whole = json.loads(stripped)
    except json.JSONDecodeError:
        whole = None
    else:
        return [whole], []
    values: list[Any] = _concatenated(stripped)
    if values:  # JSON lines, or JSON documents one after the other: ConsoleSpanExporter writes
        return values, []  # span.to_json(), indented over many lines, one span after the other
    problems: list[TraceProblem] = []
    for n, line in enumerate(text.splitlines(), start=1):
        if not line.strip():
            continue
        try:
            values.append(json.loads(line))
        except json.JSONDecodeError as exc:
            problems.append(TraceProblem(None, f"line {n} is not valid JSON ({exc.msg})"))
    if not values:
        raise InputError(f"{path}: neither a JSON document nor JSON lines; is it a trace export?")
    return values, problems


def _concatenated(text: str) -> list[Any]:
    """The JSON values of a text holding several one after the other (whitespace between),
    or [] when some part of it is not JSON."""
    decoder = json.JSONDecoder()
    values: list[Any] = []
    at, end = 0, len(text)
    while at < end:
        try:
            value, at = decoder.raw_decode(text, at)
        except (json.JSONDecodeError, RecursionError):
            return []
        values.append(value)
        while at < end and text[at].isspace():
            at += 1
    return values


def _items(values: Iterable[Any]) -> Iterator[Any]:
    """Unwrap arrays and ``{"data": [...]}`` envelopes."""
    for value in values:
        if isinstance(value, list):
            yield from _items(value)
        elif isinstance(value, Mapping) and isinstance(value.get("data"), list) and len(value) <= 3:
            yield from _items(value["data"])
        else:
            yield value


def _detect(items: Sequence[Any]) -> str:
    for item in items:
        if not isinstance(item, Mapping):
            continue
        if "resourceSpans" in item or "resource_spans" in item:
            return "otlp"
        if "observations" in item or ("traceId" in item and "startTime" in item and "type" in item):
            return "langfuse"
        if any(k in item for k in ("context", "traceId", "trace_id", "context.trace_id", "spanId")):
            return "spans"
    raise InputError(
        "not a trace export this reads: expected OTLP JSON (resourceSpans), OpenInference spans "
        "(JSON lines with context.trace_id / traceId) or a Langfuse export (traces with observations)"
    )


def import_traces(path: str | Path, format: str = "auto") -> TraceImport:
    """Read a trace file and rebuild one sample per RAG request. Malformed or partial traces
    are listed in ``problems`` (naming the trace id and what is missing); the other traces
    still import. Raises InputError when the file is not a trace export at all."""
    p = Path(path)
    if not p.is_file():
        raise InputError(f"{p}: no such file. Give the trace export (OTLP JSON, spans JSONL or Parquet, or Langfuse).")
    if p.suffix.lower() == ".parquet":  # a Phoenix spans DataFrame saved with df.to_parquet()
        return traces_from_records(_parquet_records(p), format, source=str(p))
    values, problems = _records(p)
    return traces_from_records(values, format, source=str(p), problems=problems)


def _parquet_records(path: Path) -> list[Any]:
    """A spans DataFrame saved as Parquet, as the JSON records ``df.to_json(orient="records")``
    writes (the records the ``spans`` format reads): a named index (``context.span_id``) kept as
    a column, times as ISO text, missing values null."""
    try:
        import pandas as pd
    except ImportError as exc:
        raise MissingExtraError("reading Parquet", "parquet", "pandas") from exc
    try:
        df = pd.read_parquet(path)
    except ImportError as exc:
        raise MissingExtraError("reading Parquet", "parquet", "pyarrow") from exc
    except Exception as exc:
        raise InputError(f"{path}: not a readable Parquet file ({exc}).") from exc
    if any(n is not None for n in df.index.names):
        df = df.reset_index()
    records: list[Any] = json.loads(df.to_json(orient="records", date_format="iso"))
    return records


def traces_from_records(values: Sequence[Any], format: str = "auto", *, source: str = "<records>",
                        problems: Sequence[TraceProblem] = ()) -> TraceImport:
    """:func:`import_traces` on already-parsed JSON values."""
    if format not in TRACE_FORMATS:
        raise InputError(f"unknown trace format '{format}'; use one of {', '.join(TRACE_FORMATS)}")
    items = list(_items(values))
    fmt = _detect(items) if format == "auto" else format
    result = TraceImport(source=source, format=fmt, problems=list(problems))
    if fmt == "langfuse":
        _langfuse(items, result)
    else:
        spans = _otlp_spans(items, result) if fmt == "otlp" else _plain_spans(items, result)
        _openinference(spans, result)
    group_sessions(result)
    return result


def group_sessions(result: TraceImport) -> None:
    """The traces of one session (two or more) as one conversation: a row of ``turns`` (each
    trace's question as a user turn, its answer with its documents as the assistant turn), in
    the order the traces started, with the session id as the conversation's id and each trace's
    metadata under ``metadata.traces`` (turn k is trace k). A session of one trace stays a sample:
    it has no earlier turn to read."""
    by_session: dict[str, list[int]] = {}
    for i, row in enumerate(result.rows):
        session, _ = result.sessions.get(str(row.get("id")), (None, None))
        if session is not None:
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


# ---- spans -------------------------------------------------------------------------------------


@dataclass
class _Span:
    trace_id: str
    span_id: str
    parent_id: str | None
    name: str
    start: float | None
    end: float | None
    attributes: dict[str, Any]
    status: str = ""
    status_message: str = ""

    @property
    def kind(self) -> str:
        return str(self.attributes.get("openinference.span.kind") or "").upper()


def _hex_id(value: Any, nbytes: int) -> str | None:
    """A trace or span id as lower-case hex: from hex (OTLP JSON, ``0x...``) or base64 (the
    protobuf JSON mapping)."""
    if value is None or value == "":
        return None
    text = str(value)
    if text.startswith(("0x", "0X")):
        text = text[2:]
    if len(text) == 2 * nbytes and _HEX.fullmatch(text):
        return text.lower()
    try:
        raw = base64.b64decode(text, validate=True)
    except (binascii.Error, ValueError):
        raw = b""
    if len(raw) == nbytes:
        return raw.hex()
    return text  # another scheme (e.g. a UUID): kept as given


def _time(value: Any, nanos: bool = False) -> float | None:
    """Seconds since the epoch from an ISO 8601 string, or a number: nanoseconds when ``nanos``
    (OTLP's ``*UnixNano``, a string or a number), else told by its size (pandas writes epoch
    milliseconds)."""
    if value is None or isinstance(value, bool):
        return None
    if isinstance(value, str) and value.strip().lstrip("-").isdigit():
        value = int(value)
    if isinstance(value, (int, float)):
        number = float(value)
        if nanos:
            return number / 1e9
        if number > 1e17:
            return number / 1e9
        if number > 1e14:
            return number / 1e6
        if number > 1e11:
            return number / 1e3
        return number
    if isinstance(value, str):
        text = value.strip().replace("Z", "+00:00")
        # at most 6 decimals for fromisoformat (nanosecond stamps have 9)
        text = re.sub(r"(\.\d{6})\d+", r"\1", text)
        try:
            when = dt.datetime.fromisoformat(text)
        except ValueError:
            return None
        if when.tzinfo is None:
            when = when.replace(tzinfo=dt.timezone.utc)
        return when.timestamp()
    return None


def _any_value(value: Any) -> Any:
    """An OTLP AnyValue (``{"stringValue": ...}``...) as a Python value."""
    if not isinstance(value, Mapping):
        return value
    for key in ("stringValue", "string_value"):
        if key in value:
            return value[key]
    for key in ("intValue", "int_value"):
        if key in value:
            try:
                return int(value[key])
            except (TypeError, ValueError):
                return value[key]
    for key in ("doubleValue", "double_value", "boolValue", "bool_value", "bytesValue", "bytes_value"):
        if key in value:
            return value[key]
    for key in ("arrayValue", "array_value"):
        if key in value:
            return [_any_value(v) for v in (value[key] or {}).get("values", [])]
    for key in ("kvlistValue", "kvlist_value"):
        if key in value:
            return {kv.get("key"): _any_value(kv.get("value")) for kv in (value[key] or {}).get("values", [])}
    return None


def _flatten(prefix: str, value: Any, out: dict[str, Any]) -> None:
    """Nested attributes (``{"retrieval": {"documents": [{"document": {...}}]}}``) to OpenInference's
    flat names; lists of plain values stay lists."""
    if isinstance(value, Mapping):
        for k, v in value.items():
            _flatten(f"{prefix}.{k}" if prefix else str(k), v, out)
    elif isinstance(value, list) and value and all(isinstance(v, Mapping) for v in value):
        for i, v in enumerate(value):
            _flatten(f"{prefix}.{i}", v, out)
    else:
        out[prefix] = value


def _attributes(raw: Any) -> dict[str, Any]:
    out: dict[str, Any] = {}
    if isinstance(raw, list):  # OTLP KeyValue list
        for kv in raw:
            if isinstance(kv, Mapping) and "key" in kv:
                _flatten(str(kv["key"]), _any_value(kv.get("value")), out)
    elif isinstance(raw, Mapping):
        _flatten("", raw, out)
    return out


def _span(item: Mapping[str, Any], where: str, result: TraceImport) -> _Span | None:
    raw_context = item.get("context")
    context: Mapping[str, Any] = raw_context if isinstance(raw_context, Mapping) else {}
    trace_id = _hex_id(context.get("trace_id") or item.get("traceId") or item.get("trace_id")
                       or item.get("context.trace_id"), 16)
    span_id = _hex_id(context.get("span_id") or item.get("spanId") or item.get("span_id")
                      or item.get("context.span_id"), 8)
    if trace_id is None or span_id is None:
        missing = "trace id" if trace_id is None else "span id"
        named = f" '{item.get('name')}'" if item.get("name") else ""
        result.problems.append(TraceProblem(None, f"{where}: span{named} has no {missing}"))
        return None
    parent = _hex_id(item.get("parent_id") or item.get("parentSpanId") or item.get("parent_span_id")
                     or item.get("parentId"), 8)
    attributes = _attributes(item.get("attributes"))
    for key, value in item.items():  # the spans-dataframe records: "attributes.input.value"...
        if isinstance(key, str) and key.startswith("attributes."):
            _flatten(key[len("attributes."):], value, attributes)
    if "openinference.span.kind" not in attributes and isinstance(item.get("span_kind"), str):
        attributes["openinference.span.kind"] = item["span_kind"]  # Phoenix's REST span
    status = item.get("status")
    code = (status.get("status_code") or status.get("code")) if isinstance(status, Mapping) else item.get("status_code")
    message = (status.get("description") or status.get("message") or "") if isinstance(status, Mapping) else item.get("status_message", "")
    return _Span(
        trace_id=trace_id, span_id=span_id, parent_id=parent, name=str(item.get("name") or ""),
        start=_start_end(item, "start"), end=_start_end(item, "end"),
        attributes=attributes, status=str(code or "").upper(), status_message=str(message or ""),
    )


def _start_end(item: Mapping[str, Any], which: str) -> float | None:
    nanos = item.get(f"{which}TimeUnixNano", item.get(f"{which}_time_unix_nano"))
    if nanos is not None:
        return _time(nanos, nanos=True)
    return _time(item.get(f"{which}_time"))


def _otlp_spans(items: Sequence[Any], result: TraceImport) -> list[_Span]:
    spans: list[_Span] = []
    for n, item in enumerate(items, start=1):
        if not isinstance(item, Mapping):
            result.problems.append(TraceProblem(None, f"record {n} is not an OTLP object"))
            continue
        for rs in item.get("resourceSpans") or item.get("resource_spans") or []:
            for ss in rs.get("scopeSpans") or rs.get("scope_spans") or rs.get("instrumentationLibrarySpans") or []:
                for raw in ss.get("spans") or []:
                    span = _span(raw, f"record {n}", result)
                    if span is not None:
                        spans.append(span)
    return spans


def _plain_spans(items: Sequence[Any], result: TraceImport) -> list[_Span]:
    spans: list[_Span] = []
    for n, item in enumerate(items, start=1):
        if not isinstance(item, Mapping):
            result.problems.append(TraceProblem(None, f"record {n} is not a span object"))
            continue
        span = _span(item, f"record {n}", result)
        if span is not None:
            spans.append(span)
    return spans


def _json_or_text(value: Any) -> Any:
    if isinstance(value, str):
        text = value.strip()
        if text[:1] in "{[":
            try:
                return json.loads(text)
            except json.JSONDecodeError:
                return value
    return value


def _pick_text(value: Any, keys: Sequence[str]) -> str | None:
    """A text from a value that is text, or JSON / a mapping holding it under one of ``keys``
    (or a chat message list: the last user message for questions, the last one otherwise)."""
    value = _json_or_text(value)
    if isinstance(value, str):
        return value if value.strip() else None
    if isinstance(value, Mapping):
        for key in keys:
            if key in value:
                found = _pick_text(value[key], keys)
                if found:
                    return found
        if "messages" in value:
            return _pick_text(value["messages"], keys)
        if "choices" in value:
            return _pick_text(value["choices"], keys)
        if "message" in value:
            return _pick_text(value["message"], keys)
        if "kwargs" in value:  # a LangChain message serialized
            return _pick_text(value["kwargs"], keys)
        return None
    if isinstance(value, list) and value:
        if keys is _QUESTION_KEYS:
            users = [m for m in value if isinstance(m, Mapping) and m.get("role") in ("user", "human")]
            if users:
                return _pick_text(users[-1], ("content", "text"))
        return _pick_text(value[-1], keys)
    return None


def _documents(span: _Span, prefix: str, result: TraceImport) -> list[dict[str, Any]] | None:
    """The documents of a retriever (``retrieval.documents``) or reranker
    (``reranker.output_documents``) span, in order; None when a document has no content."""
    found: dict[int, dict[str, Any]] = {}
    for key, value in span.attributes.items():
        m = _DOC_KEY.match(key)
        if m and m.group(1) == prefix:
            found.setdefault(int(m.group(2)), {})[m.group(3)] = value
    docs = []
    for index in range(max(found) + 1 if found else 0):
        doc = found.get(index)
        if doc is None:
            _drop(result, span.trace_id, f"{span.kind.lower()} span {span.span_id} has no {prefix}.{index} "
                  f"(documents {sorted(found)} are there)")
            return None
        if not isinstance(doc.get("content"), str) or not doc["content"].strip():
            _drop(result, span.trace_id, f"{span.kind.lower()} span {span.span_id} has no text at "
                  f"{prefix}.{index}.document.content")
            return None
        meta = _json_or_text(doc.get("metadata"))
        score = doc.get("score")
        docs.append({"content": doc["content"], "id": None if doc.get("id") is None else str(doc["id"]),
                     "score": float(score) if isinstance(score, (int, float)) and not isinstance(score, bool) else None,
                     "metadata": meta if isinstance(meta, Mapping) else ({} if meta is None else {"value": meta})})
    return docs


def _llm_answer(span: _Span) -> str | None:
    messages = sorted(
        (int(m.group(1)), v) for k, v in span.attributes.items()
        if (m := re.match(r"^llm\.output_messages\.(\d+)\.message\.content$", k)) and isinstance(v, str)
    )
    if messages:
        return messages[-1][1]
    return _pick_text(span.attributes.get("output.value"), _ANSWER_KEYS)


def _openinference(spans: Sequence[_Span], result: TraceImport) -> None:
    by_trace: dict[str, list[_Span]] = {}
    for span in spans:
        by_trace.setdefault(span.trace_id, []).append(span)
    result.traces = len(by_trace)
    for trace_id, trace in by_trace.items():
        trace.sort(key=lambda s: (s.start if s.start is not None else float("inf")))
        if not any(s.kind for s in trace):
            result.skipped["no OpenInference span (openinference.span.kind) in the trace"] += 1
            continue
        row = _trace_row(trace_id, trace, result)
        if row is not None:
            result.rows.append(row)
            session = next((str(v) for sp in trace if (v := sp.attributes.get("session.id")) not in (None, "")), None)
            result.sessions[trace_id] = (session, trace[0].start)


def _request_span(trace_id: str, trace: list[_Span], result: TraceImport) -> _Span:
    """The span of the RAG request: the top-most OpenInference span. A span of other
    instrumentation above it (an HTTP server span of the web framework, a job's span) has no
    ``input.value``, and would make the retriever's rewritten query pass for the question."""
    by_id = {s.span_id: s for s in trace}
    ids = set(by_id)
    roots = [s for s in trace if s.parent_id is None or s.parent_id not in ids]
    if len(roots) > 1:
        result.problems.append(TraceProblem(trace_id, f"{len(roots)} root spans (parents missing from the "
                                            f"file); the earliest, {roots[0].span_id}, is taken as the request",
                                            imported=True, missing=False))
    if roots[0].kind:
        return roots[0]

    def ancestors(span: _Span) -> list[_Span]:
        out: list[_Span] = []
        parent = by_id.get(span.parent_id or "")
        while parent is not None and parent not in out:
            out.append(parent)
            parent = by_id.get(parent.parent_id or "")
        return out

    tops = [s for s in trace if s.kind and not any(a.kind for a in ancestors(s))]  # in start order
    if not tops:
        return roots[0]
    # several (a question-rewriting chain, then the RAG chain): the one the retrieval ran under
    retrieval = next((s for s in trace if s.kind in ("RETRIEVER", "RERANKER")), None)
    above = ancestors(retrieval) if retrieval is not None else []
    return next((s for s in tops if s in above), next((s for s in tops if s.kind != "RETRIEVER"), tops[0]))


def _failed(span: _Span) -> bool:
    return span.status in ("ERROR", "STATUS_CODE_ERROR", "2")


def _trace_row(trace_id: str, trace: list[_Span], result: TraceImport) -> dict[str, Any] | None:
    ids = {s.span_id for s in trace}
    outer = next(s for s in trace if s.parent_id is None or s.parent_id not in ids)
    root = _request_span(trace_id, trace, result)
    failed = next((s for s in (root, outer) if _failed(s)), None)  # the web server's span may say so
    if failed is not None:
        detail = f": {failed.status_message}" if failed.status_message else ""
        result.skipped["the request failed (root span status ERROR)"] += 1
        result.problems.append(TraceProblem(trace_id, f"the request failed{detail}"))
        return None
    retrievers = [s for s in trace if s.kind == "RETRIEVER"]
    rerankers = [s for s in trace if s.kind == "RERANKER"]
    llms = [s for s in trace if s.kind == "LLM"]
    if not retrievers and not rerankers:
        result.skipped["no RETRIEVER span: not a RAG request"] += 1
        return None
    docs: list[dict[str, Any]] = []
    for span in retrievers:
        got = _documents(span, "retrieval.documents", result)
        if got is None:
            return None
        docs.extend(got)
    source = "retriever"
    if rerankers:
        got = _documents(rerankers[-1], "reranker.output_documents", result)
        if got is None:
            return None
        if got:
            docs, source = got, "reranker"
    question = _pick_text(root.attributes.get("input.value"), _QUESTION_KEYS)
    if question is None and retrievers:
        question = _pick_text(retrievers[0].attributes.get("input.value"), _QUESTION_KEYS)
        if question is not None and retrievers[0] is not root:
            result.problems.append(TraceProblem(
                trace_id, f"no input.value on the request span {root.span_id}: the question is the "
                f"retriever's query (span {retrievers[0].span_id}), which may be a rewritten one",
                imported=True, missing=False))
    if question is None:
        _drop(result, trace_id, f"no question: neither the root span {root.span_id} nor the retriever "
              "span has input.value")
        return None
    answer = None if root.kind == "RETRIEVER" else _pick_text(root.attributes.get("output.value"), _ANSWER_KEYS)
    llm = llms[-1] if llms else None
    if answer is None and llm is not None:
        answer = _llm_answer(llm)
    if answer is None:
        result.problems.append(TraceProblem(trace_id, "no answer: no output.value on the root span "
                                            f"{root.span_id} and no LLM span output", imported=True))
    if not docs:
        result.problems.append(TraceProblem(trace_id, "the retriever returned no documents", imported=True))
    latency = root.end - root.start if root.start is not None and root.end is not None else None
    meta: dict[str, Any] = {
        "trace_id": trace_id, "span_id": root.span_id, "trace_name": root.name,
        "retriever_span_ids": [s.span_id for s in retrievers],
        "llm_span_id": llm.span_id if llm else None,
        "contexts_from": source,
        "retrieval_scores": [d["score"] for d in docs],
        "documents": [{"id": d["id"], "score": d["score"], "metadata": d["metadata"]} for d in docs],
        "latency_s": round(latency, 6) if latency is not None else None,
        "source": "openinference",
    }
    return _row(trace_id, question, docs, answer, meta)


def _row(trace_id: str, question: str, docs: Sequence[Mapping[str, Any]], answer: str | None,
         meta: dict[str, Any]) -> dict[str, Any]:
    row: dict[str, Any] = {"id": trace_id, "question": question, "contexts": [d["content"] for d in docs]}
    ids = [d["id"] for d in docs]
    if ids and all(i is not None for i in ids):
        row["retrieved_ids"] = ids
    if answer is not None:
        row["response"] = answer
    row["metadata"] = meta
    return row


# ---- Langfuse ----------------------------------------------------------------------------------

_LF_RETRIEVER_NAMES = re.compile(r"retriev", re.I)


def _lf_document(item: Any) -> dict[str, Any] | None:
    """One document from a retriever observation's output, in the shapes Langfuse stores:
    a LangChain Document (page_content, metadata, id), a LlamaIndex NodeWithScore (node, score),
    an OpenInference document (document.content...), or {text|content, id, score}."""
    if isinstance(item, str):
        return {"content": item, "id": None, "score": None, "metadata": {}}
    if not isinstance(item, Mapping):
        return None
    if isinstance(item.get("node"), Mapping):  # LlamaIndex NodeWithScore
        node = item["node"]
        doc = _lf_document(node)
        if doc is not None:
            if doc["id"] is None:
                doc["id"] = node.get("id_")
            doc["score"] = item.get("score") if isinstance(item.get("score"), (int, float)) else doc["score"]
        return doc
    flat: dict[str, Any] = {}
    _flatten("", item, flat)
    content = next((item.get(k) for k in ("page_content", "text", "content", "document.content")
                    if isinstance(item.get(k), str)), None)
    if content is None:
        content = flat.get("document.content")
    if not isinstance(content, str):
        return None
    raw_meta = item.get("metadata")
    meta: Mapping[str, Any] = raw_meta if isinstance(raw_meta, Mapping) else {}
    # the chunk's own id only: a "source" file name is shared by all its chunks
    ident = next((v for v in (item.get("id"), item.get("id_"), flat.get("document.id"), meta.get("id"))
                  if v not in (None, "")), None)
    score = next((v for v in (item.get("score"), flat.get("document.score"), meta.get("score"))
                  if isinstance(v, (int, float)) and not isinstance(v, bool)), None)
    return {"content": content, "id": None if ident is None else str(ident),
            "score": float(score) if score is not None else None, "metadata": dict(meta)}


def _lf_documents(output: Any) -> list[dict[str, Any]] | None:
    output = _json_or_text(output)
    if isinstance(output, Mapping):
        for key in ("documents", "nodes", "source_nodes", "retrieval.documents", "output"):
            if isinstance(output.get(key), list):
                output = output[key]
                break
    if not isinstance(output, list):
        return None
    docs = [_lf_document(item) for item in output]
    return None if any(d is None for d in docs) else [d for d in docs if d is not None]


def _langfuse(items: Sequence[Any], result: TraceImport) -> None:
    traces: dict[str, dict[str, Any]] = {}
    for n, item in enumerate(items, start=1):
        if not isinstance(item, Mapping):
            result.problems.append(TraceProblem(None, f"record {n} is not a Langfuse object"))
            continue
        if "observations" in item:
            tid = str(item.get("id") or "")
            if not tid:
                result.problems.append(TraceProblem(None, f"record {n}: a trace has no id"))
                continue
            entry = traces.setdefault(tid, {"trace": {}, "observations": []})
            entry["trace"] = item
            entry["observations"].extend(o for o in item.get("observations") or [] if isinstance(o, Mapping))
        elif "traceId" in item:  # an observation exported alone
            traces.setdefault(str(item["traceId"]), {"trace": {}, "observations": []})["observations"].append(item)
        else:
            result.problems.append(TraceProblem(None, f"record {n} is neither a Langfuse trace nor an "
                                                "observation"))
    result.traces = len(traces)
    for tid, entry in traces.items():
        row = _langfuse_row(tid, entry["trace"], entry["observations"], result)
        if row is not None:
            result.rows.append(row)
            session = entry["trace"].get("sessionId")
            starts = [t for o in entry["observations"] if (t := _time(o.get("startTime"))) is not None]
            start = _time(entry["trace"].get("timestamp")) or (min(starts) if starts else None)
            result.sessions[tid] = (str(session) if session not in (None, "") else None, start)


def _langfuse_row(trace_id: str, trace: Mapping[str, Any], observations: Sequence[Mapping[str, Any]],
                  result: TraceImport) -> dict[str, Any] | None:
    obs = sorted(observations, key=lambda o: _time(o.get("startTime")) or 0.0)
    roots = [o for o in obs if not o.get("parentObservationId")]
    root = roots[0] if roots else None
    # a failed request: its root observation's level is ERROR (LangChain's and LlamaIndex's
    # Langfuse handlers set it, with the exception in statusMessage)
    if root is not None and str(root.get("level") or "").upper() == "ERROR":
        detail = f": {root['statusMessage']}" if root.get("statusMessage") else ""
        result.skipped["the request failed (root observation level ERROR)"] += 1
        result.problems.append(TraceProblem(trace_id, f"the request failed{detail}"))
        return None
    retrievers = [o for o in obs if str(o.get("type", "")).upper() == "RETRIEVER"
                  or (str(o.get("type", "")).upper() == "SPAN" and _LF_RETRIEVER_NAMES.search(str(o.get("name") or "")))]
    generations = [o for o in obs if str(o.get("type", "")).upper() == "GENERATION"]
    if not retrievers:
        result.skipped["no retriever observation: not a RAG request"] += 1
        return None
    docs: list[dict[str, Any]] = []
    for o in retrievers:
        got = _lf_documents(o.get("output"))
        if got is None:
            _drop(result, trace_id, f"retriever observation {o.get('id')} has no readable documents in "
                  "its output (a list of documents with page_content, text or content)")
            return None
        docs.extend(got)
    question = _pick_text(trace.get("input"), _QUESTION_KEYS)
    if question is None and root is not None and root not in retrievers:
        question = _pick_text(root.get("input"), _QUESTION_KEYS)
    if question is None:
        question = _pick_text(retrievers[0].get("input"), _QUESTION_KEYS)
    if question is None:
        _drop(result, trace_id, "no question: the trace, its root observation and its retriever have no input")
        return None
    answer = _pick_text(trace.get("output"), _ANSWER_KEYS)
    if answer is None and root is not None and root not in retrievers:
        answer = _pick_text(root.get("output"), _ANSWER_KEYS)
    if answer is None and generations:
        answer = _pick_text(generations[-1].get("output"), _ANSWER_KEYS)
    if answer is None:
        result.problems.append(TraceProblem(trace_id, "no answer: no output on the trace, its root "
                                            "observation or a generation", imported=True))
    latency = trace.get("latency")
    if not isinstance(latency, (int, float)) or isinstance(latency, bool):
        starts = [t for o in obs if (t := _time(o.get("startTime"))) is not None]
        ends = [t for o in obs if (t := _time(o.get("endTime"))) is not None]
        latency = max(ends) - min(starts) if starts and ends else None
    meta: dict[str, Any] = {
        "trace_id": trace_id, "trace_name": trace.get("name"),
        "retriever_observation_ids": [o.get("id") for o in retrievers],
        "generation_observation_id": generations[-1].get("id") if generations else None,
        "retrieval_scores": [d["score"] for d in docs],
        "documents": [{"id": d["id"], "score": d["score"], "metadata": d["metadata"]} for d in docs],
        "latency_s": round(float(latency), 6) if latency is not None else None,
        "source": "langfuse",
    }
    for key in ("sessionId", "userId"):
        if trace.get(key):
            meta[key] = trace[key]
    return _row(trace_id, question, docs, answer, meta)
