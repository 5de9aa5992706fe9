"""What a sweep report reads from the scores besides the means: each varied parameter's effect
(a trend along a numeric parameter, levels against the baseline's for a named one), the findings
said in plain language, and the note when no difference could have been detected at all.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from ..report import (
    PairedDifference,
    fmt_ci,
    fmt_p,
    fmt_signed,
    paired_difference,
    pairs_to_detect,
    summarize,
)
from ..result import EvaluationResult
from ._model import ConfigSummary, Effect, EffectStep, MetricComparison

__all__ = ["is_categorical"]


def _effects(configs: Sequence[ConfigSummary], results: Sequence[EvaluationResult],
             scores: Mapping[str, Mapping[str, Mapping[str, float]]], metrics: Sequence[str],
             varied: Sequence[str], base: int, seed: int) -> list[Effect]:
    out: list[Effect] = []
    bp = configs[base].params
    for p in varied:
        values = list(dict.fromkeys(c.params.get(p) for c in configs))
        categorical = is_categorical(values)
        if categorical:  # levels: the baseline's first, then the sweep's order
            values.sort(key=lambda v: v != bp.get(p))
        else:
            values.sort()
        held = {}
        for v in values:
            hits = [i for i, c in enumerate(configs) if c.params.get(p) == v
                    and all(c.params.get(q) == bp.get(q) for q in varied if q != p)]
            if hits:
                held[repr(v)] = hits[0]
        mode = "held at the baseline" if len(held) >= 2 else "averaged over the other settings"
        use_values = [v for v in values if repr(v) in held] if len(held) >= 2 else values
        groups = [((held[repr(v)],) if len(held) >= 2 else
                   tuple(i for i, c in enumerate(configs) if c.params.get(p) == v)) for v in use_values]
        for k in metrics:
            per_value: list[dict[str, float]] = []
            for g in groups:
                maps = [scores[results[i].run_id][k] for i in g]
                common = set(maps[0]).intersection(*maps[1:]) if maps else set()
                # in the samples' order: the bootstrap and the permutation test draw by position,
                # so an order that changed between processes (a set's) would change the CI and p
                order = [sid for sid in maps[0] if sid in common] if maps else []
                per_value.append({s: sum(m[s] for m in maps) / len(maps) for s in order})
            sums = [summarize(list(d.values()), seed=seed) for d in per_value]
            if all(s.mean is None for s in sums):
                continue
            # a trend: each value against the one before; levels: each against the baseline's
            pairs = ([(0, j) for j in range(1, len(use_values))] if categorical
                     else [(j - 1, j) for j in range(1, len(use_values))])
            steps = []
            for i, j in pairs:
                a, b = per_value[i], per_value[j]
                ids = [s for s in a if s in b]
                if ids:
                    steps.append(EffectStep(use_values[i], use_values[j],
                                            paired_difference([a[s] for s in ids], [b[s] for s in ids], seed=seed)))
            out.append(Effect(p, k, mode, tuple(use_values), tuple(s.mean for s in sums),
                              tuple((s.ci_low, s.ci_high) for s in sums), tuple(groups), tuple(steps),
                              categorical))
    return out


def is_categorical(values: Sequence[Any]) -> bool:
    """A parameter's values are levels, not points on a scale, unless every one is a number (a
    switch, true/false, is a level: Python's bool is an int, and is not counted as one)."""
    return not all(isinstance(v, (int, float)) and not isinstance(v, bool) for v in values)


def _findings(configs: Sequence[ConfigSummary], effects: Sequence[Effect],
              comparisons: Sequence[MetricComparison], metrics: Sequence[str], lower: Mapping[str, bool],
              base: int, alpha: float) -> list[str]:
    out: list[str] = []
    for e in effects:
        for s in e.steps:
            d = s.difference
            if d.diff is None or s.p_holm is None or s.p_holm >= alpha or d.diff == 0:
                continue
            verb = "raised" if d.diff > 0 else "lowered"
            good = (d.diff > 0) != lower[e.metric]
            lo, hi = (d.ci_low, d.ci_high) if d.diff > 0 else (
                None if d.ci_high is None else -d.ci_high, None if d.ci_low is None else -d.ci_low)
            change = (f"{e.parameter} = {s.value_to} instead of the baseline's {s.value_from}" if e.categorical
                      else f"{e.parameter} {s.value_from} -> {s.value_to}")
            out.append(
                f"{change} {verb} {e.metric} by {abs(d.diff):.3f} "
                f"{fmt_ci(lo, hi)} ({'better' if good else 'worse'}; "
                f"p Holm {fmt_p(s.p_holm)}; n={d.n}; other settings {e.mode.replace('held at', 'at')})"
            )
    quiet: dict[str, list[str]] = {}
    for e in effects:
        if e.steps and all(s.p_holm is not None and s.p_holm >= alpha for s in e.steps):
            quiet.setdefault(e.parameter, []).append(e.metric)
    if quiet:
        parts = []
        for p, ms in quiet.items():
            every = len(ms) == len({e.metric for e in effects if e.parameter == p})
            parts.append(f"{p} on {'any metric' if every else ', '.join(ms)}")
        out.append(f"No detectable effect (Holm p >= {alpha:g}) of " + "; of ".join(parts) + ".")
    for k in metrics:
        wins = [c for c in comparisons if c.metric == k and c.better]
        if wins:
            top = max(wins, key=lambda c: (c.difference.diff or 0) * (-1 if lower[k] else 1))
            d = top.difference
            out.append(f"Best on {k} against the baseline {configs[base].short}: {configs[top.config].short} "
                       f"({configs[top.config].label}), {fmt_signed(d.diff)} {fmt_ci(d.ci_low, d.ci_high, signed=True)}, "
                       f"p Holm {fmt_p(top.p_holm)}.")
    return out


def _undetectable(raw: Sequence[tuple[str, int, PairedDifference]], alpha: float) -> str | None:
    """A note when no configuration could have been found better or worse than the baseline,
    whatever the scores: with at most 16 paired questions the smallest p is 2 / 2**n, and Holm
    multiplies the smallest p by the number of comparisons."""
    tested = [d for _, _, d in raw if d.p_value is not None]
    if not tested or not all(d.exact for d in tested):
        return None
    n, m = max(d.n for d in tested), len(raw)
    need = pairs_to_detect(n, m, alpha)
    if need is None:
        return None
    return (f"No configuration could have been found better or worse than the baseline, whatever "
            f"the scores: with {n} paired questions the smallest p is 2/2^{n} = {2 / 2**n:.3g}, and "
            f"Holm over {m} comparisons makes it {min(1.0, m * 2 / 2**n):.3g}, not below {alpha:g}. The best "
            f"configurations are ranked on means that these questions cannot tell apart; it takes "
            f"at least {need} questions for a difference to be detectable at all.")
