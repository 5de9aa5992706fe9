"""noise_sensitivity: share of response claims that are incorrect (not supported by the reference)
yet supported by at least one relevant (mode ``relevant``) or irrelevant (mode ``irrelevant``)
retrieved chunk. A chunk is relevant when it supports at least one reference claim. Lower is better.
"""

from __future__ import annotations

from typing import Any

from .._score import Evidence, Score
from ..analyses import Need, SampleAnalyses, started_together
from ._base import Metric

__all__ = ["NoiseSensitivity"]


class NoiseSensitivity(Metric):
    name = "noise_sensitivity"
    requires = ("question", "response", "reference", "contexts")
    needs_judge = True
    needs = frozenset({Need.RESPONSE_VS_CONTEXTS, Need.REFERENCE_VS_CONTEXTS, Need.CHUNK_SUPPORT})
    groups = frozenset({"generation", "retrieval"})
    in_scope_only = True
    lower_is_better = True

    def __init__(self, key: str | None = None, mode: str = "relevant") -> None:
        super().__init__(key)
        if mode not in ("relevant", "irrelevant"):
            raise ValueError(f"noise_sensitivity mode must be 'relevant' or 'irrelevant', not '{mode}'")
        self.mode = mode

    def params(self) -> dict[str, Any]:
        return {"mode": self.mode}

    async def compute(self, ctx: SampleAnalyses) -> Score:
        await started_together(ctx.response_vs_contexts(), ctx.reference_vs_contexts(), ctx.response_vs_reference())
        resp_claims = await ctx.response_claims()
        ref_claims = await ctx.reference_claims()
        resp_vs_ctx = await ctx.response_vs_contexts()
        ref_vs_ctx = await ctx.reference_vs_contexts()
        vs_ref = await ctx.response_vs_reference()
        assert resp_vs_ctx is not None and ref_vs_ctx is not None
        assert resp_vs_ctx.chunk_support is not None and ref_vs_ctx.chunk_support is not None
        n_chunks = len(ctx.sample.contexts or ())
        relevant_chunks = set().union(*ref_vs_ctx.chunk_support) if ref_vs_ctx.chunk_support else set()
        wanted = relevant_chunks if self.mode == "relevant" else set(range(1, n_chunks + 1)) - relevant_chunks
        rows = []
        count = 0
        for v_ref, support in zip(vs_ref.verdicts, resp_vs_ctx.chunk_support):
            incorrect = not v_ref.supported
            hit = bool(support & wanted)
            counted = incorrect and hit
            count += counted
            rows.append({"claim": v_ref.claim, "correct": not incorrect, "supporting_chunks": sorted(support),
                         "counted": counted})
        ev = Evidence(
            claims=vs_ref.verdicts + resp_vs_ctx.verdicts,
            details={"mode": self.mode, "relevant_chunks": sorted(relevant_chunks), "claims": rows},
            calls=resp_claims.refs + ref_claims.refs + resp_vs_ctx.refs + vs_ref.refs,
        )
        n = len(vs_ref.verdicts)
        if n == 0:
            return Score.undetermined(self.key, "the response makes no factual claims", ev)
        return Score.scored(self.key, count / n,
                            f"{count} of {n} claims incorrect yet supported by a {self.mode} chunk", ev)
