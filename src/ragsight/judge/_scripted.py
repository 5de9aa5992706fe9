"""A deterministic judge for tests: answers come from handlers keyed by prompt id.

An unexpected prompt raises :class:`UnexpectedPromptError`, a BaseException, so it is never
mistaken for a judge failure and silently counted: the test fails loudly.
"""

from __future__ import annotations

import json
import math
from collections.abc import Callable, Mapping, Sequence
from typing import Any

from ._protocol import ChoiceScores, Completion, JudgeRequest

__all__ = ["ScriptedProvider", "UnexpectedPromptError"]

Handler = Callable[[Mapping[str, Any]], Any]


class UnexpectedPromptError(BaseException):
    """The scripted judge was asked something its script does not cover."""


class ScriptedProvider:
    """A provider whose replies are computed by handlers from the request's variables.

    ``handlers`` maps a prompt id to a function of the template variables that returns the
    reply: a dict (sent as JSON), a str (sent as is), or a :class:`Completion`.
    ``choice_handlers`` maps a prompt id to a function returning P(first choice) (e.g. P(Yes));
    giving any makes ``supports_choices`` True, like the embedded judge.
    Every request is appended to ``requests``.
    """

    def __init__(
        self,
        handlers: Mapping[str, Handler] | None = None,
        *,
        choice_handlers: Mapping[str, Callable[[Mapping[str, Any]], float]] | None = None,
        model: str = "scripted",
        max_concurrency: int = 8,
    ) -> None:
        self.handlers = dict(handlers or {})
        self.choice_handlers = dict(choice_handlers or {})
        self.name = f"scripted:{model}"
        self.model = model
        self.supports_choices = bool(self.choice_handlers)
        self.max_concurrency = max_concurrency
        self.context_window: int | None = None
        self.requests: list[JudgeRequest] = []

    def count_tokens(self, text: str) -> int:
        return max(1, len(text.split()))

    def calls_for(self, prompt_id: str) -> list[JudgeRequest]:
        return [r for r in self.requests if r.prompt_id == prompt_id]

    async def complete(self, request: JudgeRequest) -> Completion:
        self.requests.append(request)
        handler = self.handlers.get(request.prompt_id)
        if handler is None:
            raise UnexpectedPromptError(
                f"scripted judge has no handler for prompt '{request.prompt_id}'"
            )
        reply = handler(request.variables)
        if isinstance(reply, Completion):
            return reply
        text = reply if isinstance(reply, str) else json.dumps(reply)
        ptok = sum(self.count_tokens(m.content) for m in request.messages)
        return Completion(text=text, prompt_tokens=ptok, completion_tokens=self.count_tokens(text),
                          finish_reason="stop", model=self.model, structured="json_schema")

    async def score_choices(self, request: JudgeRequest, choices: Sequence[str]) -> ChoiceScores:
        self.requests.append(request)
        handler = self.choice_handlers.get(request.prompt_id)
        if handler is None:
            raise UnexpectedPromptError(
                f"scripted judge has no choice handler for prompt '{request.prompt_id}'"
            )
        p = float(handler(request.variables))
        probs = {choices[0]: p, **{c: (1.0 - p) / max(1, len(choices) - 1) for c in choices[1:]}}
        raw = {c: (math.log(v) if v > 0 else -100.0) for c, v in probs.items()}
        ptok = sum(self.count_tokens(m.content) for m in request.messages)
        return ChoiceScores(probs=probs, prompt_tokens=ptok, raw_logprobs=raw)

    async def preflight(self) -> None:
        return None

    async def aclose(self) -> None:
        return None
