"""context_entity_recall = |entities(reference) ∩ entities(contexts)| / |entities(reference)|,
entities extracted by the judge and matched after normalisation."""

from __future__ import annotations

from .._score import Evidence, Score
from ..analyses import SampleAnalyses, started_together
from ._base import Metric

__all__ = ["ContextEntityRecall"]


class ContextEntityRecall(Metric):
    name = "context_entity_recall"
    requires = ("reference", "contexts")
    needs_judge = True
    groups = frozenset({"retrieval"})
    in_scope_only = True

    async def compute(self, ctx: SampleAnalyses) -> Score:
        await started_together(ctx.entities("reference"), ctx.entities("contexts"))
        ref = await ctx.entities("reference")
        con = await ctx.entities("contexts")
        found = sorted(ref.normalised & con.normalised)
        missing = sorted(ref.normalised - con.normalised)
        ev = Evidence(details={"reference_entities": list(ref.entities), "context_entities": list(con.entities),
                               "found": found, "missing": missing}, calls=ref.refs + con.refs)
        if not ref.normalised:
            return Score.undetermined(self.key, "the reference names no entities", ev)
        return Score.scored(self.key, len(found) / len(ref.normalised),
                            f"{len(found)} of {len(ref.normalised)} reference entities in the contexts", ev)
