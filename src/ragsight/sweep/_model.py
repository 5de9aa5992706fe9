"""The sweep report's records: each configuration's summary, a comparison with the baseline, a
parameter's effect and its steps, and the :class:`SweepReport` that holds them; what its latency
column measures.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from ..report import PairedDifference

__all__ = [
    "LATENCY_MEANING",
    "ConfigSummary",
    "Effect",
    "EffectStep",
    "MetricComparison",
    "SweepReport",
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


LATENCY_MEANING = ("latency: the system's answering time per answered question, as measured when "
                   "each answer was made: loading (models, indexes) left out, an answer reused from "
                   "the store counted at the time it took then, not the time of reading it back.")
"""What the latency column measures, said under it in the text and the HTML report."""
