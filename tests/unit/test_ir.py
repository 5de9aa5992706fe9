"""IR metrics on ids: hand-worked values, edge cases and properties."""

from __future__ import annotations

import math
import random
from collections.abc import Callable

import pytest
from hypothesis import given
from hypothesis import strategies as st

from ragsight.metrics._ir import (
    Relevance,
    average_precision,
    hit_rate_at_k,
    mrr_by_similarity,
    ndcg_at_k,
    precision_at_k,
    recall_at_k,
    reciprocal_rank,
    retrieval_accuracy_at_k_by_id,
    retrieval_accuracy_at_k_by_text,
)

# Relevance by rank: [1, 0, 1, 0, 1].
RANKED = ["a", "b", "c", "d", "e"]
REL = {"a", "c", "e"}

AtK = Callable[[list[str], Relevance, int], float | None]
AT_K: list[AtK] = [hit_rate_at_k, precision_at_k, recall_at_k, ndcg_at_k]


def _all_metrics(retrieved: list[str], relevant: Relevance, k: int) -> list[float | None]:
    return [
        hit_rate_at_k(retrieved, relevant, k),
        precision_at_k(retrieved, relevant, k),
        recall_at_k(retrieved, relevant, k),
        ndcg_at_k(retrieved, relevant, k),
        reciprocal_rank(retrieved, relevant),
        reciprocal_rank(retrieved, relevant, k),
        average_precision(retrieved, relevant),
        average_precision(retrieved, relevant, k),
    ]


# --- hand-worked values ---------------------------------------------------------------------


@pytest.mark.parametrize(("k", "want"), [(1, 1.0), (2, 0.5), (3, 2 / 3), (4, 0.5), (5, 0.6)])
def test_precision_by_hand(k: int, want: float) -> None:
    assert precision_at_k(RANKED, REL, k) == pytest.approx(want)


@pytest.mark.parametrize(("k", "want"), [(1, 1 / 4), (2, 1 / 4), (3, 2 / 4), (5, 3 / 4)])
def test_recall_counts_relevant_docs_never_retrieved(k: int, want: float) -> None:
    assert recall_at_k(RANKED, REL | {"z"}, k) == pytest.approx(want)


def test_hit_rate_by_hand() -> None:
    assert hit_rate_at_k(["x", "y", "a"], REL, 2) == 0.0
    assert hit_rate_at_k(["x", "y", "a"], REL, 3) == 1.0


def test_reciprocal_rank_by_hand() -> None:
    assert reciprocal_rank(RANKED, REL) == 1.0
    assert reciprocal_rank(["x", "y", "c", "a"], REL) == pytest.approx(1 / 3)
    assert reciprocal_rank(["x", "y", "z"], REL) == 0.0
    # With a cut-off, a relevant doc below k does not count.
    assert reciprocal_rank(["x", "y", "c"], REL, k=2) == 0.0


def test_average_precision_by_hand() -> None:
    # Precision at the relevant ranks 1, 3, 5: 1/1, 2/3, 3/5; mean over 3 relevant = 34/45.
    assert average_precision(RANKED, REL) == pytest.approx(34 / 45)
    # A relevant doc never retrieved adds 0 to the sum but 1 to the divisor.
    assert average_precision(RANKED, REL | {"z"}) == pytest.approx(34 / 60)
    # map_cut: only ranks <= k contribute, the divisor stays all relevant docs.
    assert average_precision(RANKED, REL, k=3) == pytest.approx((1 + 2 / 3) / 3)


def test_binary_ndcg_by_hand() -> None:
    # DCG@5 = 1/log2(2) + 1/log2(4) + 1/log2(6); ideal = 1/log2(2) + 1/log2(3) + 1/log2(4).
    dcg = 1 + 0.5 + 1 / math.log2(6)
    ideal = 1 + 1 / math.log2(3) + 0.5
    assert ndcg_at_k(RANKED, REL, 5) == pytest.approx(dcg / ideal)
    assert ndcg_at_k(RANKED, REL, 5) == pytest.approx(0.88546, abs=1e-5)


