"""Agreement of scores with human labels: AUROC, thresholds, kappa, correlations, calibration
error, the telecom study's concordance table and group comparison."""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np
import numpy.typing as npt
from scipy import stats as sps

from ._common import (
    Alternative,
    Floats,
    Labels,
    _check_positive,
    _finite_or_none,
    _floats,
    _labels,
    _same_length,
    _sd,
)

__all__ = ["ConcordanceRow", "ConcordanceTable", "ConditionalRate", "Correlations", "GroupComparison", "GroupStats", "ThresholdMetrics", "auroc", "best_threshold", "concordance_table", "correlations", "expected_calibration_error", "group_comparison", "threshold_metrics"]


@dataclass(frozen=True)
class ThresholdMetrics:
    """Agreement of ``score >= threshold`` with binary labels (1 / True = positive).

    ``None`` marks a value whose denominator is zero: precision with no predicted positives,
    recall with no positive labels, specificity with no negative labels, F1 when there are
    neither positive labels nor predicted positives, Cohen's kappa when chance agreement is 1
    (labels and predictions all in the same single class).
    """

    threshold: float
    n: int
    tp: int
    fp: int
    tn: int
    fn: int
    accuracy: float | None
    precision: float | None
    recall: float | None
    specificity: float | None
    f1: float | None
    kappa: float | None


@dataclass(frozen=True)
class Correlations:
    """Pearson, Spearman and Kendall tau-b between scores and (graded) labels, with p-values.

    All ``None`` when there are fewer than 3 pairs or either vector is constant.
    """

    n: int
    pearson: float | None
    pearson_p: float | None
    spearman: float | None
    spearman_p: float | None
    kendall: float | None
    kendall_p: float | None


@dataclass(frozen=True)
class ConditionalRate:
    """``k`` of the ``n`` samples meeting a condition have the outcome; ``probability`` = k / n,
    ``None`` when no sample meets the condition."""

    n: int
    k: int
    probability: float | None


@dataclass(frozen=True)
class ConcordanceRow:
    """One conditional probability for metric 1 alone, metric 2 alone and both jointly."""

    m1: ConditionalRate
    m2: ConditionalRate
    joint: ConditionalRate


@dataclass(frozen=True)
class ConcordanceTable:
    """The telecom study's concordance of two metrics with human correctness labels.

    ``correct_given_high``: P(correct | m1 > t_high[0]) , P(correct | m2 > t_high[1]) and
    P(correct | m1 > t_high[0] and m2 > t_high[1]). ``wrong_given_low``: the same for
    P(wrong | m < t_low). Inequalities are strict, as in the study.
    """

    t_high: tuple[float, float]
    t_low: tuple[float, float]
    correct_given_high: ConcordanceRow
    wrong_given_low: ConcordanceRow


@dataclass(frozen=True)
class GroupStats:
    """Size, mean and sample standard deviation (ddof=1) of one group."""

    n: int
    mean: float | None
    sd: float | None

    def mean_sd(self, digits: int = 2) -> str:
        """Format as the study's "mean (s.d.)", e.g. ``"0.91 (0.19)"``; "n/a" where undefined."""
        mean = "n/a" if self.mean is None else f"{self.mean:.{digits}f}"
        sd = "n/a" if self.sd is None else f"{self.sd:.{digits}f}"
        return f"{mean} ({sd})"


@dataclass(frozen=True)
class GroupComparison:
    """Welch's t-test of group A against group B.

    ``alternative="greater"`` tests mean(A) > mean(B). ``t_statistic``, ``df`` (Welch-
    Satterthwaite) and ``p_value`` are ``None`` when either group has fewer than 2 values or
    both groups are constant.
    """

    a: GroupStats
    b: GroupStats
    alternative: Alternative
    t_statistic: float | None
    df: float | None
    p_value: float | None


def _both_classes(scores: Floats, labels: Labels) -> tuple[npt.NDArray[np.float64], npt.NDArray[np.bool_], int, int] | None:
    """(scores, labels, positives, negatives), checked and paired; None when either class is
    absent (no ranking or threshold can be judged on one class)."""
    s = _floats(scores, "scores")
    y = _labels(labels)
    _same_length("scores", s, "labels", y)
    n_pos = int(np.count_nonzero(y))
    n_neg = int(y.shape[0]) - n_pos
    if n_pos == 0 or n_neg == 0:
        return None
    return s, y, n_pos, n_neg


