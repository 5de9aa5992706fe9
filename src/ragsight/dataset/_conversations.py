"""Conversations as other tools write them: one reader function per tool, each turning one row
into a :class:`~ragsight.conversation.Conversation`.

- ragas ``MultiTurnSample``: ``user_input`` is a list of messages with ``type`` ``human`` /
  ``ai`` / ``tool``, ``content``, and on ``ai`` messages ``tool_calls`` ``[{name, args}]`` (or, as
  ``AIMessage.to_dict`` writes it, ``content: {text, tool_calls}``); beside it ``reference`` (the
  outcome the conversation should reach), ``reference_tool_calls`` and ``reference_topics``.
- DeepEval ``ConversationalTestCase``: ``turns`` with ``role`` ``user`` / ``assistant``,
  ``content``, ``retrieval_context``, ``tools_called`` ``[{name, input_parameters, output}]``;
  beside them ``scenario``, ``expected_outcome``, ``chatbot_role``, ``user_description``,
  ``name`` (camelCase keys too, as a DeepEval test run file writes them). Older DeepEval turns
  (``input`` / ``actual_output`` test cases) are read as a user and an assistant turn.
- OpenAI chat ``messages``: ``system`` / ``user`` / ``assistant`` / ``tool``; an assistant
  message's ``tool_calls`` ``[{id, type: function, function: {name, arguments}}]`` (the
  arguments a JSON string), a tool message's ``tool_call_id``. Anthropic's content blocks in
  the same list: an assistant message's ``tool_use`` blocks are its calls, a user message's
  ``tool_result`` blocks the tools' results (``is_error`` kept).
- LangChain / LangGraph messages (``messages`` or ``user_input``: ``HumanMessage``,
  ``AIMessage`` with ``tool_calls``, ``ToolMessage`` with ``status``), as objects, as
  ``model_dump()`` writes them or as ``messages_to_dict`` does (``{type, data}``).
- The tools the agent had (the request's ``tools``, DeepEval's ``mcp_servers``) are read into
  ``metadata["tools"]`` by :mod:`._tools`.
- ragsight's own: ``turns`` as :meth:`Conversation` writes them (``role``, ``content``,
  ``contexts``, ``retrieved_ids``, ``reference``, ``tool_calls``, ``reference_tool_calls``).
- DeepEval test cases and goldens with ``tools_called`` / ``expected_tools`` (its tool metric's
  fields): one exchange, the ``input`` a user turn and the ``actual_output`` the assistant turn with
  its calls, so that the tool-call metrics read them (a single-turn sample has no place for calls).

The same shapes written as text into a CSV cell are read too (DeepEval's ``save_as("csv")`` as
JSON, ragas' ``to_csv()`` as Python prints a list: :mod:`._cells` reads it from its syntax tree,
nothing run). A row read from Parquet, Arrow or a Hugging Face Dataset (its list cells arrive as
arrays, or a ragas human or tool message carries ``tool_calls``) has each tool call's arguments
padded with every other call's names, as null: there a null argument is an argument not given.
Where the reader guesses so (Python text, Arrow padding, a test case read as a conversation) it
warns (:class:`~ragsight.sample.SampleWarning`), once per kind. A conversation's levels and
aggregates are in :mod:`._levels`.

A message that cannot be used raises :class:`FieldError` naming the conversation, the message
and the field (``turns[3].tools_called[0].input_parameters``); the caller reports the row.
"""

from __future__ import annotations

import hashlib
import json
import warnings
from collections.abc import Mapping, Sequence
from dataclasses import replace
from typing import Any

from ._cells import (
    as_map,
    is_array,
    list_of_maps,
    parse_cell,
    unreadable_cell,
    unusable_messages,
    without_nulls,
)
from ._conversation import Conversation, ToolCall, Turn
from ._rows import _PANDAS_INDEX
from ._safety import check_safe, json_loads
from ._shapes import FieldError, is_missing, norm_key, to_plain
from ._tools import with_tools
from ._values import chunks, metadata, norm_id, text

