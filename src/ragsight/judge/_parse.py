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
                try:
                    value = json.loads(s[start : i + 1])
                except json.JSONDecodeError as exc:
                    raise OutputError(f"the JSON object does not parse: {exc.msg}") from exc
                if not isinstance(value, dict):
                    raise OutputError("expected a JSON object")
                return value
    raise OutputError("the JSON object is incomplete (the reply was cut off)")
