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
  arguments a JSON string), a tool message's ``tool_call_id``.
- ragsight's own: ``turns`` as :meth:`Conversation` writes them (``role``, ``content``,
  ``contexts``, ``retrieved_ids``, ``reference``, ``tool_calls``, ``reference_tool_calls``).
- DeepEval test cases and goldens with ``tools_called`` / ``expected_tools`` (its tool metric's
  fields): one exchange, the ``input`` a user turn and the ``actual_output`` the assistant turn with
  its calls, so that the tool-call metrics read them (a single-turn sample has no place for calls).

The same shapes written as text into a CSV cell are read too: DeepEval's ``save_as("csv")``
writes ``turns`` and ``tools_called`` as JSON; ragas' ``to_csv()`` and ``to_pandas().to_csv()``
write ``user_input`` and ``reference_tool_calls`` as Python prints them, a list of dicts or of
message objects (``[HumanMessage(content=..., type='human'), AIMessage(..., tool_calls=
[ToolCall(name=..., args={...})])]``). That text is read from its syntax tree: the known
constructors (:data:`MESSAGE_CALLS`) become dicts and every other value goes through
``ast.literal_eval``; nothing is run. A row read from Parquet, Arrow or a Hugging Face Dataset
(its list cells arrive as arrays, or a ragas human or tool message carries ``tool_calls``) has
each tool call's arguments padded with every other call's names, as null (Arrow gives the
structs of a column one type): there a null argument is an argument not given. Where the reader
guesses so (Python text, Arrow padding, a test case read as a conversation) it warns
(:class:`~ragsight.sample.SampleWarning`), once per kind.