def test_graded_ndcg_by_hand() -> None:
    grades = {"a": 1.0, "b": 0.0, "c": 3.0, "d": 2.0}  # d is relevant but not retrieved
    # DCG@3 of [a, b, c] = 1/log2(2) + 0 + 3/log2(4) = 2.5.
    # Ideal@3 over all judged relevant docs [c, d, a] = 3 + 2/log2(3) + 1/log2(4) = 4.76186.
    want = 2.5 / (3 + 2 / math.log2(3) + 0.5)
    assert ndcg_at_k(["a", "b", "c"], grades, 3) == pytest.approx(want)
    assert ndcg_at_k(["a", "b", "c"], grades, 3) == pytest.approx(0.52501, abs=1e-5)
    # The ideal is cut at k too: at k=1 only the best grade (3) is ideal.
    assert ndcg_at_k(["c", "a"], grades, 1) == 1.0
    assert ndcg_at_k(["a", "c"], grades, 1) == pytest.approx(1 / 3)


def test_graded_judgements_count_any_positive_grade_as_relevant() -> None:
    grades = {"a": 0.5, "b": 0.0, "c": 2.0}
    assert precision_at_k(["a", "b", "c"], grades, 3) == pytest.approx(2 / 3)
    assert recall_at_k(["a", "b"], grades, 2) == pytest.approx(1 / 2)
    assert reciprocal_rank(["b", "a"], grades) == pytest.approx(1 / 2)


def test_a_collection_means_grade_one() -> None:
    graded = dict.fromkeys(REL, 1.0)
    for k in (1, 3, 5, 8):
        assert _all_metrics(RANKED, REL, k) == _all_metrics(RANKED, graded, k)


# --- edge cases -----------------------------------------------------------------------------


@pytest.mark.parametrize("relevant", [set(), {"x": 0.0}, {"a": 0.0, "b": 0}])
def test_no_relevant_docs_is_undetermined(relevant: Relevance) -> None:
    assert _all_metrics(RANKED, relevant, 3) == [None] * 8


def test_nothing_retrieved_scores_zero() -> None:
    assert _all_metrics([], REL, 3) == [0.0] * 8


def test_k_beyond_the_list() -> None:
    # Precision divides by k even when fewer were retrieved (trec_eval's P_k).
    assert precision_at_k(["a", "b", "c"], REL, 10) == pytest.approx(2 / 10)
    assert recall_at_k(["a", "b", "c"], REL, 10) == pytest.approx(2 / 3)
    # DCG stops at the list; the ideal has all three relevant docs.
    assert ndcg_at_k(["a", "b", "c"], REL, 10) == pytest.approx(
        (1 + 0.5) / (1 + 1 / math.log2(3) + 0.5)
    )


def test_a_repeated_id_counts_once_and_keeps_its_slot() -> None:
    assert precision_at_k(["a", "a"], {"a"}, 2) == 0.5
    assert recall_at_k(["a", "a", "a"], {"a"}, 3) == 1.0
    assert average_precision(["a", "a", "b"], {"a", "b"}) == pytest.approx((1 + 2 / 3) / 2)
    assert ndcg_at_k(["a", "a", "b"], {"a", "b"}, 3) == pytest.approx(
        (1 + 0.5) / (1 + 1 / math.log2(3))
    )
    assert reciprocal_rank(["x", "a", "a"], {"a"}) == 0.5


@pytest.mark.parametrize("k", [0, -1, True, 1.5, None])
def test_bad_k_is_rejected(k: object) -> None:
    for fn in AT_K:
        with pytest.raises(ValueError, match="k must be an integer >= 1"):
            fn(RANKED, REL, k)  # type: ignore[arg-type]


def test_optional_k_accepts_none_but_not_zero() -> None:
    assert reciprocal_rank(RANKED, REL, None) == 1.0
    with pytest.raises(ValueError):
        average_precision(RANKED, REL, 0)


