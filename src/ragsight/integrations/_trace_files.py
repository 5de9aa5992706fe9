"""Reading a trace file into JSON values: its text (UTF-8, or UTF-16/32 with a byte order mark;
line by line when only some lines are UTF-8), one JSON document or one per line or several one
after the other, a Parquet spans DataFrame as its records, arrays and ``{"data": [...]}``
envelopes unwrapped, and the format told apart by the records' fields.
"""

from __future__ import annotations

import codecs
import json
from collections.abc import Iterable, Iterator, Mapping, Sequence
from pathlib import Path
from typing import Any

from ..errors import InputError, MissingExtraError
from ._trace_common import _MAX_DEPTH, TraceProblem, _loads, _mend, _parse_int


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
