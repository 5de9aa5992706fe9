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
import codecs
import datetime as dt
import json
import math
import re
from collections import Counter
from collections.abc import Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from ..dataset import atomic_write
from ..errors import InputError, MissingExtraError

__all__ = ["TRACE_FORMATS", "TraceImport", "TraceProblem", "group_sessions", "import_traces", "traces_from_records"]

TRACE_FORMATS = ("auto", "otlp", "spans", "langfuse")
_QUESTION_KEYS = ("question", "query", "input", "user_input", "query_str", "prompt", "text")
_ANSWER_KEYS = ("answer", "output", "result", "response", "content", "text", "output_text")
_HEX = re.compile(r"[0-9a-fA-F]+")
_DOC_KEY = re.compile(r"^(retrieval\.documents|reranker\.output_documents)\.([0-9]+)\.document\.(\w+)$")
_LLM_MESSAGE_KEY = re.compile(r"^llm\.output_messages\.([0-9]+)\.message\.content$")
_MAX_DEPTH = 100  # levels of JSON nesting in one span, trace or record (a real export has about 20)
_MAX_INDEX = 100_000  # a document number beyond this is not a retriever's list
_SURROGATE = re.compile("[\ud800-\udfff]")
_NON_FINITE = "non-finite number written as null"
_REPAIRED = "lone surrogate (invalid UTF-16) replaced with U+FFFD"


@dataclass(frozen=True)
class TraceProblem:
    """Something wrong or missing in one trace (or one line of the file, ``trace_id`` None).
    ``imported``: the trace still became a sample (without what is missing)."""

    trace_id: str | None
    message: str
    imported: bool = False
    missing: bool = True  # for an imported trace: something is missing (else a caveat on what was read)

    def __str__(self) -> str:
        return _mend(self._text())

    def _text(self) -> str:
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
    # values changed so that the samples file is valid JSON and UTF-8, by kind (each one also
    # listed under problems with its trace and field)
    repaired: Counter[str] = field(default_factory=Counter)

    def write_jsonl(self, path: str | Path) -> Path:
        """Write the rows as JSON lines, atomically: to a temporary file beside ``path``, then
        renamed over it, so that a failure leaves a previous file as it was. The rows are strict
        JSON (no NaN or Infinity) in UTF-8."""
        out = Path(path)
        lines = [json.dumps(row, ensure_ascii=False, allow_nan=False) + "\n" for row in self.rows]
        with atomic_write(out) as f:
            for line in lines:
                f.write(line)
        return out


_PARTIAL = "malformed or partial (each listed under problems)"


def _drop(result: TraceImport, trace_id: str, message: str) -> None:
    """A trace that cannot become a sample: say why, and count it as skipped."""
    result.problems.append(TraceProblem(trace_id, message))
    result.skipped[_PARTIAL] += 1


# ---- reading the file ----------------------------------------------------------------------------


def _mend(text: str) -> str:
    """``text`` with each lone surrogate (which UTF-8 cannot encode) as U+FFFD."""
    return _SURROGATE.sub("\ufffd", text) if _SURROGATE.search(text) else text


def _parse_int(digits: str) -> int | float:
    # Python refuses to convert more than 4,300 digits (sys.get_int_max_str_digits; a ValueError
    # out of json.loads). Such a number is out of range for anything a trace holds, so it reads
    # as an infinity, which is then left out and named like NaN and 1e400.
    try:
        return int(digits)
    except ValueError:
        return -math.inf if digits.startswith("-") else math.inf


def _loads(text: str) -> Any:
    """``json.loads`` that reads integers of any length (see :func:`_parse_int`). Raises
    ValueError (JSONDecodeError among them) or RecursionError."""
    return json.loads(text, parse_int=_parse_int)


def _too_deep(value: Any, limit: int = _MAX_DEPTH) -> bool:
    """Whether ``value`` nests lists and objects more than ``limit`` levels (without recursing)."""
    stack: list[tuple[Any, int]] = [(value, 1)]
    while stack:
        item, depth = stack.pop()
        if isinstance(item, Mapping):
            children: Iterable[Any] = item.values()
        elif isinstance(item, list):
            children = item
        else:
            continue
        if depth > limit:
            return True
        stack.extend((child, depth + 1) for child in children if isinstance(child, (Mapping, list)))
    return False


