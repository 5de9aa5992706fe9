"""Tests of ragsight._stats against scipy and against values worked out by hand."""

from __future__ import annotations

import dataclasses
import itertools
import math
from typing import Any

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from scipy import stats as sps

from ragsight._stats import (
    ConditionalRate,
    auroc,
    best_threshold,
    concordance_table,
    correlations,
    expected_calibration_error,
    group_comparison,
    harmonic_mean,
    overall_score,
    paired_difference,
    run_spread,
    summarize,
    threshold_metrics,
)

unit_floats = st.floats(min_value=0.0, max_value=1.0, allow_nan=False)


def _no_nan(obj: Any) -> None:
    """Assert that no field of a (nested) result dataclass is a NaN or infinite float."""
    if dataclasses.is_dataclass(obj):
        for f in dataclasses.fields(obj):
            _no_nan(getattr(obj, f.name))
    elif isinstance(obj, tuple):
        for item in obj:
            _no_nan(item)
    elif isinstance(obj, float):
        assert math.isfinite(obj), obj


# --------------------------------------------------------------------------------------------
# summarize


def test_summarize_matches_numpy_and_contains_the_mean() -> None:
    values = [0.2, 0.9, 0.4, 0.7, 1.0, 0.0, 0.55]
    s = summarize(values, seed=3)
    assert s.n == 7
    assert s.mean == pytest.approx(np.mean(values))
    assert s.sd == pytest.approx(np.std(values, ddof=1))
    assert s.mean is not None and s.ci_low is not None and s.ci_high is not None
    assert s.ci_low < s.mean < s.ci_high
    assert s.confidence == 0.95


def test_summarize_is_deterministic_given_the_seed() -> None:
    values = np.random.default_rng(1).random(50)
    assert summarize(values, seed=7) == summarize(values, seed=7)
    assert summarize(values, seed=7).ci_low != summarize(values, seed=8).ci_low


def test_summarize_ci_of_two_values_is_known() -> None:
    # Resampled means of [0, 1] are 0, 0.5, 1 with probabilities 1/4, 1/2, 1/4.
    wide = summarize([0.0, 1.0], seed=0, n_boot=4000)
    assert (wide.ci_low, wide.ci_high) == (0.0, 1.0)
    narrow = summarize([0.0, 1.0], seed=0, n_boot=4000, confidence=0.4)
    assert (narrow.ci_low, narrow.ci_high) == (0.5, 0.5)


def test_summarize_ci_width_agrees_with_normal_theory_for_large_n() -> None:
    values = np.random.default_rng(11).normal(0.6, 0.2, size=400)
    s = summarize(values, seed=0, n_boot=4000)
    assert s.ci_low is not None and s.ci_high is not None and s.sd is not None
    half_width = 1.96 * s.sd / math.sqrt(400)
    assert (s.ci_high - s.ci_low) / 2 == pytest.approx(half_width, rel=0.1)


def test_summarize_small_samples_use_none() -> None:
    empty = summarize([])
    assert (empty.n, empty.mean, empty.sd, empty.ci_low, empty.ci_high) == (0, *[None] * 4)
    one = summarize([0.4])
    assert (one.n, one.mean, one.sd, one.ci_low, one.ci_high) == (1, 0.4, None, None, None)
    constant = summarize([0.5] * 10)
    assert (constant.sd, constant.ci_low, constant.ci_high) == (0.0, 0.5, 0.5)


def test_summarize_rejects_nan_and_bad_parameters() -> None:
    with pytest.raises(ValueError, match="NaN"):
        summarize([0.1, float("nan")])
    with pytest.raises(ValueError, match="confidence"):
        summarize([0.1, 0.2], confidence=1.0)
    with pytest.raises(ValueError, match="n_boot"):
        summarize([0.1, 0.2], n_boot=0)


# --------------------------------------------------------------------------------------------
# harmonic mean and overall score


