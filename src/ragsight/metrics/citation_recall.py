"""citation_recall = claims with at least one citation whose chunk supports them / all claims of
the response (ALCE-style).

Every claim the shared extraction finds in the response needs support; it carries the citations
of the sentence it was extracted from (see citation_precision), and it counts when the
claim-by-chunk verdicts find one of those chunks supporting it. A response that cites nothing
scores 0 when it makes claims; a response without claims is ``undetermined``.
"""

from __future__ import annotations

from .._score import Score
from ..analyses import SampleAnalyses
from ._citations import CitationMetric

__all__ = ["CitationRecall"]


class CitationRecall(CitationMetric):
    name = "citation_recall"

    async def compute(self, ctx: SampleAnalyses) -> Score:
        check, ev = await self.checked(ctx)
        n = check.n_claims
        if n == 0:
            return Score.undetermined(self.key, "the response makes no factual claims", ev)
        ok = sum(r["supported_by_a_citation"] for r in check.claims)
        if not check.citations:
            return Score.scored(self.key, 0.0, f"the response cites nothing: 0 of {n} claims carry a "
                                               "supporting citation", ev)
        unread = f"; {check.table.not_read}" if check.table.not_read else ""
        return Score.scored(self.key, ok / n, f"{ok} of {n} claims carry a supporting citation{unread}", ev)