def _decode(path: Path, data: bytes) -> tuple[str | None, list[str | int]]:
    """The file's text, or (None, its lines) when it is not UTF-8 as a whole: each line decoded,
    or the line's number when that line is not UTF-8."""
    for bom, codec in ((codecs.BOM_UTF32_LE, "utf-32"), (codecs.BOM_UTF32_BE, "utf-32"),
                       (codecs.BOM_UTF16_LE, "utf-16"), (codecs.BOM_UTF16_BE, "utf-16")):
        if data.startswith(bom):  # Windows tools save "Unicode" text as UTF-16 with a BOM
            try:
                return data.decode(codec), []
            except UnicodeDecodeError as exc:
                raise InputError(f"{_mend(str(path))}: not {codec.upper()} text although it starts with its byte "
                                 f"order mark (bad bytes at offset {exc.start}); save it as UTF-8") from None
    try:
        return data.decode("utf-8-sig"), []
    except UnicodeDecodeError:
        pass
    lines: list[str | int] = []
    for n, raw in enumerate(data.split(b"\n"), start=1):
        try:
            lines.append(raw.decode("utf-8-sig" if n == 1 else "utf-8"))
        except UnicodeDecodeError:
            lines.append(n)
    return None, lines


def _records(path: Path) -> tuple[list[Any], list[TraceProblem]]:
    """The JSON values of a file: one document, or one per line."""
    try:
        data = path.read_bytes()
    except OSError as exc:
        raise InputError(f"{_mend(str(path))}: cannot be read ({exc.strerror or exc})") from None
    text, lines = _decode(path, data)
    if text is None:
        return _lines(path, lines, utf8=False)
    stripped = text.strip()
    if not stripped:
        raise InputError(f"{_mend(str(path))}: the file is empty.")
    deep = False
    try:
        whole = _loads(stripped)
    except RecursionError:
        deep = True
    except ValueError:
        pass
    else:
        return [whole], []
    values: list[Any] = _concatenated(stripped)
    if values:  # JSON lines, or JSON documents one after the other: ConsoleSpanExporter writes
        return values, []  # span.to_json(), indented over many lines, one span after the other
    try:
        return _lines(path, text.split("\n"), utf8=True)  # not splitlines: U+2028 may be inside a string
    except InputError:
        if deep:
            raise InputError(f"{_mend(str(path))}: the JSON is nested too deep to read (a trace export nests about "
                             f"20 levels; this one more than {_MAX_DEPTH})") from None
        raise


def _lines(path: Path, lines: Sequence[str | int], utf8: bool) -> tuple[list[Any], list[TraceProblem]]:
    """One JSON value per line (a line given as its number is not UTF-8); the lines that are not
    JSON are listed as problems. Raises InputError when no line is."""
    values: list[Any] = []
    problems: list[TraceProblem] = []
    not_json = 0
    first_bad: int | None = None
    for n, line in enumerate(lines, start=1):
        if isinstance(line, int):
            problems.append(TraceProblem(None, f"line {n} is not UTF-8 text"))
            first_bad = n if first_bad is None else first_bad
            continue
        if not line.strip():
            continue
        try:
            values.append(_loads(line))
        except RecursionError:
            problems.append(TraceProblem(None, f"line {n} is JSON nested too deep to read (more than "
                                         f"{_MAX_DEPTH} levels)"))
        except ValueError as exc:
            not_json += 1
            why = exc.msg if isinstance(exc, json.JSONDecodeError) else str(exc)
            problems.append(TraceProblem(None, f"line {n} is not valid JSON ({why})"))
    if not utf8 and (not values or not_json):
        # not JSON lines: one document (or text of another kind) that is not UTF-8
        raise InputError(f"{_mend(str(path))}: not UTF-8 text (line {first_bad} has bytes that are not UTF-8); "
                         "save the export as UTF-8")
    if not values:
        raise InputError(f"{_mend(str(path))}: neither a JSON document nor JSON lines; is it a trace export?")
    return values, problems