def test_harmonic_mean_hand_values() -> None:
    assert harmonic_mean([0.5, 1.0]) == pytest.approx(2 / 3)
    assert harmonic_mean([0.25, 0.5, 1.0]) == pytest.approx(3 / 7)
    assert harmonic_mean([0.9, 0.0, 0.8]) == 0.0
    assert harmonic_mean([]) is None
    with pytest.raises(ValueError, match="non-negative"):
        harmonic_mean([0.5, -0.1])


@given(st.lists(st.floats(min_value=1e-6, max_value=1.0), min_size=1, max_size=20))
def test_harmonic_mean_is_at_most_the_arithmetic_mean(values: list[float]) -> None:
    hm = harmonic_mean(values)
    assert hm is not None
    assert min(values) * (1 - 1e-9) <= hm <= float(np.mean(values)) * (1 + 1e-9)


def test_overall_score_flips_lower_is_better_metrics() -> None:
    means = {"faithfulness": 0.8, "noise_sensitivity": 0.2}
    assert overall_score(means, {"noise_sensitivity"}) == pytest.approx(0.8)
    # Without the flip the low noise sensitivity would drag the score down.
    assert overall_score(means) == pytest.approx(2 / (1 / 0.8 + 1 / 0.2))
    # Names not in the selection are ignored.
    assert overall_score({"faithfulness": 0.5}, {"noise_sensitivity"}) == 0.5
    assert overall_score({}) is None
    with pytest.raises(ValueError, match="noise_sensitivity"):
        overall_score({"noise_sensitivity": 1.5}, {"noise_sensitivity"})


# --------------------------------------------------------------------------------------------
# paired difference


def test_exact_permutation_p_values_enumerated_by_hand() -> None:
    # d = b - a = [1, 2, 3]: the 8 signed sums are 6, 4, 2, 0, 0, -2, -4, -6; |sum| >= 6 twice.
    r = paired_difference([0, 0, 0], [1, 2, 3])
    assert (r.n, r.mean_a, r.mean_b, r.diff) == (3, 0.0, 2.0, 2.0)
    assert r.exact and r.p_value == pytest.approx(2 / 8)
    # d = [3, -1, 1]: signed sums 5, 3, 3, 1, -1, -3, -3, -5; |sum| >= 3 six times.
    r = paired_difference([0, 1, 0], [3, 0, 1])
    assert r.exact and r.p_value == pytest.approx(6 / 8)
    # A zero difference does not change the test.
    r = paired_difference([0, 0, 0, 0.5], [1, 2, 3, 0.5])
    assert r.exact and r.p_value == pytest.approx(2 / 8)
    # No difference at all.
    r = paired_difference([0.3, 0.4], [0.3, 0.4])
    assert r.p_value == 1.0 and r.diff == 0.0


def test_ci_inverts_the_permutation_test_worked_by_hand() -> None:
    # d = [1, 2, 3]. A sign assignment flipping the set F is as extreme as the observed one for
    # the shift d0 when d0 lies between mean(d over F) and mean(d over the rest):
    # F={} or all: everywhere; {1},{2,3}: [1, 2.5]; {2},{1,3}: [2, 2]; {3},{1,2}: [1.5, 3].
    # At confidence 0.5 a shift is kept when at least 4 of the 8 intervals hold it: [1, 3].
    r = paired_difference([0, 0, 0], [1, 2, 3], confidence=0.5)
    assert r.exact and (r.ci_low, r.ci_high) == (1.0, 3.0)
    # Check the ends against the test itself: d - 3 = [-2, -1, 0] has signed sums +-3 (4 of 8
    # assignments) and +-1, so p(3) = 0.5; just past 3 only the two all-same-sign assignments
    # remain, p = 0.25 < 0.5.
    assert paired_difference([3, 3, 3], [1, 2, 3]).p_value == 0.5
    assert paired_difference([3.01, 3.01, 3.01], [1, 2, 3]).p_value == 0.25
    # At 95% no shift can be rejected with 3 pairs (p >= 2/8): the interval is unbounded.
    r = paired_difference([0, 0, 0], [1, 2, 3])
    assert (r.ci_low, r.ci_high) == (None, None) and not r.ci_excludes_zero


