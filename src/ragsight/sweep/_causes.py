"""Why each configuration's questions fail: the primary cause of every failing question
(``ragsight diagnose`` with its default thresholds, no topics), counted per configuration for
the sweep report's text and HTML."""

from __future__ import annotations

import html
from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING

from rich.console import Console
from rich.table import Table

from ..diagnosis import CAUSES, UNDIAGNOSED, diagnose
from ..result import EvaluationResult

if TYPE_CHECKING:
    from ._model import SweepReport

__all__ = ["causes_html", "config_causes", "print_causes"]

_NOTE = ("Primary cause of each failing question, from its evidence (ragsight diagnose RUN for the claims and "
         "chunks behind them, and RUN_A RUN_B for what a configuration fixed).")


def config_causes(results: Sequence[EvaluationResult]) -> tuple[Mapping[str, int], ...]:
    """Per run: cause -> failing questions with it as their primary cause (causes with none left out)."""
    return tuple({c.cause: c.count for c in diagnose(r, topics=False).causes if c.count} for r in results)


def _columns(rep: SweepReport) -> list[str]:
    found = {c for per in rep.causes for c in per}
    return [c for c in (*CAUSES, UNDIAGNOSED) if c in found]


def print_causes(console: Console, rep: SweepReport) -> None:
    """The table of causes per configuration (nothing when no question fails)."""
    cols = _columns(rep)
    if not cols or len(rep.causes) != len(rep.configs):
        return
    t = Table(title="Why questions fail (failing questions by primary cause)", title_justify="left")
    t.add_column("")
    for c in cols:
        t.add_column(c, justify="right")
    for x, per in zip(rep.configs, rep.causes):
        t.add_row(x.short, *(str(per.get(c, 0)) for c in cols))
    console.print(t)
    console.print(_NOTE, markup=False, highlight=False)


def causes_html(rep: SweepReport) -> str:
    """The same table as an HTML section ("" when no question fails)."""
    cols = _columns(rep)
    if not cols or len(rep.causes) != len(rep.configs):
        return ""
    head = "".join(f"<th>{html.escape(c)}</th>" for c in cols)
    rows = "".join(
        f"<tr><td><b>{html.escape(x.short)}</b> {html.escape(x.label)}</td>"
        + "".join(f"<td>{per.get(c, 0)}</td>" for c in cols) + "</tr>"
        for x, per in zip(rep.configs, rep.causes))
    return (f"<h2>Why questions fail</h2><p class='muted'>{html.escape(_NOTE)}</p>"
            f"<table id='causes'><thead><tr><th>configuration</th>{head}</tr></thead><tbody>{rows}</tbody></table>")
