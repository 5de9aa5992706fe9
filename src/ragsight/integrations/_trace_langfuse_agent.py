"""A Langfuse agent trace (TOOL observations, no retriever) as a conversation row, from Langfuse's
export or its OpenTelemetry spans (:func:`langfuse_observations`), so the agent metrics run on it.

As Langfuse's own integrations write them (its LangChain ``CallbackHandler``, its OpenAI wrapper,
``start_as_current_observation(as_type=...)``):

- the request's input (the trace's, else its root observation's, an AGENT or a chain) is the
  user message, its output the answer (else the last GENERATION's text);
- each GENERATION's output message with ``tool_calls`` (LangChain's ``{name, args, id}`` or
  OpenAI's ``{id, function: {name, arguments}}``) is an assistant message with those calls, and
  its ``invalid_tool_calls`` (LangChain's calls whose arguments are not JSON) are kept as such;
- each TOOL observation is a tool result: its output (a LangChain ToolMessage dumped: content,
  ``tool_call_id``, ``status``; else the text or JSON), paired with its call by
  ``tool_call_id`` (the output's or the metadata's) else by name; level ERROR or ``status:
  error`` marks it failed. Without calls on the generations, each TOOL observation is a call
  of its own, its input the arguments;
- the tools the agent had: a GENERATION's input ``tools`` (OpenAI's request) or its input
  messages of role ``tool`` whose content is a tool's definition (what the CallbackHandler
  writes), and each TOOL observation's name.

The row has the OpenAI chat shape (``messages``, ``tools``), read like any chat log.
"""

from __future__ import annotations

import contextlib
import datetime as dt
import json
from collections.abc import Mapping, Sequence
from typing import Any

from ._trace_common import _ANSWER_KEYS, _QUESTION_KEYS, _json_or_text, _pick_text, _tool_step

__all__ = ["langfuse_agent_row", "langfuse_observations"]

_PREFIX = "langfuse.observation."


def _kind(o: Mapping[str, Any]) -> str:
    return str(o.get("type") or "").upper()


def _arguments(args: Any) -> str:
    """A call's arguments as OpenAI's JSON text (text given is kept as it is: it may be broken)."""
    if isinstance(args, str):
        return args
    return json.dumps({} if args is None else args, ensure_ascii=False, default=str)


def _calls(output: Any) -> tuple[list[dict[str, Any]], list[dict[str, Any]]]:
    """(calls in OpenAI's shape, LangChain's invalid calls) of a generation's output message."""
    value = _json_or_text(output)
    if isinstance(value, list):  # a list of messages or choices: the last assistant one
        value = next((m for m in reversed(value) if isinstance(m, Mapping)), None)
    if isinstance(value, Mapping) and isinstance(value.get("message"), Mapping):  # an OpenAI choice
        value = value["message"]
    if not isinstance(value, Mapping):
        return [], []
    out = []
    for c in value.get("tool_calls") or ():
        if not isinstance(c, Mapping):
            continue
        inner = c.get("function")
        fn: Mapping[str, Any] = inner if isinstance(inner, Mapping) else c
        name = fn.get("name")
        if isinstance(name, str) and name:
            args = fn.get("arguments") if "arguments" in fn else fn.get("args")
            cid = c.get("id")
            out.append({"id": cid if isinstance(cid, str) and cid else None, "type": "function",
                        "function": {"name": name, "arguments": _arguments(args)}})
    invalid = [dict(c) for c in value.get("invalid_tool_calls") or () if isinstance(c, Mapping)]
    return out, invalid


def _text(output: Any) -> str | None:
    value = _json_or_text(output)
    if isinstance(value, Mapping) and "content" in value and not isinstance(value.get("content"), str):
        return None
    return _pick_text(value, _ANSWER_KEYS)


def _result(o: Mapping[str, Any]) -> tuple[str, str | None, bool]:
    """(content, tool_call_id, failed) of a TOOL observation."""
    value = _json_or_text(o.get("output"))
    failed = str(o.get("level") or "").upper() == "ERROR"
    meta = o.get("metadata") if isinstance(o.get("metadata"), Mapping) else {}
    cid = meta.get("tool_call_id") if isinstance(meta, Mapping) else None
    if isinstance(value, Mapping):
        inner = value.get("data")
        data: Mapping[str, Any] = inner if isinstance(inner, Mapping) else value
        if isinstance(data.get("content"), str):
            own = data.get("tool_call_id")
            return data["content"], own if isinstance(own, str) else cid, failed or data.get("status") == "error"
        return json.dumps(value, ensure_ascii=False, sort_keys=True, default=str), cid, failed
    if isinstance(value, list):
        return json.dumps(value, ensure_ascii=False, default=str), cid, failed
    text = "" if value is None else str(value)
    if not text and o.get("statusMessage"):
        text = str(o["statusMessage"])
    return text, cid if isinstance(cid, str) else None, failed


def _tool_defs(value: Any) -> list[Mapping[str, Any]]:
    value = _json_or_text(value)
    found: list[Mapping[str, Any]] = []
    if isinstance(value, Mapping) and isinstance(value.get("tools"), list):
        found += [t for t in value["tools"] if isinstance(t, Mapping)]
        value = value.get("messages")
    if isinstance(value, list):
        for m in value:  # the CallbackHandler: {"role": "tool", "content": {a tool's definition}}
            if isinstance(m, Mapping) and m.get("role") == "tool" and isinstance(m.get("content"), Mapping):
                d = m["content"]
                if isinstance(d.get("function"), Mapping) or ("name" in d and ("parameters" in d or "input_schema" in d)):
                    found.append(d)
    return found


