"""The report's plots read as counts: a histogram's y axis has whole
numbers of samples only (on main: 1.5 when the tallest bar held 3)."""

from __future__ import annotations

import re

import pytest

from ragsight import Score
from ragsight.report._svg import count_ticks, histogram_svg
from ragsight.result import summarize_scores


@pytest.mark.parametrize(("values", "ticks"), [
    ([0.1, 0.1, 0.1, 0.9], ["1", "3"]),
    ([0.5], ["1"]),
    ([0.2, 0.2, 0.8], ["1", "2"]),
    ([0.3] * 7, ["3", "7"]),
])
def test_histogram_ticks_are_whole_counts(values: list[float], ticks: list[str]) -> None:
    summary = summarize_scores("faithfulness", [Score.scored("faithfulness", v, "") for v in values])
    svg = histogram_svg(values, summary)
    labels = re.findall(r'text-anchor="end">([^<]*)</text>', svg)
    assert labels == ticks


def test_count_ticks() -> None:
    assert count_ticks(1) == [1]
    assert count_ticks(2) == [1, 2]
    assert count_ticks(3) == [1, 3]
    assert count_ticks(10) == [5, 10]
