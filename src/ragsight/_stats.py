"""Statistics behind the report: summaries, run comparisons and agreement with human labels.

Pure functions over plain sequences of numbers (numpy and scipy only). Every function is
deterministic given its ``seed``. None of them returns NaN: a quantity the input leaves
undefined (the standard deviation of one value, the correlation of a constant vector, a
probability conditioned on an empty set) is ``None``. Inputs must already be finite (compute
statistics over *scored* outcomes only); NaN or infinity in an input raises ``ValueError``, as do
mismatched lengths and labels that are not binary.

Definitions follow docs METRICS.md, "Aggregates and comparisons" and "Agreement with human
labels"; the concordance table and the group comparison follow the telecom RAGAS study
(Roychowdhury et al.): P(correct | m1 > t1, m2 > t2), P(wrong | m1 < t3, m2 < t4), and
"mean (s.d.)" per group with a one-sided Welch t-test.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence, Set
from dataclasses import dataclass
from typing import Any, Literal, TypeAlias

import numpy as np
import numpy.typing as npt
from scipy import stats as sps

__all__ = [
    "ConcordanceRow",
    "ConcordanceTable",
    "ConditionalRate",
    "Correlations",
    "GroupComparison",
    "GroupStats",
    "PairedDifference",
    "RunSpread",
    "Summary",
    "ThresholdMetrics",
    "auroc",
    "best_threshold",
    "concordance_table",
    "correlations",
    "expected_calibration_error",
    "group_comparison",
    "harmonic_mean",
    "overall_score",
    "paired_difference",
    "pairs_to_detect",
    "run_spread",
    "summarize",
    "threshold_metrics",
]

Floats: TypeAlias = "Sequence[float] | npt.NDArray[Any]"
"""A one-dimensional sequence of finite numbers (a list, tuple or numpy array)."""

Labels: TypeAlias = "Sequence[bool] | Sequence[int] | npt.NDArray[Any]"
"""Binary labels: booleans, or integers 0 and 1 (1 / True = the positive class, e.g. correct)."""

Alternative: TypeAlias = Literal["greater", "less", "two-sided"]

EXACT_PERMUTATION_MAX = 16
"""The permutation test enumerates all sign flips when at most this many pairs differ."""

_BOOT_CHUNK = 1_000_000  # resampled values drawn per batch, to bound memory on large inputs


# ---------------------------------------------------------------------------------------------
# Result types


@dataclass(frozen=True)
class Summary:
    """Mean, sample standard deviation and percentile-bootstrap CI of the mean.

    ``sd`` uses ddof=1 and is ``None`` for fewer than 2 values. The CI is ``None`` for fewer
    than 2 values (resampling one value gives a zero-width interval that claims a certainty the
    data do not have). With no values every field except ``n`` and ``confidence`` is ``None``.
    """

    n: int
    mean: float | None
    sd: float | None
    ci_low: float | None
    ci_high: float | None
    confidence: float


@dataclass(frozen=True)
class PairedDifference:
    """Two runs compared on the same samples: ``diff`` is mean(b - a), so positive means B is
    higher than A.

    ``p_value`` is a two-sided paired permutation (sign-flip) test of "the differences are
    symmetric about 0"; ``exact`` says whether it enumerated every sign assignment (at most 16
    pairs) or drew Monte Carlo flips (p = (1 + hits) / (1 + n_perm)). ``ci_low``/``ci_high``
    invert that same test (the shifts it does not reject at 1 - ``confidence``), so the CI
    excludes 0 exactly when ``p_value < 1 - confidence``. Both ends are ``None`` when the
    interval is unbounded: too few pairs for the test to reject anything (at most 5 at 95%).
    The CI is unadjusted: it speaks for this one comparison, not for a family of them.
    """

    n: int
    mean_a: float | None
    mean_b: float | None
    diff: float | None
    ci_low: float | None
    ci_high: float | None
    confidence: float
    p_value: float | None
    exact: bool

    @property
    def ci_excludes_zero(self) -> bool:
        """Whether the CI lies wholly on one side of 0 (never when it is unbounded)."""
        if self.ci_low is None or self.ci_high is None:
            return False
        return self.ci_low > 0 or self.ci_high < 0

    def verdict(
        self,
        *,
        higher_is_better: bool = True,
        alpha: float = 0.05,
        names: tuple[str, str] = ("A", "B"),
    ) -> str:
        """Say which run is better, e.g. ``"B is better (p=0.003)"``.

        A difference counts when ``p_value < alpha``; otherwise the verdict is
        ``"no significant difference (p=...)"``. ``names`` labels run A and run B.
        """
        if self.p_value is None or self.diff is None:
            return "not enough paired samples to compare"
        p_text = _format_p(self.p_value)
        if self.p_value >= alpha or self.diff == 0:
            return f"no significant difference ({p_text})"
        b_wins = (self.diff > 0) == higher_is_better
        return f"{names[1] if b_wins else names[0]} is better ({p_text})"


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


@dataclass(frozen=True)
class RunSpread:
    """How a metric's mean varies across repeated runs of the same evaluation.

    ``sd`` (ddof=1) is ``None`` for a single run; everything but ``n_runs`` is ``None`` for none.
    ``range`` is ``maximum - minimum``.
    """

    n_runs: int
    mean: float | None
    sd: float | None
    minimum: float | None
    maximum: float | None
    range: float | None


# ---------------------------------------------------------------------------------------------
# Input handling


def _floats(values: Floats, name: str) -> npt.NDArray[np.float64]:
    arr = np.asarray(values, dtype=np.float64)
    if arr.ndim != 1:
        raise ValueError(f"{name} must be a one-dimensional sequence of numbers")
    if not np.all(np.isfinite(arr)):
        raise ValueError(
            f"{name} contains NaN or infinity; compute statistics over scored values only"
        )
    return arr


def _labels(labels: Labels, name: str = "labels") -> npt.NDArray[np.bool_]:
    arr = np.asarray(labels)
    if arr.ndim != 1:
        raise ValueError(f"{name} must be a one-dimensional sequence")
    if arr.dtype == np.bool_:
        return arr
    if arr.size and (arr.dtype.kind not in "iuf" or not np.all((arr == 0) | (arr == 1))):
        raise ValueError(f"{name} must be binary: booleans or the integers 0 and 1")
    return arr.astype(np.bool_)


def _same_length(name_a: str, a: npt.NDArray[Any], name_b: str, b: npt.NDArray[Any]) -> None:
    if a.shape[0] != b.shape[0]:
        raise ValueError(
            f"{name_a} and {name_b} must pair up one to one; got {a.shape[0]} and {b.shape[0]}"
        )


def _check_confidence(confidence: float) -> None:
    if not 0.0 < confidence < 1.0:
        raise ValueError(f"confidence must be strictly between 0 and 1, got {confidence}")


def _check_positive(name: str, value: int) -> None:
    if value < 1:
        raise ValueError(f"{name} must be at least 1, got {value}")


def _finite_or_none(value: Any) -> float | None:
    x = float(value)
    return x if math.isfinite(x) else None


def _sd(x: npt.NDArray[np.float64]) -> float | None:
    return float(np.std(x, ddof=1)) if x.shape[0] >= 2 else None


def _format_p(p: float) -> str:
    return "p<0.001" if p < 0.001 else f"p={p:.2g}"


# ---------------------------------------------------------------------------------------------
# Aggregates


def _bootstrap_means(
    x: npt.NDArray[np.float64], rng: np.random.Generator, n_boot: int
) -> npt.NDArray[np.float64]:
    n = x.shape[0]
    out = np.empty(n_boot, dtype=np.float64)
    batch = max(1, _BOOT_CHUNK // n)
    for start in range(0, n_boot, batch):
        k = min(batch, n_boot - start)
        idx = rng.integers(0, n, size=(k, n))
        out[start : start + k] = x[idx].mean(axis=1)
    return out


def _percentile_ci(
    x: npt.NDArray[np.float64], rng: np.random.Generator, n_boot: int, confidence: float
) -> tuple[float | None, float | None]:
    if x.shape[0] < 2:
        return None, None
    boot = _bootstrap_means(x, rng, n_boot)
    tail = (1.0 - confidence) / 2.0
    low, high = np.quantile(boot, [tail, 1.0 - tail])
    return float(low), float(high)


def summarize(
    values: Floats, seed: int = 0, n_boot: int = 2000, confidence: float = 0.95
) -> Summary:
    """Mean, sample s.d. and percentile-bootstrap CI of the mean of one metric's scored values.

    The CI resamples the values with replacement ``n_boot`` times (generator seeded with
    ``seed``) and takes the ``(1 - confidence) / 2`` and ``(1 + confidence) / 2`` quantiles of
    the resampled means. See ``Summary`` for the small-sample cases.
    """
    _check_confidence(confidence)
    _check_positive("n_boot", n_boot)
    x = _floats(values, "values")
    n = x.shape[0]
    if n == 0:
        return Summary(0, None, None, None, None, confidence)
    ci_low, ci_high = _percentile_ci(x, np.random.default_rng(seed), n_boot, confidence)
    return Summary(n, float(np.mean(x)), _sd(x), ci_low, ci_high, confidence)


def harmonic_mean(values: Floats) -> float | None:
    """The harmonic mean of non-negative values: 0 if any value is 0, ``None`` if empty.

    Raises ``ValueError`` for a negative value (the harmonic mean is not defined for it).
    """
    x = _floats(values, "values")
    if x.shape[0] == 0:
        return None
    if np.any(x < 0):
        raise ValueError("the harmonic mean needs non-negative values")
    if np.any(x == 0):
        return 0.0
    return float(x.shape[0] / np.sum(1.0 / x))


def overall_score(
    means: Mapping[str, float], lower_is_better: Set[str] = frozenset()
) -> float | None:
    """The overall score: harmonic mean of the given metric means (``None`` if none given).

    A metric named in ``lower_is_better`` enters as ``1 - mean`` (so it must lie in [0, 1]);
    names in ``lower_is_better`` that are not in ``means`` are ignored, so one global set of
    lower-is-better metrics can be passed for any selection.
    """
    oriented: list[float] = []
    for name, value in means.items():
        v = 1.0 - value if name in lower_is_better else value
        if not math.isfinite(v) or v < 0:
            raise ValueError(
                f"metric {name!r} enters the overall score as {v}; it must be a finite "
                "non-negative number (a lower-is-better metric must lie in [0, 1])"
            )
        oriented.append(v)
    return harmonic_mean(oriented)


# ---------------------------------------------------------------------------------------------
# Paired comparison of two runs


def _flip_intervals(
    d: npt.NDArray[np.float64], rng: np.random.Generator, n_perm: int
) -> tuple[npt.NDArray[np.float64], npt.NDArray[np.float64], bool]:
    """The sign-flip reference set of ``d``, as one interval of shifts per sign assignment.

    A sign assignment flips the differences in a set F and keeps the rest K. Testing the shift
    ``d0`` (the differences ``d - d0`` are symmetric about 0), the assignment is at least as
    extreme as the observed one, ``|sum_K(d - d0) - sum_F(d - d0)| >= |sum(d - d0)|``, exactly
    when ``sum_F(d - d0) * sum_K(d - d0) <= 0``, i.e. when ``d0`` lies between mean(d over F) and
    mean(d over K) (the whole line when F or K is empty). Every such interval holds mean(d),
    so p(d0) = (number of intervals holding d0) / (number of assignments) falls away from
    mean(d) on both sides and the shifts not rejected form one interval.

    The assignments are all 2**n when n <= EXACT_PERMUTATION_MAX (exact), else the identity
    plus ``n_perm`` random ones (p = (1 + hits) / (1 + n_perm) at every shift). Returns the
    lower and upper ends of the intervals and whether the set is exact.
    """
    n = d.shape[0]
    total = float(np.sum(d))
    tol = 1e-9 * float(np.sum(np.abs(d)))  # a subset sum this close to 0 is 0 (rounding)
    exact = n <= EXACT_PERMUTATION_MAX
    if exact:
        codes = np.arange(2**n, dtype=np.int64)[:, None]
        flips = ((codes >> np.arange(n, dtype=np.int64)) & 1).astype(np.float64)
        sum_f, count_f = flips @ d, flips.sum(axis=1)
    else:
        sum_f = np.empty(n_perm + 1, dtype=np.float64)
        count_f = np.empty(n_perm + 1, dtype=np.float64)
        sum_f[0] = count_f[0] = 0.0  # the observed assignment itself
        batch = max(1, _BOOT_CHUNK // n)
        for start in range(0, n_perm, batch):
            k = min(batch, n_perm - start)
            flips = rng.integers(0, 2, size=(k, n)).astype(np.float64)
            sum_f[1 + start : 1 + start + k] = flips @ d
            count_f[1 + start : 1 + start + k] = flips.sum(axis=1)
    sum_k, count_k = total - sum_f, n - count_f
    sum_f[np.abs(sum_f) <= tol] = 0.0
    sum_k[np.abs(sum_k) <= tol] = 0.0
    whole = (count_f == 0) | (count_k == 0)
    with np.errstate(divide="ignore", invalid="ignore"):
        mean_f = np.where(whole, 0.0, sum_f / np.where(whole, 1.0, count_f))
        mean_k = np.where(whole, 0.0, sum_k / np.where(whole, 1.0, count_k))
    centre = float(np.mean(d))
    # min/max with the mean itself: every interval holds it in floating point too, which is
    # what makes "0 lies in the CI" and "p >= 1 - confidence" the same statement.
    low = np.where(whole, -np.inf, np.minimum(np.minimum(mean_f, mean_k), centre))
    high = np.where(whole, np.inf, np.maximum(np.maximum(mean_f, mean_k), centre))
    return low, high, exact


def _count_for(alpha: float, size: int) -> int:
    """The fewest hits k out of ``size`` with k / size >= alpha (the test does not reject)."""
    k = max(0, math.ceil(alpha * size) - 1)
    while k / size < alpha:
        k += 1
    return k


def _inverted_ci(
    low: npt.NDArray[np.float64], high: npt.NDArray[np.float64], alpha: float
) -> tuple[float | None, float | None]:
    """The shifts d0 with p(d0) >= alpha: [k-th smallest low end, k-th largest high end]."""
    k = max(1, _count_for(alpha, low.shape[0]))
    lo = float(np.partition(low, k - 1)[k - 1])
    hi = float(-np.partition(-high, k - 1)[k - 1])
    return (lo if math.isfinite(lo) else None), (hi if math.isfinite(hi) else None)


def pairs_to_detect(n: int, comparisons: int, alpha: float) -> int | None:
    """None when an exact two-sided sign-flip test on ``n`` pairs can reach ``alpha`` after
    Holm's adjustment over ``comparisons`` tests; else the fewest pairs at which it could. The
    smallest p of the exact test is 2 / 2**n, and Holm multiplies the smallest p by the number
    of comparisons, so below that many pairs "no significant difference" says nothing about the
    data, whatever the scores."""
    m = max(1, comparisons)
    if m * 2 / 2**n < alpha:
        return None
    need = n
    while m * 2 / 2**need >= alpha:
        need += 1
    return need


def paired_difference(
    a: Floats,
    b: Floats,
    seed: int = 0,
    n_perm: int = 10000,
    confidence: float = 0.95,
) -> PairedDifference:
    """Compare run B with run A on the same samples (``a[i]`` and ``b[i]`` score sample i).

    ``diff`` = mean(b - a). The p-value is a two-sided paired permutation test: under "no
    difference" the sign of each per-sample difference is a coin flip, and p is the share of
    sign assignments whose |sum| is at least the observed one. Every assignment is enumerated
    when there are at most 16 pairs (exact; the smallest attainable p is 2 / 2**n), otherwise
    ``n_perm`` random ones (generator seeded with ``seed``) with the +1 correction.

    The CI inverts that same test: it holds every shift d0 for which the test of "the
    differences are symmetric about d0" (the same sign assignments applied to ``d - d0``) gives
    p >= 1 - ``confidence`` (Ernst 2004, "Permutation methods: a basis for exact inference";
    the ends are means of subsets of the differences, as in Hartigan 1969). So the CI excludes
    0 exactly when p < 1 - confidence: the interval and the unadjusted test cannot disagree. A
    percentile bootstrap could (with 14 pairs of which 4 differ it excluded 0 at p = 0.125).
    When no shift can be rejected (at most 5 pairs at 95%: p >= 2 / 2**n > 0.05) the interval
    is unbounded and both ends are ``None``.
    """
    _check_confidence(confidence)
    _check_positive("n_perm", n_perm)
    xa = _floats(a, "a")
    xb = _floats(b, "b")
    _same_length("a", xa, "b", xb)
    n = xa.shape[0]
    if n == 0:
        return PairedDifference(0, None, None, None, None, None, confidence, None, False)
    d = xb - xa
    low, high, exact = _flip_intervals(d, np.random.default_rng(seed), n_perm)
    p_value = int(np.count_nonzero((low <= 0.0) & (high >= 0.0))) / low.shape[0]
    ci_low, ci_high = _inverted_ci(low, high, round(1.0 - confidence, 12))
    return PairedDifference(
        n=n,
        mean_a=float(np.mean(xa)),
        mean_b=float(np.mean(xb)),
        diff=float(np.mean(d)),
        ci_low=ci_low,
        ci_high=ci_high,
        confidence=confidence,
        p_value=p_value,
        exact=exact,
    )


# ---------------------------------------------------------------------------------------------
# Agreement with human labels


def auroc(scores: Floats, labels: Labels) -> float | None:
    """Area under the ROC curve of ``scores`` for binary ``labels`` (1 / True = positive).

    Computed as the Mann-Whitney U of the positives over n_pos * n_neg, with tied scores given
    their average rank (a tie between a positive and a negative counts one half). ``None`` when
    either class is absent.
    """
    s = _floats(scores, "scores")
    y = _labels(labels)
    _same_length("scores", s, "labels", y)
    n_pos = int(np.count_nonzero(y))
    n_neg = int(y.shape[0]) - n_pos
    if n_pos == 0 or n_neg == 0:
        return None
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
    s = _floats(scores, "scores")
    y = _labels(labels)
    _same_length("scores", s, "labels", y)
    n_pos = int(np.count_nonzero(y))
    n_neg = int(y.shape[0]) - n_pos
    if n_pos == 0 or n_neg == 0:
        return None
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


# ---------------------------------------------------------------------------------------------
# Repeated runs


def run_spread(per_run_means: Floats) -> RunSpread:
    """Spread of one metric's mean over repeated runs (judge sampling noise)."""
    x = _floats(per_run_means, "per_run_means")
    n = x.shape[0]
    if n == 0:
        return RunSpread(0, None, None, None, None, None)
    lo, hi = float(np.min(x)), float(np.max(x))
    return RunSpread(
        n_runs=n, mean=float(np.mean(x)), sd=_sd(x), minimum=lo, maximum=hi, range=hi - lo
    )
