"""answer_similarity = cosine similarity of the embeddings of response and reference.

With several acceptable references (aliases), the best match counts.
"""

from __future__ import annotations

from .._score import Evidence, Score
from ..analyses import SampleAnalyses
from ._base import Metric

__all__ = ["AnswerSimilarity", "similarity_to_reference"]


async def similarity_to_reference(ctx: SampleAnalyses) -> tuple[float, dict[str, object]]:
    refs = list(ctx.sample.references)
    vecs = await ctx.embed([ctx.sample.response or "", *refs], kind="passage")
    sims = [float(vecs[0] @ vecs[i]) for i in range(1, len(vecs))]
    best = max(range(len(sims)), key=lambda i: sims[i])
    value = min(1.0, max(-1.0, sims[best]))
    return value, {"similarities": [round(s, 6) for s in sims], "best_reference": best,
                   "embedder": getattr(ctx.embedder, "name", "")}


class AnswerSimilarity(Metric):
    name = "answer_similarity"
    requires = ("response", "reference")
    needs_embedder = True
    groups = frozenset({"generation"})

    async def compute(self, ctx: SampleAnalyses) -> Score:
        value, details = await similarity_to_reference(ctx)
        return Score.scored(self.key, value, "cosine similarity of response and reference",
                            Evidence(details=details))
