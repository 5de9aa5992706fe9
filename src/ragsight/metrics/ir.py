"""IR metrics on chunk ids (hit rate, precision, recall, MRR, NDCG, MAP at a cut-off ``k``) and
retrieval accuracy@k (by id, by exact text, or by the judge).

The numbers come from the pure functions of ``_ir`` (checked against trec_eval). A sample whose
``relevant_ids`` name no relevant id (empty is skipped; all grades 0 is ``undetermined``) has no
value: every ranking would score the same. A sample with an empty or absent ``retrieved_ids`` is
skipped too, relevant ids or not (not scored 0). The evidence records the ranks of the relevant
hits.
"""

from __future__ import annotations

from collections.abc import Awaitable, Mapping
from typing import Any, ClassVar

from .._score import Evidence, Score
from ..analyses import SampleAnalyses, VerdictList, contexts_block
from ..dataset import Sample
from . import _ir, register
from . import similarity_mrr as _similarity_mrr  # noqa: F401 - registers mrr_by_similarity
from ._base import Metric

__all__ = [
    "MAP",
    "MRR",
    "NDCG",
    "HitRate",
    "PrecisionAtK",
    "RecallAtK",
    "RetrievalAccuracy",
]

IR_GROUPS = frozenset({"ir", "retrieval"})
MATCHES = ("id", "text", "judge")


def _check_k(name: str, k: Any, optional: bool) -> int | None:
    if k is None and optional:
        return None
    if isinstance(k, bool) or not isinstance(k, int) or k < 1:
        what = "an integer >= 1" + (" (or leave it out for no cut-off)" if optional else "")
        raise ValueError(f"{name}: k must be {what}, not {k!r}")
    return k


def _grades(relevant: tuple[str, ...] | Mapping[str, float]) -> dict[str, float]:
    if isinstance(relevant, Mapping):
        return {str(i): float(g) for i, g in relevant.items()}
    return dict.fromkeys(relevant, 1.0)


def _ranked_hits(sample: Sample, k: int | None) -> list[dict[str, Any]]:
    """The relevant ids among the top k (all ranks when k is None), with rank and grade.

    A repeated id counts only at its first rank, as in ``_ir``."""
    grades = _grades(sample.relevant_ids or ())
    seen: set[str] = set()
    hits = []
    for rank, doc_id in enumerate(sample.retrieved_ids or (), start=1):
        if k is not None and rank > k:
            break
        if doc_id in seen:
            continue
        seen.add(doc_id)
        g = grades.get(doc_id, 0.0)
        if g > 0.0:
            hits.append({"rank": rank, "id": doc_id, "grade": g})
    return hits


class _IdMetric(Metric):
    """Shared shape of the IR metrics: fields, groups, the cut-off and the evidence."""

    requires = ("retrieved_ids", "relevant_ids")
    groups = IR_GROUPS
    in_scope_only = True
    default_k: ClassVar[int | None] = 10
    k_optional: ClassVar[bool] = False

    def __init__(self, key: str | None = None, k: int | None = None) -> None:
        super().__init__(key)
        self.k = _check_k(self.name, self.default_k if k is None else k, self.k_optional)

    def params(self) -> dict[str, Any]:
        return {"k": self.k}

    def value(self, retrieved: tuple[str, ...], relevant: Any) -> float | None:
        raise NotImplementedError

    async def compute(self, ctx: SampleAnalyses) -> Score:
        s = ctx.sample
        retrieved = s.retrieved_ids or ()
        relevant = s.relevant_ids or ()
        grades = _grades(relevant)
        n_rel = sum(1 for g in grades.values() if g > 0.0)
        hits = _ranked_hits(s, self.k)
        details: dict[str, Any] = {
            "k": self.k,
            "retrieved": len(retrieved),
            "relevant": n_rel,
            "graded": isinstance(relevant, Mapping),
            "hits": hits,
            "hit_ranks": [h["rank"] for h in hits],
        }
        ev = Evidence(details=details)
        value = self.value(retrieved, relevant)
        if value is None:
            return Score.undetermined(self.key, "relevant_ids names no relevant id (every grade is 0)", ev)
        cut = f"top {self.k}" if self.k is not None else "the ranking"
        ranks = ", ".join(str(h["rank"]) for h in hits) or "none"
        return Score.scored(
            self.key, value,
            f"{len(hits)} of {n_rel} relevant ids in {cut} (ranks: {ranks})", ev,
        )


