"""context_recall = reference claims attributable to the joined contexts / all reference claims.

The reference's claims are its facts, one claim each (analyses/_reference.py): every claim the
judge wrote for it was checked against the reference itself, and those it does not support were
dropped; both are in the evidence (``dropped_claims``, ``reference_check``)."""

from __future__ import annotations

from typing import Any

from .._score import Evidence, Score
from ..analyses import ClaimList, Need, SampleAnalyses
from ._base import Metric

__all__ = ["ContextRecall", "reference_check"]


def reference_check(claims: ClaimList) -> dict[str, Any]:
    """The evidence of how the reference became claims: the claims dropped (not made of the
    reference's words, or not supported by it) and each checked claim's P(supported by the
    reference); empty when nothing was checked."""
    out: dict[str, Any] = {}
    if claims.dropped:
        out["dropped_claims"] = list(claims.dropped)
    if claims.checks:
        out["reference_check"] = [{"claim": v.claim, "supported": v.supported, "p": v.probability}
                                  for v in claims.checks]
    return out


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
        ev = Evidence(claims=verdicts.verdicts, calls=claims.refs + verdicts.refs, details=reference_check(claims))
        if not claims.claims:
            return Score.undetermined(self.key, "the reference makes no factual claims", ev)
        n_ok = sum(v.supported for v in verdicts.verdicts)
        n = len(verdicts.verdicts)
        return Score.scored(self.key, n_ok / n, f"{n_ok} of {n} reference claim{'s' if n != 1 else ''} found in the contexts", ev)
