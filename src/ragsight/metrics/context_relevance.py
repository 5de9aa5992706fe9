"""context_relevance = relevant sentences / all sentences of the contexts (deterministic
sentence splitting; the judge only labels the sentences). Per-chunk values are recorded."""

from __future__ import annotations

from .._score import Evidence, Score
from ..analyses import SampleAnalyses
from ._base import Metric

__all__ = ["ContextRelevance"]


class ContextRelevance(Metric):
    name = "context_relevance"
    requires = ("question", "contexts")
    needs_judge = True
    groups = frozenset({"retrieval", "reference-free"})

    async def compute(self, ctx: SampleAnalyses) -> Score:
        labels = await ctx.sentence_labels()
        n_chunks = len(ctx.sample.contexts or ())
        per_chunk: list[dict[str, object]] = []
        for k in range(n_chunks):
            flags = [r for (c, _), r in zip(labels.sentences, labels.relevant) if c == k]
            per_chunk.append({"chunk": k + 1, "sentences": len(flags), "relevant": sum(flags),
                              "value": (sum(flags) / len(flags)) if flags else None})
        details = {
            "per_chunk": per_chunk,
            "sentences": [{"chunk": c + 1, "text": t, "relevant": r}
                          for (c, t), r in zip(labels.sentences, labels.relevant)],
        }
        ev = Evidence(details=details, calls=labels.refs)
        n = len(labels.sentences)
        if n == 0:
            return Score.undetermined(self.key, "the contexts contain no sentences", ev)
        k = sum(labels.relevant)
        return Score.scored(self.key, k / n, f"{k} of {n} sentences relevant to the question", ev)
