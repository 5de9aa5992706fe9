"""context_recall = reference claims attributable to the joined contexts / all reference claims."""

from __future__ import annotations

from .._score import Evidence, Score
from ..analyses import SampleContext
from ._base import Metric

__all__ = ["ContextRecall"]


class ContextRecall(Metric):
    name = "context_recall"
    requires = ("reference", "contexts")
    needs_judge = True
    flags = frozenset({"verify_reference_vs_contexts"})
    groups = frozenset({"retrieval"})
    core = True

    async def compute(self, ctx: SampleContext) -> Score:
        claims = await ctx.reference_claims()
        _, verdicts = await ctx.context_verdicts()
        assert verdicts is not None
        ev = Evidence(claims=verdicts.verdicts, calls=claims.refs + verdicts.refs)
        if not claims.claims:
            return Score.undetermined(self.key, "the reference makes no factual claims", ev)
        n_ok = sum(v.supported for v in verdicts.verdicts)
        n = len(verdicts.verdicts)
        return Score.scored(self.key, n_ok / n, f"{n_ok} of {n} reference claims found in the contexts", ev)
