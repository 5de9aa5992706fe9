"""The statistics of bench/validity.py: AUROC and its paired gain with bootstrap intervals, an
L2-regularised logistic regression with its cross-validated predictions (folds by a hash of the row
id), the accuracy-maximising threshold and a paired accuracy gain."""

from __future__ import annotations

import hashlib
from collections.abc import Sequence
from typing import Any


def auroc_ci(scores: Any, labels: Any, n_boot: int = 2000, seed: int = 0) -> tuple[float, float, float]:
    """AUROC with a 95% percentile bootstrap CI (rows resampled)."""
    import numpy as np
    from _stats import bootstrap_ci

    from ragsight._stats import auroc

    s = np.asarray(scores, float)
    y = np.asarray(labels, bool)
    point = auroc(s, y)
    lo, hi = bootstrap_ci(lambda idx: auroc(s[idx], y[idx]), len(s), n_boot, seed)
    return float(point or 0.0), lo, hi


def auroc_gain(a: Any, b: Any, labels: Any, n_boot: int = 2000, seed: int = 0) -> tuple[float, float, float]:
    """AUROC(b) - AUROC(a) on the same rows, with a paired bootstrap 95% CI."""
    import numpy as np
    from _stats import bootstrap_ci

    from ragsight._stats import auroc

    xa, xb = np.asarray(a, float), np.asarray(b, float)
    y = np.asarray(labels, bool)
    point = (auroc(xb, y) or 0.0) - (auroc(xa, y) or 0.0)

    def gain(idx: Any) -> float | None:
        ra, rb = auroc(xa[idx], y[idx]), auroc(xb[idx], y[idx])
        return None if ra is None or rb is None else rb - ra

    lo, hi = bootstrap_ci(gain, len(y), n_boot, seed)
    return float(point), lo, hi


def fit_logistic(
    x: Any, y: Any, l2: float = 1.0, balanced: bool = True, nonneg: Sequence[int] = ()
) -> tuple[Any, Any, Any, float]:
    """L2-regularised logistic regression on standardised features (numpy + scipy).

    Returns (mean, scale, coef, intercept). ``l2`` is the penalty on the standardised
    coefficients (not the intercept) per unit of total sample weight; ``balanced`` weights the
    classes equally; coefficients listed in ``nonneg`` are constrained to be >= 0.
    """
    import numpy as np
    from scipy.optimize import minimize

    x = np.asarray(x, float)
    y = np.asarray(y, float)
    mean = x.mean(axis=0)
    scale = x.std(axis=0)
    scale[scale < 1e-9] = 1.0
    z = (x - mean) / scale
    if balanced:
        w = np.where(y > 0, 0.5 / max(y.mean(), 1e-9), 0.5 / max(1 - y.mean(), 1e-9))
    else:
        w = np.ones_like(y)
    w = w / w.sum()
    k = z.shape[1]

    def loss(theta: Any) -> tuple[float, Any]:
        b, c = theta[0], theta[1:]
        t = b + z @ c
        # log(1 + exp(-t)) for y=1, log(1 + exp(t)) for y=0
        m = np.where(y > 0, -t, t)
        ll = np.logaddexp(0, m)
        f = float(np.sum(w * ll) + 0.5 * l2 * np.sum(c * c) / len(y))
        g_t = w * np.where(y > 0, -1.0, 1.0) / (1 + np.exp(-m))
        grad = np.concatenate([[g_t.sum()], z.T @ g_t + l2 * c / len(y)])
        return f, grad

    bounds = [(None, None)] + [((0.0, None) if i in nonneg else (None, None)) for i in range(k)]
    res = minimize(loss, np.zeros(k + 1), jac=True, method="L-BFGS-B", bounds=bounds)
    return mean, scale, res.x[1:], float(res.x[0])


def predict_logistic(x: Any, mean: Any, scale: Any, coef: Any, intercept: float) -> Any:
    import numpy as np

    t = intercept + ((np.asarray(x, float) - mean) / scale) @ coef
    return 1 / (1 + np.exp(-t))


def fold_of(row_id: str, k: int) -> int:
    """Cross-validation fold of a development row (a different hash from the held-out split)."""
    return int(hashlib.sha256(("fold:" + row_id).encode("utf-8")).hexdigest(), 16) % k


def cv_scores(
    ids: Sequence[str], x: Any, y: Any, k: int = 10, **kw: Any
) -> Any:
    """Out-of-fold predictions of :func:`fit_logistic` (folds by a hash of the id)."""
    import numpy as np

    x = np.asarray(x, float)
    y = np.asarray(y, float)
    folds = np.array([fold_of(i, k) for i in ids])
    out = np.zeros(len(y))
    for f in range(k):
        tr, te = folds != f, folds == f
        if not te.any():
            continue
        mean, scale, coef, b = fit_logistic(x[tr], y[tr], **kw)
        out[te] = predict_logistic(x[te], mean, scale, coef, b)
    return out


def accuracy_threshold(p: Any, y: Any) -> float:
    """The threshold maximising accuracy (middle of the best gap between scores)."""
    import numpy as np

    s = np.unique(np.asarray(p, float))
    cands = np.concatenate([[0.0], (s[:-1] + s[1:]) / 2, [1.0]])
    accs = [float(np.mean((np.asarray(p) >= t) == np.asarray(y, bool))) for t in cands]
    best = max(accs)
    idx = [i for i, a in enumerate(accs) if a == best]
    return float(cands[idx[len(idx) // 2]])


def paired_accuracy_gain(a: Any, b: Any, n_boot: int = 2000, seed: int = 0) -> tuple[float, float, float]:
    import numpy as np

    d = np.asarray(b, float) - np.asarray(a, float)
    rng = np.random.default_rng(seed)
    boots = [float(np.mean(d[rng.integers(0, len(d), len(d))])) for _ in range(n_boot)]
    lo, hi = np.percentile(boots, [2.5, 97.5])
    return float(np.mean(d)), float(lo), float(hi)


def _fmt(point_lo_hi: tuple[float, float, float]) -> str:
    return f"{point_lo_hi[0]:.3f} [{point_lo_hi[1]:.3f}, {point_lo_hi[2]:.3f}]"