@pytest.mark.parametrize("grade", [-1.0, math.nan])
def test_bad_grade_is_rejected(grade: float) -> None:
    with pytest.raises(ValueError, match="relevance grade of 'a'"):
        ndcg_at_k(RANKED, {"a": grade}, 3)


def test_one_string_is_not_taken_for_a_list_of_ids() -> None:
    with pytest.raises(TypeError):
        precision_at_k("abc", REL, 3)
    with pytest.raises(TypeError):
        recall_at_k(RANKED, "ace", 3)


# --- retrieval accuracy and MRR by similarity -----------------------------------------------


def test_retrieval_accuracy_by_id() -> None:
    assert retrieval_accuracy_at_k_by_id(["x", "a", "y"], ["a"], 2) == 1.0
    assert retrieval_accuracy_at_k_by_id(["x", "y", "a"], ["a"], 2) == 0.0
    assert retrieval_accuracy_at_k_by_id(["a", "y"], ["a", "b"], 2) == 1.0
    assert retrieval_accuracy_at_k_by_id(["a", "y"], ["a", "b"], 2, require_all=True) == 0.0
    assert retrieval_accuracy_at_k_by_id(["b", "a"], ["a", "b"], 2, require_all=True) == 1.0
    # Graded: grade 0 is not a reference context.
    assert retrieval_accuracy_at_k_by_id(["a"], {"a": 0.0, "b": 1.0}, 1) == 0.0
    assert retrieval_accuracy_at_k_by_id(["a"], {"a": 0.0}, 1) is None
    assert retrieval_accuracy_at_k_by_id(["a"], [], 1) is None


def test_retrieval_accuracy_by_text_normalises_whitespace_only() -> None:
    ref = ["Paris is the  capital\nof France."]
    assert (
        retrieval_accuracy_at_k_by_text(["x", " Paris is the capital of France. "], ref, 2) == 1.0
    )
    # Case and punctuation must agree; containing the reference is not matching it.
    assert retrieval_accuracy_at_k_by_text(["paris is the capital of france."], ref, 1) == 0.0
    assert retrieval_accuracy_at_k_by_text(["Paris is the capital of France"], ref, 1) == 0.0
    assert retrieval_accuracy_at_k_by_text(["Paris is the capital of France. Yes."], ref, 1) == 0.0
    # Beyond k does not count.
    assert retrieval_accuracy_at_k_by_text(["x", "Paris is the capital of France."], ref, 1) == 0.0
    assert retrieval_accuracy_at_k_by_text(["x"], [], 1) is None
    assert retrieval_accuracy_at_k_by_text(["a", "b"], ["b", "c"], 2, require_all=True) == 0.0


def test_mrr_by_similarity() -> None:
    assert mrr_by_similarity([0.5, 0.8, 0.9], 0.75) == 0.5
    # The threshold must be exceeded, not met.
    assert mrr_by_similarity([0.75, 0.7, 0.76], 0.75) == pytest.approx(1 / 3)
    assert mrr_by_similarity([0.1, 0.2], 0.75) == 0.0
    assert mrr_by_similarity([], 0.75) == 0.0
    with pytest.raises(ValueError, match="NaN"):
        mrr_by_similarity([0.9, math.nan], 0.75)
    with pytest.raises(ValueError, match="NaN"):
        mrr_by_similarity([0.9], math.nan)


# --- properties -----------------------------------------------------------------------------

IDS = st.sampled_from("abcdefghij")
retrieved_lists = st.lists(IDS, max_size=12)
# Fractional grades too, but no subnormal ones (their gains underflow to 0 in NDCG).
grade_maps = st.dictionaries(
    IDS, st.one_of(st.sampled_from([0.0, 1.0, 2.0, 3.0]), st.floats(0.001, 10)), max_size=10
)
ks = st.integers(min_value=1, max_value=15)


@given(retrieved_lists, grade_maps, ks)
def test_values_lie_in_unit_interval_or_are_undetermined(
    retrieved: list[str], grades: dict[str, float], k: int
) -> None:
    values = _all_metrics(retrieved, grades, k)
    if not any(g > 0 for g in grades.values()):
        assert values == [None] * len(values)
    else:
        assert all(v is not None and 0.0 <= v <= 1.0 for v in values), values


