"""Deterministic repair and parsing of a judge's JSON output.

Repairs only what is safe: code fences, prose before or after the object, a byte-order mark. It
never closes a truncated object whose list might have gone on: an output cut at max_tokens is
rejected, so a shorter list is never taken for a complete one. The one exception is a list that
was cut off while the judge was repeating itself (:func:`close_repeating_list`): its last items
repeat earlier ones, so what is lost is only more repeats.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from typing import Any

from ..errors import OutputError

__all__ = ["OutputError", "close_repeating_list", "extract_json_object"]

# A cut-off list is closed only when at least this many of its last complete items repeat earlier
# ones: a judge caught in a loop, not a long list.
MIN_REPEATS = 2


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


def _outside_strings(s: str, start: int) -> Iterator[tuple[int, str]]:
    """(index, character) of ``s`` from ``start`` outside JSON strings; a whole string is given
    once, as '"' at the index of its closing quote (an unclosed string gives nothing)."""
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
                yield i, ch
            continue
        if ch == '"':
            in_str = True
        else:
            yield i, ch


def _object_end(s: str, start: int) -> int:
    """Index of the brace that closes the object opened at ``start``, or -1 if it never closes."""
    depth = 0
    for i, ch in _outside_strings(s, start):
        if ch == "{":
            depth += 1
        elif ch == "}":
            depth -= 1
            if depth == 0:
                return i
    return -1


def close_repeating_list(text: str) -> dict[str, Any] | None:
    """Repair a reply cut off while the judge was repeating the items of a list, or None.

    The reply must be one JSON object whose last value is an open list of strings, e.g.
    ``{"claims": ["a", "b", "a", "b", "a``, whose last :data:`MIN_REPEATS` complete items or
    more all occur earlier in the list. The incomplete item is dropped, repeated items are kept
    once (in their first place) and the list and object are closed. The result says what was
    done under the key ``"_repair"``, so the trail shows it beside the raw output. Anything else
    (a list whose items are new, nested values, prose) gives None: the reply stays rejected.
    """
    s = text.strip().lstrip("\ufeff")
    start = s.find("{")
    if start < 0:
        return None
    stack: list[str] = []
    last_item_end = -1  # index after the last complete string item of a top-level list
    for i, ch in _outside_strings(s, start):
        if ch == '"':
            if stack == ["{", "["]:  # a string closed in the list is one of its items
                last_item_end = i + 1
        elif ch in "{[":
            stack.append(ch)
        elif ch in "}]":
            if not stack:
                return None
            stack.pop()
            if not stack:
                return None  # the object is complete: nothing to close
    if stack != ["{", "["] or last_item_end < 0:
        return None
    try:
        value = json.loads(s[start:last_item_end] + "]}")
    except json.JSONDecodeError:
        return None
    if not isinstance(value, dict) or not value:
        return None
    key = list(value)[-1]
    items = value[key]
    if not isinstance(items, list) or not all(isinstance(x, str) for x in items):
        return None
    repeats = 0
    for i in range(len(items) - 1, -1, -1):
        if items[i] not in items[:i]:
            break
        repeats += 1
    if repeats < MIN_REPEATS:
        return None
    kept = list(dict.fromkeys(items))
    value[key] = kept
    value["_repair"] = (f"the reply was cut off while repeating its list: {len(items)} complete items, "
                        f"{len(items) - len(kept)} of them repeats; the repeats and the cut item were "
                        "dropped and the list closed")
    return value