def test_trial_case_ci_and_test_agree_with_few_differing_pairs() -> None:
    # The new-user trial: 14 pairs, 4 of them differ (all lower), mean -0.262. The percentile
    # bootstrap gave [-0.471, -0.051] (excluding 0) next to p = 0.125. Exact: 2 of 16 sign
    # assignments of the 4 differences reach |sum| = 3.67, p = 2/16.
    d = [-1.0, -0.9, -0.95, -0.82] + [0.0] * 10
    r = paired_difference([0.0] * 14, d)
    assert r.exact and r.p_value == pytest.approx(2 / 16)
    assert r.diff == pytest.approx(-3.67 / 14)
    assert r.ci_low is not None and r.ci_high is not None
    assert r.ci_low < r.diff < r.ci_high and r.ci_low <= 0.0 <= r.ci_high
    assert not r.ci_excludes_zero
    # Every observed difference is <= 0, so no positive shift is kept: the CI ends at 0.
    assert r.ci_high == 0.0
    # The lower end is where the test (straight from its definition) starts to reject.
    x = np.array(d)
    assert _brute_force_p(x, r.ci_low) >= 0.05 > _brute_force_p(x, r.ci_low - 1e-6)
    assert _brute_force_p(x, 1e-6) < 0.05


def _brute_force_p(d: np.ndarray, d0: float) -> float:
    """The exact sign-flip p-value of "d is symmetric about d0", straight from the definition."""
    x = d - d0
    signs = np.array(list(itertools.product([1.0, -1.0], repeat=len(d))))
    return float(np.mean(np.abs(signs @ x) >= abs(x.sum()) - 1e-9))


def _brute_force_ci(d: np.ndarray, alpha: float) -> tuple[float, float]:
    """The shifts kept by the test, found on a fine grid (ends to within the grid step)."""
    grid = np.linspace(d.min() - 0.01, d.max() + 0.01, 4001)
    kept = [g for g in grid if _brute_force_p(d, g) >= alpha]
    return min(kept), max(kept)


def test_ci_ends_are_where_the_test_starts_to_reject() -> None:
    rng = np.random.default_rng(11)
    d = np.round(rng.normal(0.1, 0.3, size=8), 3)
    r = paired_difference(np.zeros(8), d, confidence=0.9)
    assert r.exact and r.ci_low is not None and r.ci_high is not None
    assert _brute_force_p(d, r.ci_low) >= 0.1 and _brute_force_p(d, r.ci_high) >= 0.1
    assert _brute_force_p(d, r.ci_low - 1e-6) < 0.1 and _brute_force_p(d, r.ci_high + 1e-6) < 0.1
    lo, hi = _brute_force_ci(d, 0.1)
    step = (d.max() - d.min() + 0.02) / 4000
    assert r.ci_low == pytest.approx(lo, abs=step) and r.ci_high == pytest.approx(hi, abs=step)


@settings(deadline=None, max_examples=150)
@given(
    st.lists(
        st.tuples(st.sampled_from([0.0, 0.25, 0.5, 0.75, 1.0]), unit_floats),
        min_size=1,
        max_size=24,
    ),
    st.sampled_from([0.8, 0.9, 0.95]),
    st.integers(min_value=0, max_value=2**32 - 1),
)
def test_ci_excludes_zero_exactly_when_the_test_rejects(
    pairs: list[tuple[float, float]], confidence: float, seed: int
) -> None:
    a, b = zip(*pairs, strict=True)
    # Many ties and zero differences: b copies a in about half the pairs.
    b = tuple(x if i % 2 else y for i, (x, y) in enumerate(zip(a, b, strict=True)))
    r = paired_difference(list(a), list(b), seed=seed, n_perm=300, confidence=confidence)
    assert r.p_value is not None
    assert r.ci_excludes_zero == (r.p_value < round(1 - confidence, 12))
    if r.ci_low is not None and r.ci_high is not None and r.diff is not None:
        assert r.ci_low <= r.diff <= r.ci_high


