"""The bench scripts' statistics: bootstrap resampling of a figure for its 95% interval, and the
AUROC of positive against negative scores."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np


def resampled(stat: Callable[[Any], float | None], n: int, reps: int = 2000, seed: int = 0,
              rng: np.random.Generator | None = None) -> list[float]:
    """``stat`` of ``reps`` resamples (indices drawn with replacement from ``n`` rows), by a
    generator seeded with ``seed`` unless ``rng`` is given; a resample where it is None is left
    out."""
    rng = rng if rng is not None else np.random.default_rng(seed)
    vals = []
    for _ in range(reps):
        v = stat(rng.integers(0, n, n))
        if v is not None:
            vals.append(v)
    return vals


def bootstrap_ci(stat: Callable[[Any], float | None], n: int, reps: int = 2000, seed: int = 0,
                 rng: np.random.Generator | None = None) -> tuple[float, float]:
    """The 2.5th and 97.5th percentiles of ``stat`` over resamples (see :func:`resampled`)."""
    lo, hi = np.percentile(resampled(stat, n, reps, seed, rng), [2.5, 97.5])
    return float(lo), float(hi)


def auroc_pairs(pos: np.ndarray, neg: np.ndarray) -> float:
    """P(score of a random positive > score of a random negative), ties counting one half."""
    greater = (pos[:, None] > neg[None, :]).sum()
    ties = (pos[:, None] == neg[None, :]).sum()
    return float((greater + 0.5 * ties) / (len(pos) * len(neg)))
