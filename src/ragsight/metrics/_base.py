"""What a metric is: the fields it needs, the analyses it uses, and one async ``score``."""

from __future__ import annotations

from abc import ABC, abstractmethod
from typing import Any, ClassVar

from .._score import Score
from ..analyses import Need, SampleAnalyses
from ..dataset import Sample
from ..judge import Judge

__all__ = ["OUT_OF_SCOPE_SKIP", "Metric"]

OUT_OF_SCOPE_SKIP = "out-of-scope question: no relevant context to retrieve (see abstention)"
# A correctness metric has no answer to grade on an out-of-scope question: its reference is a
# decline, and whether the response was right to decline is the abstention metric's verdict.
OUT_OF_SCOPE_ANSWER_SKIP = "out-of-scope question: the documents hold no answer to grade (see abstention)"


def with_pipeline_error(sample: Sample, reason: str) -> str:
    """A missing-field skip reason, led by the pipeline's error when the pipeline's call failed.

    Rows made by ``ragsight answer``, the LangChain / LlamaIndex adapters and the sweep carry
    ``metadata.error`` when the system under test raised; such a row has no response, and
    "sample has no response" alone would hide why. Other skips (out of scope, a missing
    reference while a response is there) are left as they are.
    """
    error = sample.metadata.get("error")
    if not error or sample.has("response") or not reason.startswith("sample has no "):
        return reason
    text = " ".join(str(error).split())
    if len(text) > 200:
        text = text[:199] + "…"
    return f"the pipeline failed on this question (metadata.error: {text}): {reason}"


class Metric(ABC):
    """A metric. Subclasses set the class attributes and implement :meth:`compute`.

    ``requires``: sample fields that must be present (else the result is ``skipped``);
    ``requires_any``: groups of fields of which at least one must be present;
    ``needs_judge`` / ``needs_embedder``: what the run must provide;
    ``needs``: shared analyses this metric needs planned for the run (``Need`` members);
    ``groups``: selection groups (retrieval, generation, reference-free, lexical, ir);
    ``lower_is_better``: enters the overall score as 1 - value;
    ``packages``: optional packages it imports, as (module, extra) pairs: a run checks them
    before its first judge call and names the extra to install.
    ``in_scope_only``: ``skipped`` on an out-of-scope question (``Sample.out_of_scope``): a
    retrieval metric measured against a reference has nothing relevant to find there.
    ``level``: ``turn`` (a sample, or one assistant turn of a conversation) or ``conversation``
    (a conversation-level sample: ``conversation_id`` set, ``turn`` None, every turn in
    ``history``); the engine gives a metric only the samples of its level.
    Instances are immutable after construction; parameters are set in ``__init__``.
    """

    name: ClassVar[str]
    requires: ClassVar[tuple[str, ...]] = ()
    requires_any: ClassVar[tuple[tuple[str, ...], ...]] = ()
    needs_judge: ClassVar[bool] = False
    needs_embedder: ClassVar[bool] = False
    needs: ClassVar[frozenset[Need]] = frozenset()
    groups: ClassVar[frozenset[str]] = frozenset()
    lower_is_better: ClassVar[bool] = False
    packages: ClassVar[tuple[tuple[str, str], ...]] = ()
    core: ClassVar[bool] = False  # part of the default selection
    in_scope_only: ClassVar[bool] = False
    level: ClassVar[str] = "turn"  # "turn" | "conversation"

    def __init__(self, key: str | None = None) -> None:
        self.key = key or self.name  # the name results are reported under

    def params(self) -> dict[str, Any]:
        """Parameters recorded with the run (override when the metric has any)."""
        return {}

    def missing(self, sample: Sample) -> str | None:
        """Why this metric cannot run on the sample (a skip reason), or None."""
        if self.in_scope_only and sample.out_of_scope:
            return OUT_OF_SCOPE_SKIP
        absent = [f for f in self.requires if not sample.has(f)]
        for group in self.requires_any:
            if not any(sample.has(f) for f in group):
                absent.append(" or ".join(group))
        if absent:
            return f"sample has no {', '.join(absent)}"
        return None

    def refuses(self, judge: Judge) -> str | None:
        """Why this metric cannot be scored right with ``judge``, or None: a clause that reads
        after "<key> is" ("refused for the embedded judge (local:...): ..."). Before any call, a
        run stops with it when the metric was named on its own, and leaves the metric out, said
        and recorded with the run as "left out: <key> (<reason>)", when a group chose it."""
        return None

    async def score(self, ctx: SampleAnalyses) -> Score:
        reason = self.missing(ctx.sample)
        if reason is not None:
            return Score.skipped(self.key, with_pipeline_error(ctx.sample, reason))
        return await self.compute(ctx)

    @abstractmethod
    async def compute(self, ctx: SampleAnalyses) -> Score: ...

    def __repr__(self) -> str:
        p = ", ".join(f"{k}={v!r}" for k, v in self.params().items())
        return f"{type(self).__name__}({p})"