def test_diff_is_b_minus_a() -> None:
    r = paired_difference([0.9, 0.8, 0.7] * 2, [0.5, 0.5, 0.5] * 2)
    assert r.diff == pytest.approx(-0.3)
    assert r.diff is not None and r.ci_low is not None and r.ci_high is not None
    assert r.ci_low <= r.diff <= r.ci_high <= 0


def test_monte_carlo_p_value_agrees_with_exact_enumeration() -> None:
    rng = np.random.default_rng(5)
    a = rng.random(17)
    b = a + rng.normal(0.05, 0.2, size=17)
    d = b - a
    signs = np.array(list(itertools.product([1.0, -1.0], repeat=17)))
    exact_p = float(np.mean(np.abs(signs @ d) >= abs(d.sum()) - 1e-12))
    r = paired_difference(a, b, seed=1, n_perm=20000)
    assert not r.exact
    assert r.p_value == pytest.approx(exact_p, abs=0.01)


def test_monte_carlo_uses_plus_one_correction_and_seed() -> None:
    a = np.linspace(0.0, 0.5, 30)
    r = paired_difference(a, a + 0.3, n_perm=999)
    assert not r.exact and r.p_value == pytest.approx(1 / 1000)
    rng = np.random.default_rng(2)
    x, y = rng.random(40), rng.random(40)
    assert paired_difference(x, y, seed=4) == paired_difference(x, y, seed=4)
    assert paired_difference(x, y, seed=4).p_value != paired_difference(x, y, seed=5).p_value


@settings(deadline=None, max_examples=60)
@given(
    st.lists(st.tuples(unit_floats, unit_floats), min_size=1, max_size=30),
    st.integers(min_value=0, max_value=2**32 - 1),
)
def test_permutation_p_is_in_unit_interval(pairs: list[tuple[float, float]], seed: int) -> None:
    a, b = zip(*pairs, strict=True)
    r = paired_difference(list(a), list(b), seed=seed, n_perm=200)
    assert r.p_value is not None and 0.0 < r.p_value <= 1.0
    if r.ci_low is not None and r.ci_high is not None and r.diff is not None:
        assert r.ci_low <= r.diff + 1e-12 and r.diff - 1e-12 <= r.ci_high
    _no_nan(r)


def test_verdict() -> None:
    a = np.linspace(0.2, 0.6, 25)
    better_b = paired_difference(a, a + 0.2, n_perm=999)
    assert better_b.verdict() == "B is better (p=0.001)"
    assert better_b.verdict(higher_is_better=False) == "A is better (p=0.001)"
    assert better_b.verdict(names=("baseline", "reranker")) == "reranker is better (p=0.001)"
    assert paired_difference(a, a + 0.2).verdict() == "B is better (p<0.001)"
    small = paired_difference([0, 0, 0], [1, 2, 3])
    assert small.verdict() == "no significant difference (p=0.25)"
    assert small.verdict(alpha=0.3) == "B is better (p=0.25)"
    assert paired_difference([], []).verdict() == "not enough paired samples to compare"


def test_paired_difference_edge_cases() -> None:
    empty = paired_difference([], [])
    assert empty.n == 0 and empty.diff is None and empty.p_value is None
    one = paired_difference([0.2], [0.5])
    assert one.diff == pytest.approx(0.3) and one.ci_low is None and one.p_value == 1.0
    with pytest.raises(ValueError, match="pair up"):
        paired_difference([0.1, 0.2], [0.1])


# --------------------------------------------------------------------------------------------
# AUROC and thresholds


def _auroc_scipy(scores: list[float], labels: list[int]) -> float:
    pos = [s for s, y in zip(scores, labels, strict=True) if y]
    neg = [s for s, y in zip(scores, labels, strict=True) if not y]
    u = sps.mannwhitneyu(pos, neg, alternative="two-sided", method="asymptotic").statistic
    return float(u) / (len(pos) * len(neg))


