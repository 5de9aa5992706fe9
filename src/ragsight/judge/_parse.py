"""Deterministic repair and parsing of a judge's JSON output.

Repairs only what is safe: code fences, prose before or after the object, a byte-order mark. It
never closes a truncated object: an output cut at max_tokens is rejected, so a shorter list is
never taken for a complete one.
"""

from __future__ import annotations

import json
from typing import Any

__all__ = ["OutputError", "extract_json_object"]


class OutputError(ValueError):
    """The judge's output is not usable; the message is sent back to it when re-asking."""


def extract_json_object(text: str) -> dict[str, Any]:
    """Return the first complete top-level JSON object in ``text``.

    Prose around the object is skipped, and so is a brace-delimited span of prose that does not
    parse (``"see {above}: {...}"``): the search goes on after its end, never inside it, so a
    fragment of a broken object is never taken for the answer. A span that looks like a JSON
    object (``{"`` or ``{}``) but does not parse is an error, not skipped; a candidate that is
    never closed means the reply was cut off.

    Raises OutputError when there is none (e.g. prose only, or a truncated object).
    """
    s = text.strip().lstrip("\ufeff")
    if s.startswith("```"):
        s = s.split("\n", 1)[1] if "\n" in s else ""
        if "```" in s:
            s = s[: s.rindex("```")]
    start = s.find("{")
    if start < 0:
        raise OutputError("the reply contains no JSON object")
    first_error: str | None = None
    while start >= 0:
        end = _object_end(s, start)
        if end < 0:
            if first_error is not None:
                raise OutputError(first_error)
            raise OutputError("the JSON object is incomplete (the reply was cut off)")
        try:
            value = json.loads(s[start : end + 1])
        except json.JSONDecodeError as exc:
            if s[start + 1 : end + 1].lstrip()[:1] in ('"', "}"):
                raise OutputError(f"the JSON object does not parse: {exc.msg}") from exc
            first_error = first_error or f"the JSON object does not parse: {exc.msg}"
        else:
            if isinstance(value, dict):
                return value
            first_error = first_error or "expected a JSON object"
        start = s.find("{", end + 1)
    raise OutputError(first_error or "the reply contains no JSON object")


def _object_end(s: str, start: int) -> int:
    """Index of the brace that closes the object opened at ``start``, or -1 if it never closes."""
    depth = 0
    in_str = False
    escape = False
    for i in range(start, len(s)):
        ch = s[i]
        if in_str:
            if escape:
                escape = False
            elif ch == "\\":
                escape = True
            elif ch == '"':
                in_str = False
            continue
        if ch == '"':
            in_str = True
        elif ch == "{":
            depth += 1
        elif ch == "}":
            depth -= 1
            if depth == 0:
                return i
    return -1
