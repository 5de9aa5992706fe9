"""The shared parts of the trace import: what it gives (:class:`TraceImport`, with its
:class:`TraceProblem` list) and the readings of values that every trace format uses: JSON of any
integer length, the nesting limit, times, finite numbers, short forms for messages, a question or
an answer picked out of a request's input or output, a document's score, and the sample row.
"""

from __future__ import annotations

import datetime as dt
import json
import math
import re
from collections import Counter
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from ..dataset import atomic_write

__all__ = ["TRACE_FORMATS", "TraceImport", "TraceProblem"]


TRACE_FORMATS = ("auto", "otlp", "spans", "langfuse")
_QUESTION_KEYS = ("question", "query", "input", "user_input", "query_str", "prompt", "text")
_ANSWER_KEYS = ("answer", "output", "result", "response", "content", "text", "output_text")
_MAX_DEPTH = 100  # levels of JSON nesting in one span, trace or record (a real export has about 20)
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


def _tool_step(messages: list[dict[str, Any]], open_calls: list[dict[str, Any]], n: int, name: str,
               raw_input: Any, result: tuple[str, str | None, bool], called_by_llm: bool,
               dump: Callable[[Any], str] = json.dumps) -> int:
    """A TOOL step of an agent's trace into ``messages``: its call, made up from the step's input
    when no LLM step called it (``call_N``), else matched to an open call by id, then by name;
    then its result, an error when it failed. Returns the count of made-up calls."""
    content, cid, failed = result
    if not called_by_llm:
        n += 1
        args = _json_or_text(raw_input)
        args = args if isinstance(args, Mapping) else ({} if args in (None, "") else {"input": args})
        cid = f"call_{n}"
        messages.append({"role": "assistant", "content": "", "tool_calls": [
            {"id": cid, "type": "function", "function": {"name": name, "arguments": dump(args)}}]})
    else:
        match = next((c for c in open_calls if cid is not None and c["id"] == cid), None) or \
            next((c for c in open_calls if c["function"]["name"] == name), None)
        if match is not None:
            open_calls.remove(match)
            cid = match["id"]
    tool_msg: dict[str, Any] = {"role": "tool", "content": content, "name": name}
    if cid is not None:
        tool_msg["tool_call_id"] = cid
    if failed:
        tool_msg["is_error"] = True
    messages.append(tool_msg)
    return n