def test_auroc_hand_values() -> None:
    assert auroc([0.1, 0.4, 0.35, 0.8], [0, 0, 1, 1]) == pytest.approx(0.75)
    assert auroc([0.1, 0.2, 0.8, 0.9], [False, False, True, True]) == 1.0
    # A positive tied with a negative counts one half: 3 wins + 0.5 of 4 pairs.
    assert auroc([0.5, 0.5, 0.9, 0.1], [1, 0, 1, 0]) == pytest.approx(3.5 / 4)
    assert auroc([0.3, 0.7], [1, 1]) is None
    assert auroc([], []) is None
    with pytest.raises(ValueError, match="binary"):
        auroc([0.3, 0.7], [0, 2])


@given(
    st.lists(st.tuples(st.sampled_from([0.0, 0.25, 0.5, 0.75, 1.0]), st.booleans()), max_size=40)
)
def test_auroc_matches_mann_whitney(rows: list[tuple[float, bool]]) -> None:
    scores = [s for s, _ in rows]
    labels = [int(y) for _, y in rows]
    result = auroc(scores, labels)
    if 0 < sum(labels) < len(labels):
        assert result == pytest.approx(_auroc_scipy(scores, labels))
    else:
        assert result is None


@given(
    st.lists(unit_floats, min_size=2, max_size=30, unique=True),
    st.data(),
)
def test_auroc_of_flipped_scores_is_one_minus_auroc(scores: list[float], data: Any) -> None:
    labels = data.draw(st.lists(st.booleans(), min_size=len(scores), max_size=len(scores)))
    flipped = [1.0 - s for s in scores]
    if len(set(flipped)) < len(flipped):  # 1 - s can merge two close scores
        return
    a, b = auroc(scores, labels), auroc(flipped, labels)
    if a is None:
        assert b is None
    else:
        assert b == pytest.approx(1.0 - a)


def test_threshold_metrics_kappa_worked_by_hand() -> None:
    # Confusion matrix: tp=6, fn=1, fp=2, tn=1 (n=10).
    # p_o = 7/10; p_e = (8*7 + 2*3) / 100 = 0.62; kappa = 0.08 / 0.38 = 4/19.
    scores = [0.9] * 5 + [0.5] + [0.1] + [0.8, 0.6] + [0.2]
    labels = [1] * 6 + [1] + [0, 0] + [0]
    m = threshold_metrics(scores, labels, 0.5)  # 0.5 itself counts as positive
    assert (m.tp, m.fn, m.fp, m.tn, m.n) == (6, 1, 2, 1, 10)
    assert m.accuracy == pytest.approx(0.7)
    assert m.kappa == pytest.approx(4 / 19)
    assert m.precision == pytest.approx(6 / 8)
    assert m.recall == pytest.approx(6 / 7)
    assert m.specificity == pytest.approx(1 / 3)
    assert m.f1 == pytest.approx(12 / 15)


def test_threshold_metrics_balanced_kappa_and_undefined_values() -> None:
    # tp=3, fn=2, fp=1, tn=4: p_o = 0.7, p_e = (4*5 + 6*5) / 100 = 0.5, kappa = 0.4.
    scores = [0.9, 0.8, 0.6, 0.3, 0.1, 0.7, 0.2, 0.4, 0.0, 0.45]
    labels = [1, 1, 1, 1, 1, 0, 0, 0, 0, 0]
    assert threshold_metrics(scores, labels, 0.5).kappa == pytest.approx(0.4)
    # Everything positive and predicted positive: chance agreement is 1, kappa undefined.
    m = threshold_metrics([0.8, 0.9], [1, 1], 0.5)
    assert (m.accuracy, m.precision, m.recall) == (1.0, 1.0, 1.0)
    assert m.specificity is None and m.kappa is None
    # Nothing predicted positive and no positives: precision, recall and F1 undefined.
    m = threshold_metrics([0.1, 0.2], [0, 0], 0.5)
    assert (m.precision, m.recall, m.f1, m.kappa) == (None, None, None, None)
    assert m.specificity == 1.0
    empty = threshold_metrics([], [], 0.5)
    assert empty.n == 0 and empty.accuracy is None and empty.kappa is None