def _concatenated(text: str) -> list[Any]:
    """The JSON values of a text holding several one after the other (whitespace between),
    or [] when some part of it is not JSON."""
    decoder = json.JSONDecoder(parse_int=_parse_int)
    values: list[Any] = []
    at, end = 0, len(text)
    while at < end:
        try:
            value, at = decoder.raw_decode(text, at)
        except (ValueError, RecursionError):
            return []
        values.append(value)
        while at < end and text[at].isspace():
            at += 1
    return values


def _items(values: Iterable[Any], problems: list[TraceProblem]) -> list[Any]:
    """Unwrap arrays and ``{"data": [...]}`` envelopes (without recursing: a file may nest
    arrays thousands deep)."""
    out: list[Any] = []
    stack: list[tuple[Iterator[Any], int]] = [(iter(values), 0)]
    while stack:
        it, depth = stack[-1]
        value = next(it, _END)
        if value is _END:
            stack.pop()
            continue
        inner = value if isinstance(value, list) else (
            value["data"] if isinstance(value, Mapping) and isinstance(value.get("data"), list) and len(value) <= 3
            else None)
        if inner is None:
            out.append(value)
        elif depth >= _MAX_DEPTH:
            problems.append(TraceProblem(None, f"arrays nested more than {_MAX_DEPTH} levels deep"))
        else:
            stack.append((iter(inner), depth + 1))
    return out


_END = object()


def _detect(items: Sequence[Any], source: str, problems: Sequence[TraceProblem]) -> str:
    if problems and not any(isinstance(item, Mapping) for item in items):
        raise InputError(f"{_mend(source)}: nothing in it can be read ({problems[0].message}"
                         + (f", and {len(problems) - 1} more problems)" if len(problems) > 1 else ")"))
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
        f"{_mend(source)}: not a trace export this reads: expected OTLP JSON (resourceSpans), OpenInference spans "
        "(JSON lines with context.trace_id / traceId) or a Langfuse export (traces with observations)"
    )


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
        raise InputError(f"{_mend(str(path))}: not a readable Parquet file ({exc}).") from exc
    if any(n is not None for n in df.index.names):
        df = df.reset_index()
    records: list[Any] = json.loads(df.to_json(orient="records", date_format="iso"))
    return records


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
    notes: list[str] = field(default_factory=list)  # what of the span could not be read

    @property
    def kind(self) -> str:
        return str(self.attributes.get("openinference.span.kind") or "").upper()


def _hex_id(value: Any, nbytes: int) -> str | None:
    """A trace or span id as lower-case hex: from hex (OTLP JSON, ``0x...``) or base64 (the
    protobuf JSON mapping)."""
    if value is None or value == "":
        return None
    if not isinstance(value, (str, int)) or isinstance(value, bool):
        return None  # an object, a list, a number with a fraction: not an id
    text = str(value)  # a lone surrogate in it is repaired (and said) with the row
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
        try:
            value = int(value)
        except ValueError:  # more digits than Python converts: no time
            return None
    if isinstance(value, (int, float)):
        try:
            number = float(value)
        except OverflowError:
            return None
        if not math.isfinite(number):
            return None
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
            if when.tzinfo is None:
                when = when.replace(tzinfo=dt.timezone.utc)
            return when.timestamp()
        except (ValueError, OverflowError):
            return None
    return None


def _number(value: Any) -> float | None:
    """A finite number as a float, else None (NaN, an infinity, a bool, text, an integer too
    large for a float)."""
    if not isinstance(value, (int, float)) or isinstance(value, bool):
        return None
    try:
        number = float(value)
    except OverflowError:
        return None
    return number if math.isfinite(number) else None


def _shown(value: Any, limit: int = 40) -> str:
    """A short form of a value for a message."""
    if isinstance(value, str):
        text = _mend(value)
    elif isinstance(value, float) and not math.isfinite(value):
        text = "NaN" if math.isnan(value) else ("Infinity" if value > 0 else "-Infinity")  # as JSON writes them
    elif isinstance(value, float):
        text = repr(value)
    else:
        text = _mend(json.dumps(value, ensure_ascii=False, default=str))
    return text if len(text) <= limit else text[: limit - 3] + "..."


class _Malformed(ValueError):
    """An OTLP AnyValue that is not one."""


