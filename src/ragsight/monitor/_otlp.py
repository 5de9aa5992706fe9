"""An OTLP/HTTP trace export request decoded with the official ``opentelemetry-proto`` messages:
protobuf (``application/x-protobuf``) or JSON (``application/json``, ids in hex as OTLP/JSON
writes them), optionally gzip-compressed, within a size limit and a span limit; each span kept as
its serialized ``Span`` message, and read back into the OTLP JSON shape the trace readers of
``ragsight import-traces`` take.
"""

from __future__ import annotations

import base64
import binascii
import json
import re
import zlib
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import Any

from ..errors import MissingExtraError

__all__ = ["DecodeError", "TooLarge", "WireSpan", "decode_request", "otlp_document", "proto", "response_body"]

_HEX = re.compile(r"[0-9a-fA-F]*")


class DecodeError(ValueError):
    """A body that is not an OTLP trace export (answered 400)."""


class TooLarge(ValueError):
    """A body or a span count over the limits (answered 413)."""


def proto() -> Any:
    """The ``opentelemetry-proto`` modules (a namespace with the trace service's and the span's
    messages and protobuf's JSON mapping); MissingExtraError naming ``ragsight[monitor]`` when
    they are not installed."""
    try:
        from google.protobuf import json_format
        from google.protobuf.message import DecodeError as PbDecodeError
        from opentelemetry.proto.collector.trace.v1 import trace_service_pb2
        from opentelemetry.proto.trace.v1 import trace_pb2
    except ImportError as exc:
        raise MissingExtraError("ragsight monitor (the OTLP receiver)", "monitor",
                                getattr(exc, "name", None) or "opentelemetry.proto") from None

    class _P:
        Request = trace_service_pb2.ExportTraceServiceRequest
        Response = trace_service_pb2.ExportTraceServiceResponse
        Span = trace_pb2.Span
        ParseError = json_format.ParseError
        PbError = PbDecodeError
        to_dict = staticmethod(json_format.MessageToDict)
        from_dict = staticmethod(json_format.ParseDict)

    return _P


@dataclass(frozen=True)
class WireSpan:
    """One span of a request as it is stored: its ids (hex), and the ``Span`` message's bytes."""

    trace_id: str
    span_id: str
    parent_id: str | None
    data: bytes


def _gunzip(body: bytes, limit: int) -> bytes:
    """A gzip body inflated, refusing (TooLarge) more than ``limit`` bytes out (a small body
    that inflates to gigabytes is refused without inflating it all)."""
    d = zlib.decompressobj(16 + zlib.MAX_WBITS)
    try:
        out = d.decompress(body, limit + 1)
    except zlib.error as exc:
        raise DecodeError(f"the body is not valid gzip ({exc})") from None
    if len(out) > limit or d.unconsumed_tail:
        raise TooLarge(f"the body inflates to more than {limit:,} bytes")
    return out


def _hex_to_b64(value: Any, where: str, nbytes: int) -> Any:
    """An OTLP/JSON id (hex) in the form protobuf's JSON mapping reads (base64)."""
    if not isinstance(value, str) or value == "":
        return value
    if len(value) != 2 * nbytes or not _HEX.fullmatch(value):
        raise DecodeError(f"{where} {value[:40]!r} is not {nbytes} bytes in hex")
    return base64.b64encode(binascii.unhexlify(value)).decode("ascii")


def _json_request(body: bytes, P: Any) -> Any:
    try:
        doc = json.loads(body.decode("utf-8"))
    except (UnicodeDecodeError, ValueError, RecursionError) as exc:
        raise DecodeError(f"the body is not JSON ({type(exc).__name__}: {str(exc)[:120]})") from None
    if not isinstance(doc, dict):
        raise DecodeError("the body is not an OTLP trace export (a JSON object with resourceSpans)")
    for rs in _list(doc, "resourceSpans", "resource_spans"):
        for ss in _list(rs, "scopeSpans", "scope_spans"):
            for span in _list(ss, "spans"):
                if not isinstance(span, dict):
                    raise DecodeError("a span is not a JSON object")
                for key, n in (("traceId", 16), ("trace_id", 16), ("spanId", 8), ("span_id", 8),
                               ("parentSpanId", 8), ("parent_span_id", 8)):
                    if key in span:
                        span[key] = _hex_to_b64(span[key], key, n)
                for link in _list(span, "links"):
                    if isinstance(link, dict):
                        for key, n in (("traceId", 16), ("spanId", 8)):
                            if key in link:
                                link[key] = _hex_to_b64(link[key], f"link {key}", n)
    message = P.Request()
    try:
        P.from_dict(doc, message, ignore_unknown_fields=True)
    except (P.ParseError, ValueError, TypeError, RecursionError) as exc:
        raise DecodeError(f"the body is not an OTLP trace export ({str(exc)[:160]})") from None
    return message


