"""Reading a sweep: configurations x metrics, the best configurations, the effect of each
parameter, the quality/cost trade-off, and plain-language findings.

The statistics are those of ``ragsight compare`` (``ragsight.report``): a metric's mean with its
percentile-bootstrap CI over the questions; a configuration against the baseline as a paired
difference over the questions both scored (paired permutation p-value, and the CI that inverts
that test, unadjusted); the p-values of one family Holm-adjusted together. Two families: every
(configuration, metric) against the baseline, and every step of every parameter's effect.

A parameter's effect is read along one line of the grid: the configurations that differ from the
baseline in that parameter only ("other settings held at the baseline"), when the sweep has them
for at least two values; otherwise each value's configurations are averaged per question
("averaged over the other settings"). The report says which.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from rich.console import Console
from rich.table import Table
from rich.text import Text

from ..errors import ConfigError
from ..report import (
    PairedDifference,
    fmt,
    fmt_ci,
    fmt_p,
    fmt_signed,
    holm,
    paired_difference,
    pairs_to_detect,
    summarize,
)
from ..result import EvaluationResult, load_result, overall_of
from ..store import Store
from ._causes import config_causes, print_causes

MIN_OVERALL_N = 5
"""A metric enters the overall score when every configuration scored it on this many questions (or
on as many as the best-measured metric, when that is fewer)."""

__all__ = [
    "LATENCY_MEANING",
    "MIN_OVERALL_N",
    "ConfigSummary",
    "Effect",
    "EffectStep",
    "MetricComparison",
    "SweepReport",
    "build_report",
    "print_sweep_report",
    "sweep_names",
]


@dataclass(frozen=True)
class ConfigSummary:
    """One configuration: its settings, run, metric summaries, overall score and cost."""

    label: str
    short: str
    config_id: str
    run_id: str
    params: Mapping[str, Any]
    baseline: bool
    status: str
    questions: int
    means: Mapping[str, float | None]
    ci: Mapping[str, tuple[float | None, float | None]]
    n: Mapping[str, int]
    overall: float | None
    tokens_per_question: float | None
    latency_per_question: float | None
    answered: int
    failed: int


@dataclass(frozen=True)
class MetricComparison:
    """A configuration against the baseline on one metric (paired over the questions)."""

    metric: str
    config: int
    difference: PairedDifference
    p_holm: float | None
    better: bool | None  # True better than the baseline, False worse, None no detectable change


@dataclass(frozen=True)
class EffectStep:
    value_from: Any
    value_to: Any
    difference: PairedDifference
    p_holm: float | None = None


@dataclass(frozen=True)
class Effect:
    """A metric along one parameter's values: mean and CI per value, and paired differences.
    ``mode`` is "held at the baseline" or "averaged over the other settings".

    A numeric parameter (``categorical`` False) has its values in order and one step between
    each pair of neighbours: a trend. A parameter whose values are names or switches (a
    generator, ``fusion = [true, false]``: any value that is not a number) has no order: its
    values are levels, the baseline's level first, and each other level is compared with the
    baseline's (``steps``: baseline level -> level)."""

    parameter: str
    metric: str
    mode: str
    values: tuple[Any, ...]
    means: tuple[float | None, ...]
    ci: tuple[tuple[float | None, float | None], ...]
    configs: tuple[tuple[int, ...], ...]
    steps: tuple[EffectStep, ...]
    categorical: bool = False


@dataclass(frozen=True)
class SweepReport:
    """Everything ``ragsight sweep report`` prints and draws."""

    name: str
    store: str
    configs: tuple[ConfigSummary, ...]
    metrics: tuple[str, ...]
    lower_is_better: Mapping[str, bool]
    varied: tuple[str, ...]
    overall_metrics: tuple[str, ...]
    comparisons: tuple[MetricComparison, ...]
    best: Mapping[str, tuple[int, ...]]
    best_overall: tuple[int, ...]
    effects: tuple[Effect, ...]
    pareto: tuple[int, ...]
    cost_axis: str
    findings: tuple[str, ...]
    notes: tuple[str, ...] = ()
    alpha: float = 0.05
    judged_note: str = ""
    scores: Mapping[str, Mapping[str, Mapping[str, float]]] = field(default_factory=dict, repr=False)
    causes: tuple[Mapping[str, int], ...] = ()  # per configuration: cause -> failing questions

    @property
    def baseline(self) -> int:
        return next(i for i, c in enumerate(self.configs) if c.baseline)

    def comparison(self, metric: str, config: int) -> MetricComparison | None:
        return next((c for c in self.comparisons if c.metric == metric and c.config == config), None)

    def to_dict(self) -> dict[str, Any]:
        out = dataclasses.asdict(self)
        out.pop("scores", None)
        return out