def _any_value(value: Any) -> Any:
    """An OTLP AnyValue (``{"stringValue": ...}``...) as a Python value. Raises _Malformed when
    an array or key-value list is not shaped as OTLP writes it."""
    if not isinstance(value, Mapping):
        return value
    for key in ("stringValue", "string_value"):
        if key in value:
            return value[key]
    for key in ("intValue", "int_value"):
        if key in value:
            try:
                return int(value[key])
            except (TypeError, ValueError, OverflowError):
                return value[key]
    for key in ("doubleValue", "double_value", "boolValue", "bool_value", "bytesValue", "bytes_value"):
        if key in value:
            return value[key]
    for key in ("arrayValue", "array_value"):
        if key in value:
            return [_any_value(v) for v in _otlp_values(value[key], key)]
    for key in ("kvlistValue", "kvlist_value"):
        if key in value:
            out: dict[str, Any] = {}
            for kv in _otlp_values(value[key], key):
                if not isinstance(kv, Mapping) or not isinstance(kv.get("key"), str):
                    raise _Malformed(f"an entry of its {key} is not {{\"key\": text, \"value\": ...}}")
                out[kv["key"]] = _any_value(kv.get("value"))
            return out
    return None


def _otlp_values(container: Any, key: str) -> list[Any]:
    if container is None:
        return []
    if not isinstance(container, Mapping):
        raise _Malformed(f"its {key} is {_kind(container)}, not an object with values")
    values = container.get("values")
    if values is None:
        return []
    if not isinstance(values, list):
        raise _Malformed(f"its {key}.values is {_kind(values)}, not a list")
    return values


def _kind(value: Any) -> str:
    """What a JSON value is, for a message: "a list", "text", "null"..."""
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "true/false"
    if isinstance(value, (int, float)):
        return "a number"
    if isinstance(value, str):
        return "text"
    if isinstance(value, list):
        return "a list"
    return "an object"


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


def _attributes(raw: Any, notes: list[str]) -> dict[str, Any]:
    """A span's attributes, flat; what cannot be read is left out and said in ``notes``."""
    out: dict[str, Any] = {}
    if isinstance(raw, list):  # OTLP KeyValue list
        for i, kv in enumerate(raw):
            if not isinstance(kv, Mapping) or not isinstance(kv.get("key"), str):
                notes.append(f"attributes.{i} is not {{\"key\": text, \"value\": ...}} (it is {_shown(kv)}); left out")
                continue
            try:
                value = _any_value(kv.get("value"))
            except _Malformed as exc:
                notes.append(f"attribute {_mend(kv['key'])} is not an OTLP value ({exc}); left out")
                continue
            _flatten(kv["key"], value, out)
    elif isinstance(raw, Mapping):
        _flatten("", raw, out)
    elif raw is not None:
        notes.append(f"attributes is {_kind(raw)}, not a list or an object; left out")
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
    notes: list[str] = []
    attributes = _attributes(item.get("attributes"), notes)
    for key, value in item.items():  # the spans-dataframe records: "attributes.input.value"...
        if isinstance(key, str) and key.startswith("attributes."):
            _flatten(key[len("attributes."):], value, attributes)
    if "openinference.span.kind" not in attributes and isinstance(item.get("span_kind"), str):
        attributes["openinference.span.kind"] = item["span_kind"]  # Phoenix's REST span
    status = item.get("status")
    code = (status.get("status_code") or status.get("code")) if isinstance(status, Mapping) else item.get("status_code")
    message = (status.get("description") or status.get("message") or "") if isinstance(status, Mapping) else item.get("status_message", "")
    name = item.get("name")
    return _Span(
        trace_id=trace_id, span_id=span_id, parent_id=parent,
        name=_mend(name) if isinstance(name, str) else ("" if name is None else _shown(name)),
        start=_start_end(item, "start", notes), end=_start_end(item, "end", notes),
        attributes=attributes, status=_mend(str(code or "")).upper(), status_message=_mend(str(message or "")),
        notes=notes,
    )


def _start_end(item: Mapping[str, Any], which: str, notes: list[str]) -> float | None:
    for key, nanos in ((f"{which}TimeUnixNano", True), (f"{which}_time_unix_nano", True), (f"{which}_time", False)):
        raw = item.get(key)
        if raw is None or raw == "":
            continue
        when = _time(raw, nanos=nanos)
        if when is None:
            notes.append(f"{key} {_shown(raw)} is not a finite time; left out")
        return when
    return None