def auroc(scores: Floats, labels: Labels) -> float | None:
    """Area under the ROC curve of ``scores`` for binary ``labels`` (1 / True = positive).

    Computed as the Mann-Whitney U of the positives over n_pos * n_neg, with tied scores given
    their average rank (a tie between a positive and a negative counts one half). ``None`` when
    either class is absent.
    """
    both = _both_classes(scores, labels)
    if both is None:
        return None
    s, y, n_pos, n_neg = both
    ranks = sps.rankdata(s)
    u = float(np.sum(ranks[y])) - n_pos * (n_pos + 1) / 2.0
    return u / (n_pos * n_neg)


def best_threshold(scores: Floats, labels: Labels) -> float | None:
    """The threshold that maximises Youden's J (recall + specificity - 1) of ``score >= t``.

    Youden's J rather than accuracy, because accuracy on unbalanced labels is maximised by
    predicting the majority class. Candidates are the observed scores, so
    ``threshold_metrics(scores, labels, best_threshold(scores, labels))`` reproduces the choice.
    Ties go to the higher accuracy, then to the higher threshold. ``None`` when either class is
    absent.
    """
    both = _both_classes(scores, labels)
    if both is None:
        return None
    s, y, n_pos, n_neg = both
    candidates = np.unique(s)
    pos_sorted = np.sort(s[y])
    neg_sorted = np.sort(s[~y])
    tp = n_pos - np.searchsorted(pos_sorted, candidates, side="left")
    fp = n_neg - np.searchsorted(neg_sorted, candidates, side="left")
    j_scaled = tp * n_neg - fp * n_pos  # J * n_pos * n_neg, exact in integers
    correct = tp + (n_neg - fp)
    best = int(np.lexsort((candidates, correct, j_scaled))[-1])
    return float(candidates[best])


def threshold_metrics(scores: Floats, labels: Labels, threshold: float) -> ThresholdMetrics:
    """Confusion counts, accuracy, precision, recall, specificity, F1 and Cohen's kappa of the
    prediction ``score >= threshold`` against binary ``labels`` (1 / True = positive)."""
    s = _floats(scores, "scores")
    y = _labels(labels)
    _same_length("scores", s, "labels", y)
    pred = s >= threshold
    tp = int(np.count_nonzero(pred & y))
    fp = int(np.count_nonzero(pred & ~y))
    tn = int(np.count_nonzero(~pred & ~y))
    fn = int(np.count_nonzero(~pred & y))
    n = tp + fp + tn + fn

    def ratio(num: int, den: int) -> float | None:
        return num / den if den else None

    kappa: float | None = None
    if n:
        p_observed = (tp + tn) / n
        p_chance = ((tp + fp) * (tp + fn) + (tn + fn) * (tn + fp)) / (n * n)
        if p_chance < 1.0:
            kappa = (p_observed - p_chance) / (1.0 - p_chance)
    return ThresholdMetrics(
        threshold=float(threshold),
        n=n,
        tp=tp,
        fp=fp,
        tn=tn,
        fn=fn,
        accuracy=ratio(tp + tn, n),
        precision=ratio(tp, tp + fp),
        recall=ratio(tp, tp + fn),
        specificity=ratio(tn, tn + fp),
        f1=ratio(2 * tp, 2 * tp + fp + fn),
        kappa=kappa,
    )


def correlations(scores: Floats, labels: Floats) -> Correlations:
    """Pearson, Spearman and Kendall tau-b (scipy) between scores and graded labels.

    ``None`` throughout when there are fewer than 3 pairs (two points always correlate +-1) or
    either vector is constant (the coefficient is undefined).
    """
    x = _floats(scores, "scores")
    y = _floats(labels, "labels")
    _same_length("scores", x, "labels", y)
    n = x.shape[0]
    if n < 3 or np.ptp(x) == 0 or np.ptp(y) == 0:
        return Correlations(n, None, None, None, None, None, None)
    pearson = sps.pearsonr(x, y)
    spearman = sps.spearmanr(x, y)
    kendall = sps.kendalltau(x, y)  # variant "b" (tie-corrected) is scipy's default
    return Correlations(
        n=n,
        pearson=_finite_or_none(pearson[0]),
        pearson_p=_finite_or_none(pearson[1]),
        spearman=_finite_or_none(spearman[0]),
        spearman_p=_finite_or_none(spearman[1]),
        kendall=_finite_or_none(kendall[0]),
        kendall_p=_finite_or_none(kendall[1]),
    )