__all__ = ["conversation_shape", "read_conversation"]

_RAGAS_TYPES = {"human": "user", "ai": "assistant", "tool": "tool", "system": "system",
                "aimessagechunk": "assistant", "humanmessagechunk": "user", "toolmessagechunk": "tool"}
_ROLES = {"user": "user", "human": "user", "assistant": "assistant", "ai": "assistant", "bot": "assistant",
          "tool": "tool", "function": "tool", "system": "system", "developer": "system"}
# A conversation's id: the first of these keys the row has.
_ID_KEYS = ("conversation_id", "id", "session_id", "thread_id", "name")

_WARN_PYTHON = ("messages and tool calls written as Python text in a cell (ragas' to_csv(), a DataFrame's "
                "to_csv()) were read from the text's syntax tree as a conversation, nothing run; save the data "
                "with to_jsonl() to keep its types.")
_WARN_ARROW = ("tool-call arguments whose value is null were read as not given: a Parquet file, an Arrow table or "
               "a Hugging Face Dataset gives every call of a column the argument names of all the others, as "
               "null. Write JSONL (ragas: to_jsonl()) to keep a null you mean.")
_WARN_CASE = ("DeepEval test cases with tools_called / expected_tools are read as conversations of one "
              "exchange, so that the tool-call metrics read their calls: the exchange's sample id is NAME:0 (the "
              "test case's name, else c- and a hash of its input) and the test case's own sample is NAME.")
_WARN_CASE_CONTEXT = (" Their gold context ('context') has no place in a conversation and is kept in "
                      "metadata: the metrics that read reference_contexts skip them.")


def _warn(message: str) -> None:
    from ._sample import SampleWarning  # _sample reads this module: imported when needed

    warnings.warn(message, SampleWarning, stacklevel=3)


# A DeepEval test case's tool fields, and the fields of the exchange read with them.
_CASE_TOOLS = ("tools_called", "expected_tools", "mcp_tools_called")
# A chat's reference calls for the whole conversation: the first of these keys it has.
_REFERENCE_CALLS = ("reference_tool_calls", "expected_tool_calls", "expected_tools")
_CASE_FIELDS = ("input", "actual_output", "expected_output", "retrieval_context", *_CASE_TOOLS)


def _has_calls(value: Any) -> bool:
    value = to_plain(value)
    if isinstance(value, str):
        got = parse_cell(value)
        value = got[0] if got is not None else None
    return isinstance(value, (list, tuple)) and len(value) > 0


def conversation_shape(raw: Mapping[str, Any]) -> str | None:
    """The tool whose conversation shape the row has (``ragas``, ``deepeval``, ``openai``,
    ``ragsight``, or ``deepeval_case``: a DeepEval test case with tool calls), or None for a
    single-turn row."""
    keys = {norm_key(k): k for k in raw}
    ui = keys.get("user_input")
    if ui is not None:
        msgs = list_of_maps(raw[ui])
        if msgs is not None and all("type" in m or "role" in m for m in msgs):
            return "ragas"
        if unusable_messages(raw[ui]) is not None:
            return "ragas"  # text of a list of messages that cannot be read: the reader says why
    if "turns" in keys:
        turns = list_of_maps(raw[keys["turns"]])
        if turns is not None and all("role" in m or "input" in m for m in turns):
            deepeval = {"scenario", "expected_outcome", "chatbot_role", "user_description", "name"} & set(keys)
            styled = any(norm_key(k) in ("retrieval_context", "tools_called", "input", "actual_output")
                         for m in turns for k in m)
            return "deepeval" if deepeval or styled else "ragsight"
    if "messages" in keys:
        msgs = list_of_maps(raw[keys["messages"]])
        if msgs is not None and all("role" in m for m in msgs):
            return "openai"
        if msgs is not None and all(isinstance(m.get("type"), str) for m in msgs):
            return "langchain"  # LangChain / LangGraph messages (model_dump, messages_to_dict)
    if ("input" in keys or "actual_output" in keys) and any(
            _has_calls(raw[keys[k]]) for k in _CASE_TOOLS if k in keys):
        return "deepeval_case"
    return None