def _listed(container: Mapping[str, Any], keys: Sequence[str], where: str,
            result: TraceImport) -> list[Any]:
    """The list under the first of ``keys`` in an OTLP object (null or absent: none); another
    type is named as a problem and read as none."""
    for key in keys:
        value = container.get(key)
        if value is None:
            continue
        if isinstance(value, list):
            return value
        result.problems.append(TraceProblem(None, f"{where}: {key} is {_kind(value)}, not a list"))
        return []
    return []


def _otlp_spans(items: Sequence[Any], result: TraceImport) -> list[_Span]:
    spans: list[_Span] = []
    for n, item in enumerate(items, start=1):
        if not isinstance(item, Mapping):
            result.problems.append(TraceProblem(None, f"record {n} is not an OTLP object"))
            continue
        for r, rs in enumerate(_listed(item, ("resourceSpans", "resource_spans"), f"record {n}", result)):
            where = f"record {n}: resourceSpans.{r}"
            if not isinstance(rs, Mapping):
                result.problems.append(TraceProblem(None, f"{where} is {_kind(rs)}, not an object"))
                continue
            scopes = _listed(rs, ("scopeSpans", "scope_spans", "instrumentationLibrarySpans"), where, result)
            for c, ss in enumerate(scopes):
                at = f"{where}.scopeSpans.{c}"
                if not isinstance(ss, Mapping):
                    result.problems.append(TraceProblem(None, f"{at} is {_kind(ss)}, not an object"))
                    continue
                for k, raw in enumerate(_listed(ss, ("spans",), at, result)):
                    span = _checked_span(raw, f"{at}.spans.{k}", result)
                    if span is not None:
                        spans.append(span)
    return spans


def _checked_span(raw: Any, where: str, result: TraceImport) -> _Span | None:
    if not isinstance(raw, Mapping):
        result.problems.append(TraceProblem(None, f"{where} is {_kind(raw)}, not a span object"))
        return None
    if _too_deep(raw):
        result.problems.append(TraceProblem(None, f"{where}: span nested more than {_MAX_DEPTH} levels deep"))
        return None
    return _span(raw, where, result)


def _plain_spans(items: Sequence[Any], result: TraceImport) -> list[_Span]:
    spans: list[_Span] = []
    for n, item in enumerate(items, start=1):
        span = _checked_span(item, f"record {n}", result)
        if span is not None:
            spans.append(span)
    return spans


def _json_or_text(value: Any) -> Any:
    """The JSON a text holds (an object or a list), else the text itself (also when that JSON
    nests deeper than a trace does)."""
    if isinstance(value, str):
        text = value.strip()
        if text[:1] in "{[":
            try:
                parsed = _loads(text)
            except (ValueError, RecursionError):
                return value
            return value if _too_deep(parsed) else parsed
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
            if len(m.group(2)) > len(str(_MAX_INDEX)) or int(m.group(2)) > _MAX_INDEX:
                _drop(result, span.trace_id, f"{span.kind.lower()} span {span.span_id} has a document "
                      f"numbered {_shown(int(m.group(2)) if len(m.group(2)) < 40 else m.group(2))} "
                      f"(attribute {_shown(key, 60)}); more than {_MAX_INDEX:,} is not a retriever's list")
                return None
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
        score = _score(doc.get("score"), f"{span.kind.lower()} span {span.span_id}: "
                       f"{prefix}.{index}.document.score", span.trace_id, result)
        ident = doc.get("id")
        docs.append({"content": doc["content"], "id": None if ident is None else _id_text(ident),
                     "score": score,
                     "metadata": meta if isinstance(meta, Mapping) else ({} if meta is None else {"value": meta})})
    return docs


def _id_text(value: Any) -> str:
    return value if isinstance(value, str) else _shown(value, 200)


def _score(value: Any, where: str, trace_id: str, result: TraceImport) -> float | None:
    """A document's score as a float; a non-finite one is left out and named (never a NaN in
    the samples file)."""
    number = _number(value)
    if number is None and isinstance(value, (int, float)) and not isinstance(value, bool):
        result.repaired[_NON_FINITE] += 1
        result.problems.append(TraceProblem(trace_id, f"{where} is {_shown(value)}, not a finite number; "
                                            "written as null", imported=True, missing=False))
    return number


