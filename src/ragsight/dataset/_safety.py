"""Safety: what must never reach the store or the judge.

Every string anywhere in a row must be encodable as UTF-8 (a lone surrogate, half of an emoji, is
refused), nothing may nest deeper than ``MAX_DEPTH`` levels, and no number may have more than
``MAX_DIGITS`` digits: each is a row problem naming the row and field, never a crash of the run.
"""

from __future__ import annotations

import json
import math
import re
from collections.abc import Mapping
from typing import Any

from ._shapes import FieldError, to_plain

__all__ = ["MAX_DEPTH", "MAX_DIGITS", "SURROGATE", "HugeNumber", "check_safe", "deepest_key", "json_loads"]

MAX_DEPTH = 64
MAX_DIGITS = 4000  # below Python's own limit (4,300) for int <-> str
SURROGATE = re.compile("[\ud800-\udfff]")


class HugeNumber(str):
    """A JSON number too long to convert (the loader's parse_int hook returns it as text)."""


def _parse_int(text: str) -> int | HugeNumber:
    """json's parse_int: a number too long for int() stays text, reported by field later
    (:func:`check_safe`), instead of Python's ValueError from deep inside the parser."""
    return int(text) if len(text) <= MAX_DIGITS else HugeNumber(text)


def json_loads(text: str) -> Any:
    """``json.loads`` of a row or of JSON text in a cell, a number too long kept as
    :class:`HugeNumber`."""
    return json.loads(text, parse_int=_parse_int)


def check_safe(field_name: str, value: Any, path: str | None = None, depth: int = 0, *,
               nan_to_none: bool = False) -> Any:
    """The value, with NaN inside containers turned into None when ``nan_to_none`` (metadata:
    pandas writes a missing cell so); raises FieldError naming ``field_name`` for a lone
    surrogate, nesting deeper than
    MAX_DEPTH, a number longer than MAX_DIGITS digits, or an infinite number inside a
    container. ``path`` is the place reported (default: the field)."""
    where = path or field_name
    if depth > MAX_DEPTH:
        raise FieldError(field_name, f"'{where}' nests deeper than {MAX_DEPTH} levels; flatten it.")
    if isinstance(value, HugeNumber):
        raise FieldError(field_name, f"'{where}' is a number with {len(value.lstrip('-')):,} digits; give it as "
                         f"text if it is an identifier (a number may have at most {MAX_DIGITS:,} digits).")
    if isinstance(value, str):
        m = SURROGATE.search(value)
        if m:
            raise FieldError(field_name, f"'{where}' holds a lone surrogate (\\u{ord(m.group()):04x} at character "
                             f"{m.start()}), half of an emoji or other character cut in two, which cannot be "
                             "written as UTF-8. Fix the text where it was cut.")
        return value
    if isinstance(value, bool) or value is None:
        return value
    if isinstance(value, int):
        if value.bit_length() > MAX_DIGITS * 3.32:
            raise FieldError(field_name, f"'{where}' is a number with more than {MAX_DIGITS:,} digits; give it as text.")
        return value
    if isinstance(value, float):
        if math.isnan(value):
            return None if depth and nan_to_none else value
        if math.isinf(value) and depth:
            raise FieldError(field_name, f"'{where}' is infinite, which strict JSON cannot hold; give a finite "
                             "number or text.")
        return value
    value = to_plain(value)
    if isinstance(value, Mapping):
        out = {}
        for k, v in value.items():
            ks = k if isinstance(k, str) else str(to_plain(k))
            check_safe(field_name, ks, f"{where} (a key)", depth + 1)
            out[ks] = check_safe(field_name, v, f"{where}.{ks}", depth + 1, nan_to_none=nan_to_none)
        return out
    if isinstance(value, (list, tuple)):
        return [check_safe(field_name, v, f"{where}[{i}]", depth + 1, nan_to_none=nan_to_none)
                for i, v in enumerate(value)]
    return value


_KEY_RE = re.compile(r'"((?:[^"\\]|\\.)*)"\s*:')


def deepest_key(text: str, limit: int = MAX_DEPTH) -> tuple[str | None, int]:
    """For a JSON text that nests too deeply to parse: the top-level key under which nesting
    first passes ``limit`` levels (None when it is the row itself), and the line it is on."""
    depth = 0
    key: str | None = None
    in_str = False
    esc = False
    start = 0
    for i, ch in enumerate(text):
        if in_str:
            if esc:
                esc = False
            elif ch == "\\":
                esc = True
            elif ch == '"':
                in_str = False
                if depth == 1:
                    m = _KEY_RE.match(text, start)
                    if m:
                        key = m.group(1)
            continue
        if ch == '"':
            in_str = True
            start = i
        elif ch in "[{":
            depth += 1
            if depth > limit:
                return (key if key is not None and depth > 1 else None), text.count("\n", 0, i) + 1
        elif ch in "]}":
            depth -= 1
    return key, 1
