"""IR metrics on chunk ids: hit rate, precision, recall, MRR, NDCG and AP at a cut-off k.

Pure functions over one query: ``retrieved`` holds ids in rank order (``retrieved[0]`` is rank 1)
and ``relevant`` holds the relevance judgements. They reproduce trec_eval's ``success_k``,
``P_k``, ``recall_k``, ``recip_rank``, ``ndcg_cut_k``, ``map`` and ``map_cut_k``.

Conventions shared by every function here:

- ``relevant`` is a collection of ids (each one relevant, grade 1) or a mapping id -> graded
  relevance (a float >= 0). An id is relevant when its grade is > 0 (trec_eval counts grade >= 1
  with its integer grades; for integer grades the two agree); grade 0 means judged not relevant.
  Ids that ``relevant`` does not name are not relevant.
- No relevant id at all: the functions return ``None`` ("undetermined"), since every ranking
  would score the same and the value says nothing about the retriever. (trec_eval scores such a
  query 0 and averages it in; the caller counts it as undetermined instead.) Never NaN.
- Relevant ids but nothing retrieved: 0.0 here. (The metrics of ``ir`` never ask: a sample with
  an empty or absent ``retrieved_ids`` is skipped before it is scored, as docs/metrics.md says.)
- ``k`` larger than the list: the missing ranks count as not relevant; ``precision_at_k`` still
  divides by ``k``, as trec_eval's ``P_k`` does.
- Duplicate ids in ``retrieved``: only the first occurrence can count. A repeat keeps its rank
  but counts as not relevant, so returning the same chunk twice wastes a slot and is never
  rewarded, and every value stays in [0, 1]. (trec_eval refuses input with duplicates.)
"""

from __future__ import annotations

import math
from collections.abc import Collection, Iterable, Mapping, Sequence
from itertools import islice
from typing import TypeAlias

__all__ = [
    "Relevance",
    "average_precision",
    "hit_rate_at_k",
    "mrr_by_similarity",
    "ndcg_at_k",
    "precision_at_k",
    "recall_at_k",
    "reciprocal_rank",
    "retrieval_accuracy_at_k_by_id",
    "retrieval_accuracy_at_k_by_text",
]

Relevance: TypeAlias = Collection[str] | Mapping[str, float]
"""Relevance judgements: relevant ids (binary), or id -> graded relevance (>= 0; 0 = not)."""


def _grades(relevant: Relevance) -> dict[str, float]:
    """The judgements as id -> grade, checked."""
    if isinstance(relevant, str):
        raise TypeError("relevant must be a collection of ids or a mapping, not one string.")
    if isinstance(relevant, Mapping):
        grades: dict[str, float] = {}
        for doc_id, grade in relevant.items():
            value = float(grade)
            if not value >= 0.0:  # also rejects NaN
                raise ValueError(
                    f"relevance grade of {doc_id!r} must be a number >= 0, got {grade!r}."
                )
            grades[doc_id] = value
        return grades
    return dict.fromkeys(relevant, 1.0)


def _check_k(k: int | None, *, optional: bool = False) -> None:
    if k is None and optional:
        return
    if not isinstance(k, int) or isinstance(k, bool) or k < 1:
        raise ValueError(f"k must be an integer >= 1, got {k!r}.")


def _ranked_grades(
    retrieved: Sequence[str], grades: Mapping[str, float], k: int | None
) -> list[float]:
    """The grade at each rank of the top k (all ranks when k is None); repeats get 0."""
    if isinstance(retrieved, str):
        raise TypeError("retrieved must be a sequence of ids, not one string.")
    seen: set[str] = set()
    out: list[float] = []
    for doc_id in islice(retrieved, k):
        if doc_id in seen:
            out.append(0.0)
        else:
            seen.add(doc_id)
            out.append(grades.get(doc_id, 0.0))
    return out


def _num_relevant(grades: Mapping[str, float]) -> int:
    return sum(1 for g in grades.values() if g > 0.0)


def hit_rate_at_k(retrieved: Sequence[str], relevant: Relevance, k: int) -> float | None:
    """1.0 when a relevant id is among the top ``k``, else 0.0 (trec_eval's ``success_k``).

    ``None`` when nothing is relevant. Averaged over queries this is the hit rate.
    """
    _check_k(k)
    grades = _grades(relevant)
    if _num_relevant(grades) == 0:
        return None
    return 1.0 if any(g > 0.0 for g in _ranked_grades(retrieved, grades, k)) else 0.0


def precision_at_k(retrieved: Sequence[str], relevant: Relevance, k: int) -> float | None:
    """Relevant ids among the top ``k``, divided by ``k`` (trec_eval's ``P_k``).

    Divides by ``k`` even when fewer than ``k`` ids were retrieved. ``None`` when nothing is
    relevant.
    """
    _check_k(k)
    grades = _grades(relevant)
    if _num_relevant(grades) == 0:
        return None
    hits = sum(1 for g in _ranked_grades(retrieved, grades, k) if g > 0.0)
    return hits / k


def recall_at_k(retrieved: Sequence[str], relevant: Relevance, k: int) -> float | None:
    """Relevant ids among the top ``k``, divided by all relevant ids (trec_eval's ``recall_k``).

    ``None`` when nothing is relevant.
    """
    _check_k(k)
    grades = _grades(relevant)
    num_rel = _num_relevant(grades)
    if num_rel == 0:
        return None
    hits = sum(1 for g in _ranked_grades(retrieved, grades, k) if g > 0.0)
    return hits / num_rel


