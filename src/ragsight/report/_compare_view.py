"""A comparison of runs in the terminal (``ragsight compare``): the runs and how their samples
pair, configurations, the experiment table, paired differences with verdicts, and a text bar per
metric and run, laid out for 80 columns."""

from __future__ import annotations

from rich.console import Console
from rich.text import Text

from ._compare import Comparison, ci_notes
from ._format import (
    arrow,
    bar_scale,
    compact_table,
    config_text,
    fmt,
    fmt_ci,
    fmt_p,
    fmt_signed,
    text_bar,
)

__all__ = ["print_comparison"]


def print_comparison(cmp: Comparison, console: Console | None = None) -> None:
    """Print a comparison with rich: runs, configurations, experiment table, paired
    differences with verdicts, and a text bar per metric and run. Laid out for 80 columns:
    numbers never wrap or shorten; long names and settings wrap inside their cell."""
    c = console or Console(highlight=False)
    base = cmp.baseline
    n = len(cmp.runs)
    if n == 2:
        c.print("Comparing run B with run A (baseline) on the samples both scored.")
    else:
        c.print(
            f"Comparing {n} runs: each of B..{cmp.runs[-1].label} against run A (baseline), "
            "on the samples both scored."
        )
    for r in cmp.runs:
        tag = "  (baseline)" if r.label == base.label else ""
        c.print(Text(f"  {r.label} = {r.run_id}  ({r.size}){tag}"))
    for pr in cmp.pairing:
        if pr.partial:
            c.print(Text(f"WARNING: only {pr.shortfall()}. The differences below "
                         "speak for the paired samples only.", style="bold red"))
        else:
            c.print(Text(f"Pairing: {pr.describe()}."))

    differ = cmp.differing_keys()
    cfg = compact_table("Configurations")
    cfg.add_column("setting", overflow="fold")
    for r in cmp.runs:
        cfg.add_column(r.label, overflow="fold")
    for key in cmp.config_keys:
        mark = " *" if key in differ else ""
        cfg.add_row(Text(key + mark), *(Text(config_text(r.config.get(key))) for r in cmp.runs))
    if cmp.config_keys:
        c.print(cfg)
        if differ:
            c.print("* differs between runs")
    else:
        c.print("Configurations: the runs record no metadata (set it with --metadata KEY=VALUE).")

    exp = compact_table("Experiment table (* best per metric)")
    exp.add_column("metric", overflow="fold", min_width=12)
    for r in cmp.runs:
        exp.add_column(r.label, justify="right", no_wrap=True)
    for row in cmp.table:
        cells = [
            fmt(m) + ("*" if i in row.best and len(cmp.runs) > 1 else " ")
            for i, m in enumerate(row.means)
        ]
        exp.add_row(Text(f"{row.metric} {arrow(row.lower_is_better)}"), *cells)
    if cmp.overall_metrics:
        exp.add_row(
            Text("overall (mean of means)"),
            *(fmt(v) + ("*" if i in cmp.overall_best else " ") for i, v in enumerate(cmp.overall)),
        )
        if cmp.overall_harmonic:
            exp.add_row(Text("harmonic mean", style="dim"), *(fmt(v) + " " for v in cmp.overall_harmonic))
    c.print(exp)
    c.print("↑ higher is better, ↓ lower is better. Means over each run's own scored samples.")
    if cmp.overall_metrics:
        c.print(
            "overall: the mean of the metric means (↓ as 1 - mean, each clamped to [0, 1]); the "
            "harmonic mean below it is 0 when any metric mean is 0."
        )
    for metric, why in cmp.overall_left_out:
        c.print(Text(f"LEFT OUT of the overall: {metric}: {why}", style="bold red"))

    diffs = compact_table(
        f"Paired differences against A (unadjusted {cmp.confidence:.0%} CI, permutation test)"
    )
    diffs.add_column("metric", overflow="fold", min_width=12)
    for col in ("run", "pairs", "diff", "CI", "p", "p Holm"):
        diffs.add_column(col, justify="right", no_wrap=True)
    for p in cmp.paired:
        d = p.difference
        diffs.add_row(
            Text(f"{p.metric} {arrow(p.lower_is_better)}"),
            p.other,
            f"{d.n}/{p.shared}",
            fmt_signed(d.diff),
            fmt_ci(d.ci_low, d.ci_high, signed=True),
            fmt_p(d.p_value),
            fmt_p(p.p_holm),
        )
    c.print(diffs)
    c.print("pairs: samples scored in both runs / samples present in both. diff = run - A, "
            "on the pairs.")
    if cmp.conversations:
        c.print("Each metric is paired on the rows of its own level: a turn metric on the assistant "
                "turns, a conversation metric on the conversations.")
    c.print(
        Text(
            f"Which is better (Holm-adjusted p < {cmp.alpha:g} over all {len(cmp.paired)} "
            "comparisons):",
            style="bold",
        )
    )
    for p in cmp.paired:
        d = p.difference
        c.print(Text(f"  {p.metric} {arrow(p.lower_is_better)} {p.other} vs {p.baseline} "
                     f"({fmt(d.mean_a)} → {fmt(d.mean_b)}): {p.verdict}"))
    for note in ci_notes(cmp):
        c.print(Text(note))

    c.print(Text("Per metric", style="bold"))
    for row in cmp.table:
        lo, hi = bar_scale(row.means)
        c.print(Text(f"{row.metric} {arrow(row.lower_is_better)}"))
        for i, r in enumerate(cmp.runs):
            c.print(Text(f"  {r.label} {text_bar(row.means[i], lo, hi)} {fmt(row.means[i])}"))