def _tools(obs: Sequence[Mapping[str, Any]]) -> list[dict[str, Any]]:
    tools: dict[str, dict[str, Any]] = {}
    for o in obs:
        if _kind(o) == "GENERATION":
            for d in _tool_defs(o.get("input")):
                fn = d.get("function") if isinstance(d.get("function"), Mapping) else d
                if isinstance(fn, Mapping) and isinstance(fn.get("name"), str):
                    tools.setdefault(fn["name"], dict(d))
    for o in obs:
        name = o.get("name")
        if _kind(o) == "TOOL" and isinstance(name, str) and name and name not in tools:
            tools[name] = {"name": name}
    return list(tools.values())


def _question(trace: Mapping[str, Any], root: Mapping[str, Any] | None, obs: Sequence[Mapping[str, Any]]) -> str | None:
    found = _pick_text(trace.get("input"), _QUESTION_KEYS)
    if found is None and root is not None and _kind(root) != "TOOL":
        found = _pick_text(root.get("input"), _QUESTION_KEYS)
    if found is None:  # the first generation's last user message
        gen = next((o for o in obs if _kind(o) == "GENERATION"), None)
        msgs = _json_or_text(gen.get("input")) if gen is not None else None
        if isinstance(msgs, list):
            users = [m.get("content") for m in msgs if isinstance(m, Mapping) and m.get("role") in ("user", "human")]
            found = next((u for u in reversed(users) if isinstance(u, str) and u.strip()), None)
    return found


def langfuse_agent_row(trace_id: str, trace: Mapping[str, Any], obs: Sequence[Mapping[str, Any]],
                       root: Mapping[str, Any] | None, meta: dict[str, Any]) -> dict[str, Any] | None:
    """The conversation row of an agent's trace (``obs`` in start order), or None when it has no
    TOOL observation or no question."""
    tool_obs = [o for o in obs if _kind(o) == "TOOL"]
    question = _question(trace, root, obs)
    if not tool_obs or question is None:
        return None
    messages: list[dict[str, Any]] = [{"role": "user", "content": question}]
    open_calls: list[dict[str, Any]] = []
    from_generations = any(_calls(o.get("output")) != ([], []) for o in obs if _kind(o) == "GENERATION")
    n = 0
    for o in obs:
        if _kind(o) == "GENERATION" and from_generations:
            calls, invalid = _calls(o.get("output"))
            for c in calls:
                n += 1
                c["id"] = c["id"] or f"call_{n}"
            if calls or invalid:
                msg: dict[str, Any] = {"role": "assistant", "content": "", "tool_calls": calls}
                if invalid:
                    msg["invalid_tool_calls"] = invalid
                messages.append(msg)
                open_calls.extend(calls)
        elif _kind(o) == "TOOL":
            name = str(o.get("name") or "tool")
            n = _tool_step(messages, open_calls, n, name, o.get("input"), _result(o), from_generations,
                           dump=_arguments)
    answer = _pick_text(trace.get("output"), _ANSWER_KEYS)
    if answer is None and root is not None and _kind(root) not in ("TOOL", "GENERATION"):
        answer = _pick_text(root.get("output"), _ANSWER_KEYS)
    if answer is None:
        answer = next((t for o in reversed(obs) if _kind(o) == "GENERATION" and (t := _text(o.get("output")))), None)
    messages.append({"role": "assistant", "content": answer or ""})
    row: dict[str, Any] = {"id": trace_id, "messages": messages,
                           "metadata": {**meta, "tool_observation_ids": [o.get("id") for o in tool_obs],
                                        "agent": True}}
    tools = _tools(obs)
    if tools:
        row["tools"] = tools
    return row


def _iso(ts: float | None) -> str | None:
    if ts is None:
        return None
    return dt.datetime.fromtimestamp(ts, dt.timezone.utc).isoformat().replace("+00:00", "Z")


def langfuse_observations(spans: Sequence[Any]) -> tuple[dict[str, Any], list[dict[str, Any]]] | None:
    """One trace's Langfuse OpenTelemetry spans (``langfuse.observation.type``, ``.input``,
    ``.output``, ``.level``, ``.status_message``, ``.metadata.*``; ``langfuse.trace.name``,
    ``session.id``, ``user.id``) as the trace and observations Langfuse's export writes; None
    when no span of the trace is Langfuse's."""
    if not any(_PREFIX + "type" in s.attributes for s in spans):
        return None
    trace: dict[str, Any] = {"id": spans[0].trace_id}
    obs = []
    for s in spans:
        a = s.attributes
        for key, field in (("langfuse.trace.name", "name"), ("session.id", "sessionId"), ("user.id", "userId")):
            if a.get(key) not in (None, "") and field not in trace:
                trace[field] = a[key]
        meta = {k[len(_PREFIX + "metadata."):]: _json_or_text(v) for k, v in a.items()
                if k.startswith(_PREFIX + "metadata.")}
        for k, v in list(meta.items()):  # v5 writes each metadata value as JSON: "call_1" with its quotes
            if isinstance(v, str) and len(v) >= 2 and v[0] == v[-1] == '"':
                with contextlib.suppress(ValueError):
                    meta[k] = json.loads(v)
        level = a.get(_PREFIX + "level") or ("ERROR" if s.status in ("ERROR", "STATUS_CODE_ERROR", "2") else None)
        obs.append({"id": s.span_id, "traceId": s.trace_id, "parentObservationId": s.parent_id,
                    "type": str(a.get(_PREFIX + "type") or "span").upper(), "name": s.name,
                    "input": a.get(_PREFIX + "input"), "output": a.get(_PREFIX + "output"),
                    "startTime": _iso(s.start), "endTime": _iso(s.end), "level": level,
                    "statusMessage": a.get(_PREFIX + "status_message") or s.status_message or None,
                    "metadata": meta})
    return trace, obs