@given(retrieved_lists, grade_maps, ks)
def test_cut_metrics_agree_with_each_other(
    retrieved: list[str], grades: dict[str, float], k: int
) -> None:
    hit = hit_rate_at_k(retrieved, grades, k)
    p = precision_at_k(retrieved, grades, k)
    r = recall_at_k(retrieved, grades, k)
    rr = reciprocal_rank(retrieved, grades, k)
    ap = average_precision(retrieved, grades, k)
    nd = ndcg_at_k(retrieved, grades, k)
    if hit is None:
        return
    assert p is not None and r is not None and rr is not None and ap is not None
    assert nd is not None
    found = hit == 1.0
    assert (p > 0) == (r > 0) == (rr > 0) == (ap > 0) == (nd > 0) == found
    assert (rr >= 1 / k) if found else (rr == 0.0)
    # A larger cut-off never lowers recall or the hit rate.
    r_next = recall_at_k(retrieved, grades, k + 1)
    hit_next = hit_rate_at_k(retrieved, grades, k + 1)
    assert r_next is not None and r_next >= r
    assert hit_next is not None and hit_next >= hit


@given(grade_maps, ks)
def test_ideal_order_scores_one(grades: dict[str, float], k: int) -> None:
    relevant = sorted((d for d, g in grades.items() if g > 0), key=lambda d: -grades[d])
    if not relevant:
        return
    ranking = [*relevant, "zz-not-judged"]
    assert ndcg_at_k(ranking, grades, k) == pytest.approx(1.0)
    assert average_precision(ranking, grades) == pytest.approx(1.0)
    assert reciprocal_rank(ranking, grades) == 1.0
    assert recall_at_k(ranking, grades, len(relevant)) == 1.0


@given(st.permutations(list("abcdefghij")), st.sets(IDS, min_size=1), st.randoms())
def test_reordering_non_relevant_docs_below_the_last_relevant_keeps_ap(
    ranking: list[str], relevant: set[str], rnd: random.Random
) -> None:
    last = max(i for i, d in enumerate(ranking) if d in relevant)
    tail = ranking[last + 1 :]
    rnd.shuffle(tail)
    shuffled = ranking[: last + 1] + tail
    assert average_precision(shuffled, relevant) == pytest.approx(
        average_precision(ranking, relevant)
    )
    assert reciprocal_rank(shuffled, relevant) == reciprocal_rank(ranking, relevant)


@given(st.permutations(list("abcdefghij")), st.sets(IDS, min_size=1), st.data())
def test_moving_a_relevant_doc_up_never_lowers_ap_or_ndcg(
    ranking: list[str], relevant: set[str], data: st.DataObject
) -> None:
    i = data.draw(st.integers(1, len(ranking) - 1))
    if ranking[i] not in relevant or ranking[i - 1] in relevant:
        return
    better = ranking.copy()
    better[i - 1], better[i] = better[i], better[i - 1]
    ap, ap_better = average_precision(ranking, relevant), average_precision(better, relevant)
    nd, nd_better = ndcg_at_k(ranking, relevant, 10), ndcg_at_k(better, relevant, 10)
    assert ap is not None and ap_better is not None and ap_better > ap
    assert nd is not None and nd_better is not None and nd_better > nd


@given(retrieved_lists, grade_maps, st.lists(IDS, max_size=5))
def test_repeats_at_the_end_change_nothing_uncut(
    retrieved: list[str], grades: dict[str, float], extra: list[str]
) -> None:
    repeats = [d for d in extra if d in retrieved]
    longer = retrieved + repeats
    assert average_precision(longer, grades) == average_precision(retrieved, grades)
    assert reciprocal_rank(longer, grades) == reciprocal_rank(retrieved, grades)
    n = max(len(longer), 1)
    assert recall_at_k(longer, grades, n) == recall_at_k(retrieved, grades, n)
