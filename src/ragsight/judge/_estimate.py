"""A provider that answers without calling any model, for ``evaluate --dry-run``.

It wraps the run's real provider: the same name, model and identity (so the cache keys are the
real run's, and a step already in the cache is answered from there, as it would be), the same
token count, and a reply synthesised from the step's output schema by fixed rules, so that the
steps that depend on an earlier step's output (claims extracted, then verified) are rendered by
the real prompt code with plausible inputs. Nothing is sent anywhere.

The rules for a reply (documented in docs/cost.md):

- an array whose length the request states (one verdict per claim, ``n`` questions) has that
  many items;
- a list of claims or statements with no stated length has one item per sentence of the text it
  decomposes, each item that sentence; another list of strings (entities) one item of
  :data:`ITEM_WORDS` words per sentence;
- a ``reason`` is :data:`REASON_WORDS` words; a generated question is as long as the sample's
  question (else :data:`QUESTION_WORDS` words); other strings :data:`ITEM_WORDS` words;
- booleans are True (a claim is supported, a chunk relevant: no step that only follows a "no"
  is added), except ``noncommittal``, ``declines`` and ``copied``; an ``id`` numbers its item
  from 1, other integers are the schema's minimum or 1, a list of integers is ``[1]``;
- a log-probability step (the embedded judge) answers P(first choice) = 1.
"""

from __future__ import annotations

import json
import re
from collections.abc import Mapping, Sequence
from typing import Any

from ._protocol import ChoiceScores, Completion, JudgeProvider, JudgeRequest

__all__ = ["ESTIMATE_RULES", "EstimatingProvider"]

REASON_WORDS = 20
QUESTION_WORDS = 12
ITEM_WORDS = 3
MESSAGE_OVERHEAD = 4  # tokens a chat API adds per message (role and separators)

ESTIMATE_RULES = (
    "a list with a stated length has that many items; claims: one per sentence of the text they "
    f"come from; a reason {REASON_WORDS} words; every claim supported and every chunk relevant "
    "(no extra steps for a 'no')"
)

_SENTENCE = re.compile(r"(?<=[.!?。！？])\s*")
_FENCED = re.compile(r"<(response|reference|text|answer)\b[^>]*>\n?(.*?)\n?</\1>", re.S)
_FALSE = {"noncommittal", "declines", "copied"}


def sentences(text: str) -> list[str]:
    return [p.strip() for p in _SENTENCE.split(text.strip()) if len(p.strip()) > 3]


def _words(n: int) -> str:
    return " ".join(["word"] * n)


class EstimatingProvider:
    """Answers every request by the rules above, and counts what a real run would send:
    ``requests`` (those that reached it: the cache answered the rest)."""

    def __init__(self, inner: JudgeProvider) -> None:
        self.inner = inner
        self.name = inner.name
        self.model = inner.model
        self.supports_choices = inner.supports_choices
        self.max_concurrency = max(1, inner.max_concurrency)
        self.context_window = getattr(inner, "context_window", None)
        self.requests = 0
        from ._judge import provider_identity

        self._identity = provider_identity(inner)

    def identity(self) -> Mapping[str, Any]:
        return self._identity

    def count_tokens(self, text: str) -> int:
        if self.supports_choices:  # the embedded model's tokenizer means loading the model
            return -(-len(text) // 4)
        return self.inner.count_tokens(text)

    def _prompt_tokens(self, request: JudgeRequest) -> int:
        return sum(self.count_tokens(m.content) + MESSAGE_OVERHEAD for m in request.messages)

    async def complete(self, request: JudgeRequest) -> Completion:
        self.requests += 1
        reply = _synth(request.schema or {"type": "object", "properties": {}}, request, "")
        text = json.dumps(reply, ensure_ascii=False) if request.schema is not None else _words(REASON_WORDS)
        return Completion(text=text, prompt_tokens=self._prompt_tokens(request),
                          completion_tokens=self.count_tokens(text), finish_reason="stop",
                          model=self.model, structured="estimate")

    async def score_choices(self, request: JudgeRequest, choices: Sequence[str]) -> ChoiceScores:
        self.requests += 1
        probs = {c: (1.0 if i == 0 else 0.0) for i, c in enumerate(choices)}
        return ChoiceScores(probs=probs, prompt_tokens=self._prompt_tokens(request),
                            raw_logprobs={c: (0.0 if p else -100.0) for c, p in probs.items()})

    async def preflight(self) -> None:
        return None

    async def aclose(self) -> None:
        await self.inner.aclose()


def _source_text(request: JudgeRequest) -> str:
    raw = request.variables.get("raw_text")
    if isinstance(raw, str):
        return raw
    user = request.messages[-1].content if request.messages else ""
    found = _FENCED.findall(user)
    return found[-1][1] if found else user


def _string(name: str, request: JudgeRequest, index: int) -> str:
    n = name.lower()
    if "reason" in n:
        return _words(REASON_WORDS)
    if "question" in n:  # numbered: generated questions are distinct
        q = request.variables.get("question_text") or request.variables.get("raw_question")
        return f"{q if isinstance(q, str) and q else _words(QUESTION_WORDS - 1)} {index + 1}"
    return _words(ITEM_WORDS)


def _synth(schema: Mapping[str, Any], request: JudgeRequest, name: str, index: int = 0) -> Any:
    typ = schema.get("type")
    if "enum" in schema:
        return schema["enum"][0]
    if typ == "object" or (typ is None and "properties" in schema):
        return {k: _synth(v, request, k, index) for k, v in schema.get("properties", {}).items()}
    if typ == "array":
        item = schema.get("items", {})
        count = schema.get("minItems")
        if count is None:
            if item.get("type") == "integer":
                return [1]
            sents = sentences(_source_text(request))
            if item.get("type") == "string" and any(w in name for w in ("claim", "statement")):
                return sents
            count = len(sents)
        return [_synth(item, request, name.rstrip("s"), i) for i in range(int(count))]
    if typ == "boolean":
        return name not in _FALSE
    if typ == "integer":
        return index + 1 if name == "id" else int(schema.get("minimum", 1))
    if typ == "number":
        return float(schema.get("minimum", 1.0))
    if typ == "string":
        return _string(name, request, index)
    return None
