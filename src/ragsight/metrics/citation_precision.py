"""citation_precision = citations whose cited chunk supports a claim they are attached to /
all citations of the response (ALCE-style).

A citation is a (sentence, chunk) pair: a marker in or right after a sentence covers the claims
extracted from that sentence, and it supports when the claim-by-chunk verdicts of the shared
verdict step find the chunk supporting at least one of them. A marker that names no chunk (out
of range, an unknown id, unreadable) is a citation that supports nothing. A response that cites
nothing is ``undetermined`` (there is no citation to be precise about); see citation_recall for
the claims left without support.
"""

from __future__ import annotations

from .._score import Score
from ..analyses import SampleAnalyses
from ._citations import CitationMetric

__all__ = ["CitationPrecision"]


class CitationPrecision(CitationMetric):
    name = "citation_precision"

    async def compute(self, ctx: SampleAnalyses) -> Score:
        check, ev = await self.checked(ctx)
        n = len(check.citations)
        if n == 0:
            return Score.undetermined(self.key, "the response cites nothing", ev)
        if check.n_claims == 0:
            return Score.undetermined(self.key, "the response makes no factual claims", ev)
        ok = sum(c["supports"] for c in check.citations)
        bad = sum("problem" in c and c["chunk"] is None for c in check.citations)
        note = f" ({bad} name no chunk)" if bad else ""
        unread = f"; {check.table.not_read}" if check.table.not_read else ""
        return Score.scored(self.key, ok / n, f"{ok} of {n} citations support their claim{note}{unread}", ev)
