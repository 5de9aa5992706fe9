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

A message that cannot be used raises :class:`FieldError` naming the conversation, the message
and the field (``turns[3].tools_called[0].input_parameters``); the caller reports the row.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Mapping, Sequence
from typing import Any

from .._score import Evidence, Outcome, Score
from ._conversation import Conversation, ToolCall, Turn
from ._safety import check_safe
from ._shapes import FieldError, is_missing, norm_key, row_mapping, to_plain
from ._values import chunks, metadata, norm_id, text

__all__ = ["conversation_aggregates", "conversation_shape", "metric_level", "read_conversation", "sample_level"]

_RAGAS_TYPES = {"human": "user", "ai": "assistant", "tool": "tool", "system": "system"}
_ROLES = {"user": "user", "human": "user", "assistant": "assistant", "ai": "assistant", "bot": "assistant",
          "tool": "tool", "function": "tool", "system": "system", "developer": "system"}
# A conversation's id: the first of these keys the row has.
_ID_KEYS = ("conversation_id", "id", "session_id", "thread_id", "name")


def _as_map(value: Any) -> Mapping[str, Any] | None:
    return value if isinstance(value, Mapping) else row_mapping(value)


def _list_of_maps(value: Any) -> list[Mapping[str, Any]] | None:
    value = to_plain(value)  # a Parquet / pandas cell holds a numpy array
    if not isinstance(value, (list, tuple)) or not value:
        return None
    out = [_as_map(v) for v in value]
    return None if any(m is None for m in out) else out  # type: ignore[return-value]


def conversation_shape(raw: Mapping[str, Any]) -> str | None:
    """The tool whose conversation shape the row has (``ragas``, ``deepeval``, ``openai``,
    ``ragsight``), or None for a single-turn row."""
    keys = {norm_key(k): k for k in raw}
    ui = keys.get("user_input")
    if ui is not None:
        msgs = _list_of_maps(raw[ui])
        if msgs is not None and all("type" in m or "role" in m for m in msgs):
            return "ragas"
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
    return None


class _Reader:
    """Reads one conversation row; ``where`` names the place of an error."""

    def __init__(self, raw: Mapping[str, Any], shape: str) -> None:
        self.raw = raw
        self.shape = shape
        self.keys = {norm_key(k): k for k in raw}
        self.conv_id: str | None = None

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
        if isinstance(value, str):  # OpenAI: the arguments as a JSON string
            try:
                value = json.loads(value) if value.strip() else {}
            except (json.JSONDecodeError, RecursionError) as exc:
                raise self.fail(field, f"the arguments are not valid JSON ({exc}); give a JSON object.", turn) from None
        value = _as_map(value)
        if value is None:
            raise self.fail(field, "the arguments must be an object of name: value.", turn)
        try:
            return dict(check_safe(field, dict(value), nan_to_none=True))
        except FieldError as exc:
            raise self.fail(field, exc.message, turn) from None

    def tool_calls(self, field: str, value: Any, turn: int) -> tuple[ToolCall, ...]:
        value = to_plain(value)
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

    def contexts(self, field: str, value: Any, turn: int) -> tuple[tuple[str, ...] | None, tuple[str, ...] | None]:
        try:
            got = chunks(field, check_safe(field, value))
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
            if nk in used or nk in _ID_KEYS:
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


def read_ragas(raw: Mapping[str, Any]) -> Conversation:
    """A ragas ``MultiTurnSample`` (``model_dump()`` / ``to_dict()`` or its JSON)."""
    r = _Reader(raw, "ragas")
    r.conv_id = _peek_id(r)
    field = r.keys["user_input"]
    msgs = _list_of_maps(raw[field]) or []
    role_key = "type" if all("type" in m for m in msgs) else "role"
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
    return Conversation(_conversation_id(r, turns), tuple(turns), metadata=meta, **fields)


def read_openai(raw: Mapping[str, Any]) -> Conversation:
    """OpenAI chat ``messages`` (a fine-tuning or chat-log row: ``{"messages": [...]}``)."""
    r = _Reader(raw, "openai")
    r.conv_id = _peek_id(r)
    field = r.keys["messages"]
    turns, system = _read_messages(r, field, _list_of_maps(raw[field]) or [], "role", _ROLES)
    fields = r.conversation_fields()
    if system and "system_role" not in fields:
        fields["system_role"] = "\n".join(system)
    meta = r.meta({"messages", "scenario", "expected_outcome", "system_role", "chatbot_role"})
    return Conversation(_conversation_id(r, turns), tuple(turns), metadata=meta, **fields)


