"""The analyses of one sample, each computed at most once.

A :class:`SampleAnalyses` is made by the engine for each sample. Metrics ask it for analyses
(``await sa.response_claims()``, ``await sa.response_vs_contexts()``...). Each analysis runs at
most once per sample: concurrent requests share one task. Each analysis lives in its own module
beside this one, with its two ways of asking the judge side by side:

- remote judges (no log-probabilities): one JSON call per step, all claims (or chunks, or
  sentences) of the sample together, with the expected count stated in the schema;
- the embedded judge (``supports_choices``): one yes/no call per item, read from next-token
  log-probabilities, the long shared text first and the item last, run back to back so the
  model reuses the prompt prefix.

This class keeps only what they share: the sample, the judge and embedder, the settings, the
memo, the batch lock of the embedded judge and the record of texts cut to fit the judge.
"""

from __future__ import annotations

import asyncio
import functools
from collections.abc import Awaitable, Callable, Sequence
from typing import Any, TypeVar

import numpy as np

from ..calls import Truncation
from ..dataset import Sample
from ..embed import Embedder, checked_vectors
from ..judge import Judge
from . import (
    _chunks,
    _claims,
    _conversation,
    _entities,
    _questions,
    _reference,
    _sentences,
    _short_answer,
    _verdicts,
)
from ._text import languages_apart
from ._types import (
    AddressVerdict,
    AnalysisSettings,
    ChunkJudgement,
    ClaimList,
    ConversationVerdicts,
    EntityList,
    GeneratedQuestions,
    SentenceLabels,
    ShortAnswer,
    VerdictList,
)

__all__ = ["SampleAnalyses"]

T = TypeVar("T")


def _mark_read(task: asyncio.Task[Any]) -> None:
    if not task.cancelled():
        task.exception()