def _llm_answer(span: _Span) -> str | None:
    messages = sorted(  # by number, compared as digit strings (any length)
        (len(m.group(1).lstrip("0")), m.group(1).lstrip("0"), v) for k, v in span.attributes.items()
        if (m := _LLM_MESSAGE_KEY.match(k)) and isinstance(v, str)
    )
    if messages:
        return messages[-1][2]
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
            _span_notes(trace_id, trace, result, imported=False)
            continue
        by_id = {s.span_id: s for s in trace}
        above, loop = _kinded_above(by_id)
        if loop:
            shown = " -> ".join([*loop, loop[0]]) if len(loop) <= 4 else \
                " -> ".join(loop[:3]) + f" -> ... ({len(loop)} spans) -> {loop[0]}"
            _drop(result, trace_id, f"the parent links of its spans loop ({shown}): not a tree of spans")
            _span_notes(trace_id, trace, result, imported=False)
            continue
        row = _trace_row(trace_id, trace, result, by_id, above)
        _span_notes(trace_id, trace, result, imported=row is not None)
        if row is not None:
            result.rows.append(row)
            session = next((_id_text(v) for sp in trace if (v := sp.attributes.get("session.id")) not in (None, "")), None)
            result.sessions[trace_id] = (session, trace[0].start)


def _span_notes(trace_id: str, trace: Sequence[_Span], result: TraceImport, imported: bool) -> None:
    for span in trace:
        for note in span.notes:
            result.problems.append(TraceProblem(trace_id, f"span {span.span_id}: {note}", imported=imported,
                                                missing=True))


def _kinded_above(by_id: Mapping[str, _Span]) -> tuple[dict[str, str | None], list[str]]:
    """For each span id, the id of its nearest ancestor with an OpenInference kind (None: it has
    none), found in one walk over the parent links (linear in the spans, however long a chain);
    or, when the parent links loop, the ids of the loop (second value)."""
    above: dict[str, str | None] = {}
    for start in by_id:
        path: list[str] = []
        on_path: set[str] = set()
        sid: str | None = start
        while sid is not None and sid in by_id and sid not in above:
            if sid in on_path:
                return above, path[path.index(sid):]
            on_path.add(sid)
            path.append(sid)
            sid = by_id[sid].parent_id
        for x in reversed(path):
            parent = by_id[x].parent_id
            if parent is None or parent not in by_id:
                above[x] = None
            else:
                above[x] = parent if by_id[parent].kind else above[parent]
    return above, []


def _request_span(trace_id: str, trace: list[_Span], result: TraceImport, above: Mapping[str, str | None],
                  roots: list[_Span]) -> _Span:
    """The span of the RAG request: the top-most OpenInference span. A span of other
    instrumentation above it (an HTTP server span of the web framework, a job's span) has no
    ``input.value``, and would make the retriever's rewritten query pass for the question."""
    if len(roots) > 1:
        result.problems.append(TraceProblem(trace_id, f"{len(roots)} root spans (parents missing from the "
                                            f"file); the earliest, {roots[0].span_id}, is taken as the request",
                                            imported=True, missing=False))
    if roots[0].kind:
        return roots[0]
    tops = [s for s in trace if s.kind and above.get(s.span_id) is None]  # in start order
    if not tops:
        return roots[0]
    # several (a question-rewriting chain, then the RAG chain): the one the retrieval ran under,
    # which is the top-most span with a kind among the retrieval's ancestors
    retrieval = next((s for s in trace if s.kind in ("RETRIEVER", "RERANKER")), None)
    top_id: str | None = None
    at = above.get(retrieval.span_id) if retrieval is not None else None
    while at is not None:
        top_id, at = at, above.get(at)
    return next((s for s in tops if top_id is not None and s.span_id == top_id),
                next((s for s in tops if s.kind != "RETRIEVER"), tops[0]))


def _failed(span: _Span) -> bool:
    return span.status in ("ERROR", "STATUS_CODE_ERROR", "2")