class _Reader:
    """Reads one conversation row; ``where`` names the place of an error."""

    def __init__(self, raw: Mapping[str, Any], shape: str) -> None:
        self.raw = raw
        self.shape = shape
        self.keys = {norm_key(k): k for k in raw}
        self.conv_id: str | None = None
        # list cells as Arrow gives them: null arguments are padding (see the module docstring)
        self.arrow = any(is_array(v) for v in raw.values())
        self.notes: list[str] = []  # what was guessed, warned once per kind by read_conversation

    def note(self, message: str) -> None:
        if message not in self.notes:
            self.notes.append(message)

    def cell(self, field: str, value: Any) -> Any:
        """``value``, or the list it holds as text (a CSV cell): JSON, or Python as it prints a
        list (noted). FieldError for Python text of messages that cannot be read."""
        if not isinstance(value, str):
            return value
        why = unreadable_cell(value)
        if why is not None:
            raise self.fail(field, f"the text is a list of messages as Python prints them, and {why}. Save "
                            "the data with to_jsonl() (ragas) or as JSON lines.")
        got = parse_cell(value)
        if got is None:
            return value
        if got[1] == "python":
            self.note(_WARN_PYTHON)
        return got[0]

    def get(self, *names: str) -> Any:
        for n in names:
            k = self.keys.get(n)
            if k is not None and not is_missing(self.raw[k]):
                return self.raw[k]
        return None

    def fail(self, field: str, message: str, turn: int | None = None) -> FieldError:
        who = f"conversation '{self.conv_id}'" if self.conv_id else "this conversation"
        at = f", message {turn}" if turn is not None else ""
        return FieldError(field, f"{who}{at}: {message}")

    def text(self, field: str, value: Any, turn: int | None = None) -> str | None:
        if isinstance(value, list):  # OpenAI content parts: [{"type": "text", "text": ...}]
            parts = []
            for p in value:
                pm = as_map(p)
                if pm is not None and isinstance(pm.get("text"), str):
                    parts.append(pm["text"])
                elif isinstance(p, str):
                    parts.append(p)
            value = "\n".join(parts)
        try:
            return text(field, check_safe(field, value))
        except FieldError as exc:
            raise self.fail(field, exc.message, turn) from None

    def args(self, field: str, value: Any, turn: int, reference: bool = True) -> dict[str, Any] | tuple[str, str]:
        """A call's arguments; for an agent's call (not ``reference``) whose arguments are text
        that is not a JSON object: (the text, why), kept on the call (``ToolCall.raw_args``)."""
        if is_missing(value):
            return {}
        padded = self.arrow
        if isinstance(value, str):  # OpenAI: the arguments as a JSON string (never padded)
            padded = False
            raw = value
            try:
                value = json_loads(value) if value.strip() else {}  # a number too long: said below
            except (ValueError, RecursionError) as exc:
                if not reference:
                    return raw, f"arguments are not JSON: {exc}"
                raise self.fail(field, f"the arguments are not valid JSON ({exc}); give a JSON object.", turn) from None
            if not reference and as_map(value) is None:
                return raw, f"arguments are not a JSON object: {type(value).__name__}"
        value = as_map(value)
        if value is None:
            raise self.fail(field, "the arguments must be an object of name: value.", turn)
        try:
            out = dict(check_safe(field, dict(value), nan_to_none=True))
        except FieldError as exc:
            raise self.fail(field, exc.message, turn) from None
        if padded:
            out, dropped = without_nulls(out)
            if dropped:
                self.note(_WARN_ARROW)
        return out

    def tool_calls(self, field: str, value: Any, turn: int, reference: bool = False) -> tuple[ToolCall, ...]:
        """The calls in ``value``. An agent's call whose arguments are text that is not a JSON
        object is kept with that text (``ToolCall.raw_args``); a reference call's is a FieldError."""
        value = self.cell(field, to_plain(value))
        if is_missing(value):
            return ()
        if not isinstance(value, (list, tuple)):
            raise self.fail(field, f"expected a list of tool calls, got {type(value).__name__}.", turn)
        out = []
        for i, item in enumerate(value):
            where = f"{field}[{i}]"
            m = as_map(item)
            if m is None:
                raise self.fail(where, f"a tool call must be an object with a name, got {type(item).__name__}.", turn)
            fn = as_map(m.get("function")) if m.get("function") is not None else None
            src = fn if fn is not None else m  # OpenAI: {id, type, function: {name, arguments}}
            name = src.get("name") if src.get("name") is not None else src.get("tool_name")
            if not isinstance(name, str) or not name.strip():
                raise self.fail(f"{where}.name", "a tool call has no name.", turn)
            arg_key = next((k for k in ("args", "arguments", "input_parameters", "inputParameters", "input")
                            if k in src), None)
            given = src.get(arg_key) if arg_key else None
            if arg_key is None and isinstance(src.get("raw_args"), str):  # ragsight's own, written back
                given = src["raw_args"]
            args = self.args(f"{where}.{arg_key or 'args'}", given, turn, reference)
            cid = None if is_missing(m.get("id")) else str(m.get("id"))
            if isinstance(args, tuple):
                out.append(ToolCall(name.strip(), {}, cid, raw_args=args[0], args_error=args[1]))
            else:
                out.append(ToolCall(name.strip(), args, cid))
        return tuple(out)

    def invalid_calls(self, field: str, value: Any, turn: int) -> tuple[ToolCall, ...]:
        """LangChain's ``AIMessage.invalid_tool_calls`` (``{name, args, id, error}``: a call whose
        arguments the model wrote as broken JSON), each kept as a call whose arguments are not
        JSON; one without a name is noted and left out."""
        value = to_plain(value)
        if is_missing(value) or not isinstance(value, (list, tuple)):
            return ()
        out = []
        for item in value:
            m = as_map(item)
            name = m.get("name") if m is not None else None
            if m is None or not isinstance(name, str) or not name.strip():
                self.note(f"a LangChain invalid tool call without a name ({field}) was left out: it names no tool")
                continue
            raw = m.get("args")
            raw_text = raw if isinstance(raw, str) else json.dumps(to_plain(raw), ensure_ascii=False, default=str)
            why = m.get("error") if isinstance(m.get("error"), str) and m.get("error") else "LangChain could not parse them"
            cid = None if is_missing(m.get("id")) else str(m.get("id"))
            out.append(ToolCall(name.strip(), {}, cid, raw_args=raw_text, args_error=f"arguments are not JSON: {why}"))
        return tuple(out)

    def contexts(self, field: str, value: Any, turn: int,
                 split: str | None = None) -> tuple[tuple[str, ...] | None, tuple[str, ...] | None]:
        try:
            got = chunks(field, check_safe(field, value), split)
        except FieldError as exc:
            raise self.fail(field, exc.message, turn) from None
        return (None, None) if got is None else got

    def conversation_fields(self) -> dict[str, Any]:
        out: dict[str, Any] = {}
        for name, keys in (("scenario", ("scenario",)), ("expected_outcome", ("expected_outcome",)),
                           ("system_role", ("system_role", "chatbot_role"))):
            value = self.get(*keys)
            if value is not None:
                out[name] = self.text(self.keys[next(k for k in keys if k in self.keys)], value)
        return out

    def meta(self, used: set[str]) -> dict[str, Any]:
        out: dict[str, Any] = {}
        for nk, k in self.keys.items():
            if nk in used or nk in _ID_KEYS or _PANDAS_INDEX.fullmatch(str(k)):
                continue
            value = self.raw[k]
            if is_missing(value):
                continue
            if nk in ("metadata", "additional_metadata"):
                try:
                    for mk, mv in metadata(check_safe(k, value)).items():
                        out.setdefault(mk, check_safe(k, mv, f"{k}.{mk}", depth=1, nan_to_none=True))
                except FieldError as exc:
                    raise self.fail(k, exc.message) from None
                continue
            try:
                out[str(k)] = check_safe(str(k), value, depth=1, nan_to_none=True)
            except FieldError as exc:
                raise self.fail(str(k), exc.message) from None
        return out


