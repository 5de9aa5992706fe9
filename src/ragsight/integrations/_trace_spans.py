"""OpenTelemetry spans read into one shape (:class:`_Span`): from the OTLP JSON format
(``resourceSpans`` / ``scopeSpans`` / ``spans``, attribute values typed) or one span per record
(the SDK's ``span.to_json()``, Phoenix's REST span and spans-dataframe records); ids in hex or
base64, times in nanoseconds or ISO text, attributes flattened to OpenInference's names. What of a
span cannot be read is left out and noted on it.
"""

from __future__ import annotations

import base64
import binascii
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from ._trace_common import (
    _MAX_DEPTH,
    TraceImport,
    TraceProblem,
    _flatten,
    _kind,
    _mend,
    _shown,
    _time,
    _too_deep,
)

_HEX = re.compile(r"[0-9a-fA-F]+")


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