class HitRate(_IdMetric):
    """1 when a relevant id is among the top k, else 0 (trec_eval ``success_k``)."""

    name = "hit_rate"

    def value(self, retrieved: tuple[str, ...], relevant: Any) -> float | None:
        assert self.k is not None
        return _ir.hit_rate_at_k(retrieved, relevant, self.k)


class PrecisionAtK(_IdMetric):
    """Relevant ids among the top k, divided by k (trec_eval ``P_k``)."""

    name = "precision_at_k"

    def value(self, retrieved: tuple[str, ...], relevant: Any) -> float | None:
        assert self.k is not None
        return _ir.precision_at_k(retrieved, relevant, self.k)


class RecallAtK(_IdMetric):
    """Relevant ids among the top k, divided by all relevant ids (trec_eval ``recall_k``)."""

    name = "recall_at_k"

    def value(self, retrieved: tuple[str, ...], relevant: Any) -> float | None:
        assert self.k is not None
        return _ir.recall_at_k(retrieved, relevant, self.k)


class MRR(_IdMetric):
    """1 / rank of the first relevant id, 0 if none (trec_eval ``recip_rank``); the mean over
    samples is MRR. No cut-off unless ``k`` is given."""

    name = "mrr"
    default_k = None
    k_optional = True

    def value(self, retrieved: tuple[str, ...], relevant: Any) -> float | None:
        return _ir.reciprocal_rank(retrieved, relevant, self.k)


class NDCG(_IdMetric):
    """NDCG@k (trec_eval ``ndcg_cut_k``): graded gains when ``relevant_ids`` maps id to grade,
    binary gains otherwise."""

    name = "ndcg"

    def value(self, retrieved: tuple[str, ...], relevant: Any) -> float | None:
        assert self.k is not None
        return _ir.ndcg_at_k(retrieved, relevant, self.k)


class MAP(_IdMetric):
    """Average precision (trec_eval ``map``; ``map_cut_k`` with ``k``); the mean over samples is
    MAP. No cut-off unless ``k`` is given."""

    name = "map"
    default_k = None
    k_optional = True

    def value(self, retrieved: tuple[str, ...], relevant: Any) -> float | None:
        return _ir.average_precision(retrieved, relevant, self.k)


# ---- retrieval accuracy@k -------------------------------------------------------------------


class RetrievalAccuracy(Metric):
    """1 when the top-k retrieved chunks contain the reference context, else 0; the mean over
    samples is retrieval accuracy@k.

    ``match="id"`` (default): one of ``relevant_ids`` (grade > 0) among the top k
    ``retrieved_ids``. ``match="text"``: one of ``reference_contexts`` equals one of the top k
    ``contexts`` after whitespace normalisation. ``match="judge"``: every reference claim is
    supported by the top k chunks joined (one verdict per claim against them); a reference with
    no claims is ``undetermined``.

    Constructing ``RetrievalAccuracy(match=...)`` returns the variant for that match, so the
    fields it needs and whether it needs a judge are stated per variant.
    """

    name = "retrieval_accuracy"
    requires: ClassVar[tuple[str, ...]] = ("retrieved_ids", "relevant_ids")
    groups = frozenset({"retrieval"})
    in_scope_only = True
    match: ClassVar[str] = "id"

    def __new__(cls, key: str | None = None, k: int = 10, match: str = "id") -> RetrievalAccuracy:
        if match not in MATCHES:
            raise ValueError(f"retrieval_accuracy: match must be one of {', '.join(MATCHES)}, not {match!r}")
        variant = _VARIANTS[match] if cls is RetrievalAccuracy else cls
        return super().__new__(variant)

    def __init__(self, key: str | None = None, k: int = 10, match: str = "id") -> None:
        super().__init__(key)
        checked = _check_k(self.name, k, optional=False)
        assert checked is not None
        self.k = checked

    def params(self) -> dict[str, Any]:
        return {"k": self.k, "match": self.match}

    async def compute(self, ctx: SampleAnalyses) -> Score:
        s = ctx.sample
        hits = _ranked_hits(s, self.k)
        value = _ir.retrieval_accuracy_at_k_by_id(s.retrieved_ids or (), s.relevant_ids or (), self.k)
        ev = Evidence(details={"match": "id", "k": self.k, "hit_ranks": [h["rank"] for h in hits],
                               "hits": hits})
        if value is None:
            return Score.undetermined(self.key, "relevant_ids names no relevant id (every grade is 0)", ev)
        return _verdict(self.key, value, self.k, [h["rank"] for h in hits], ev)