def _conversation_id(r: _Reader, turns: Sequence[Turn]) -> str:
    for nk in _ID_KEYS:
        k = r.keys.get(nk)
        if k is not None and not is_missing(r.raw[k]):
            try:
                return norm_id(str(k), r.raw[k])
            except FieldError as exc:
                raise r.fail(str(k), exc.message) from None
    basis = [[t.role, t.content] for t in turns if t.role == "user"]
    digest = hashlib.sha256(json.dumps(basis, ensure_ascii=False).encode())
    return "c-" + digest.hexdigest()[:12]


def _blocks(content: Any) -> list[Mapping[str, Any]]:
    """A message's content blocks (Anthropic, OpenAI content parts) as mappings; [] for text."""
    content = to_plain(content)
    if not isinstance(content, (list, tuple)):
        return []
    return [b for b in (as_map(x) for x in content) if b is not None]


def _message(r: _Reader, field: str, i: int, m: Mapping[str, Any], role: str,
             names: Mapping[str, str] | None = None) -> list[Turn]:
    """One message of the ragas, OpenAI, Anthropic, LangChain or ragsight shapes (DeepEval has
    its own below); ``names``: the tool of each call id so far (an Anthropic result names none)."""
    where = f"{field}[{i}]"
    content = m.get("content")
    calls: tuple[ToolCall, ...] = ()
    if isinstance(content, Mapping) and "tool_calls" in content:  # ragas AIMessage.to_dict()
        calls = r.tool_calls(f"{where}.content.tool_calls", content.get("tool_calls"), i)
        content = content.get("text")
    blocks = _blocks(content)
    body = r.text(f"{where}.content", content, i) or ""
    if role != "assistant":
        if role == "tool":
            cid, name = m.get("tool_call_id"), m.get("name")
            failed = m.get("is_error") is True or m.get("isError") is True or m.get("status") == "error"
            return [Turn("tool", body, tool_call_id=None if is_missing(cid) else str(cid),
                         name=name if isinstance(name, str) else None, is_error=failed)]
        results = [b for b in blocks if b.get("type") == "tool_result"]
        if results:  # Anthropic: a user message that carries the tools' results
            out = [Turn("tool", r.text(f"{where}.content", b.get("content"), i) or "",
                        tool_call_id=None if is_missing(b.get("tool_use_id")) else str(b.get("tool_use_id")),
                        name=(names or {}).get(str(b.get("tool_use_id"))), is_error=b.get("is_error") is True)
                   for b in results]
            return out + ([Turn(role, body)] if body.strip() else [])
        return [Turn(role, body)]
    uses = [b for b in blocks if b.get("type") == "tool_use"]
    if uses and not calls and not m.get("tool_calls"):  # Anthropic's tool_use blocks
        calls = r.tool_calls(f"{where}.content", uses, i)
    calls = calls or r.tool_calls(f"{where}.tool_calls", m.get("tool_calls"), i)
    calls += r.invalid_calls(f"{where}.invalid_tool_calls", m.get("invalid_tool_calls"), i)
    ctx_key = next((k for k in ("contexts", "retrieved_contexts", "retrieval_context") if k in m), None)
    ctxs, ctx_ids = r.contexts(f"{where}.{ctx_key}", m[ctx_key], i) if ctx_key else (None, None)
    rid = m.get("retrieved_ids")
    if rid is not None:
        ctx_ids = tuple(str(x) for x in rid) if isinstance(rid, (list, tuple)) else ctx_ids
    ref = r.text(f"{where}.reference", m.get("reference"), i) if m.get("reference") is not None else None
    refc = m.get("reference_tool_calls")
    return [Turn("assistant", body, contexts=ctxs, retrieved_ids=ctx_ids, reference=ref, tool_calls=calls,
                 reference_tool_calls=None if refc is None else r.tool_calls(f"{where}.reference_tool_calls", refc, i, True))]


