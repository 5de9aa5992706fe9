"""How numbers and configuration values are written in every report: the terminal tables, the
HTML report and the command line (a dash for a missing value, never "None" or "nan")."""

from __future__ import annotations

import json
import math
from collections.abc import Sequence
from typing import Any

from rich import box
from rich.table import Table

__all__ = [
    "arrow",
    "bar_scale",
    "compact_table",
    "config_text",
    "count_noun",
    "fmt",
    "fmt_ci",
    "fmt_p",
    "fmt_signed",
    "text_bar",
]


def count_noun(n: int, noun: str) -> str:
    """'1 sample', '2 samples', '2 retries': a count with its noun in the right number."""
    if n == 1:
        return f"{n:,} {noun}"
    plural = noun[:-1] + "ies" if noun.endswith("y") and noun[-2:-1] not in "aeiou" else noun + "s"
    return f"{n:,} {plural}"


def compact_table(title: str | None = None) -> Table:
    """A terminal table laid out for 80 columns: a rule under the header, no vertical borders,
    two spaces between columns. Give number columns ``no_wrap=True`` (a number never wraps or
    shortens) and text columns ``overflow="fold"`` (a long name wraps in its cell)."""
    return Table(title=title, title_justify="left", box=box.SIMPLE_HEAD, pad_edge=False,
                 padding=(0, 1, 0, 0), show_edge=False)


def config_text(value: Any) -> str:
    """A configuration value as shown in a table ("–" when the run does not set it)."""
    if value is None:
        return "–"
    if isinstance(value, str):
        return value
    return json.dumps(value, ensure_ascii=False, sort_keys=True)


def fmt(value: float | None, digits: int = 3) -> str:
    return "–" if value is None else f"{value:.{digits}f}"


def fmt_signed(value: float | None, digits: int = 3) -> str:
    return "–" if value is None else f"{value:+.{digits}f}"


def fmt_p(p: float | None) -> str:
    if p is None:
        return "–"
    return "<0.001" if p < 0.001 else f"{p:.3f}"


def fmt_ci(low: float | None, high: float | None, digits: int = 3, signed: bool = False) -> str:
    if low is None or high is None:
        return "–"
    f = fmt_signed if signed else fmt
    return f"[{f(low, digits)}, {f(high, digits)}]"


def arrow(lower_is_better: bool) -> str:
    return "↓" if lower_is_better else "↑"


def bar_scale(values: Sequence[float | None]) -> tuple[float, float]:
    """The axis of a per-metric bar plot: [0, 1] widened to hold every value."""
    present = [v for v in values if v is not None and math.isfinite(v)]
    return min([0.0, *present]), max([1.0, *present])


def text_bar(value: float | None, lo: float, hi: float, width: int = 24) -> str:
    if value is None:
        return " " * width
    filled = round((value - lo) / (hi - lo) * width) if hi > lo else 0
    filled = max(0, min(width, filled))
    return "█" * filled + "·" * (width - filled)
