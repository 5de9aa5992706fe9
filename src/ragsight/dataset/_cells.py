"""Cells as other tools' files give them: a list written as text into a CSV cell, and a list
cell as Arrow gives it (Parquet, an Arrow table, a Hugging Face Dataset through pandas).

DeepEval's ``save_as("csv")`` writes lists as JSON; ragas' ``to_csv()`` and
``to_pandas().to_csv()`` write them as Python prints them, a list of dicts or of message objects
(``[HumanMessage(content=..., type='human'), AIMessage(..., tool_calls=[ToolCall(name=...,
args={...})])]``). That text is read from its syntax tree: the known constructors
(:data:`MESSAGE_CALLS`) become dicts and every other value goes through ``ast.literal_eval``;
nothing is run. Arrow gives the structs of a column one type, so each tool call's arguments come
padded with every other call's names, as null: :func:`without_nulls` takes them off.
"""

from __future__ import annotations

import ast
import re
from collections.abc import Mapping
from typing import Any

from ._safety import json_loads
from ._shapes import row_mapping, to_plain

__all__ = ["MESSAGE_CALLS", "as_map", "is_array", "list_of_maps", "parse_cell", "unreadable_cell", "unusable_messages",
           "without_nulls"]


def as_map(value: Any) -> Mapping[str, Any] | None:
    return value if isinstance(value, Mapping) else row_mapping(value)


def list_of_maps(value: Any) -> list[Mapping[str, Any]] | None:
    value = to_plain(value)  # a Parquet / pandas cell holds a numpy array
    if isinstance(value, str):  # a CSV cell: the list written as text
        got = parse_cell(value)
        value = got[0] if got is not None else None
    if not isinstance(value, (list, tuple)) or not value:
        return None
    out = [as_map(v) for v in value]
    return None if any(m is None for m in out) else out  # type: ignore[return-value]


# ---- lists written as text into a cell (CSV) -----------------------------------------------------

# The constructors a list of messages shows when Python prints it (ragas' messages and tool calls,
# LangChain's messages), with the message type each stands for (None: a tool call).
MESSAGE_CALLS: Mapping[str, str | None] = {
    "HumanMessage": "human", "AIMessage": "ai", "ToolMessage": "tool", "SystemMessage": "system",
    "ToolCall": None,
}
# Text that shows a list of messages as Python prints them (objects or dicts): read, or reported.
_PY_MESSAGES = re.compile(r"^\[\s*(?:(?:" + "|".join(MESSAGE_CALLS) + r")\(|\{\s*'(?:content|type|role|name)'\s*:)")


class _NotAMessage(ValueError):
    """A constructor in the text that is not one of :data:`MESSAGE_CALLS`."""


def _from_node(node: ast.expr) -> Any:
    """A value of the syntax tree: a known constructor as the dict of its keywords (a message with
    its ``type``), lists and dicts item by item, anything else through ``ast.literal_eval``
    (which refuses names, calls and operators: nothing is run)."""
    if isinstance(node, ast.Call):
        name = node.func.id if isinstance(node.func, ast.Name) else None
        if name is None or name not in MESSAGE_CALLS or node.args or any(k.arg is None for k in node.keywords):
            raise _NotAMessage(f"{ast.unparse(node.func)}(...), which is not a message or a tool call ragsight "
                               "reads")
        out = {str(k.arg): _from_node(k.value) for k in node.keywords}
        kind = MESSAGE_CALLS[name]
        if kind is not None:
            out.setdefault("type", kind)
        return out
    if isinstance(node, (ast.List, ast.Tuple)):
        return [_from_node(e) for e in node.elts]
    if isinstance(node, ast.Dict):
        if any(k is None for k in node.keys):
            raise ValueError("a dict with ** in it")
        return {ast.literal_eval(k): _from_node(v) for k, v in zip(node.keys, node.values) if k is not None}
    return ast.literal_eval(node)


