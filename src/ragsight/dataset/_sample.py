"""The frozen ``Sample`` type, the rule for an out-of-scope question, and the samples of a
conversation (``turn_samples``: one per assistant turn, then the conversation's own).

How rows become samples is in ``_reading.py``, how a data set is loaded in ``_dataset.py``.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field, fields
from typing import Any

from ._conversation import Conversation, History, ToolCall, Turn
from ._shapes import is_missing

__all__ = ["Sample", "SampleWarning", "is_out_of_scope", "turn_samples"]


class SampleWarning(UserWarning):
    """A data set loaded, but something in it looks like a mistake (e.g. a misspelt field)."""


_FALSE = {"false", "no", "0", "n", "f"}
_TRUE = {"true", "yes", "1", "y", "t"}


def _flag(value: Any) -> bool | None:
    """True / False from a bool, a number or the words CSV cells hold; None when unset."""
    if isinstance(value, bool):
        return value
    if isinstance(value, (int, float)) and not is_missing(value):
        return bool(value)
    if isinstance(value, str):
        v = value.strip().lower()
        if v in _TRUE:
            return True
        if v in _FALSE:
            return False
    return None


def is_out_of_scope(metadata: Mapping[str, Any]) -> bool:
    """The rule for an out-of-scope question (the documents do not answer it; the system
    should decline): ``metadata.question_type == "out_of_scope"`` (as ``ragsight generate``
    writes), ``answerable`` false, or ``out_of_scope`` true. A row's top-level ``answerable`` /
    ``out_of_scope`` / ``question_type`` fields land in metadata, so they count too."""
    if str(metadata.get("question_type", "")).strip().lower() in ("out_of_scope", "out-of-scope"):
        return True
    if _flag(metadata.get("answerable")) is False:
        return True
    return _flag(metadata.get("out_of_scope")) is True


@dataclass(frozen=True)
class Sample:
    """One evaluation sample. Every field but ``id`` is optional.

    ``reference`` is one string, or a tuple of acceptable answers (aliases) any of which counts.
    ``relevant_ids`` is a tuple of ids, or a mapping of id to graded relevance (0, 1, 2, ...).
    The fields after ``metadata`` are set for a turn of a conversation (``ragsight.conversation``).
    """

    id: str
    question: str | None = None
    contexts: tuple[str, ...] | None = None
    response: str | None = None
    reference: str | tuple[str, ...] | None = None
    reference_contexts: tuple[str, ...] | None = None
    retrieved_ids: tuple[str, ...] | None = None
    relevant_ids: tuple[str, ...] | Mapping[str, float] | None = None
    metadata: Mapping[str, Any] = field(default_factory=dict)
    # A turn of a conversation (ragsight.conversation): ``turn`` is the 0-based index of the
    # assistant turn within its conversation, ``history`` the turns before this turn's question.
    # A conversation-level sample has ``conversation_id`` and ``turn`` None, its turns in history.
    # The turns of a conversation share its messages: a turn's history is a ``History``, a view of
    # the first messages of one tuple, equal to the tuple of the same messages.
    conversation_id: str | None = None
    turn: int | None = None
    history: Sequence[Turn] | None = None
    tool_calls: tuple[ToolCall, ...] | None = None
    reference_tool_calls: tuple[ToolCall, ...] | None = None
    scenario: str | None = None
    expected_outcome: str | None = None
    system_role: str | None = None

    @property
    def reference_text(self) -> str | None:
        """The reference as one text (aliases joined with ' / '), for judge prompts."""
        if self.reference is None:
            return None
        if isinstance(self.reference, str):
            return self.reference
        return " / ".join(self.reference)

    @property
    def references(self) -> tuple[str, ...]:
        """All acceptable reference answers (one or more), or ()."""
        if self.reference is None:
            return ()
        if isinstance(self.reference, str):
            return (self.reference,)
        return tuple(self.reference)

    @property
    def out_of_scope(self) -> bool:
        """True when the question is marked out of scope (see :func:`is_out_of_scope`)."""
        return is_out_of_scope(self.metadata)

    def has(self, name: str) -> bool:
        """True when the field is present and not empty."""
        value = getattr(self, name)
        if value is None:
            return False
        if isinstance(value, str):
            return value.strip() != ""
        return len(value) > 0

    def to_dict(self) -> dict[str, Any]:
        out: dict[str, Any] = {}
        for f in fields(self):
            value = getattr(self, f.name)
            if isinstance(value, (tuple, History)):
                value = [v.to_dict() if isinstance(v, (Turn, ToolCall)) else v for v in value]
            elif isinstance(value, Mapping):
                value = dict(value)
            out[f.name] = value
        return out


def _calls(turns: Sequence[Turn]) -> tuple[ToolCall, ...]:
    return tuple(c for t in turns if t.role == "assistant" for c in t.tool_calls)


def _reference_calls(turns: Sequence[Turn]) -> tuple[ToolCall, ...] | None:
    given = [t.reference_tool_calls for t in turns if t.role == "assistant" and t.reference_tool_calls is not None]
    return None if not given else tuple(c for calls in given for c in calls)


INHERITED_KEY = "contexts_inherited_from_turn"
MAX_INHERITED_TURNS = 3  # how many assistant turns back a follow-up's contexts may come from


def _inherited(conv: Conversation, k: int) -> tuple[tuple[str, ...] | None, int | None]:
    """The evidence a follow-up with no contexts and no tool call of its own still had in view:
    the contexts (or tool results) of the latest of the :data:`MAX_INHERITED_TURNS` earlier
    assistant turns that had any, and that turn's index; (None, None) when none had."""
    turns = conv.turns
    answers = conv.assistant_turns
    for j in range(k - 1, max(-1, k - 1 - MAX_INHERITED_TURNS), -1):
        pos = answers[j]
        if turns[pos].contexts:
            return tuple(turns[pos].contexts or ()), j
        user = next((i for i in range(pos - 1, -1, -1) if turns[i].role == "user"), None)
        start = 0 if user is None else user + 1
        results = tuple(u.content for u in turns[start:pos] if u.role == "tool" and u.content.strip())
        if results:
            return results, j
    return None, None