def _trace_row(trace_id: str, trace: list[_Span], result: TraceImport, by_id: Mapping[str, _Span],
               above: Mapping[str, str | None]) -> dict[str, Any] | None:
    roots = [s for s in trace if s.parent_id is None or s.parent_id not in by_id]  # one at least: no loop
    outer = roots[0]
    root = _request_span(trace_id, trace, result, above, roots)
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
    latency = _number(root.end - root.start) if root.start is not None and root.end is not None else None
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
            score = item.get("score")
            doc["score"] = score if isinstance(score, (int, float)) and not isinstance(score, bool) else doc["score"]
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
    # the score as given (a number or None); _langfuse_row reads it with _score
    return {"content": content, "id": None if ident is None else _id_text(ident),
            "score": score, "metadata": dict(meta)}


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


def _lf_id(value: Any) -> str | None:
    """A Langfuse trace id as given (text or a whole number); None for anything else."""
    if isinstance(value, str) and value:
        return value
    if isinstance(value, int) and not isinstance(value, bool):
        return str(value)
    return None


def _langfuse(items: Sequence[Any], result: TraceImport) -> None:
    traces: dict[str, dict[str, Any]] = {}
    for n, item in enumerate(items, start=1):
        if not isinstance(item, Mapping):
            result.problems.append(TraceProblem(None, f"record {n} is not a Langfuse object"))
            continue
        if _too_deep(item):
            result.problems.append(TraceProblem(None, f"record {n} is nested more than {_MAX_DEPTH} levels deep"))
            continue
        if "observations" in item:
            tid = _lf_id(item.get("id"))
            if not tid:
                result.problems.append(TraceProblem(None, f"record {n}: a trace has no id (text)"))
                continue
            observations = item.get("observations")
            if not isinstance(observations, list):
                if observations is not None:
                    result.problems.append(TraceProblem(None, f"record {n} (trace {tid}): observations is "
                                                        f"{_kind(observations)}, not a list"))
                observations = []
            entry = traces.setdefault(tid, {"trace": {}, "observations": []})
            entry["trace"] = item
            for k, o in enumerate(observations):
                if isinstance(o, Mapping):
                    entry["observations"].append(o)
                else:
                    result.problems.append(TraceProblem(None, f"record {n} (trace {tid}): observations.{k} is "
                                                        f"{_kind(o)}, not an observation"))
        elif "traceId" in item:  # an observation exported alone
            tid = _lf_id(item["traceId"])
            if not tid:
                result.problems.append(TraceProblem(None, f"record {n}: traceId is {_shown(item['traceId'])}, "
                                                    "not a trace id"))
                continue
            traces.setdefault(tid, {"trace": {}, "observations": []})["observations"].append(item)
        else:
            result.problems.append(TraceProblem(None, f"record {n} is neither a Langfuse trace nor an "
                                                "observation"))
    result.traces = len(traces)
    for tid, entry in traces.items():
        row = _langfuse_row(tid, entry["trace"], entry["observations"], result)
        for o in entry["observations"]:
            for key in ("startTime", "endTime"):
                if o.get(key) not in (None, "") and _time(o.get(key)) is None:
                    result.problems.append(TraceProblem(tid, f"observation {_shown(o.get('id'))}: {key} "
                                                        f"{_shown(o.get(key))} is not a time; left out",
                                                        imported=row is not None))
        if row is not None:
            result.rows.append(row)
            session = entry["trace"].get("sessionId")
            starts = [t for o in entry["observations"] if (t := _time(o.get("startTime"))) is not None]
            start = _time(entry["trace"].get("timestamp")) or (min(starts) if starts else None)
            result.sessions[tid] = (_id_text(session) if session not in (None, "") else None, start)


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
            _drop(result, trace_id, f"retriever observation {_shown(o.get('id'))} has no readable documents in "
                  "its output (a list of documents with page_content, text or content)")
            return None
        for i, d in enumerate(got):
            d["score"] = _score(d["score"], f"retriever observation {_shown(o.get('id'))}: document {i} score",
                                trace_id, result)
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
    given = trace.get("latency")
    latency = _number(given)
    if latency is None:
        if given is not None:
            result.problems.append(TraceProblem(trace_id, f"latency {_shown(given)} is not a finite number; "
                                                "taken from the observations' times", imported=True,
                                                missing=False))
        starts = [t for o in obs if (t := _time(o.get("startTime"))) is not None]
        ends = [t for o in obs if (t := _time(o.get("endTime"))) is not None]
        latency = _number(max(ends) - min(starts)) if starts and ends else None
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