class SampleAnalyses:
    """The analyses of one sample, each computed at most once."""

    def __init__(
        self,
        sample: Sample,
        judge: Judge | None,
        embedder: Embedder | None,
        settings: AnalysisSettings | None = None,
    ) -> None:
        self.sample = sample
        self.judge = judge
        self.embedder = embedder
        self.settings = settings or AnalysisSettings()
        self._memo: dict[str, asyncio.Task[Any]] = {}
        # The embedded judge runs one call at a time; a batch of yes/no calls that share a long
        # prefix must run back to back, not interleaved with another batch.
        self.batch = asyncio.Lock()
        self.truncations: list[Truncation] = []  # over-long texts cut to fit the judge (_budget)

    # ---- what a metric may use to build its own step ------------------------------------------

    def once(self, key: str, make: Callable[[], Awaitable[T]]) -> Awaitable[T]:
        """``make()`` run at most once per sample under ``key``; every caller awaits the same task."""
        task = self._memo.get(key)
        if task is None:
            task = asyncio.ensure_future(make())
            # its error reaches every caller through the shield; marked read here as well, so
            # that an analysis whose callers were all cancelled is not reported at exit
            task.add_done_callback(_mark_read)
            self._memo[key] = task
        return asyncio.shield(task)

    @property
    def embedded(self) -> bool:
        """Whether the run's judge is the embedded model (``local:...``), whose generated tokens
        are most of its time: answer relevancy asks it for fewer questions."""
        return self.judge is not None and self.judge.name.startswith("local:")

    @functools.cached_property
    def languages(self) -> tuple[str, str] | None:
        """(the language of the question, response and reference, that of the contexts) when the
        two differ (a German question and answer over English documents), else None. The claim
        verdicts against the contexts then leave word overlap out (it means nothing across
        languages), and the run counts the sample as judged across languages."""
        s = self.sample
        return languages_apart([s.question, s.response, s.reference_text], list(s.contexts or ()))

    @property
    def n_questions(self) -> int:
        """How many questions answer relevancy asks the judge for: ``embedded_questions`` for the
        embedded judge, ``n_questions`` for any other."""
        return self.settings.embedded_questions if self.embedded else self.settings.n_questions

    def cancel(self) -> list[asyncio.Task[Any]]:
        """Cancel the analyses still running (no metric waits for them any more: a metric that
        stopped the run, a cancelled sample); returns them."""
        pending = [t for t in self._memo.values() if not t.done()]
        for task in pending:
            task.cancel()
        return pending

    async def aclose(self) -> None:
        """End the sample's analyses: :meth:`cancel`, then wait until they have stopped. None is
        left running to send calls after its sample."""
        pending = self.cancel()
        if pending:
            await asyncio.gather(*pending, return_exceptions=True)

    def need_judge(self) -> Judge:
        """The run's judge, or a clear error when the run has none."""
        if self.judge is None:
            raise RuntimeError("this metric needs a judge, and none is configured")
        return self.judge

    async def verify(
        self, claims: Sequence[str], target: str, source: str, chunks: list[str] | None = None,
        *, reasons: bool = True,
    ) -> VerdictList:
        """Verdicts for ``claims`` against the fenced ``source`` (not memoised: wrap it in
        :meth:`once` with a key naming the target); ``reasons=False``: no reason asked."""
        return await _verdicts.verify(self, list(claims), target, source, chunks, reasons=reasons)

    async def embed(self, texts: Sequence[str], kind: str = "passage") -> np.ndarray:
        if self.embedder is None:
            raise RuntimeError("this metric needs an embedder, and none is configured")
        items = list(texts)
        # NaN, infinite or all-zero vectors fail here with their cause (EmbeddingError)
        return checked_vectors(await self.embedder.embed(items, kind=kind), items,
                               getattr(self.embedder, "name", type(self.embedder).__name__))

    # ---- claims (_claims.py) --------------------------------------------------------------------

    def response_claims(self) -> Awaitable[ClaimList]:
        return self.once("claims:response", lambda: _claims.extract(self, "response"))

    def reference_claims(self) -> Awaitable[ClaimList]:
        """The reference's facts, one claim each, every claim the judge wrote checked against
        the reference (analyses/_reference.py)."""
        return self.once("claims:reference", lambda: _reference.reference_claims(self))

    # ---- claim verdicts (_verdicts.py) ----------------------------------------------------------

    async def response_vs_contexts(self) -> VerdictList | None:
        """Response claims checked against the joined contexts (faithfulness). One judge step
        with :meth:`reference_vs_contexts` for remote judges. None when the run did not plan it
        (``Need.RESPONSE_VS_CONTEXTS``) or the sample has no response."""
        return _raised((await self.once("verdicts:contexts", lambda: _verdicts.against_contexts(self)))[0])

    async def reference_vs_contexts(self) -> VerdictList | None:
        """Reference claims checked against the joined contexts (context recall), sharing its
        judge step with :meth:`response_vs_contexts`."""
        return _raised((await self.once("verdicts:contexts", lambda: _verdicts.against_contexts(self)))[1])

    def response_vs_reference(self) -> Awaitable[VerdictList]:
        """Response claims checked against the reference (factual correctness TP/FP)."""
        return self.once("verdicts:response_vs_reference", lambda: _verdicts.response_vs_reference(self))

    def reference_vs_response(self) -> Awaitable[VerdictList]:
        """Reference claims checked against the response (factual correctness FN)."""
        return self.once("verdicts:reference_vs_response", lambda: _verdicts.reference_vs_response(self))

    def response_in_conversation(self) -> Awaitable[ConversationVerdicts]:
        """Response claims judged against the contexts read in the conversation (a turn with a
        history: references resolved through earlier turns, restatements of the user marked)."""
        return self.once("verdicts:conversation", lambda: _conversation.verdicts(self))

    # ---- the other analyses ---------------------------------------------------------------------

    def short_answer(self) -> Awaitable[ShortAnswer | None]:
        """The response graded as a whole when the reference is short-form ("Paris", or a list
        of aliases) and there is a question; None otherwise (claims are used instead)."""
        return self.once("short_answer", lambda: _short_answer.grade(self))

    def chunk_relevance(self, against: str) -> Awaitable[ChunkJudgement]:
        """Whether each retrieved chunk holds information the reference (or the response) needs,
        each chunk judged on its own (analyses/_chunks.py)."""
        return self.once(f"chunks:{against}", lambda: _chunks.relevance(self, against))

    def generated_questions(self) -> Awaitable[GeneratedQuestions]:
        """Questions the response answers; for a turn with a history, read in its conversation
        (with the user's question rewritten to stand alone)."""
        if self.sample.has("history"):
            return self.once("questions", lambda: _conversation.questions(self))
        return self.once("questions", lambda: _questions.generate(self))

    def addresses(self, question: str) -> Awaitable[AddressVerdict]:
        """Whether the response responds to ``question`` (answer relevancy with a judge that gives
        yes/no probabilities)."""
        return self.once(f"addresses:{question}", lambda: _questions.addresses(self, question))

    def entities(self, source: str) -> Awaitable[EntityList]:
        return self.once(f"entities:{source}", lambda: _entities.extract(self, source))

    def sentence_labels(self) -> Awaitable[SentenceLabels]:
        return self.once("sentences", lambda: _sentences.label(self))


def _raised(checked: VerdictList | Exception | None) -> VerdictList | None:
    """The verdicts, or the error that stopped their claims' extraction, raised for the metric
    that needs them (and only for it)."""
    if isinstance(checked, Exception):
        raise checked
    return checked