def _read_messages(r: _Reader, field: str, msgs: Sequence[Mapping[str, Any]], role_key: str,
                   roles: Mapping[str, str]) -> tuple[list[Turn], list[str]]:
    turns: list[Turn] = []
    system: list[str] = []
    names: dict[str, str] = {}
    for i, m in enumerate(msgs):
        data = m.get("data")
        if isinstance(data, Mapping) and "type" in m and "content" not in m:  # LangChain's messages_to_dict
            m = {**data, "type": m["type"]}
        raw_role = m.get(role_key)
        role = roles.get(str(raw_role).strip().lower()) if isinstance(raw_role, str) else None
        if role is None:
            known = ", ".join(sorted(set(roles)))
            raise r.fail(f"{field}[{i}].{role_key}", f"unknown {role_key} {raw_role!r}; use one of {known}.", i)
        got = _message(r, field, i, m, role, names)
        names.update((c.id, c.name) for t in got for c in t.tool_calls if c.id)
        if role == "system":
            system.append(got[0].content)
        else:
            turns.extend(got)
    return turns, system


def _read_ragas(raw: Mapping[str, Any]) -> tuple[Conversation, list[str]]:
    """A ragas ``MultiTurnSample`` (``model_dump()`` / ``to_dict()`` or its JSON)."""
    r = _Reader(raw, "ragas")
    r.conv_id = _peek_id(r)
    field = r.keys.get("user_input") or r.keys["messages"]
    value = r.cell(field, raw[field])
    why = unusable_messages(raw[field])
    if why is not None:
        raise r.fail(field, f"the text is a list of messages as ragas' to_csv() writes them, and {why}. "
                     "Save the data with to_jsonl() (ragas) or as JSON lines.")
    msgs = list_of_maps(value) or []
    role_key = "type" if all("type" in m for m in msgs) else "role"
    if any("tool_calls" in m and m.get(role_key) in ("human", "tool", "user", "system") for m in msgs):
        r.arrow = True  # only Arrow gives a human or tool message tool_calls (a Hugging Face Dataset's rows)
    turns, system = _read_messages(r, field, msgs, role_key, {**_RAGAS_TYPES, **_ROLES})
    fields: dict[str, Any] = {}
    ref = r.get("reference")
    if ref is not None:  # ragas' reference: the outcome the conversation should reach
        fields["expected_outcome"] = r.text(r.keys["reference"], ref)
    refc = r.get("reference_tool_calls")
    if refc is not None:
        fields["reference_tool_calls"] = r.tool_calls(r.keys["reference_tool_calls"], refc, 0, True)
    if system:
        fields["system_role"] = "\n".join(system)
    meta = r.meta({"user_input", "messages", "reference", "reference_tool_calls"})
    return Conversation(_conversation_id(r, turns), tuple(turns), metadata=meta, **fields), r.notes


