"""Coverage and width of the corrected estimate's 95% CI (PPI, PPI++) against the labels alone.

    .venv/bin/python bench/ppi_coverage.py                    # 2,000 simulated runs per setting
    .venv/bin/python bench/ppi_coverage.py --trials 500 --seed 1

Each simulated run has N judged samples drawn from a population: a sample's quality q ~ Beta(2, 2);
the human label y ~ Bernoulli(q) (the truth the estimate targets is E[y] = 0.5); the judge scores
f = clip(q + bias + noise, 0, 1), a biased, noisy judge (bias 0.15; noise s.d. 0.1 "good" or 0.35
"poor"), or one unrelated to q ("useless": uniform). People label n of the N at random. Printed per
setting: how often the 95% CI holds the true mean (should be near 0.95) and its mean width, for the
labels alone (mean +- z s.d./sqrt(n)), plain PPI and PPI++ (``ragsight._stats.ppi_mean``); the
judge's raw mean is printed too, to show its bias. Pure numpy: no model, no store.
"""

from __future__ import annotations

import argparse
import math
import time

import numpy as np

from ragsight._stats import ppi_mean

TRUE_MEAN = 0.5  # E[Bernoulli(q)] for q ~ Beta(2, 2)


def judge(q: np.ndarray, kind: str, rng: np.random.Generator) -> np.ndarray:
    if kind == "useless":
        return rng.uniform(0.0, 1.0, size=q.shape[0])
    noise = {"good": 0.1, "poor": 0.35}[kind]
    return np.clip(q + 0.15 + rng.normal(0.0, noise, size=q.shape[0]), 0.0, 1.0)


def one_setting(n: int, big_n: int, kind: str, trials: int, rng: np.random.Generator) -> dict[str, float]:
    hits = {"labels": 0, "ppi": 0, "ppi++": 0}
    width = {"labels": 0.0, "ppi": 0.0, "ppi++": 0.0}
    raw = 0.0
    lam = 0.0
    for _ in range(trials):
        q = rng.beta(2.0, 2.0, size=big_n)
        y = (rng.uniform(size=big_n) < q).astype(np.float64)
        f = judge(q, kind, rng)
        labelled = rng.choice(big_n, size=n, replace=False)
        mask = np.zeros(big_n, dtype=bool)
        mask[labelled] = True
        plain = ppi_mean(f[mask], y[mask], f[~mask], power_tuning=False)
        tuned = ppi_mean(f[mask], y[mask], f[~mask])
        raw += float(np.mean(f))
        lam += tuned.lam or 0.0
        for name, ci in (("labels", plain.labels_ci), ("ppi", plain.corrected_ci), ("ppi++", tuned.corrected_ci)):
            assert ci is not None
            hits[name] += ci[0] <= TRUE_MEAN <= ci[1]
            width[name] += ci[1] - ci[0]
    out = {f"cover_{k}": v / trials for k, v in hits.items()}
    out.update({f"width_{k}": v / trials for k, v in width.items()})
    out["judge_mean"] = raw / trials
    out["lambda"] = lam / trials
    return out


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--trials", type=int, default=2000)
    ap.add_argument("--seed", type=int, default=0)
    args = ap.parse_args()
    rng = np.random.default_rng(args.seed)
    start = time.perf_counter()
    # a run's coverage estimate over T trials has s.e. sqrt(0.95 * 0.05 / T)
    se = math.sqrt(0.95 * 0.05 / args.trials)
    print(f"true mean {TRUE_MEAN}; {args.trials} trials per row (coverage s.e. {se:.3f}); seed {args.seed}")
    print(f"{'judge':8} {'n':>4} {'N':>5} {'raw':>6} | {'coverage: labels':>16} {'PPI':>6} {'PPI++':>6} | "
          f"{'width: labels':>13} {'PPI':>6} {'PPI++':>6} {'λ':>5}")
    for kind in ("good", "poor", "useless"):
        for n, big_n in ((10, 1000), (30, 1000), (100, 1000), (100, 5000), (300, 1000)):
            r = one_setting(n, big_n, kind, args.trials, rng)
            print(f"{kind:8} {n:4d} {big_n:5d} {r['judge_mean']:6.3f} | {r['cover_labels']:16.3f} "
                  f"{r['cover_ppi']:6.3f} {r['cover_ppi++']:6.3f} | {r['width_labels']:13.3f} "
                  f"{r['width_ppi']:6.3f} {r['width_ppi++']:6.3f} {r['lambda']:5.2f}")
    print(f"({time.perf_counter() - start:.1f} s)")


if __name__ == "__main__":
    main()