def sweep_names(store: Store) -> list[str]:
    """Names of the sweeps in a store, the most recent first."""
    names: list[str] = []
    for info in store.runs():
        n = info.metadata.get("sweep")
        if isinstance(n, str) and n not in names:
            names.append(n)
    return names


def _mean(xs: Sequence[float]) -> float | None:
    return sum(xs) / len(xs) if xs else None


LATENCY_MEANING = ("latency: the system's answering time per answered question, as measured when "
                   "each answer was made: loading (models, indexes) left out, an answer reused from "
                   "the store counted at the time it took then, not the time of reading it back.")
"""What the latency column measures, said under it in the text and the HTML report."""


def _cost(result: EvaluationResult) -> tuple[float | None, float | None, int, int]:
    """(tokens per answered question, latency per answered question, answered, failed)."""
    tokens: list[float] = []
    latency: list[float] = []
    answered = failed = 0
    for s in result.samples:
        m = s.metadata
        if m.get("error"):
            failed += 1
            continue
        generated = s.response is not None or m.get("unjudged_response") is not None
        if not generated:
            continue
        answered += 1
        if isinstance(m.get("prompt_tokens"), (int, float)):
            tokens.append(float(m["prompt_tokens"]) + float(m.get("completion_tokens") or 0))
        if isinstance(m.get("latency_s"), (int, float)):
            latency.append(float(m["latency_s"]))
    return _mean(tokens), _mean(latency), answered, failed


def _load(store: Store, name: str) -> list[tuple[EvaluationResult, dict[str, Any], float]]:
    latest: dict[str, tuple[EvaluationResult, dict[str, Any], float]] = {}
    for info in sorted(store.runs(), key=lambda r: r.created_at):
        meta = info.metadata
        if meta.get("sweep") != name:
            continue
        cid = str(meta.get("config_id"))
        prev = latest.get(cid)
        # a completed run beats an interrupted one; then the newer one
        if prev is not None and prev[0].status == "completed" and info.status != "completed":
            continue
        latest[cid] = (load_result(store, info.id), dict(meta), info.created_at)
    return sorted(latest.values(), key=lambda t: t[2])