def read_deepeval(raw: Mapping[str, Any]) -> Conversation:
    """A DeepEval ``ConversationalTestCase`` (or a ragsight ``turns`` row). An assistant turn's
    ``tools_called`` with their ``output`` become a tool-calling step, the tools' results, then
    the answer, as the other shapes write them."""
    r = _Reader(raw, "deepeval")
    r.conv_id = _peek_id(r)
    field = r.keys["turns"]
    turns: list[Turn] = []
    system: list[str] = []
    for i, m in enumerate(_list_of_maps(raw[field]) or []):
        where = f"{field}[{i}]"
        mk = {norm_key(k): k for k in m}
        if "role" not in m and "input" in mk:  # an older DeepEval turn: an LLMTestCase
            turns.append(Turn("user", r.text(f"{where}.input", m[mk["input"]], i) or ""))
            m = {k: v for k, v in m.items() if k != mk["input"]}
            m["role"] = "assistant"
            m["content"] = m.get(mk.get("actual_output", "actual_output"))
            mk = {norm_key(k): k for k in m}
        raw_role = m.get("role")
        role = _ROLES.get(raw_role.strip().lower()) if isinstance(raw_role, str) else None
        if role is None:
            raise r.fail(f"{where}.role", f"unknown role {raw_role!r}; use user or assistant.", i)
        if role == "system":
            system.append(r.text(f"{where}.content", m.get("content"), i) or "")
            continue
        if role != "assistant":
            turns.extend(_message(r, field, i, m, role))
            continue
        called_key = mk.get("tools_called")
        calls = r.tool_calls(f"{where}.{called_key}", m[called_key], i) if called_key else ()
        if not calls:
            calls = r.tool_calls(f"{where}.tool_calls", m.get("tool_calls"), i)
        ctx_key = next((mk[k] for k in ("retrieval_context", "contexts", "retrieved_contexts") if k in mk), None)
        ctxs, ctx_ids = r.contexts(f"{where}.{ctx_key}", m[ctx_key], i) if ctx_key else (None, None)
        rid = m.get("retrieved_ids")
        if isinstance(rid, (list, tuple)):
            ctx_ids = tuple(str(x) for x in rid)
        ref_key = next((mk[k] for k in ("expected_output", "reference") if k in mk), None)
        ref = r.text(f"{where}.{ref_key}", m[ref_key], i) if ref_key and m[ref_key] is not None else None
        exp_key = next((mk[k] for k in ("expected_tools", "reference_tool_calls") if k in mk), None)
        expected = r.tool_calls(f"{where}.{exp_key}", m[exp_key], i) if exp_key and m[exp_key] is not None else None
        content = r.text(f"{where}.content", m.get("content"), i) or ""
        outputs = []
        if called_key:
            for j, c in enumerate(to_plain(m[called_key]) or ()):
                cm = _as_map(c) or {}
                if "output" in cm and not is_missing(cm["output"]):
                    out = cm["output"]
                    if not isinstance(out, str):
                        try:
                            out = json.dumps(check_safe(f"{where}.{called_key}[{j}].output", out),
                                             ensure_ascii=False, sort_keys=True, default=str)
                        except FieldError as exc:
                            raise r.fail(f"{where}.{called_key}[{j}].output", exc.message, i) from None
                    outputs.append(Turn("tool", out, name=calls[j].name))
        if outputs:  # the call, the tools' results, then the answer
            turns.append(Turn("assistant", "", tool_calls=calls))
            turns.extend(outputs)
            calls = ()
        turns.append(Turn("assistant", content, contexts=ctxs, retrieved_ids=ctx_ids, reference=ref,
                          tool_calls=calls, reference_tool_calls=expected))
    fields = r.conversation_fields()
    if system and "system_role" not in fields:
        fields["system_role"] = "\n".join(system)
    refc = r.get("reference_tool_calls")
    if refc is not None:
        fields["reference_tool_calls"] = r.tool_calls(r.keys["reference_tool_calls"], refc, 0)
    meta = r.meta({"turns", "scenario", "expected_outcome", "system_role", "chatbot_role", "reference_tool_calls"})
    return Conversation(_conversation_id(r, turns), tuple(turns), metadata=meta, **fields)


def _peek_id(r: _Reader) -> str | None:
    for nk in _ID_KEYS:
        k = r.keys.get(nk)
        if k is not None and isinstance(r.raw[k], (str, int)) and not isinstance(r.raw[k], bool):
            return str(r.raw[k]).strip() or None
    return None


_READERS = {"ragas": read_ragas, "openai": read_openai, "deepeval": read_deepeval, "ragsight": read_deepeval}


def read_conversation(raw: Mapping[str, Any], shape: str | None = None) -> Conversation:
    """The conversation of one row of any of the shapes above (``conversation_shape``)."""
    shape = shape or conversation_shape(raw)
    if shape is None:
        raise FieldError(None, "not a conversation: expected 'turns', 'messages' or a list 'user_input'.")
    conv = _READERS[shape](raw)
    if not any(t.role == "assistant" for t in conv.turns):
        raise FieldError(None, f"conversation '{conv.id}' has no assistant message: nothing to evaluate.")
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
