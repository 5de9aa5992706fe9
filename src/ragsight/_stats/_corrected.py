"""A metric's mean corrected by human labels: prediction-powered inference (PPI; Angelopoulos,
Bates, Fannjiang, Jordan and Zrnic, "Prediction-powered inference", Science 2023) with the
power-tuned weight of PPI++ (Angelopoulos, Duchi and Zrnic 2023).

The judge scored all N samples; people labelled n of them. The judge's mean over the N is
precise but biased by the judge's errors; the labels' mean is unbiased but rests on n samples.
PPI adds the judge's mean error, measured on the labelled samples, back to the judge's mean::

    plain PPI:  theta = mean_N(f) - mean_n(f - y)
    PPI++:      theta = mean_n(y) + lam * (mean_N(f) - mean_n(f))      (lam = 1: plain PPI)

where f is the judge's value and y the human label. Writing U for the N - n samples nobody
labelled and w = lam * (N - n) / N, theta = mean_n(y - w f) + w mean_U(f), a sum of two
independent means, so its variance is exactly var_n(y - w f) / n + w^2 var_U(f) / (N - n), and
the CI is theta +- z sqrt(variance) (normal quantile z). PPI++ picks the lam that minimises that
variance, cov(y, f) / (var(f) (1 + n / (N - n))) in units of w, clipped to [0, 1]: lam = 0 is
the labels alone (the judge adds nothing when it does not track the labels), lam = 1 plain PPI.
The tuned lam is estimated from the same data; the CI stays valid as n grows (PPI++, Theorem 1),
and ``bench/ppi_coverage.py`` prints its coverage for small n.

Two guards keep the interval honest at the edges. **Unanimous labels** (every label 1, or
every label 0: a good system's first labels often all pass) have no spread, so the normal CI
has width zero; for 0/1 labels the labels' interval is then the Wilson score interval (1 of 1
pass is not certainty), and the corrected interval is at least as wide as it; the estimate says
``unanimous`` and counts as ``too_few``. **Bounds**: a metric on [0, 1] gets a mean and a CI
inside [0, 1] (``bounds``), as the labels' mean can never leave it.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass

import numpy as np
import numpy.typing as npt
from scipy import stats as sps

from ._common import Floats, _check_confidence, _floats, _same_length

__all__ = ["MIN_LABELS", "CorrectedEstimate", "corrected_estimate", "ppi_mean"]

MIN_LABELS = 10
"""Below this many labels the corrected estimate is flagged ``too_few``: its variance comes from
fewer than ten judge-minus-human errors, and the normal CI is then too narrow as often as not."""


@dataclass(frozen=True)
class CorrectedEstimate:
    """A mean corrected by labels, beside the judge's raw mean and the labels' own mean.

    ``n_labels`` labelled samples of ``n_judged`` judged ones. ``judge_mean``: the raw mean of
    the judge over all judged samples. ``labels_mean`` and ``labels_ci``: the labels alone (mean
    +- z s.d. / sqrt(n)). ``corrected_mean`` and ``corrected_ci``: the PPI estimate and its CI
    (``None`` for fewer than 2 labels). ``lam``: the weight given to the judge (1 plain PPI, 0 the
    labels alone). ``too_few``: fewer than :data:`MIN_LABELS` labels, or labels all alike
    (``unanimous``: their spread cannot be measured); say so beside the figure.
    """

    n_labels: int
    n_judged: int
    judge_mean: float | None
    labels_mean: float | None
    labels_ci: tuple[float, float] | None
    corrected_mean: float | None
    corrected_ci: tuple[float, float] | None
    lam: float | None
    confidence: float
    too_few: bool
    unanimous: bool = False

    def flipped(self) -> CorrectedEstimate:
        """The same estimate of 1 - x (for a metric where lower is better, estimated as 1 - value)."""

        def one(x: float | None) -> float | None:
            return None if x is None else 1.0 - x

        def ci(c: tuple[float, float] | None) -> tuple[float, float] | None:
            return None if c is None else (1.0 - c[1], 1.0 - c[0])

        return CorrectedEstimate(self.n_labels, self.n_judged, one(self.judge_mean), one(self.labels_mean),
                                 ci(self.labels_ci), one(self.corrected_mean), ci(self.corrected_ci), self.lam,
                                 self.confidence, self.too_few, self.unanimous)


def _var(x: npt.NDArray[np.float64]) -> float:
    return float(np.var(x, ddof=1)) if x.shape[0] >= 2 else 0.0


def wilson(mean: float, n: int, z: float) -> tuple[float, float]:
    """The Wilson score interval of a proportion ``mean`` of ``n`` 0/1 values (normal quantile
    ``z``): never of width zero, even at 0 or 1."""
    denom = 1.0 + z * z / n
    centre = (mean + z * z / (2 * n)) / denom
    half = z * math.sqrt(mean * (1.0 - mean) / n + z * z / (4 * n * n)) / denom
    return max(0.0, centre - half), min(1.0, centre + half)


def _within(ci: tuple[float, float], bounds: tuple[float, float] | None) -> tuple[float, float]:
    if bounds is None:
        return ci
    lo, hi = bounds
    return min(hi, max(lo, ci[0])), max(lo, min(hi, ci[1]))


def ppi_mean(labelled_judge: Floats, labels: Floats, unlabelled_judge: Floats, *, confidence: float = 0.95,
             power_tuning: bool = True, bounds: tuple[float, float] | None = None) -> CorrectedEstimate:
    """The PPI estimate of the labels' mean (see the module docstring).

    ``labelled_judge[i]`` and ``labels[i]``: the judge's value and the human label of the i-th
    labelled sample; ``unlabelled_judge``: the judge's values on the samples nobody labelled
    (N = n + their number). ``power_tuning=False`` gives plain PPI (lam = 1). ``bounds``: the
    range of the metric (e.g. (0, 1)); the corrected mean and both CIs are kept inside it."""
    _check_confidence(confidence)
    f_l = _floats(labelled_judge, "labelled_judge")
    y = _floats(labels, "labels")
    _same_length("labelled_judge", f_l, "labels", y)
    f_u = _floats(unlabelled_judge, "unlabelled_judge")
    n, n_u = f_l.shape[0], f_u.shape[0]
    big_n = n + n_u
    f_all = np.concatenate([f_l, f_u])
    judge_mean = float(np.mean(f_all)) if big_n else None
    too_few = n < MIN_LABELS
    if n < 2:
        mean = float(np.mean(y)) if n else None
        return CorrectedEstimate(n, big_n, judge_mean, mean, None, None, None, None, confidence, too_few)
    z = float(sps.norm.ppf(0.5 + confidence / 2))
    y_mean = float(np.mean(y))
    half = z * math.sqrt(_var(y) / n)
    labels_ci = (y_mean - half, y_mean + half)
    unanimous = bool(np.all(y == y[0]))
    if unanimous and y[0] in (0.0, 1.0):
        labels_ci = wilson(y_mean, n, z)
    share = n_u / big_n  # w = lam * share
    if not power_tuning:
        lam = 1.0
    else:
        var_f = _var(f_all)
        if n_u == 0 or var_f == 0.0:
            lam = 0.0
        else:
            cov = float(np.cov(y, f_l, ddof=1)[0, 1])
            w = cov / (var_f * (1.0 + n / n_u))
            lam = min(1.0, max(0.0, w / share))
    w = lam * share
    theta = float(np.mean(y - w * f_l)) + (w * float(np.mean(f_u)) if n_u else 0.0)
    variance = _var(y - w * f_l) / n + (w * w * _var(f_u) / n_u if n_u else 0.0)
    half = z * math.sqrt(variance)
    ci = (theta - half, theta + half)
    if unanimous and y[0] in (0.0, 1.0):  # at least as wide as what the labels alone can say
        ci = (min(ci[0], labels_ci[0]), max(ci[1], labels_ci[1]))
    if bounds is not None:
        theta = min(bounds[1], max(bounds[0], theta))
    return CorrectedEstimate(n, big_n, judge_mean, y_mean, _within(labels_ci, bounds), theta, _within(ci, bounds),
                             lam, confidence, too_few or unanimous, unanimous)


def corrected_estimate(judged: Mapping[str, float], labels: Mapping[str, float], *, lower_is_better: bool = False,
                       confidence: float = 0.95, power_tuning: bool = True,
                       bounds: tuple[float, float] | None = (0.0, 1.0)) -> CorrectedEstimate:
    """A metric's mean corrected by human labels, from ``judged`` (sample id -> the judge's
    scored value) and ``labels`` (sample id -> the human label on the metric's scale, e.g. 1
    right / 0 wrong). Labels of samples the judge did not score are left out (they cannot show
    the judge's error). ``lower_is_better``: label 1 means good, so the metric is estimated as
    1 - value and the result given back on the metric's scale. ``bounds``: the metric's range
    ((0, 1) by default; None for none), which the estimate and its CIs keep to (a metric that
    can go below 0, such as a cosine, passes its own)."""
    ids = [sid for sid in judged if sid in labels]
    sign = -1.0 if lower_is_better else 1.0
    base = 1.0 if lower_is_better else 0.0
    f_l = [base + sign * judged[sid] for sid in ids]
    y = [float(labels[sid]) for sid in ids]
    f_u = [base + sign * v for sid, v in judged.items() if sid not in labels]
    ends = None if bounds is None else sorted((base + sign * bounds[0], base + sign * bounds[1]))
    est = ppi_mean(f_l, y, f_u, confidence=confidence, power_tuning=power_tuning,
                   bounds=None if ends is None else (ends[0], ends[1]))
    return est.flipped() if lower_is_better else est