def build_report(
    store: Store, name: str | None = None, *, run_ids: Sequence[str] | None = None,
    quality: str | None = None, alpha: float = 0.05, seed: int = 0, baseline: str | None = None,
) -> SweepReport:
    """The report of sweep ``name`` in ``store`` (default: the most recent sweep); or of the
    given runs, in order. The baseline is the run ``baseline`` names, else the run tagged as the
    baseline when it ran (the latest such), else the first.
    ``quality``: the metric on the trade-off's quality axis (default: the overall score)."""
    if run_ids:
        loaded = []
        for rid in run_ids:
            info = store.run(store.resolve_run(rid))
            loaded.append((load_result(store, info.id), dict(info.metadata), info.created_at))
        name = name or str(loaded[0][1].get("sweep") or "runs")
    else:
        if name is None:
            names = sweep_names(store)
            if not names:
                raise ConfigError(f"no sweep in {store.path}; run 'ragsight sweep SWEEP.toml' first")
            name = names[0]
        loaded = _load(store, name)
        if not loaded:
            known = ", ".join(sweep_names(store)) or "none"
            raise ConfigError(f"no runs of sweep '{name}' in {store.path}; sweeps there: {known}")
    results = [r for r, _, _ in loaded]
    metas = [m for _, m, _ in loaded]
    ids = [r.run_id for r in results]
    if baseline is not None:
        if baseline not in ids:
            raise ConfigError(f"baseline run {baseline} is not among the sweep's runs")
        base = ids.index(baseline)
    else:
        tagged = [i for i, m in enumerate(metas) if m.get("baseline") is True]
        base = tagged[-1] if tagged else 0
    skip = {"sweep", "sweep_config", "config_id", "baseline"}
    param_keys = list(dict.fromkeys(k for m in metas for k in m if k not in skip))
    params = [{k: m.get(k) for k in param_keys if k in m} for m in metas]
    varied = tuple(k for k in param_keys if len({repr(p.get(k)) for p in params}) > 1)

    metrics: list[str] = []
    lower: dict[str, bool] = {}
    for r in results:
        for key, s in r.summary.items():
            if key not in metrics:
                metrics.append(key)
                lower[key] = s.lower_is_better
    scores = {r.run_id: {m: r.scored_values(m) for m in metrics} for r in results}

    # configurations; the overall score takes the metrics every configuration measured on at
    # least MIN_OVERALL_N questions (a mean of one or two judged questions would decide it)
    configs: list[ConfigSummary] = []
    measured = [m for m in metrics if all(r.summary.get(m) is not None and r.summary[m].mean is not None
                                          for r in results)]
    most = max((r.summary[m].n for r in results for m in measured), default=0)
    floor = min(MIN_OVERALL_N, most)  # a test set of 4 questions still has an overall score
    shared = [m for m in measured if all(r.summary[m].n >= floor for r in results)]
    thin = [m for m in measured if m not in shared]
    for i, (r, m) in enumerate(zip(results, metas)):
        means = {k: (r.summary[k].mean if k in r.summary else None) for k in metrics}
        # the one overall of docs/metrics.md: the mean of the oriented, clamped metric means
        ov = overall_of({k: means[k] for k in shared}, {k for k in shared if lower[k]}).mean if shared else None
        tok, lat, answered, failed = _cost(r)
        label = str(m.get("sweep_config") or " ".join(f"{k}={params[i].get(k)}" for k in varied) or r.run_id)
        configs.append(ConfigSummary(
            label=label, short=f"C{i + 1}", config_id=str(m.get("config_id", "")), run_id=r.run_id,
            params=params[i], baseline=i == base, status=r.status, questions=len(r.samples),
            means=means,
            ci={k: ((r.summary[k].ci_low, r.summary[k].ci_high) if k in r.summary else (None, None))
                for k in metrics},
            n={k: (r.summary[k].n if k in r.summary else 0) for k in metrics},
            overall=ov, tokens_per_question=tok, latency_per_question=lat, answered=answered, failed=failed,
        ))

    # every configuration against the baseline, one Holm family
    raw: list[tuple[str, int, PairedDifference]] = []
    b_run = results[base].run_id
    for i, r in enumerate(results):
        if i == base:
            continue
        for k in metrics:
            a, b = scores[b_run][k], scores[r.run_id][k]
            ids = [sid for sid in a if sid in b]
            if not ids:
                continue
            raw.append((k, i, paired_difference([a[s] for s in ids], [b[s] for s in ids], seed=seed)))
    adj = holm([d.p_value for _, _, d in raw])
    comparisons = []
    for (k, i, d), p in zip(raw, adj):
        better = None
        if p is not None and p < alpha and d.diff:
            better = (d.diff > 0) != lower[k]
        comparisons.append(MetricComparison(k, i, d, p, better))

    best: dict[str, tuple[int, ...]] = {}
    for k in metrics:
        vals = [(round(v, 3), i) for i, c in enumerate(configs) if (v := c.means[k]) is not None]
        if vals:
            target = min(v for v, _ in vals) if lower[k] else max(v for v, _ in vals)
            best[k] = tuple(i for v, i in vals if v == target)
    ov_vals = [(round(c.overall, 3), i) for i, c in enumerate(configs) if c.overall is not None]
    best_overall = tuple(i for v, i in ov_vals if v == max(v for v, _ in ov_vals)) if ov_vals else ()

    effects = _effects(configs, results, scores, metrics, varied, base, seed)
    flat = [s for e in effects for s in e.steps]
    adj2 = holm([s.difference.p_value for s in flat])
    it = iter(adj2)
    effects = [dataclasses.replace(e, steps=tuple(dataclasses.replace(s, p_holm=next(it)) for s in e.steps))
               for e in effects]

    # trade-off
    cost_axis = "tokens" if any(c.tokens_per_question is not None for c in configs) else "latency"

    def cost(c: ConfigSummary) -> float | None:
        return c.tokens_per_question if cost_axis == "tokens" else c.latency_per_question

    def qual(c: ConfigSummary) -> float | None:
        return c.overall if quality is None else c.means.get(quality)

    if quality is not None and quality not in metrics:
        raise ConfigError(f"--quality {quality}: the sweep has no such metric; it has {', '.join(metrics)}")
    pts = [(i, qual(c), cost(c)) for i, c in enumerate(configs)]
    pts_ok = [(i, q, k) for i, q, k in pts if q is not None and k is not None]
    pareto = tuple(sorted(
        i for i, q, k in pts_ok
        if not any((q2 >= q and k2 <= k) and (q2 > q or k2 < k) for _, q2, k2 in pts_ok)
    ))

    notes: list[str] = []
    blind = _undetectable(raw, alpha)
    if blind:
        notes.append(blind)
    if thin:
        notes.append(f"The overall score leaves out {', '.join(thin)}: measured on fewer than "
                     f"{floor} questions in some configuration.")
    judged = {sum(1 for s in r.samples if s.metadata.get("judged")) for r in results}
    questions = {len(r.samples) for r in results}
    judged_note = ""
    if judged and max(judged) < max(questions):
        judged_note = (f"Judge metrics were computed on {max(judged)} of {max(questions)} questions per "
                       "configuration (judge_questions); the span metrics on every question.")
    last_error = None
    for c, r in zip(configs, results):
        if c.failed:
            first = next((str(s.metadata["error"]) for s in r.samples if s.metadata.get("error")), "")
            why = " ".join(first.split())
            why = why if len(why) <= 300 else why[:299] + "…"
            said = "the same error as above" if why == last_error else f"the first: {why}"
            last_error = why
            notes.append(f"{c.short}: {c.failed} question(s) failed to answer (counted as skipped by the "
                         f"metrics); {said}")
        if c.status != "completed":
            notes.append(f"{c.short}: run {c.run_id} is {c.status}; run the sweep again to finish it.")
    findings = _findings(configs, effects, comparisons, metrics, lower, base, alpha)
    return SweepReport(
        name=name, store=store.path, configs=tuple(configs), metrics=tuple(metrics), lower_is_better=lower,
        varied=varied, overall_metrics=tuple(shared), comparisons=tuple(comparisons), best=best,
        best_overall=best_overall, effects=tuple(effects), pareto=pareto, cost_axis=cost_axis,
        findings=tuple(findings), notes=tuple(notes), alpha=alpha, judged_note=judged_note, scores=scores,
        causes=config_causes(results),
    )


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


