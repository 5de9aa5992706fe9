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

The records are in ``_model.py``, the effects and findings in ``_findings.py``, the terminal
report in ``_print.py`` and the HTML report in ``_html.py``.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Sequence
from typing import Any

from ..errors import ConfigError
from ..report import PairedDifference, holm, paired_difference
from ..result import EvaluationResult, load_result, overall_of
from ..store import Store
from ._causes import config_causes
from ._findings import _effects, _findings, _undetectable
from ._model import ConfigSummary, MetricComparison, SweepReport

MIN_OVERALL_N = 5
"""A metric enters the overall score when every configuration scored it on this many questions (or
on as many as the best-measured metric, when that is fewer)."""

__all__ = [
    "MIN_OVERALL_N",
    "build_report",
    "sweep_names",
]


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
