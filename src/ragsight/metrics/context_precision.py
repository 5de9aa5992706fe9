"""context_precision: rank-aware share of relevant chunks.

score = sum_k (precision@k * v_k) / (number of relevant chunks), 0 when none is relevant.
With the embedded judge and a reference, a chunk is relevant when it supports at least one of
the reference's claims (analyses/_chunks.py).
``context_precision`` judges relevance against the reference; ``context_precision_without_reference``
against the response. Two names, so one mean never mixes the two.
"""

from __future__ import annotations

from collections.abc import Sequence

from .._score import Evidence, Score
from ..analyses import SampleAnalyses
from ._base import Metric

__all__ = ["ContextPrecision", "ContextPrecisionWithoutReference", "average_precision_of"]


def average_precision_of(relevant: Sequence[bool]) -> float:
    hits = 0
    total = 0.0
    for k, rel in enumerate(relevant, start=1):
        if rel:
            hits += 1
            total += hits / k
    return total / hits if hits else 0.0


class ContextPrecision(Metric):
    name = "context_precision"
    requires = ("question", "contexts", "reference")
    needs_judge = True
    groups = frozenset({"retrieval"})
    in_scope_only = True
    core = True
    against = "reference"

    async def compute(self, ctx: SampleAnalyses) -> Score:
        j = await ctx.chunk_relevance(self.against)
        value = average_precision_of(j.relevant)
        chunks: list[dict[str, object]] = [
            {"rank": k, "relevant": r, "probability": p, "reason": why}
            for k, (r, p, why) in enumerate(zip(j.relevant, j.probabilities, j.reasons), start=1)
        ]
        details: dict[str, object] = {"against": self.against, "chunks": chunks}
        if j.claims:  # judged through the reference's claims: which claims each chunk supports
            details["by"] = "reference claims"
            details["claims"] = list(j.claims)
            for chunk, held in zip(chunks, j.supports):
                chunk["supports"] = list(held)
        n_rel = sum(j.relevant)
        reason = f"{n_rel} of {len(j.relevant)} chunks relevant; ranks {[k for k, r in enumerate(j.relevant, 1) if r]}"
        total = len(ctx.sample.contexts or ())
        if len(j.relevant) < total:  # the lowest-ranked chunks did not fit the judge's window
            reason += f"; chunks {len(j.relevant) + 1}-{total} left out to fit the judge's window"
        return Score.scored(self.key, value, reason, Evidence(details=details, calls=j.refs))


class ContextPrecisionWithoutReference(ContextPrecision):
    name = "context_precision_without_reference"
    requires = ("question", "contexts", "response")
    groups = frozenset({"retrieval", "reference-free"})
    in_scope_only = False  # judges the chunks against the response, not a reference
    core = True
    against = "response"