def expected_calibration_error(probs: Floats, labels: Labels, n_bins: int = 10) -> float | None:
    """Expected calibration error of probabilities against binary outcomes.

    ``n_bins`` equal-width bins over [0, 1]; bin i holds i/n_bins <= p < (i+1)/n_bins (the last
    bin also holds 1.0). ECE = sum over bins of (bin size / n) * |mean label - mean prob|.
    ``None`` for no samples.
    """
    _check_positive("n_bins", n_bins)
    p = _floats(probs, "probs")
    y = _labels(labels)
    _same_length("probs", p, "labels", y)
    n = p.shape[0]
    if n == 0:
        return None
    if np.any((p < 0) | (p > 1)):
        raise ValueError("probs must lie in [0, 1]")
    # Edges as i / n_bins (correctly rounded), so a probability written as 0.3 lands in [0.3, 0.4).
    edges = np.arange(n_bins + 1, dtype=np.float64) / n_bins
    bins = np.minimum(np.searchsorted(edges, p, side="right") - 1, n_bins - 1)
    total = 0.0
    for i in np.unique(bins):
        mask = bins == i
        gap = abs(float(np.mean(y[mask])) - float(np.mean(p[mask])))
        total += int(np.count_nonzero(mask)) / n * gap
    return total


def _rate(condition: npt.NDArray[np.bool_], outcome: npt.NDArray[np.bool_]) -> ConditionalRate:
    n = int(np.count_nonzero(condition))
    k = int(np.count_nonzero(condition & outcome))
    return ConditionalRate(n=n, k=k, probability=k / n if n else None)


def concordance_table(
    m1: Floats,
    m2: Floats,
    correct: Labels,
    t_high: tuple[float, float] = (0.7, 0.7),
    t_low: tuple[float, float] = (0.3, 0.3),
) -> ConcordanceTable:
    """The telecom study's concordance of two metrics with human correctness labels.

    ``m1[i]``, ``m2[i]`` are two metrics' scores of sample i (default pairing in the spec:
    faithfulness and factual correctness) and ``correct[i]`` the human verdict. Gives
    P(correct | m > t_high) and P(wrong | m < t_low) for each metric alone and for both jointly,
    with the number of samples behind each probability.
    """
    x1 = _floats(m1, "m1")
    x2 = _floats(m2, "m2")
    ok = _labels(correct, "correct")
    _same_length("m1", x1, "m2", x2)
    _same_length("m1", x1, "correct", ok)
    high1, high2 = x1 > t_high[0], x2 > t_high[1]
    low1, low2 = x1 < t_low[0], x2 < t_low[1]
    wrong = ~ok
    return ConcordanceTable(
        t_high=(float(t_high[0]), float(t_high[1])),
        t_low=(float(t_low[0]), float(t_low[1])),
        correct_given_high=ConcordanceRow(
            m1=_rate(high1, ok), m2=_rate(high2, ok), joint=_rate(high1 & high2, ok)
        ),
        wrong_given_low=ConcordanceRow(
            m1=_rate(low1, wrong), m2=_rate(low2, wrong), joint=_rate(low1 & low2, wrong)
        ),
    )


def _group(x: npt.NDArray[np.float64]) -> GroupStats:
    n = x.shape[0]
    return GroupStats(n=n, mean=float(np.mean(x)) if n else None, sd=_sd(x))


def group_comparison(
    values_a: Floats, values_b: Floats, alternative: Alternative = "greater"
) -> GroupComparison:
    """Mean (s.d.) of two groups and Welch's unequal-variance t-test between them.

    With the default ``alternative="greater"`` the p-value is one-sided for mean(A) > mean(B)
    (e.g. A = samples with correct retrieval, B = wrong retrieval), as in the telecom study.
    The result equals ``scipy.stats.ttest_ind(a, b, equal_var=False, alternative=...)``; it is
    computed from the group moments and the t distribution because ttest_ind warns (an error
    under ``-W error``) when one group is constant, a case Welch's test handles fine.
    """
    if alternative not in ("greater", "less", "two-sided"):
        raise ValueError(
            f"alternative must be 'greater', 'less' or 'two-sided', not {alternative!r}"
        )
    xa = _floats(values_a, "values_a")
    xb = _floats(values_b, "values_b")
    ga, gb = _group(xa), _group(xb)
    if ga.sd is None or gb.sd is None:
        return GroupComparison(ga, gb, alternative, None, None, None)
    va, vb = ga.sd**2 / ga.n, gb.sd**2 / gb.n
    if va + vb == 0:
        return GroupComparison(ga, gb, alternative, None, None, None)
    df = (va + vb) ** 2 / (va**2 / (ga.n - 1) + vb**2 / (gb.n - 1))
    t = (float(np.mean(xa)) - float(np.mean(xb))) / math.sqrt(va + vb)
    if alternative == "greater":
        p = sps.t.sf(t, df)
    elif alternative == "less":
        p = sps.t.cdf(t, df)
    else:
        p = min(1.0, 2.0 * float(sps.t.sf(abs(t), df)))
    return GroupComparison(
        a=ga,
        b=gb,
        alternative=alternative,
        t_statistic=_finite_or_none(t),
        df=_finite_or_none(df),
        p_value=_finite_or_none(p),
    )