def _read_openai(raw: Mapping[str, Any]) -> tuple[Conversation, list[str]]:
    """OpenAI chat ``messages`` (a fine-tuning or chat-log row: ``{"messages": [...]}``)."""
    r = _Reader(raw, "openai")
    r.conv_id = _peek_id(r)
    field = r.keys["messages"]
    turns, system = _read_messages(r, field, list_of_maps(r.cell(field, raw[field])) or [], "role", _ROLES)
    fields = r.conversation_fields()
    if system and "system_role" not in fields:
        fields["system_role"] = "\n".join(system)
    ref_key = next((k for k in _REFERENCE_CALLS if k in r.keys and r.get(k) is not None), None)
    if ref_key is not None:  # the calls the whole conversation should make
        fields["reference_tool_calls"] = r.tool_calls(r.keys[ref_key], r.get(ref_key), 0, True)
    meta = r.meta({"messages", "scenario", "expected_outcome", "system_role", "chatbot_role", *_REFERENCE_CALLS})
    return Conversation(_conversation_id(r, turns), tuple(turns), metadata=meta, **fields), r.notes


def _deepeval_turn(r: _Reader, field: str | None, i: int, m: Mapping[str, Any],
                   split: str | None = None) -> list[Turn]:
    """Turn ``i`` of the list ``field`` (None: a test case's own fields, named as they are in
    errors). An assistant turn's ``tools_called`` with their ``output`` become a tool-calling
    step, the tools' results, then the answer, as the other shapes write them."""
    at = f"{field}[{i}]." if field else ""
    mk = {norm_key(k): k for k in m}
    turns: list[Turn] = []
    if "role" not in m and "input" in mk:  # an older DeepEval turn, or a test case: an LLMTestCase
        turns.append(Turn("user", r.text(f"{at}{mk['input']}", m[mk["input"]], i) or ""))
        m = {k: v for k, v in m.items() if k != mk["input"]}
        m["role"] = "assistant"
        m["content"] = m.get(mk.get("actual_output", "actual_output"))
        mk = {norm_key(k): k for k in m}
    raw_role = m.get("role")
    role = _ROLES.get(raw_role.strip().lower()) if isinstance(raw_role, str) else None
    if role is None:
        raise r.fail(f"{at}role", f"unknown role {raw_role!r}; use user or assistant.", i)
    if role == "system":
        return [Turn("system", r.text(f"{at}content", m.get("content"), i) or "")]
    if role != "assistant":
        return turns + _message(r, field or "", i, m, role)
    called_key = mk.get("tools_called") or mk.get("mcp_tools_called")  # MCPToolCall: name, args, result
    called = r.cell(f"{at}{called_key}", to_plain(m[called_key])) if called_key else None
    calls = r.tool_calls(f"{at}{called_key}", called, i) if called_key else ()
    if not calls:
        calls = r.tool_calls(f"{at}tool_calls", m.get("tool_calls"), i)
    ctx_key = next((mk[k] for k in ("retrieval_context", "contexts", "retrieved_contexts") if k in mk), None)
    ctxs, ctx_ids = r.contexts(f"{at}{ctx_key}", m[ctx_key], i, split) if ctx_key else (None, None)
    rid = m.get("retrieved_ids")
    if isinstance(rid, (list, tuple)):
        ctx_ids = tuple(str(x) for x in rid)
    ref_key = next((mk[k] for k in ("expected_output", "reference") if k in mk), None)
    ref = r.text(f"{at}{ref_key}", m[ref_key], i) if ref_key and not is_missing(m[ref_key]) else None
    exp_key = next((mk[k] for k in ("expected_tools", "reference_tool_calls") if k in mk), None)
    expected = r.tool_calls(f"{at}{exp_key}", m[exp_key], i, True) if exp_key and not is_missing(
        to_plain(m[exp_key])) else None
    content = r.text(f"{at}content", m.get("content"), i) or ""
    outputs = []
    for j, c in enumerate(to_plain(called) or () if called_key else ()):
        cm = dict(as_map(c) or {})
        result = as_map(cm.get("result")) if cm.get("result") is not None else None
        if "output" not in cm and result is not None:  # an MCP CallToolResult: its text blocks
            cm["output"] = "\n".join(str(b.get("text")) for b in _blocks(result.get("content")) if "text" in b)
            cm["is_error"] = result.get("isError") is True
        if "output" in cm and not is_missing(cm["output"]):
            out = cm["output"]
            if not isinstance(out, str):
                try:
                    out = json.dumps(check_safe(f"{at}{called_key}[{j}].output", out),
                                     ensure_ascii=False, sort_keys=True, default=str)
                except FieldError as exc:
                    raise r.fail(f"{at}{called_key}[{j}].output", exc.message, i) from None
            outputs.append(Turn("tool", out, name=calls[j].name, is_error=cm.get("is_error") is True))
    if outputs:  # the call, the tools' results, then the answer
        turns.append(Turn("assistant", "", tool_calls=calls))
        turns.extend(outputs)
        calls = ()
    turns.append(Turn("assistant", content, contexts=ctxs, retrieved_ids=ctx_ids, reference=ref,
                      tool_calls=calls, reference_tool_calls=expected))
    return turns