def test_best_threshold_maximises_youden_j_with_documented_ties() -> None:
    # t = 0.35 and t = 0.8 both give J = 0.5 and accuracy 3/4: the higher threshold wins.
    assert best_threshold([0.1, 0.4, 0.35, 0.8], [0, 0, 1, 1]) == 0.8
    # Perfect separation: the lowest positive score.
    t = best_threshold([0.1, 0.2, 0.6, 0.7, 0.9], [0, 0, 1, 1, 1])
    assert t == 0.6
    m = threshold_metrics([0.1, 0.2, 0.6, 0.7, 0.9], [0, 0, 1, 1, 1], t)
    assert (m.recall, m.specificity) == (1.0, 1.0)
    # Unbalanced labels: accuracy would prefer predicting "negative" for all (9/10 at t=0.95);
    # Youden's J picks the threshold that catches the positive.
    scores = [0.1, 0.2, 0.3, 0.4, 0.5, 0.6, 0.7, 0.8, 0.9, 0.65]
    labels = [0, 0, 0, 0, 0, 0, 0, 0, 0, 1]
    assert best_threshold(scores, labels) == 0.65
    assert best_threshold([0.2, 0.3], [1, 1]) is None


@given(st.lists(st.tuples(st.sampled_from([0.1, 0.3, 0.5, 0.7, 0.9]), st.booleans()), max_size=30))
def test_best_threshold_is_optimal_over_all_observed_scores(rows: list[tuple[float, bool]]) -> None:
    scores = [s for s, _ in rows]
    labels = [y for _, y in rows]
    t = best_threshold(scores, labels)
    if not 0 < sum(labels) < len(labels):
        assert t is None
        return
    assert t is not None

    def youden(m: Any) -> float:
        return float(m.recall + m.specificity - 1)

    best_j = max(youden(threshold_metrics(scores, labels, c)) for c in set(scores))
    assert youden(threshold_metrics(scores, labels, t)) == pytest.approx(best_j)


# --------------------------------------------------------------------------------------------
# correlations


def test_correlations_match_scipy() -> None:
    scores = [0.1, 0.4, 0.35, 0.8, 0.8, 0.95, 0.2, 0.6]
    grades = [0, 1, 1, 2, 1, 2, 0, 2]
    c = correlations(scores, grades)
    assert c.n == 8
    pearson = sps.pearsonr(scores, grades)
    spearman = sps.spearmanr(scores, grades)
    kendall = sps.kendalltau(scores, grades, variant="b")
    assert c.pearson == pytest.approx(pearson[0]) and c.pearson_p == pytest.approx(pearson[1])
    assert c.spearman == pytest.approx(spearman[0])
    assert c.spearman_p == pytest.approx(spearman[1])
    assert c.kendall == pytest.approx(kendall[0]) and c.kendall_p == pytest.approx(kendall[1])


def test_correlations_of_constant_or_tiny_inputs_are_none() -> None:
    for scores, grades in (
        ([0.5, 0.5, 0.5, 0.5], [0, 1, 2, 1]),
        ([0.1, 0.5, 0.9], [1, 1, 1]),
        ([0.1, 0.9], [0, 1]),
        ([], []),
    ):
        c = correlations(scores, grades)
        assert (c.pearson, c.pearson_p, c.spearman, c.spearman_p, c.kendall, c.kendall_p) == (
            None,
            None,
            None,
            None,
            None,
            None,
        )


# --------------------------------------------------------------------------------------------
# expected calibration error


