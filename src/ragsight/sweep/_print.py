"""The sweep report on a terminal, with rich: tables that fit 80 columns (configurations named
C1, C2, ...), the effects of each parameter, the quality/cost trade-off, findings and notes.
"""

from __future__ import annotations

from collections.abc import Sequence

from rich.console import Console
from rich.table import Table
from rich.text import Text

from ..report import fmt, fmt_ci, fmt_p, fmt_signed
from ._causes import print_causes
from ._model import LATENCY_MEANING, Effect, SweepReport

__all__ = ["print_sweep_report"]


def _short_metric(name: str) -> str:
    short = name.replace("(scope=out_of_scope)", "(oos)").replace("(scope=in_scope)", "(in)")
    return short.replace("span_", "").replace("context_", "ctx_").replace("answer_", "ans_")[:15]


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