def _read_deepeval(raw: Mapping[str, Any]) -> tuple[Conversation, list[str]]:
    """A DeepEval ``ConversationalTestCase`` or ``ConversationalGolden`` (or a ragsight ``turns``
    row); its ``turns`` may be JSON text (``save_as("csv")``)."""
    r = _Reader(raw, "deepeval")
    r.conv_id = _peek_id(r)
    field = r.keys["turns"]
    turns: list[Turn] = []
    system: list[str] = []
    for i, m in enumerate(list_of_maps(r.cell(field, raw[field])) or []):
        for t in _deepeval_turn(r, field, i, m):
            if t.role == "system":
                system.append(t.content)
            else:
                turns.append(t)
    fields = r.conversation_fields()
    if system and "system_role" not in fields:
        fields["system_role"] = "\n".join(system)
    refc = r.get("reference_tool_calls")
    if refc is not None:
        fields["reference_tool_calls"] = r.tool_calls(r.keys["reference_tool_calls"], refc, 0, True)
    meta = r.meta({"turns", "scenario", "expected_outcome", "system_role", "chatbot_role", "reference_tool_calls"})
    return Conversation(_conversation_id(r, turns), tuple(turns), metadata=meta, **fields), r.notes


def _read_deepeval_case(raw: Mapping[str, Any]) -> tuple[Conversation, list[str]]:
    """A DeepEval ``LLMTestCase`` or ``Golden`` with ``tools_called`` / ``expected_tools`` (also
    as ``save_as`` writes them: JSON text in CSV, the retrieval context joined with ``|``): one
    exchange, so that its calls have a place (a single-turn sample has none)."""
    r = _Reader(raw, "deepeval")
    r.conv_id = _peek_id(r)
    case = {r.keys[k]: raw[r.keys[k]] for k in _CASE_FIELDS if k in r.keys}
    turns = _deepeval_turn(r, None, 0, case, split="|")
    r.note(_WARN_CASE + (_WARN_CASE_CONTEXT if not is_missing(to_plain(r.get("context"))) else ""))
    meta = r.meta(set(_CASE_FIELDS))
    return Conversation(_conversation_id(r, turns), tuple(turns), metadata=meta, **r.conversation_fields()), r.notes