def test_ece_worked_by_hand() -> None:
    # Bins (width 0.1): [0.05] gap 0.05; [0.15] gap 0.15; [0.3, 0.35] mean p 0.325 vs 0.5,
    # gap 0.175; [0.95, 1.0] mean p 0.975 vs 1, gap 0.025.
    # ECE = (1*0.05 + 1*0.15 + 2*0.175 + 2*0.025) / 6 = 0.6 / 6 = 0.1.
    # (0.3 must fall in [0.3, 0.4); in [0.2, 0.3) the ECE would be 1.3 / 6.)
    probs = [0.05, 0.15, 0.3, 0.35, 0.95, 1.0]
    labels = [0, 0, 1, 0, 1, 1]
    assert expected_calibration_error(probs, labels) == pytest.approx(0.1)
    # One bin: |mean label - mean prob| = |3/6 - 2.8/6|.
    assert expected_calibration_error(probs, labels, n_bins=1) == pytest.approx(0.2 / 6)
    assert expected_calibration_error([0.5] * 4, [1, 0, 1, 0]) == 0.0
    assert expected_calibration_error([], []) is None
    with pytest.raises(ValueError, match=r"\[0, 1\]"):
        expected_calibration_error([1.2], [1])


# --------------------------------------------------------------------------------------------
# concordance table


def test_concordance_table_on_a_hand_made_example() -> None:
    rows = [  # (m1, m2, correct)
        (0.9, 0.8, True),  # both high
        (0.8, 0.9, True),  # both high
        (0.75, 0.5, False),  # m1 high
        (0.95, 0.2, False),  # m1 high, m2 low
        (0.5, 0.85, True),  # m2 high
        (0.2, 0.1, False),  # both low
        (0.1, 0.25, False),  # both low
        (0.25, 0.6, True),  # m1 low
        (0.7, 0.3, True),  # on both thresholds: neither high nor low (strict inequalities)
        (0.6, 0.2, True),  # m2 low
    ]
    m1, m2, correct = (list(col) for col in zip(*rows, strict=True))
    table = concordance_table(m1, m2, correct)
    assert table.t_high == (0.7, 0.7) and table.t_low == (0.3, 0.3)
    high = table.correct_given_high
    assert high.m1 == ConditionalRate(n=4, k=2, probability=0.5)
    assert high.m2 == ConditionalRate(n=3, k=3, probability=1.0)
    assert high.joint == ConditionalRate(n=2, k=2, probability=1.0)
    low = table.wrong_given_low
    assert low.m1.n == 3 and low.m1.k == 2 and low.m1.probability == pytest.approx(2 / 3)
    assert low.m2 == ConditionalRate(n=4, k=3, probability=0.75)
    assert low.joint == ConditionalRate(n=2, k=2, probability=1.0)


def test_concordance_table_empty_condition_is_none() -> None:
    table = concordance_table([0.5, 0.6], [0.5, 0.6], [1, 0], t_high=(0.9, 0.2), t_low=(0.1, 0.1))
    assert table.correct_given_high.m1 == ConditionalRate(n=0, k=0, probability=None)
    assert table.correct_given_high.m2 == ConditionalRate(n=2, k=1, probability=0.5)
    assert table.correct_given_high.joint.probability is None
    assert table.wrong_given_low.joint.probability is None
    _no_nan(table)
    with pytest.raises(ValueError, match="pair up"):
        concordance_table([0.5], [0.5, 0.6], [1, 0])


# --------------------------------------------------------------------------------------------
# group comparison


def test_group_comparison_matches_scipy_welch() -> None:
    rng = np.random.default_rng(9)
    correct = rng.normal(0.8, 0.2, size=40)
    wrong = rng.normal(0.6, 0.35, size=15)
    g = group_comparison(correct, wrong)
    expected = sps.ttest_ind(correct, wrong, equal_var=False, alternative="greater")
    assert g.alternative == "greater"
    assert g.t_statistic == pytest.approx(expected.statistic)
    assert g.p_value == pytest.approx(expected.pvalue)
    assert g.df == pytest.approx(expected.df)
    assert g.a.n == 40 and g.a.mean == pytest.approx(np.mean(correct))
    assert g.b.sd == pytest.approx(np.std(wrong, ddof=1))
    two = group_comparison(correct, wrong, alternative="two-sided")
    assert two.p_value == pytest.approx(2 * expected.pvalue)
    less = group_comparison(correct, wrong, alternative="less")
    assert less.p_value == pytest.approx(1 - expected.pvalue)