def parse_cell(text: str) -> tuple[Any, str] | None:
    """A list written as text into a cell: (the value, ``json`` or ``python``), or None when the
    text is not a list. JSON first (DeepEval's CSV); then Python as it prints a list of dicts or
    of message objects (ragas' CSV), read from the syntax tree (:func:`_from_node`), never run."""
    s = text.strip()
    if not (s.startswith("[") and s.endswith("]")):
        return None
    try:
        return json_loads(s), "json"  # a number too long stays text, reported with its field
    except (ValueError, RecursionError):
        pass
    try:
        return _from_node(ast.parse(s, mode="eval").body), "python"
    except (SyntaxError, ValueError, TypeError, RecursionError, MemoryError):
        return None


def _why_not_read(s: str) -> str | None:
    """Why Python text of a list cannot be read from its syntax tree (None: it can)."""
    try:
        _from_node(ast.parse(s, mode="eval").body)
    except SyntaxError as exc:
        return f"it does not parse ({exc.msg}{f' at character {exc.offset}' if exc.offset else ''})"
    except _NotAMessage as exc:
        return f"it holds {exc}"
    except (ValueError, TypeError) as exc:
        return f"it holds more than literal values ({exc})"
    except (RecursionError, MemoryError):
        return "it nests too deeply"
    return None


def unreadable_cell(value: Any) -> str | None:
    """Why a cell that shows a list of messages as Python text cannot be read (None: it can, or
    it is no such text)."""
    if not isinstance(value, str) or not _PY_MESSAGES.match(value.strip()):
        return None
    return _why_not_read(value.strip())


# Text that shows a list as Python or JSON prints objects or dicts, or an empty list: what a list
# of messages looks like in a CSV cell (a question is not written so).
_LISTED = re.compile(r"^\[\s*(?:\]$|[A-Za-z_][\w.]*\s*\(|\{)")


def unusable_messages(value: Any) -> str | None:
    """Why a ``user_input`` cell that shows a list of objects or dicts (messages as ragas'
    ``to_csv()`` writes them) cannot be read as a conversation: it does not parse, holds what is
    not a literal or a known message, is empty, or holds an item that is not a message (a dict
    with a ``type`` or a ``role``). None when it can be read, or when it is no such text (a
    question)."""
    if not isinstance(value, str):
        return None
    s = value.strip()
    if not (_LISTED.match(s) and s.endswith("]")):
        return unreadable_cell(s)  # known messages cut short (a spreadsheet's cell limit) too
    got = parse_cell(s)
    if got is None:
        return _why_not_read(s) or "it is not a list"
    items = got[0]
    if not isinstance(items, list):
        return "it is not a list"
    if not items:
        return "it is empty: no messages"
    for i, item in enumerate(items):
        m = as_map(item)
        if m is None:
            return f"item {i} is not a message (a {type(item).__name__})"
        if "type" not in m and "role" not in m:
            return f"item {i} is not a message (it has neither a 'type' nor a 'role')"
    return None


def is_array(value: Any) -> bool:
    """A list cell as Arrow gives it (numpy or pyarrow array): the row came from Parquet, Arrow or
    a Hugging Face Dataset through pandas."""
    return hasattr(value, "tolist") and not isinstance(value, (str, bytes)) and getattr(value, "ndim", 1) >= 1


def without_nulls(value: Any) -> tuple[Any, bool]:
    """``value`` without the keys whose value is null, in every mapping inside it (lists keep
    their items), and whether any was dropped."""
    if isinstance(value, Mapping):
        out: dict[str, Any] = {}
        dropped = False
        for k, v in value.items():
            v = to_plain(v)
            if v is None:
                dropped = True
                continue
            out[k], inner = without_nulls(v)
            dropped = dropped or inner
        return out, dropped
    if isinstance(value, (list, tuple)):
        items = [without_nulls(to_plain(v)) for v in value]
        return [v for v, _ in items], any(d for _, d in items)
    return value, False