def turn_samples(conversation: Conversation) -> list[Sample]:
    """The samples of a conversation: one per assistant turn (``conversation.assistant_turns``),
    then one conversation-level sample.

    A turn's sample: ``id`` ``CONV:K``, ``turn`` K (0-based among the assistant turns),
    ``question`` the user message it answers, ``response`` its content, ``contexts`` its own or,
    when it has none, the results of the tool calls made since that user message (agentic RAG
    retrieves through tools), or else the evidence of the latest of the last
    :data:`MAX_INHERITED_TURNS` turns that had any (the model still has it in its context window;
    ``metadata["contexts_inherited_from_turn"]`` names that turn), ``reference``, ``tool_calls`` (every call made since the user
    message; ``()`` when none was), ``reference_tool_calls``, ``history`` (the turns before the
    user message). The conversation's sample: ``id`` ``CONV``, ``turn`` None, every turn in
    ``history``, every call in ``tool_calls``. Both carry the scenario, expected outcome and system
    role, and the conversation's metadata.
    """
    conv = conversation
    turns = conv.turns
    meta = dict(conv.metadata)
    common: dict[str, Any] = {"conversation_id": conv.id, "scenario": conv.scenario,
                              "expected_outcome": conv.expected_outcome, "system_role": conv.system_role}
    out: list[Sample] = []
    for k, pos in enumerate(conv.assistant_turns):
        t = turns[pos]
        user = next((i for i in range(pos - 1, -1, -1) if turns[i].role == "user"), None)
        start = 0 if user is None else user + 1
        exchange = turns[start:pos + 1]
        contexts, ids_ = t.contexts, t.retrieved_ids
        turn_meta = meta
        if contexts is None:
            results = tuple(u.content for u in exchange if u.role == "tool" and u.content.strip())
            contexts = results or None
        if contexts is None and k > 0:
            contexts, source = _inherited(conv, k)
            if source is not None:
                turn_meta = {**meta, INHERITED_KEY: source}
        out.append(Sample(
            id=f"{conv.id}:{k}", question=None if user is None else turns[user].content, response=t.content,
            contexts=contexts, retrieved_ids=ids_, reference=t.reference, metadata=turn_meta, turn=k,
            history=History(turns, user) if user is not None else (), tool_calls=_calls(exchange),
            reference_tool_calls=_reference_calls(exchange), **common,
        ))
    out.append(Sample(id=conv.id, metadata=meta, history=turns, tool_calls=_calls(turns),
                      reference_tool_calls=conv.reference_tool_calls if conv.reference_tool_calls is not None
                      else _reference_calls(turns), **common))
    return out