# ---------------------------------------------------------------------------------------------
# Terminal


def _short_metric(name: str) -> str:
    short = name.replace("(scope=out_of_scope)", "(oos)").replace("(scope=in_scope)", "(in)")
    return short.replace("span_", "").replace("context_", "ctx_").replace("answer_", "ans_")[:15]


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


def print_sweep_report(rep: SweepReport, console: Console | None = None) -> None:
    """The report on a terminal (fits 80 columns: configurations are named C1, C2, ...)."""
    c = console or Console(highlight=False)
    base = rep.configs[rep.baseline]
    c.print(Text(f"Sweep '{rep.name}': {len(rep.configs)} configurations, "
                 f"{max(x.questions for x in rep.configs)} questions each (paired by question id).",
                 style="bold"))
    if rep.judged_note:
        c.print(rep.judged_note)
    cfg = Table(title="Configurations", title_justify="left")
    cfg.add_column("")
    for p in rep.varied or ("run",):
        cfg.add_column(p)
    for x in rep.configs:
        cells = [str(x.params.get(p)) for p in rep.varied] if rep.varied else [x.run_id]
        cfg.add_row(x.short + (" (base)" if x.baseline else ""), *cells)
    c.print(cfg)

    t = Table(title="Means (* best; + / - better / worse than the baseline, Holm-adjusted)",
              title_justify="left")
    t.add_column("")
    for m in rep.metrics:
        t.add_column(_short_metric(m), justify="right")
    t.add_column("overall", justify="right")
    for i, x in enumerate(rep.configs):
        cells = []
        for m in rep.metrics:
            mark = "*" if i in rep.best.get(m, ()) and len(rep.configs) > 1 else " "
            cmp = rep.comparison(m, i)
            sign = "" if cmp is None or cmp.better is None else ("+" if cmp.better else "-")
            cells.append(f"{fmt(x.means[m], 2)}{sign}{mark}")
        cells.append(fmt(x.overall, 2) + ("*" if i in rep.best_overall else " "))
        t.add_row(x.short, *cells)
    c.print(t)
    legend = ", ".join(f"{_short_metric(m)} = {m}" for m in rep.metrics if _short_metric(m) != m)
    if legend:
        c.print(Text(legend))
    if rep.overall_metrics:
        c.print(Text("overall: mean of the metric means (↓ as 1 - mean) of " + ", ".join(rep.overall_metrics)))

    best = Table(title=f"Best per metric vs the baseline {base.short} (paired; unadjusted 95% CI; p Holm)",
                 title_justify="left")
    for col in ("metric", "best", "mean", "diff", "CI of diff", "p"):
        best.add_column(col, justify="left" if col in ("metric", "best") else "right")
    for m in rep.metrics:
        idx = rep.best.get(m, ())
        if not idx:
            continue
        i = idx[0]
        x = rep.configs[i]
        who = x.short + (f" +{len(idx) - 1} tied" if len(idx) > 1 else "")
        cmp = rep.comparison(m, i)
        if cmp is not None and cmp.difference.diff is not None:
            d = cmp.difference
            best.add_row(_short_metric(m), who, fmt(x.means[m]), fmt_signed(d.diff),
                         fmt_ci(d.ci_low, d.ci_high, 2, signed=True), fmt_p(cmp.p_holm))
        else:
            best.add_row(_short_metric(m), who, fmt(x.means[m]), "base" if i == rep.baseline else "–", "", "")
    c.print(best)
    if rep.best_overall:
        i = rep.best_overall[0]
        x = rep.configs[i]
        c.print(Text(f"Best overall: {x.short} ({x.label}), overall {fmt(x.overall)}.", style="bold"))

    for p in rep.varied:
        effs = [e for e in rep.effects if e.parameter == p]
        if not effs:
            continue
        if effs[0].categorical:
            _print_levels(c, p, effs)
            continue
        t2 = Table(title=f"Effect of {p} ({effs[0].mode}; mean [95% CI])", title_justify="left")
        t2.add_column("metric")
        for v in effs[0].values:
            t2.add_column(str(v), justify="right")
        t2.add_column("last step, p Holm", justify="right")
        for e in effs:
            cells = [f"{fmt(mn, 2)} {fmt_ci(lo, hi, 2)}" for mn, (lo, hi) in zip(e.means, e.ci)]
            step = e.steps[-1] if e.steps else None
            last = "" if step is None else f"{fmt_signed(step.difference.diff, 2)} {fmt_p(step.p_holm)}"
            t2.add_row(_short_metric(e.metric), *cells, last)
        c.print(t2)

    unit = "tokens/question" if rep.cost_axis == "tokens" else "s/question"
    tr = Table(title=f"Quality / cost ({unit}; P = on the Pareto front)", title_justify="left")
    for col in ("", "quality", "tokens/q", "latency s/q", "front"):
        tr.add_column(col, justify="right")
    for i, x in enumerate(rep.configs):
        tr.add_row(x.short, fmt(x.overall, 3), fmt(x.tokens_per_question, 0) if x.tokens_per_question is not None else "-",
                   fmt(x.latency_per_question, 2), "P" if i in rep.pareto else "")
    c.print(tr)
    if any(x.latency_per_question is not None for x in rep.configs):
        c.print(Text(LATENCY_MEANING))
    print_causes(c, rep)
    if rep.findings:
        c.print(Text("Findings:", style="bold"))
        for f in rep.findings:
            c.print(Text("  - " + f))
    for n in rep.notes:
        c.print(Text("NOTE: " + n, style="yellow"))


