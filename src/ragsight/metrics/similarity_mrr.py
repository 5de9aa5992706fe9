"""mrr_by_similarity: reciprocal rank of the first retrieved chunk whose embedding is close
enough to the reference's (cosine > threshold), without chunk ids or a judge.

Similarity scales differ between embedders (e5 puts unrelated on-topic text near 0.8, MiniLM near
0.3), so the default threshold is set per embedder from :data:`DEFAULT_THRESHOLDS`, measured by
``bench/similarity_threshold.py`` (Youden's J on labelled reference/chunk pairs; see
``docs/metrics.md``). The threshold used, where it came from, and the embedder are recorded in
the evidence.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from .._score import Evidence, Score
from ..analyses import SampleAnalyses
from . import _ir, register
from ._base import Metric

__all__ = ["DEFAULT_THRESHOLDS", "FALLBACK_THRESHOLD", "MrrBySimilarity", "Threshold", "default_threshold"]


@dataclass(frozen=True)
class Threshold:
    """A default threshold and where it comes from."""

    value: float
    source: str


DEFAULT_THRESHOLDS: dict[str, Threshold] = {
    # bench/similarity_threshold.py on airline_20 (20 references x 10 chunks), Youden's J:
    # J 0.956 (TPR 1.00, FPR 0.044), AUROC 0.997.
    "local:e5-small": Threshold(0.864, "measured: Youden's J on airline_20 (bench/similarity_threshold.py)"),
    # Same bench: J 0.850 (TPR 1.00, FPR 0.150), AUROC 0.952.
    "local:minilm": Threshold(0.4556, "measured: Youden's J on airline_20 (bench/similarity_threshold.py)"),
    # TODO: measure with bench/similarity_threshold.py when an OpenAI key is at hand.
    "openai:text-embedding-3-small": Threshold(
        0.75, "not measured: the seed's value for mxbai-embed-large (TODO: measure)"
    ),
}
FALLBACK_THRESHOLD = Threshold(
    0.75, "not measured for this embedder: the seed's value for mxbai-embed-large"
)


def default_threshold(embedder_name: str) -> Threshold:
    """The default threshold for an embedder by its name (e.g. ``local:e5-small``)."""
    return DEFAULT_THRESHOLDS.get(embedder_name, FALLBACK_THRESHOLD)


class MrrBySimilarity(Metric):
    """1 / rank of the first chunk whose cosine similarity with the reference exceeds the
    threshold, 0 when none does. With several acceptable references, a chunk's similarity is its
    best one. Reference and chunks are embedded with ``kind="query"`` (e5's convention for
    comparing two texts of the same kind; it also separated relevant chunks best in the bench)."""

    name = "mrr_by_similarity"
    requires = ("contexts", "reference")
    needs_embedder = True
    groups = frozenset({"retrieval"})
    in_scope_only = True

    def __init__(self, key: str | None = None, threshold: float | None = None) -> None:
        super().__init__(key)
        if threshold is not None:
            if isinstance(threshold, bool) or not isinstance(threshold, (int, float)):
                raise ValueError(f"mrr_by_similarity: threshold must be a number, not {threshold!r}")
            if not -1.0 <= float(threshold) <= 1.0:
                raise ValueError(f"mrr_by_similarity: threshold must lie in [-1, 1], not {threshold}")
        self.threshold = None if threshold is None else float(threshold)

    def params(self) -> dict[str, Any]:
        return {"threshold": self.threshold}

    async def compute(self, ctx: SampleAnalyses) -> Score:
        s = ctx.sample
        refs = list(s.references)
        contexts = list(s.contexts or ())
        embedder = getattr(ctx.embedder, "name", "")
        if self.threshold is not None:
            thr = Threshold(self.threshold, "given")
        else:
            thr = default_threshold(embedder)
        vecs = await ctx.embed([*refs, *contexts], kind="query")
        ref_vecs, ctx_vecs = vecs[: len(refs)], vecs[len(refs):]
        sims = [float(max(ref_vecs @ ctx_vecs[i])) for i in range(len(contexts))]
        value = _ir.mrr_by_similarity(sims, thr.value)
        first = next((r for r, x in enumerate(sims, start=1) if x > thr.value), None)
        ev = Evidence(details={
            "embedder": embedder,
            "threshold": thr.value,
            "threshold_source": thr.source,
            "similarities": [round(x, 6) for x in sims],
            "first_relevant_rank": first,
        })
        if first is None:
            return Score.scored(self.key, value, f"no chunk above similarity {thr.value} ({embedder})", ev)
        return Score.scored(self.key, value, f"first chunk above similarity {thr.value} at rank {first} "
                            f"({embedder})", ev)


register(MrrBySimilarity)