def _verdict(key: str, value: float, k: int, ranks: list[int], ev: Evidence) -> Score:
    if value:
        return Score.scored(key, value, f"reference context in the top {k} (ranks: "
                            f"{', '.join(map(str, ranks))})", ev)
    return Score.scored(key, value, f"reference context not in the top {k}", ev)


class _AccuracyByText(RetrievalAccuracy):
    requires = ("contexts", "reference_contexts")
    match = "text"

    async def compute(self, ctx: SampleAnalyses) -> Score:
        s = ctx.sample
        contexts = s.contexts or ()
        targets = {" ".join(t.split()) for t in s.reference_contexts or ()}
        ranks = [r for r, c in enumerate(contexts[: self.k], start=1) if " ".join(c.split()) in targets]
        value = _ir.retrieval_accuracy_at_k_by_text(contexts, s.reference_contexts or (), self.k)
        ev = Evidence(details={"match": "text", "k": self.k, "hit_ranks": ranks,
                               "reference_contexts": len(targets)})
        if value is None:  # defensive: an empty list is skipped before compute
            return Score.undetermined(self.key, "no reference context", ev)
        return _verdict(self.key, value, self.k, ranks, ev)


class _AccuracyByJudge(RetrievalAccuracy):
    requires = ("contexts", "reference")
    needs_judge = True
    match = "judge"

    async def compute(self, ctx: SampleAnalyses) -> Score:
        s = ctx.sample
        contexts = list(s.contexts or ())
        top = contexts[: self.k]
        claims = await ctx.reference_claims()
        # The whole list joined is the text context_recall checks against: same target name.
        target = "contexts" if len(top) == len(contexts) else f"contexts:top{self.k}"

        def verify() -> Awaitable[VerdictList]:
            return ctx.verify(list(claims.claims), target, contexts_block(top))

        verdicts = await ctx.once(f"verdicts:reference_vs_{target}", verify)
        supported = sum(v.supported for v in verdicts.verdicts)
        n = len(verdicts.verdicts)
        ev = Evidence(
            claims=verdicts.verdicts,
            details={"match": "judge", "k": self.k, "chunks_checked": len(top),
                     "supported": supported, "claims": n},
            calls=claims.refs + verdicts.refs,
        )
        if n == 0:
            return Score.undetermined(self.key, "the reference makes no factual claims", ev)
        if supported == n:
            return Score.scored(self.key, 1.0, f"all {n} reference claims supported by the top {self.k} chunks", ev)
        return Score.scored(self.key, 0.0, f"{n - supported} of {n} reference claims not supported by the "
                            f"top {self.k} chunks", ev)


_VARIANTS: dict[str, type[RetrievalAccuracy]] = {
    "id": RetrievalAccuracy, "text": _AccuracyByText, "judge": _AccuracyByJudge,
}

for _cls in (HitRate, PrecisionAtK, RecallAtK, MRR, NDCG, MAP, RetrievalAccuracy):
    register(_cls)