def _print_levels(c: Console, p: str, effs: Sequence[Effect]) -> None:
    """A categorical parameter: each level's mean, and its paired difference from the baseline's
    level (no order, so no steps between neighbours)."""
    base = effs[0].values[0]
    t = Table(title=f"Effect of {p}: levels, each against the baseline's {base} (paired; {effs[0].mode}; "
                    "mean [95% CI]; p Holm)", title_justify="left")
    for col in ("metric", p, "mean", f"vs {base}", "p"):
        t.add_column(col, justify="left" if col in ("metric", p) else "right")
    for e in effs:
        by_level = {repr(s.value_to): s for s in e.steps}
        for j, (v, mn, (lo, hi)) in enumerate(zip(e.values, e.means, e.ci)):
            step = by_level.get(repr(v))
            diff = p_holm = ""
            if j == 0:
                diff = "base"
            elif step is not None:
                d = step.difference
                diff = f"{fmt_signed(d.diff, 2)} {fmt_ci(d.ci_low, d.ci_high, 2, signed=True)}"
                p_holm = fmt_p(step.p_holm)
            t.add_row(_short_metric(e.metric) if j == 0 else "", str(v), f"{fmt(mn, 2)} {fmt_ci(lo, hi, 2)}",
                      diff, p_holm, end_section=j == len(e.values) - 1)
    c.print(t)
