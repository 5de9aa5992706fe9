"""Printing a :class:`~ragsight.RepeatReport`: each metric's mean per run and its spread."""

from __future__ import annotations

from rich.console import Console
from rich.table import Table
from rich.text import Text

from .._stats import RunSpread
from ..run import RepeatReport
from ._format import fmt

__all__ = ["print_repeats"]


def print_repeats(report: RepeatReport, console: Console | None = None) -> None:
    """Print each metric's mean per run and its run-to-run spread."""
    c = console or Console(highlight=False)
    n = len(report.results)
    show_runs = n <= 8
    table = Table(
        title=f"{n} repeated runs (judge seeds {report.seeds[0]}..{report.seeds[-1]}, "
        f"temperature {report.temperature:g}, cache off)",
        title_justify="left",
    )
    table.add_column("metric")
    if show_runs:
        for i in range(n):
            table.add_column(f"r{i + 1}", justify="right")
    for col in ("mean", "sd", "min", "max", "range"):
        table.add_column(col, justify="right")

    def row(name: str, per_run: list[float | None], s: RunSpread) -> None:
        cells = [fmt(v) for v in per_run] if show_runs else []
        table.add_row(
            Text(name), *cells, fmt(s.mean), fmt(s.sd), fmt(s.minimum), fmt(s.maximum), fmt(s.range)
        )

    for key, s in report.spread.items():
        row(key, report.means(key), s)
    if len(report.spread) > 1:
        row("overall (mean of means)", [r.overall for r in report.results], report.overall)
        if report.overall_harmonic is not None:
            row("harmonic mean", [r.overall_harmonic for r in report.results],
                report.overall_harmonic)
    c.print(table)
    c.print("sd, min, max and range are over the runs' means (ddof=1 for sd).")
    if report.temperature == 0:
        c.print(
            Text(
                "temperature 0: only the judge seed varied; a greedy judge gives the same "
                "answers whatever the seed. Set a temperature to measure sampling noise.",
                style="dim",
            )
        )
    c.print(Text("runs: " + ", ".join(report.run_ids), style="dim"))
