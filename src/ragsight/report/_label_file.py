"""Reading a label file strictly: its rows with their line numbers, a label value, a date.

A label file is JSONL, JSON (a list of objects) or CSV in UTF-8 (a byte-order mark is allowed).
Anything that cannot be read is an :class:`InputError` naming the file and the line: bytes that
are not UTF-8 (a file saved as Latin-1), JSON nested too deeply to read, a CSV cell that does not
parse. A label is read as documented and nothing else: true/false, yes/no, correct/wrong, pass/fail,
1/0, or (for a sample label) a plain decimal number; ``1_0`` (which Python's ``float`` reads as
10), ``0x1``, ``nan`` or ``inf`` are refused, and a claim label must say right or wrong (1/0 or
one of the words). A date must be ISO 8601; it is kept in UTC as the store writes its own
(``2026-11-26T13:05:00Z``), so the latest label is the latest in time, not in spelling.
"""

from __future__ import annotations

import csv
import io
import json
import math
import re
from collections.abc import Mapping
from datetime import datetime, timedelta, timezone
from pathlib import Path
from typing import Any

from ..errors import InputError

__all__ = ["parse_label_value", "parse_when", "read_label_file"]

_TRUE = frozenset({"1", "true", "yes", "y", "correct", "right", "pass", "positive"})
_FALSE = frozenset({"0", "false", "no", "n", "wrong", "incorrect", "fail", "negative"})
_DECIMAL = re.compile(r"[+-]?(?:[0-9]+(?:\.[0-9]*)?|\.[0-9]+)(?:[eE][+-]?[0-9]+)?")
_FUTURE = timedelta(days=1)
"""A label dated later than this after now is refused: it would stay 'the latest' for ever."""


def _decoded(data: bytes, source: str) -> str:
    """The file's text: UTF-8, with an optional byte-order mark."""
    try:
        return data.decode("utf-8-sig")
    except UnicodeDecodeError as exc:
        line = data[:exc.start].count(b"\n") + 1
        raise InputError(f"{source}, line {line}: not UTF-8 (byte 0x{data[exc.start]:02x}); save the file as "
                         "UTF-8 (a file saved as Latin-1 or Windows-1252 reads this way)") from None


def _json(text: str, where: str) -> Any:
    try:
        return json.loads(text)
    except json.JSONDecodeError as exc:
        raise InputError(f"{where}: not valid JSON ({exc.msg})") from None
    except RecursionError:
        raise InputError(f"{where}: JSON nested too deeply to read; a label row is one flat object") from None


def read_label_file(path: Path) -> list[tuple[int, Mapping[str, Any]]]:
    """The rows of a label file, each with where it is: its line (JSONL; a CSV's first line of
    the row, after the header) or its position in the list (JSON, from 1)."""
    source = str(path)
    try:
        data = path.read_bytes()
    except FileNotFoundError:
        raise InputError(f"labels file {source} does not exist") from None
    except OSError as exc:
        raise InputError(f"cannot read labels file {source}: {exc.strerror or exc}") from None
    text = _decoded(data, source)
    suffix = path.suffix.lower()
    if suffix == ".csv":
        return _csv_rows(text, source)
    if suffix == ".json":
        value = _json(text, source)
        if not isinstance(value, list):
            raise InputError(f"{source}: expected a JSON list of objects with 'id' and the label")
        rows: list[tuple[int, Mapping[str, Any]]] = []
        for n, item in enumerate(value, start=1):
            if not isinstance(item, Mapping):
                raise InputError(f"{source}, item {n}: expected an object with 'id' and the label, "
                                 f"not {type(item).__name__}")
            rows.append((n, item))
        return rows
    rows = []
    # splitlines() would also split at U+2028 and U+0085, which JSON allows inside a string
    for lineno, line in enumerate(text.split("\n"), start=1):
        if not line.strip():
            continue
        row = _json(line, f"{source}, line {lineno}")
        if not isinstance(row, Mapping):
            raise InputError(f"{source}, line {lineno}: expected an object with 'id' and the label")
        rows.append((lineno, row))
    return rows


def _csv_rows(text: str, source: str) -> list[tuple[int, Mapping[str, Any]]]:
    reader = csv.DictReader(io.StringIO(text, newline=""), strict=True)
    rows: list[tuple[int, Mapping[str, Any]]] = []
    line = 1
    # a cell may be as long as the file (csv's default limit is 131,072 characters)
    old_limit = csv.field_size_limit(max(csv.field_size_limit(), min(len(text) + 1, 2**31 - 1)))
    try:
        for row in reader:
            rows.append((line + 1, row))
            line = reader.line_num
    except csv.Error as exc:
        raise InputError(f"{source}, line {line + 1}: the CSV does not parse ({exc}); a cell that holds "
                         'quotes, commas or line breaks must be quoted, with quotes inside it doubled ("")') from None
    finally:
        csv.field_size_limit(old_limit)
    return rows


def parse_label_value(value: Any, *, claim: bool = False) -> float | None:
    """A label as a number; ``None`` for an empty one. ``claim``: a claim label, which says
    whether a verdict is right (1) or wrong (0) and nothing else. Raises ValueError saying why."""
    if value is None:
        return None
    if isinstance(value, bool):
        return 1.0 if value else 0.0
    if isinstance(value, (int, float)):
        try:
            x = float(value)
        except OverflowError:
            x = math.inf
        if not math.isfinite(x):
            raise ValueError(f"label {str(value)[:40]} is not a finite number")
    elif isinstance(value, str):
        text = value.strip().lower()
        if text == "":
            return None
        if text in _TRUE:
            return 1.0
        if text in _FALSE:
            return 0.0
        if not _DECIMAL.fullmatch(text):
            raise ValueError(f"label {value!r} is neither a number (like 0.75) nor a word such as yes/no, "
                             "true/false, pass/fail")
        x = float(text)
        if not math.isfinite(x):
            raise ValueError(f"label {value!r} is not a finite number")
    else:
        raise ValueError(f"label {value!r} is a {type(value).__name__}, not a number or yes/no")
    if claim and x not in (0.0, 1.0):
        raise ValueError(f"a claim label is 1 (the verdict is right) or 0 (wrong), or true/false, "
                         f"pass/fail; not {value!r}")
    return x


def parse_when(value: Any) -> str | None:
    """A label's date as the store keeps it (ISO 8601 in UTC, to the second); ``None`` when
    empty. A date without a time zone is read as UTC. Raises ValueError for anything that is not
    an ISO 8601 date, or a date more than a day ahead of now."""
    if value is None or (isinstance(value, str) and not value.strip()):
        return None
    if not isinstance(value, str):
        raise ValueError(f"'when' must be an ISO 8601 date (2026-11-26T13:05:00Z), not {value!r}")
    try:
        at = datetime.fromisoformat(value.strip())
    except ValueError:
        raise ValueError(f"'when' {value.strip()[:40]!r} is not an ISO 8601 date (2026-11-26T13:05:00Z)") from None
    if at.tzinfo is None:
        at = at.replace(tzinfo=timezone.utc)
    try:
        at = at.astimezone(timezone.utc)
    except OverflowError:
        raise ValueError(f"'when' {value.strip()[:40]!r} is out of range") from None
    if at > datetime.now(timezone.utc) + _FUTURE:
        raise ValueError(f"'when' {value.strip()[:40]!r} is in the future; it would count as the latest label "
                         "for ever")
    return at.replace(tzinfo=None).isoformat(timespec="seconds") + "Z"  # 4-digit years: sorts as it reads
