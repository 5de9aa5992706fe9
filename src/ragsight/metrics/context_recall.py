"""context_recall = reference claims attributable to the joined contexts / all reference claims."""

from __future__ import annotations

from .._score import Evidence, Score
from ..analyses import Need, SampleAnalyses
from ._base import Metric

__all__ = ["ContextRecall"]


class ContextRecall(Metric):
    name = "context_recall"
    requires = ("reference", "contexts")
    needs_judge = True
    needs = frozenset({Need.REFERENCE_VS_CONTEXTS})
    groups = frozenset({"retrieval"})
    in_scope_only = True
    core = True

    async def compute(self, ctx: SampleAnalyses) -> Score:
        claims = await ctx.reference_claims()
        verdicts = await ctx.reference_vs_contexts()
        assert verdicts is not None
        ev = Evidence(claims=verdicts.verdicts, calls=claims.refs + verdicts.refs)
        if not claims.claims:
            return Score.undetermined(self.key, "the reference makes no factual claims", ev)
        n_ok = sum(v.supported for v in verdicts.verdicts)
        n = len(verdicts.verdicts)
        return Score.scored(self.key, n_ok / n, f"{n_ok} of {n} reference claim{'s' if n != 1 else ''} found in the contexts", ev)