def _peek_id(r: _Reader) -> str | None:
    for nk in _ID_KEYS:
        k = r.keys.get(nk)
        if k is not None and isinstance(r.raw[k], (str, int)) and not isinstance(r.raw[k], bool):
            return str(r.raw[k]).strip() or None
    return None


_READERS = {"ragas": _read_ragas, "langchain": _read_ragas, "openai": _read_openai, "deepeval": _read_deepeval, "ragsight": _read_deepeval,
            "deepeval_case": _read_deepeval_case}


def read_conversation(raw: Mapping[str, Any], shape: str | None = None) -> Conversation:
    """The conversation of one row of any of the shapes above (``conversation_shape``). What the
    reader guessed (Python text, Arrow padding, a test case read as a conversation) is warned
    (:class:`~ragsight.sample.SampleWarning`), once per kind."""
    shape = shape or conversation_shape(raw)
    if shape is None:
        raise FieldError(None, "not a conversation: expected 'turns', 'messages' or a list 'user_input'.")
    conv, notes = _READERS[shape](raw)
    if not any(t.role == "assistant" for t in conv.turns):
        raise FieldError(None, f"conversation '{conv.id}' has no assistant message: nothing to evaluate.")
    try:
        conv = replace(conv, metadata=with_tools(conv.metadata))
    except FieldError as exc:
        raise FieldError(exc.field_name, f"conversation '{conv.id}': {exc.message}") from None
    for note in notes:
        _warn(note)
    return conv