def test_group_comparison_hand_df_and_formatting() -> None:
    # a: mean 2, var 1 (n=3); b: mean 0, var 4 (n=5) -> se^2 = 1/3 + 4/5,
    # df = (1/3 + 4/5)^2 / ((1/3)^2 / 2 + (4/5)^2 / 4).
    g = group_comparison([1.0, 2.0, 3.0], [-2.0, -2.0, 0.0, 2.0, 2.0])
    se2 = 1 / 3 + 4 / 5
    assert g.t_statistic == pytest.approx(2 / math.sqrt(se2))
    assert g.df == pytest.approx(se2**2 / ((1 / 3) ** 2 / 2 + (4 / 5) ** 2 / 4))
    assert g.a.mean_sd() == "2.00 (1.00)"
    assert g.b.mean_sd(1) == "0.0 (2.0)"


def test_group_comparison_undefined_cases_are_none() -> None:
    constant = group_comparison([0.5, 0.5, 0.5], [0.5, 0.5])
    assert (constant.t_statistic, constant.df, constant.p_value) == (None, None, None)
    single = group_comparison([0.9], [0.1, 0.3])
    assert single.p_value is None and single.a.sd is None
    assert single.a.mean_sd() == "0.90 (n/a)"
    empty = group_comparison([], [0.1, 0.3])
    assert empty.b.mean == pytest.approx(0.2) and empty.a.mean_sd() == "n/a (n/a)"
    _no_nan(constant)
    # One constant group is fine: df = n - 1 of the other.
    one_constant = group_comparison([1.0, 1.0, 1.0], [0.0, 0.2, 0.4, 0.6])
    assert one_constant.df == pytest.approx(3.0) and one_constant.p_value is not None
    with pytest.raises(ValueError, match="alternative"):
        group_comparison([0.1, 0.2], [0.3, 0.4], alternative="bigger")  # type: ignore[arg-type]


# --------------------------------------------------------------------------------------------
# repeated runs


def test_run_spread() -> None:
    r = run_spread([0.8, 0.82, 0.78])
    assert r.n_runs == 3
    assert r.mean == pytest.approx(0.8)
    assert r.sd == pytest.approx(0.02)
    assert (r.minimum, r.maximum) == (0.78, 0.82)
    assert r.range == pytest.approx(0.04)
    one = run_spread([0.7])
    assert (one.mean, one.sd, one.range) == (0.7, None, 0.0)
    assert run_spread([]) == type(r)(0, None, None, None, None, None)


# --------------------------------------------------------------------------------------------
# never NaN


def test_constant_and_degenerate_inputs_never_give_nan() -> None:
    constant = [0.5] * 6
    labels = [1, 0, 1, 0, 1, 0]
    results: list[Any] = [
        summarize(constant),
        paired_difference(constant, constant),
        correlations(constant, constant),
        threshold_metrics(constant, [1] * 6, 0.5),
        concordance_table(constant, constant, labels),
        group_comparison(constant, constant),
        run_spread(constant),
        auroc(constant, labels),
        best_threshold(constant, labels),
        expected_calibration_error(constant, labels),
        harmonic_mean(constant),
    ]
    for result in results:
        _no_nan(result)
    assert auroc(constant, labels) == 0.5


def test_pairs_to_detect_is_the_floor_of_the_exact_sign_flip_test_after_holm() -> None:
    from ragsight._stats import pairs_to_detect

    # 6 pairs, 4 comparisons: smallest p 2/64, Holm makes it 0.125; 8 pairs give 4 * 2/256 < 0.05
    assert pairs_to_detect(6, 4, 0.05) == 8
    assert pairs_to_detect(8, 4, 0.05) is None
    assert pairs_to_detect(5, 1, 0.05) == 6  # 2/32 = 0.0625; 2/64 < 0.05
    assert pairs_to_detect(6, 1, 0.05) is None
    assert pairs_to_detect(4, 49, 0.05) == 11  # the sweep of 8 configurations on 4 questions