def _list(container: Any, *keys: str) -> list[Any]:
    if not isinstance(container, dict):
        raise DecodeError("an OTLP object is not a JSON object")
    for key in keys:
        value = container.get(key)
        if value is None:
            continue
        if not isinstance(value, list):
            raise DecodeError(f"{key} is not a list")
        return value
    return []


def decode_request(body: bytes, content_type: str, encoding: str, *, max_bytes: int,
                   max_spans: int) -> tuple[list[WireSpan], bool]:
    """The spans of one export request, and whether it was JSON (the answer is in the same
    format). Raises DecodeError (400) or TooLarge (413)."""
    P = proto()
    if encoding not in ("", "identity", "gzip"):
        raise DecodeError(f"Content-Encoding {encoding!r} is not read; send gzip or none")
    if encoding == "gzip":
        body = _gunzip(body, max_bytes)
    kind = content_type.split(";")[0].strip().lower()
    as_json = kind == "application/json"
    if as_json:
        message = _json_request(body, P)
    elif kind in ("application/x-protobuf", "application/protobuf", ""):
        message = P.Request()
        try:
            message.ParseFromString(body)
        except (P.PbError, ValueError, RecursionError) as exc:
            raise DecodeError(f"the body is not an OTLP protobuf trace export ({str(exc)[:120]})") from None
    else:
        raise DecodeError(f"Content-Type {kind!r} is not an OTLP body; send application/x-protobuf or "
                          "application/json")
    spans: list[WireSpan] = []
    for rs in message.resource_spans:
        for ss in rs.scope_spans:
            for span in ss.spans:
                if len(spans) >= max_spans:
                    raise TooLarge(f"more than {max_spans:,} spans in one request")
                if len(span.trace_id) != 16 or len(span.span_id) != 8:
                    raise DecodeError("a span has no valid trace id (16 bytes) or span id (8 bytes)")
                parent = span.parent_span_id.hex() if len(span.parent_span_id) == 8 else None
                spans.append(WireSpan(span.trace_id.hex(), span.span_id.hex(), parent, span.SerializeToString()))
    return spans, as_json


def response_body(as_json: bool) -> tuple[bytes, str]:
    """The success answer: an empty ExportTraceServiceResponse, in the request's format."""
    if as_json:
        return b"{}", "application/json"
    return proto().Response().SerializeToString(), "application/x-protobuf"


def otlp_document(spans: Iterable[bytes]) -> dict[str, Any]:
    """Stored spans (serialized ``Span`` messages) as one OTLP JSON document (``resourceSpans``),
    the shape :func:`ragsight.integrations.traces_from_records` reads with ``format="otlp"``."""
    P = proto()
    out: list[dict[str, Any]] = []
    for data in spans:
        span = P.Span()
        span.ParseFromString(data)
        out.append(P.to_dict(span))
    return {"resourceSpans": [{"scopeSpans": [{"spans": out}]}]}


def span_times(spans: Sequence[bytes]) -> tuple[float | None, float | None]:
    """The earliest start and latest end (seconds) of stored spans."""
    P = proto()
    starts, ends = [], []
    for data in spans:
        span = P.Span()
        span.ParseFromString(data)
        if span.start_time_unix_nano:
            starts.append(span.start_time_unix_nano / 1e9)
        if span.end_time_unix_nano:
            ends.append(span.end_time_unix_nano / 1e9)
    return (min(starts) if starts else None, max(ends) if ends else None)
