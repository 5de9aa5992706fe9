"""The judge provider protocol: what a model backend must implement.

A provider does one thing: send one request to a model and return what came back. Retries,
timeouts, caching, concurrency limits, parsing and recording live in :class:`ragsight.judge.Judge`,
which wraps any provider.
"""

from __future__ import annotations

import warnings
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Protocol, runtime_checkable

from ..errors import ProviderError
from ..prompts import Message

__all__ = [
    "ChoiceScores",
    "Completion",
    "JudgeProvider",
    "JudgeRequest",
    "Message",
    "ProviderError",
]

MAX_TOKEN_COUNT = 10**12
"""A server's usage figure at or above this is no token count (a trillion tokens in one call)."""


class UsageReader:
    """Reads the token counts a server reports with an answer. A count is a whole number from 0
    below :data:`MAX_TOKEN_COUNT`; anything else (a bool, a float, ``1e400``, ``10**400``, a
    negative number, a string) is treated as missing, so the provider counts the tokens of the
    text instead, and the first such value is said once, as a warning. ``floor``: the least a
    true count can be (1 for the prompt of a call, or the reply of one that answered: a server
    reporting 0 for them would make every call free and a money limit blind)."""

    def __init__(self, who: str) -> None:
        self.who = who
        self.ignored = 0

    def count(self, value: Any, key: str, floor: int = 0) -> int | None:
        if isinstance(value, int) and not isinstance(value, bool) and floor <= value < MAX_TOKEN_COUNT:
            return value
        if value is not None:
            self.ignored += 1
            if self.ignored == 1:
                shown = repr(value) if not isinstance(value, int) or abs(value) < 10**30 else f"a {len(str(value))}-digit number"
                warnings.warn(f"the judge {self.who} reported {key} = {shown[:60]}, which is not a token count; the "
                              "tokens of such answers are counted from their text instead (their usage and cost "
                              "are estimates)", UserWarning, stacklevel=3)
        return None


@dataclass(frozen=True)
class JudgeRequest:
    """One model call. ``schema`` is the JSON schema the output must satisfy (an object), or None
    for free text. ``prompt_id``/``prompt_version`` name the template that rendered ``messages``."""

    prompt_id: str
    prompt_version: str
    messages: tuple[Message, ...]
    schema: Mapping[str, Any] | None = None
    max_tokens: int = 512
    temperature: float = 0.0
    seed: int | None = 0
    # The values the template was filled with (for scripted judges and records); providers
    # send ``messages`` only.
    variables: Mapping[str, Any] = field(default_factory=dict, compare=False)

    def to_dict(self) -> dict[str, Any]:
        return {
            "prompt_id": self.prompt_id,
            "prompt_version": self.prompt_version,
            "messages": [{"role": m.role, "content": m.content} for m in self.messages],
            "schema": self.schema,
            "max_tokens": self.max_tokens,
            "temperature": self.temperature,
            "seed": self.seed,
        }


@dataclass(frozen=True)
class Completion:
    """What the model returned for one request.

    ``finish_reason`` is "stop" for a complete answer and "length" when cut at max_tokens.
    ``structured`` says how the output was constrained: "json_schema", "json_object", "grammar"
    or "prompt" (the schema was only described in the prompt).
    ``top_logprobs`` holds, when the server returns them, the top candidates of the first output
    token as {token: logprob}.
    """

    text: str
    prompt_tokens: int = 0
    completion_tokens: int = 0
    finish_reason: str | None = "stop"
    model: str = ""
    structured: str = "prompt"
    top_logprobs: Mapping[str, float] | None = None


@dataclass(frozen=True)
class ChoiceScores:
    """Probabilities of a closed set of answers (e.g. Yes/No) read from next-token log-probs,
    normalised over the choices."""

    probs: Mapping[str, float]
    prompt_tokens: int = 0
    raw_logprobs: Mapping[str, float] = field(default_factory=dict)


@runtime_checkable
class JudgeProvider(Protocol):
    """A model backend. ``name`` is the spec the user gave (``"openai:gpt-4o-mini"``,
    ``"local:qwen2.5-coder-1.5b"``); ``model`` is the model identifier recorded with each call.

    ``supports_choices``: True when :meth:`score_choices` reads next-token log-probabilities (the
    embedded judge); analyses then verify one claim per call, ordered for prompt-prefix reuse.
    ``max_concurrency``: how many calls in flight make sense (1 for an in-process model).
    ``context_window``: prompt + output tokens the model accepts, or None when unknown.
    """

    name: str
    model: str
    supports_choices: bool
    max_concurrency: int
    context_window: int | None

    async def complete(self, request: JudgeRequest) -> Completion: ...

    async def score_choices(self, request: JudgeRequest, choices: Sequence[str]) -> ChoiceScores: ...

    def count_tokens(self, text: str) -> int: ...

    async def preflight(self) -> None:
        """One cheap call that fails fast (raising ProviderError with fatal=True, or
        JudgeUnavailableError) when the judge cannot be reached or rejects the key."""
        ...

    async def aclose(self) -> None: ...
