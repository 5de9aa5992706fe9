"""One run's numbers: a metric's mean with its bootstrap CI, the harmonic mean and the overall
score, and the spread of a mean over repeated runs."""

from __future__ import annotations

import math
from collections.abc import Mapping, Set
from dataclasses import dataclass

import numpy as np
import numpy.typing as npt

from ._common import _BOOT_CHUNK, Floats, _check_confidence, _check_positive, _floats, _sd

__all__ = ["RunSpread", "Summary", "harmonic_mean", "overall_score", "run_spread", "summarize"]


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