A message that cannot be used raises :class:`FieldError` naming the conversation, the message
and the field (``turns[3].tools_called[0].input_parameters``); the caller reports the row.
"""

from __future__ import annotations

import ast
import hashlib
import json
import re
import warnings
from collections.abc import Mapping, Sequence
from typing import Any

from .._score import Evidence, Outcome, Score
from ._conversation import Conversation, ToolCall, Turn
from ._rows import _PANDAS_INDEX
from ._safety import check_safe
from ._shapes import FieldError, is_missing, norm_key, row_mapping, to_plain
from ._values import chunks, metadata, norm_id, text

__all__ = ["MESSAGE_CALLS", "conversation_aggregates", "conversation_shape", "metric_level", "parse_cell",
           "read_conversation", "sample_level"]

_RAGAS_TYPES = {"human": "user", "ai": "assistant", "tool": "tool", "system": "system"}
_ROLES = {"user": "user", "human": "user", "assistant": "assistant", "ai": "assistant", "bot": "assistant",
          "tool": "tool", "function": "tool", "system": "system", "developer": "system"}
# A conversation's id: the first of these keys the row has.
_ID_KEYS = ("conversation_id", "id", "session_id", "thread_id", "name")


def _as_map(value: Any) -> Mapping[str, Any] | None:
    return value if isinstance(value, Mapping) else row_mapping(value)


def _list_of_maps(value: Any) -> list[Mapping[str, Any]] | None:
    value = to_plain(value)  # a Parquet / pandas cell holds a numpy array
    if isinstance(value, str):  # a CSV cell: the list written as text
        got = parse_cell(value)
        value = got[0] if got is not None else None
    if not isinstance(value, (list, tuple)) or not value:
        return None
    out = [_as_map(v) for v in value]
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


def _from_node(node: ast.expr) -> Any:
    """A value of the syntax tree: a known constructor as the dict of its keywords (a message with
    its ``type``), lists and dicts item by item, anything else through ``ast.literal_eval``
    (which refuses names, calls and operators: nothing is run)."""
    if isinstance(node, ast.Call):
        name = node.func.id if isinstance(node.func, ast.Name) else None
        if name is None or name not in MESSAGE_CALLS or node.args or any(k.arg is None for k in node.keywords):
            raise ValueError(f"{ast.unparse(node.func)}(...) is not a message or a tool call")
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
        return json.loads(s), "json"
    except (ValueError, RecursionError):
        pass
    try:
        return _from_node(ast.parse(s, mode="eval").body), "python"
    except (SyntaxError, ValueError, TypeError, RecursionError, MemoryError):
        return None


def _unreadable_cell(value: Any) -> str | None:
    """Why a cell that shows a list of messages as Python text cannot be read (None: it can, or
    it is no such text)."""
    if not isinstance(value, str) or not _PY_MESSAGES.match(value.strip()):
        return None
    s = value.strip()
    try:
        _from_node(ast.parse(s, mode="eval").body)
    except SyntaxError as exc:
        return f"it does not parse ({exc.msg}{f' at character {exc.offset}' if exc.offset else ''})"
    except (ValueError, TypeError) as exc:
        return f"it holds more than literal values ({exc})"
    except (RecursionError, MemoryError):
        return "it nests too deeply"
    return None


def _is_array(value: Any) -> bool:
    """A list cell as Arrow gives it (numpy or pyarrow array): the row came from Parquet, Arrow or
    a Hugging Face Dataset through pandas."""
    return hasattr(value, "tolist") and not isinstance(value, (str, bytes)) and getattr(value, "ndim", 1) >= 1


def _without_nulls(value: Any) -> tuple[Any, bool]:
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
            out[k], inner = _without_nulls(v)
            dropped = dropped or inner
        return out, dropped
    if isinstance(value, (list, tuple)):
        items = [_without_nulls(to_plain(v)) for v in value]
        return [v for v, _ in items], any(d for _, d in items)
    return value, False


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
_CASE_TOOLS = ("tools_called", "expected_tools")
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
        msgs = _list_of_maps(raw[ui])
        if msgs is not None and all("type" in m or "role" in m for m in msgs):
            return "ragas"
        if _unreadable_cell(raw[ui]) is not None:
            return "ragas"  # Python text of messages that cannot be read: the reader says why
    if "turns" in keys:
        turns = _list_of_maps(raw[keys["turns"]])
        if turns is not None and all("role" in m or "input" in m for m in turns):
            deepeval = {"scenario", "expected_outcome", "chatbot_role", "user_description", "name"} & set(keys)
            styled = any(norm_key(k) in ("retrieval_context", "tools_called", "input", "actual_output")
                         for m in turns for k in m)
            return "deepeval" if deepeval or styled else "ragsight"
    if "messages" in keys:
        msgs = _list_of_maps(raw[keys["messages"]])
        if msgs is not None and all("role" in m for m in msgs):
            return "openai"
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
        self.arrow = any(_is_array(v) for v in raw.values())
        self.notes: list[str] = []  # what was guessed, warned once per kind by read_conversation

    def note(self, message: str) -> None:
        if message not in self.notes:
            self.notes.append(message)

    def cell(self, field: str, value: Any) -> Any:
        """``value``, or the list it holds as text (a CSV cell): JSON, or Python as it prints a
        list (noted). FieldError for Python text of messages that cannot be read."""
        if not isinstance(value, str):
            return value
        why = _unreadable_cell(value)
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
                pm = _as_map(p)
                if pm is not None and isinstance(pm.get("text"), str):
                    parts.append(pm["text"])
                elif isinstance(p, str):
                    parts.append(p)
            value = "\n".join(parts)
        try:
            return text(field, check_safe(field, value))
        except FieldError as exc:
            raise self.fail(field, exc.message, turn) from None

    def args(self, field: str, value: Any, turn: int) -> dict[str, Any]:
        if is_missing(value):
            return {}
        padded = self.arrow
        if isinstance(value, str):  # OpenAI: the arguments as a JSON string (never padded)
            padded = False
            try:
                value = json.loads(value) if value.strip() else {}
            except (json.JSONDecodeError, RecursionError) as exc:
                raise self.fail(field, f"the arguments are not valid JSON ({exc}); give a JSON object.", turn) from None
        value = _as_map(value)
        if value is None:
            raise self.fail(field, "the arguments must be an object of name: value.", turn)
        try:
            out = dict(check_safe(field, dict(value), nan_to_none=True))
        except FieldError as exc:
            raise self.fail(field, exc.message, turn) from None
        if padded:
            out, dropped = _without_nulls(out)
            if dropped:
                self.note(_WARN_ARROW)
        return out

    def tool_calls(self, field: str, value: Any, turn: int) -> tuple[ToolCall, ...]:
        value = self.cell(field, to_plain(value))
        if is_missing(value):
            return ()
        if not isinstance(value, (list, tuple)):
            raise self.fail(field, f"expected a list of tool calls, got {type(value).__name__}.", turn)
        out = []
        for i, item in enumerate(value):
            where = f"{field}[{i}]"
            m = _as_map(item)
            if m is None:
                raise self.fail(where, f"a tool call must be an object with a name, got {type(item).__name__}.", turn)
            fn = _as_map(m.get("function")) if m.get("function") is not None else None
            src = fn if fn is not None else m  # OpenAI: {id, type, function: {name, arguments}}
            name = src.get("name") if src.get("name") is not None else src.get("tool_name")
            if not isinstance(name, str) or not name.strip():
                raise self.fail(f"{where}.name", "a tool call has no name.", turn)
            arg_key = next((k for k in ("args", "arguments", "input_parameters", "inputParameters", "input")
                            if k in src), None)
            args = self.args(f"{where}.{arg_key or 'args'}", src.get(arg_key) if arg_key else None, turn)
            cid = m.get("id")
            out.append(ToolCall(name.strip(), args, None if is_missing(cid) else str(cid)))
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


def _message(r: _Reader, field: str, i: int, m: Mapping[str, Any], role: str) -> list[Turn]:
    """One message of the ragas, OpenAI or ragsight shapes (DeepEval has its own below)."""
    where = f"{field}[{i}]"
    content = m.get("content")
    calls: tuple[ToolCall, ...] = ()
    if isinstance(content, Mapping) and "tool_calls" in content:  # ragas AIMessage.to_dict()
        calls = r.tool_calls(f"{where}.content.tool_calls", content.get("tool_calls"), i)
        content = content.get("text")
    body = r.text(f"{where}.content", content, i) or ""
    if role != "assistant":
        if role == "tool":
            cid, name = m.get("tool_call_id"), m.get("name")
            return [Turn("tool", body, tool_call_id=None if is_missing(cid) else str(cid),
                         name=name if isinstance(name, str) else None)]
        return [Turn(role, body)]
    calls = calls or r.tool_calls(f"{where}.tool_calls", m.get("tool_calls"), i)
    ctx_key = next((k for k in ("contexts", "retrieved_contexts", "retrieval_context") if k in m), None)
    ctxs, ctx_ids = r.contexts(f"{where}.{ctx_key}", m[ctx_key], i) if ctx_key else (None, None)
    rid = m.get("retrieved_ids")
    if rid is not None:
        ctx_ids = tuple(str(x) for x in rid) if isinstance(rid, (list, tuple)) else ctx_ids
    ref = r.text(f"{where}.reference", m.get("reference"), i) if m.get("reference") is not None else None
    refc = m.get("reference_tool_calls")
    return [Turn("assistant", body, contexts=ctxs, retrieved_ids=ctx_ids, reference=ref, tool_calls=calls,
                 reference_tool_calls=None if refc is None else r.tool_calls(f"{where}.reference_tool_calls", refc, i))]


def _read_messages(r: _Reader, field: str, msgs: Sequence[Mapping[str, Any]], role_key: str,
                   roles: Mapping[str, str]) -> tuple[list[Turn], list[str]]:
    turns: list[Turn] = []
    system: list[str] = []
    for i, m in enumerate(msgs):
        raw_role = m.get(role_key)
        role = roles.get(str(raw_role).strip().lower()) if isinstance(raw_role, str) else None
        if role is None:
            known = ", ".join(sorted(set(roles)))
            raise r.fail(f"{field}[{i}].{role_key}", f"unknown {role_key} {raw_role!r}; use one of {known}.", i)
        got = _message(r, field, i, m, role)
        if role == "system":
            system.append(got[0].content)
        else:
            turns.extend(got)
    return turns, system


def _read_ragas(raw: Mapping[str, Any]) -> tuple[Conversation, list[str]]:
    """A ragas ``MultiTurnSample`` (``model_dump()`` / ``to_dict()`` or its JSON)."""
    r = _Reader(raw, "ragas")
    r.conv_id = _peek_id(r)
    field = r.keys["user_input"]
    msgs = _list_of_maps(r.cell(field, raw[field])) or []
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
        fields["reference_tool_calls"] = r.tool_calls(r.keys["reference_tool_calls"], refc, 0)
    if system:
        fields["system_role"] = "\n".join(system)
    meta = r.meta({"user_input", "reference", "reference_tool_calls"})
    return Conversation(_conversation_id(r, turns), tuple(turns), metadata=meta, **fields), r.notes


def _read_openai(raw: Mapping[str, Any]) -> tuple[Conversation, list[str]]:
    """OpenAI chat ``messages`` (a fine-tuning or chat-log row: ``{"messages": [...]}``)."""
    r = _Reader(raw, "openai")
    r.conv_id = _peek_id(r)
    field = r.keys["messages"]
    turns, system = _read_messages(r, field, _list_of_maps(r.cell(field, raw[field])) or [], "role", _ROLES)
    fields = r.conversation_fields()
    if system and "system_role" not in fields:
        fields["system_role"] = "\n".join(system)
    meta = r.meta({"messages", "scenario", "expected_outcome", "system_role", "chatbot_role"})
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
    called_key = mk.get("tools_called")
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
    expected = r.tool_calls(f"{at}{exp_key}", m[exp_key], i) if exp_key and not is_missing(
        to_plain(m[exp_key])) else None
    content = r.text(f"{at}content", m.get("content"), i) or ""
    outputs = []
    for j, c in enumerate(to_plain(called) or () if called_key else ()):
        cm = _as_map(c) or {}
        if "output" in cm and not is_missing(cm["output"]):
            out = cm["output"]
            if not isinstance(out, str):
                try:
                    out = json.dumps(check_safe(f"{at}{called_key}[{j}].output", out),
                                     ensure_ascii=False, sort_keys=True, default=str)
                except FieldError as exc:
                    raise r.fail(f"{at}{called_key}[{j}].output", exc.message, i) from None
            outputs.append(Turn("tool", out, name=calls[j].name))
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
    for i, m in enumerate(_list_of_maps(r.cell(field, raw[field])) or []):
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
        fields["reference_tool_calls"] = r.tool_calls(r.keys["reference_tool_calls"], refc, 0)
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


_READERS = {"ragas": _read_ragas, "openai": _read_openai, "deepeval": _read_deepeval, "ragsight": _read_deepeval,
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
    for note in notes:
        _warn(note)
    return conv


# ---- levels and aggregates ---------------------------------------------------------------------


def metric_level(metric: Any) -> str:
    """``turn`` (a single-turn sample, or one assistant turn) or ``conversation``."""
    return str(getattr(metric, "level", "turn"))


def sample_level(sample: Any) -> str:
    """``conversation`` for a conversation's own sample (``conversation_id`` set, ``turn``
    None), else ``turn``."""
    return "conversation" if getattr(sample, "conversation_id", None) is not None and \
        getattr(sample, "turn", None) is None else "turn"


def _aggregate(metric: str, turns: Sequence[tuple[int, Score]]) -> Score:
    counts = {o.value: 0 for o in Outcome}
    for _, s in turns:
        counts[s.outcome.value] += 1
    values = {t: s.value for t, s in turns if s.outcome is Outcome.SCORED and s.value is not None}
    shown = ", ".join(f"{n} {o}" for o, n in counts.items() if n)
    details = {"aggregate": "mean over the conversation's scored turns", "counts": counts,
               "turns": {str(t): v for t, v in values.items()}}
    if values:
        mean = sum(values.values()) / len(values)
        return Score(metric, Outcome.SCORED, mean, f"mean of {len(values)} scored turn(s) of {len(turns)} ({shown})",
                     Evidence(details=details))
    first = next((s.reason for _, s in turns if s.reason), "")
    for outcome in (Outcome.FAILED, Outcome.UNDETERMINED, Outcome.SKIPPED):
        if counts[outcome.value]:
            why = f"no turn scored ({shown})" + (f": {first}" if first else "")
            return Score(metric, outcome, None, why, Evidence(details=details))
    return Score(metric, Outcome.SKIPPED, None, "the conversation has no assistant turn", Evidence(details=details))


def conversation_aggregates(
    samples: Sequence[Any], scores: Mapping[str, Mapping[str, Score]], metrics: Sequence[str],
) -> dict[str, dict[str, Score]]:
    """Per conversation, per turn-level metric: the mean over its scored turns, as a Score
    whose outcome is ``scored`` when one turn or more scored, else the outcome of its turns
    (``failed`` before ``undetermined`` before ``skipped``), the four counts in its evidence.
    Conversations in the order of their first sample; a metric no turn was given is left out."""
    turns: dict[str, dict[str, list[tuple[int, Score]]]] = {}
    for s in samples:
        cid = getattr(s, "conversation_id", None)
        if cid is None:
            continue
        per = turns.setdefault(cid, {})
        if s.turn is None:
            continue
        got = scores.get(s.id, {})
        for m in metrics:
            if m in got:
                per.setdefault(m, []).append((s.turn, got[m]))
    return {cid: {m: _aggregate(m, per[m]) for m in metrics if m in per} for cid, per in turns.items()}
