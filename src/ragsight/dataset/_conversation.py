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
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

__all__ = ["ROLES", "Conversation", "ToolCall", "Turn"]

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
