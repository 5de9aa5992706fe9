"""Conversations: the data a chat or agent evaluation reads.

A conversation is an ordered list of turns (``user``, ``assistant``, ``tool``; an optional
``system`` turn). An assistant turn may carry what the turn-level metrics read: its retrieved
contexts (and their ids), a reference answer, the tool calls it made and the reference tool calls.
A conversation may carry a scenario, an expected outcome and a system role (the chatbot's role).

The engine does not know conversations. A conversation becomes samples (``turn_samples``): one
``Sample`` per assistant turn, with the earlier turns as ``history``, and one conversation-level
sample (``turn is None``) holding every turn, for the metrics that judge the whole conversation.
"""

from __future__ import annotations

import functools
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from itertools import islice
from typing import Any, overload

__all__ = ["ROLES", "Conversation", "History", "ToolCall", "Turn"]

ROLES = ("system", "user", "assistant", "tool")


@dataclass(frozen=True)
class ToolCall:
    """A call of a tool: its name and arguments (JSON values), and the id a provider gave it.

    An agent's call whose arguments arrived as text that is not a JSON object (a model's broken
    JSON) keeps that text in ``raw_args`` and why in ``args_error``, with ``args`` empty: the call
    was made, and the metrics count its arguments as invalid rather than losing the conversation."""

    name: str
    args: Mapping[str, Any] = field(default_factory=dict)
    id: str | None = None
    raw_args: str | None = None
    args_error: str | None = None

    @property
    def malformed(self) -> bool:
        """Whether the arguments could not be read (see ``raw_args``)."""
        return self.args_error is not None

    def to_dict(self) -> dict[str, Any]:
        out: dict[str, Any] = {"name": self.name, "args": dict(self.args)}
        if self.id is not None:
            out["id"] = self.id
        if self.args_error is not None:
            out["raw_args"] = self.raw_args
            out["args_error"] = self.args_error
        return out


@dataclass(frozen=True)
class Turn:
    """One message of a conversation.

    ``content`` is the text. For an assistant turn: ``contexts`` / ``retrieved_ids`` (what was
    retrieved for it), ``reference`` (a reference answer), ``tool_calls`` (the calls it made) and
    ``reference_tool_calls`` (the calls it should have made). For a tool turn: ``tool_call_id``
    and ``name`` say which call it answers, ``is_error`` that the data marks the result a
    failure (Anthropic's ``is_error``, LangChain's ``status="error"``, MCP's ``isError``).
    """

    role: str
    content: str = ""
    contexts: tuple[str, ...] | None = None
    retrieved_ids: tuple[str, ...] | None = None
    reference: str | None = None
    tool_calls: tuple[ToolCall, ...] = ()
    reference_tool_calls: tuple[ToolCall, ...] | None = None
    tool_call_id: str | None = None
    name: str | None = None
    is_error: bool = False

    def to_dict(self) -> dict[str, Any]:
        out: dict[str, Any] = {"role": self.role, "content": self.content}
        if self.contexts is not None:
            out["contexts"] = list(self.contexts)
        if self.retrieved_ids is not None:
            out["retrieved_ids"] = list(self.retrieved_ids)
        if self.reference is not None:
            out["reference"] = self.reference
        if self.tool_calls:
            out["tool_calls"] = [c.to_dict() for c in self.tool_calls]
        if self.reference_tool_calls is not None:
            out["reference_tool_calls"] = [c.to_dict() for c in self.reference_tool_calls]
        if self.tool_call_id is not None:
            out["tool_call_id"] = self.tool_call_id
        if self.name is not None:
            out["name"] = self.name
        if self.is_error:
            out["is_error"] = True
        return out


class History(Sequence[Turn]):
    """The first ``stop`` messages of a conversation's turns, without copying them.

    A turn of a conversation carries the messages before it (``Sample.history``); as a copy each,
    the turns of an n-message chat held about n²/4 references (a 40,000-message chat: 3.3 GB).
    A ``History`` is a view of the one tuple of the conversation's turns: a sequence (length,
    index, slices, iteration) equal to the tuple of the same messages, whatever holds them.
    Pickled, it carries only its own messages."""

    __slots__ = ("_base", "_stop")

    def __init__(self, turns: Sequence[Turn], stop: int | None = None) -> None:
        base: tuple[Turn, ...]
        if isinstance(turns, History):
            base, end = turns._base, turns._stop
        else:
            base = turns if isinstance(turns, tuple) else tuple(turns)
            end = len(base)
        self._base: tuple[Turn, ...] = base
        self._stop: int = end if stop is None else max(0, min(int(stop), end))

    def __len__(self) -> int:
        return self._stop

    @overload
    def __getitem__(self, index: int) -> Turn: ...

    @overload
    def __getitem__(self, index: slice) -> Sequence[Turn]: ...

    def __getitem__(self, index: int | slice) -> Turn | Sequence[Turn]:
        if isinstance(index, slice):
            start, stop, step = index.indices(self._stop)
            if start == 0 and step == 1:
                return History(self._base, max(stop, 0))  # a prefix: still a view
            if step > 0:
                return self._base[start:stop:step]
            return tuple(self._base[i] for i in range(start, stop, step))
        index = index.__index__()
        if index < 0:
            index += self._stop
        if not 0 <= index < self._stop:
            raise IndexError("history index out of range")
        return self._base[index]

    def __iter__(self) -> Iterator[Turn]:
        return islice(self._base, self._stop)  # at C speed, as a tuple's

    def __reversed__(self) -> Iterator[Turn]:
        return map(self._base.__getitem__, range(self._stop - 1, -1, -1))

    def __eq__(self, other: object) -> bool:
        if isinstance(other, History):
            if other._base is self._base:
                return other._stop == self._stop
        elif not isinstance(other, tuple):
            return NotImplemented
        if len(other) != self._stop:
            return False
        mine = self._base if self._stop == len(self._base) else self._base[:self._stop]
        return mine == (other if isinstance(other, tuple) else tuple(other))  # compared at C speed

    def __hash__(self) -> int:
        return hash(tuple(self))

    def __repr__(self) -> str:
        return f"History({tuple(self)!r})"

    def __reduce__(self) -> tuple[Any, ...]:
        if self._stop == len(self._base):
            return (History, (self._base,))
        return (History, (self._base[:self._stop],))


@dataclass(frozen=True)
class Conversation:
    """An ordered list of turns, with what the conversation-level metrics read."""

    id: str
    turns: tuple[Turn, ...]
    scenario: str | None = None
    expected_outcome: str | None = None
    system_role: str | None = None
    reference_tool_calls: tuple[ToolCall, ...] | None = None  # for the whole conversation
    metadata: Mapping[str, Any] = field(default_factory=dict)

    @functools.cached_property
    def assistant_turns(self) -> tuple[int, ...]:
        """Positions in ``turns`` of the assistant turns, in order (turn k is the k-th of them).

        An assistant message that calls tools and is followed by another assistant message
        before the next user message is a step of the turn after it, not a turn of its own (an
        agent's call, the tool's result, then its answer make one turn)."""
        out = []
        later: str | None = None  # the role of the next user or assistant message (one pass, backwards)
        for i in range(len(self.turns) - 1, -1, -1):
            t = self.turns[i]
            if t.role == "assistant" and not (t.tool_calls and later == "assistant"):
                out.append(i)
            if t.role in ("user", "assistant"):
                later = t.role
        return tuple(reversed(out))