def reciprocal_rank(
    retrieved: Sequence[str], relevant: Relevance, k: int | None = None
) -> float | None:
    """1 / rank of the first relevant id, 0.0 if none (trec_eval's ``recip_rank``).

    Looks at the whole list by default (as trec_eval does), or at the top ``k`` only. Averaged
    over queries this is MRR. ``None`` when nothing is relevant.
    """
    _check_k(k, optional=True)
    grades = _grades(relevant)
    if _num_relevant(grades) == 0:
        return None
    for rank, g in enumerate(_ranked_grades(retrieved, grades, k), start=1):
        if g > 0.0:
            return 1.0 / rank
    return 0.0


def average_precision(
    retrieved: Sequence[str], relevant: Relevance, k: int | None = None
) -> float | None:
    """Average precision: the sum of precision@rank over the ranks holding a relevant id,
    divided by the number of relevant ids (trec_eval's ``map`` per query).

    Looks at the whole list by default; with ``k`` only the top ``k`` (trec_eval's
    ``map_cut_k``; the divisor is still all relevant ids). Averaged over queries this is MAP.
    ``None`` when nothing is relevant.
    """
    _check_k(k, optional=True)
    grades = _grades(relevant)
    num_rel = _num_relevant(grades)
    if num_rel == 0:
        return None
    hits = 0
    total = 0.0
    for rank, g in enumerate(_ranked_grades(retrieved, grades, k), start=1):
        if g > 0.0:
            hits += 1
            total += hits / rank
    return total / num_rel


def _dcg(gains: Iterable[float]) -> float:
    return sum(g / math.log2(rank + 1) for rank, g in enumerate(gains, start=1) if g > 0.0)


def ndcg_at_k(retrieved: Sequence[str], relevant: Relevance, k: int) -> float | None:
    """Normalised discounted cumulative gain at ``k`` (trec_eval's ``ndcg_cut_k``).

    DCG@k = sum over ranks r <= k of gain(r) / log2(r + 1), where the gain is the id's grade
    (1 for every id of a plain collection, so binary NDCG). The ideal DCG@k takes all judged
    relevant ids, sorted by grade descending, whether retrieved or not. ``None`` when nothing is
    relevant.
    """
    _check_k(k)
    grades = _grades(relevant)
    if _num_relevant(grades) == 0:
        return None
    ideal = _dcg(sorted((g for g in grades.values() if g > 0.0), reverse=True)[:k])
    # min(): rounding must not lift a ranking that ties the ideal above 1.
    return min(1.0, _dcg(_ranked_grades(retrieved, grades, k)) / ideal)


def _normalise_text(text: str) -> str:
    return " ".join(text.split())


def _accuracy(top: list[str], targets: set[str], require_all: bool) -> float | None:
    if not targets:
        return None
    found = targets.intersection(top)
    hit = found == targets if require_all else bool(found)
    return 1.0 if hit else 0.0


def retrieval_accuracy_at_k_by_id(
    retrieved_ids: Sequence[str],
    reference_ids: Relevance,
    k: int,
    *,
    require_all: bool = False,
) -> float | None:
    """1.0 when the top ``k`` retrieved ids contain the reference context's id, else 0.0.

    With several reference ids, one suffices by default (then this equals ``hit_rate_at_k``);
    ``require_all=True`` asks for every one of them. A mapping counts the ids with grade > 0.
    The mean over samples is retrieval accuracy@k. ``None`` when there is no reference id.
    """
    _check_k(k)
    if isinstance(retrieved_ids, str):
        raise TypeError("retrieved_ids must be a sequence of ids, not one string.")
    targets = {doc_id for doc_id, g in _grades(reference_ids).items() if g > 0.0}
    return _accuracy(list(islice(retrieved_ids, k)), targets, require_all)


def retrieval_accuracy_at_k_by_text(
    contexts: Sequence[str],
    reference_contexts: Collection[str],
    k: int,
    *,
    require_all: bool = False,
) -> float | None:
    """1.0 when one of the top ``k`` retrieved chunks is the reference context's text, else 0.0.

    Texts match exactly after whitespace normalisation (runs of whitespace become one space,
    ends stripped); case and punctuation must agree, and a chunk that merely contains the
    reference does not match. With several reference contexts, one suffices by default;
    ``require_all=True`` asks for every one. The mean over samples is retrieval accuracy@k.
    ``None`` when there is no reference context.
    """
    _check_k(k)
    if isinstance(contexts, str) or isinstance(reference_contexts, str):
        raise TypeError(
            "contexts and reference_contexts must be sequences of texts, not one string."
        )
    top = [_normalise_text(c) for c in islice(contexts, k)]
    targets = {_normalise_text(c) for c in reference_contexts}
    return _accuracy(top, targets, require_all)


def mrr_by_similarity(similarities: Sequence[float], threshold: float) -> float:
    """Reciprocal rank of the first chunk whose similarity to the reference exceeds ``threshold``.

    ``similarities[i]`` is the cosine similarity between chunk i (in rank order) and the
    reference. A chunk counts as relevant when its similarity is strictly greater than
    ``threshold``; returns 1 / rank of the first such chunk, or 0.0 when none (or no chunks).
    Similarity scales differ between embedders, so the threshold must suit the embedder.
    Raises ``ValueError`` for a NaN similarity or threshold.
    """
    if math.isnan(threshold):
        raise ValueError("threshold must be a number, got NaN.")
    found = 0.0
    for rank, sim in enumerate(similarities, start=1):
        if math.isnan(sim):
            raise ValueError(f"similarity at rank {rank} is NaN.")
        if not found and sim > threshold:
            found = 1.0 / rank
    return found
