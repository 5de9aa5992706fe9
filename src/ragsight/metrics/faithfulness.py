"""faithfulness = supported response claims / all response claims, against the joined contexts."""

from __future__ import annotations

from .._score import Evidence, Score
from ..analyses import Need, SampleAnalyses
from ._base import Metric

__all__ = ["Faithfulness"]


class Faithfulness(Metric):
    name = "faithfulness"
    requires = ("response", "contexts")
    needs_judge = True
    needs = frozenset({Need.RESPONSE_VS_CONTEXTS})
    groups = frozenset({"generation", "reference-free"})
    core = True

    async def compute(self, ctx: SampleAnalyses) -> Score:
        claims = await ctx.response_claims()
        verdicts = await ctx.response_vs_contexts()
        assert verdicts is not None
        ev = Evidence(claims=verdicts.verdicts, calls=claims.refs + verdicts.refs)
        if not claims.claims:
            return Score.undetermined(self.key, "the response makes no factual claims", ev)
        n_ok = sum(v.supported for v in verdicts.verdicts)
        n = len(verdicts.verdicts)
        return Score.scored(self.key, n_ok / n, f"{n_ok} of {n} claims supported by the contexts", ev)
