"""An agent's trace (OpenInference TOOL spans, no retriever) as a conversation row: the request
span's input is the user message; each LLM span's output tool calls
(``llm.output_messages.N.message.tool_calls.K.tool_call.*``) are an assistant message's calls; each
TOOL span's output is a tool result (a LangChain ToolMessage's content, tool_call_id and status
read from it; a failed span or ``status: error`` marks it failed); the request span's output is
the answer. Without LLM spans, each TOOL span is a call of its own (``tool.name``, arguments from
``input.value``). The tools the agent had: the LLM spans' ``llm.tools.N.tool.json_schema`` and
the TOOL spans' ``tool.name`` / ``tool.description`` / ``tool.parameters``. The row has the OpenAI
chat shape (``messages``, ``tools``), read like any chat log.
"""

from __future__ import annotations

import json
import re
from collections.abc import Mapping, Sequence
from typing import Any

from ._trace_common import _ANSWER_KEYS, _QUESTION_KEYS, _json_or_text, _pick_text, _tool_step
from ._trace_spans import _Span

__all__ = ["agent_row"]

_CALL_KEY = re.compile(r"^llm\.output_messages\.(\d+)\.message\.tool_calls\.(\d+)\.tool_call\.(id|function\.name|"
                       r"function\.arguments)$")
_TOOLS_KEY = re.compile(r"^llm\.tools\.(\d+)\.tool\.json_schema$")


def _failed(span: _Span) -> bool:
    return span.status in ("ERROR", "STATUS_CODE_ERROR", "2")


def _llm_calls(span: _Span) -> list[dict[str, Any]]:
    found: dict[tuple[int, int], dict[str, str]] = {}
    for key, value in span.attributes.items():
        m = _CALL_KEY.match(key)
        if m and isinstance(value, str):
            found.setdefault((int(m.group(1)), int(m.group(2))), {})[m.group(3)] = value
    out = []
    for _, c in sorted(found.items()):
        if c.get("function.name"):
            out.append({"id": c.get("id") or None, "type": "function",
                        "function": {"name": c["function.name"], "arguments": c.get("function.arguments") or "{}"}})
    return out


def _result(span: _Span) -> tuple[str, str | None, bool]:
    """(content, tool_call_id, failed) of a TOOL span's output."""
    value = _json_or_text(span.attributes.get("output.value"))
    failed = _failed(span)
    if isinstance(value, Mapping):
        inner = value.get("data")
        data: Mapping[str, Any] = inner if isinstance(inner, Mapping) else value  # a ToolMessage dumped
        content = data.get("content")
        if isinstance(content, str):
            cid = data.get("tool_call_id")
            return content, cid if isinstance(cid, str) else None, failed or data.get("status") == "error"
        return json.dumps(value, ensure_ascii=False, sort_keys=True), None, failed
    if isinstance(value, list):
        return json.dumps(value, ensure_ascii=False), None, failed
    text = "" if value is None else str(value)
    if not text and span.status_message:
        text = span.status_message
    return text, None, failed


def _tools(trace: Sequence[_Span]) -> list[dict[str, Any]]:
    tools: dict[str, dict[str, Any]] = {}
    for span in trace:
        for key, value in sorted(span.attributes.items()):
            if _TOOLS_KEY.match(key):
                got = _json_or_text(value)
                fn = got.get("function") if isinstance(got, Mapping) and isinstance(got.get("function"), Mapping) else got
                if isinstance(fn, Mapping) and isinstance(fn.get("name"), str):
                    tools.setdefault(fn["name"], dict(got) if isinstance(got, Mapping) else {})
        if span.kind == "TOOL":
            name = span.attributes.get("tool.name") or span.name
            if isinstance(name, str) and name and name not in tools:
                spec: dict[str, Any] = {"name": name}
                if isinstance(span.attributes.get("tool.description"), str):
                    spec["description"] = span.attributes["tool.description"]
                params = _json_or_text(span.attributes.get("tool.parameters"))
                if isinstance(params, Mapping) and params.get("type") == "object":
                    spec["parameters"] = dict(params)
                tools[name] = spec
    return list(tools.values())


def agent_row(trace_id: str, trace: Sequence[_Span], root: _Span, meta: dict[str, Any]) -> dict[str, Any] | None:
    """The conversation row of an agent's trace, or None when it has no TOOL span or no question."""
    tool_spans = [s for s in trace if s.kind == "TOOL"]
    question = _pick_text(root.attributes.get("input.value"), _QUESTION_KEYS)
    if not tool_spans or question is None:
        return None
    messages: list[dict[str, Any]] = [{"role": "user", "content": question}]
    open_calls: list[dict[str, Any]] = []  # made, not yet answered, in order
    llm_made = any(_llm_calls(s) for s in trace if s.kind == "LLM")
    n = 0
    for span in trace:  # in start order
        if span.kind == "LLM" and llm_made:
            calls = _llm_calls(span)
            for c in calls:
                n += 1
                c["id"] = c["id"] or f"call_{n}"
            if calls:
                messages.append({"role": "assistant", "content": "", "tool_calls": calls})
                open_calls.extend(calls)
        elif span.kind == "TOOL":
            name = span.attributes.get("tool.name") or span.name
            n = _tool_step(messages, open_calls, n, name, span.attributes.get("input.value"), _result(span), llm_made)
    answer = _pick_text(root.attributes.get("output.value"), _ANSWER_KEYS)
    messages.append({"role": "assistant", "content": answer or ""})
    row: dict[str, Any] = {"id": trace_id, "messages": messages, "metadata": {**meta, "agent": True}}
    tools = _tools(trace)
    if tools:
        row["tools"] = tools
    return row
