"""What the viewer's pages share: the labels of a run as the pages show them
(:class:`LabelView`), a date, and a metric's direction arrow.

The pages, rendered on the server as plain HTML (they read without JavaScript; the script only
sends labels and adds keyboard shortcuts), are one module each:

- ``_page_runs``: every run with its data set, judge, settings, date and metric means; each
  metric's trend over the runs of one data set; a form to compare two or more runs;
- ``_page_run``: filters (metric, outcome, score range), full-text search, sort, pages of samples;
- ``_page_sample``: the whole evidence trail, with the controls to label it;
- ``_page_compare``: :func:`ragsight.report.compare` on the chosen runs, then the samples that
  changed most.
"""

from __future__ import annotations

import datetime as dt
from dataclasses import dataclass, field

__all__ = ["LabelView"]


@dataclass
class LabelView:
    """The labels of one run as pages show them: per sample id, per (metric, claim key or None),
    who gave which value."""

    by_sample: dict[str, dict[tuple[str, str | None], dict[str, float]]] = field(default_factory=dict)
    enabled: bool = False

    def labelled(self) -> set[str]:
        return set(self.by_sample)

    def of(self, sample_id: str) -> dict[tuple[str, str | None], dict[str, float]]:
        return self.by_sample.get(sample_id, {})


def _date(ts: float | None) -> str:
    if not ts:
        return "–"
    return dt.datetime.fromtimestamp(ts, dt.timezone.utc).strftime("%Y-%m-%d %H:%M UTC")


def _arrow(lower: bool) -> str:
    return "↓" if lower else "↑"
