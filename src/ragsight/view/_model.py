"""The viewer's read model of a run: every sample's scores as plain columns, read once from the
store without decoding any text or evidence, then filtered, sorted and paged in memory.

A run that has finished does not change, so its table is kept (``Tables``) until the store says
otherwise (its status or end time moved, or its count of finished samples); a running run is read
again on each request.
"""

from __future__ import annotations

import math
import threading
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from typing import Any

from ..errors import ConfigError
from ..store import RunInfo, Store

__all__ = ["OUTCOMES", "SORTS", "Filter", "RunTable", "Tables", "informativeness"]

NOT_APPLICABLE = "n/a"  # a metric of the other level: a conversation metric on a turn, or the reverse
OUTCOMES = ("scored", "undetermined", "failed", "skipped", "missing", NOT_APPLICABLE)
SORTS = ("data", "asc", "desc", "informative")
"""Sample orders: data order; a metric's value ascending or descending (samples the metric did
not score last); most informative to label first (see :func:`informativeness`)."""


@dataclass
class RunTable:
    """One run's scores as columns: ``values[metric][i]`` and ``outcomes[metric][i]`` of the
    ``i``-th sample (data order); ``None``/"missing" where the sample has no score."""

    info: RunInfo
    ids: list[str]
    finished: list[bool]
    metrics: list[str]
    lower: dict[str, bool]
    values: dict[str, list[float | None]]
    outcomes: dict[str, list[str]]
    version: tuple[Any, ...] = ()
    position: dict[str, int] = field(default_factory=dict)
    reasons: dict[str, dict[int, str]] = field(default_factory=dict)
    """metric -> sample position -> reason, for the scores that are not ``scored``."""
    turns: list[tuple[str | None, int | None]] = field(default_factory=list)
    """(conversation id, turn) of each sample: what pairs a turn across runs."""
    _means: dict[str, tuple[float | None, int]] = field(default_factory=dict, repr=False)
    _counts: dict[str, dict[str, int]] = field(default_factory=dict, repr=False)
    _informative: dict[float, list[float | None]] = field(default_factory=dict, repr=False)

    @property
    def run_id(self) -> str:
        return self.info.id

    @classmethod
    def read(cls, store: Store, run_id: str, version: tuple[Any, ...] = ()) -> RunTable:
        info = store.run(run_id)
        rows = store.sample_rows(run_id)
        ids = [r[1] for r in rows]
        position = {sid: i for i, sid in enumerate(ids)}
        metrics = list(info.metric_keys)
        lower = {m["key"]: bool(m.get("lower_is_better")) for m in info.metrics}
        values: dict[str, list[float | None]] = {m: [None] * len(ids) for m in metrics}
        outcomes: dict[str, list[str]] = {m: ["missing"] * len(ids) for m in metrics}
        reasons: dict[str, dict[int, str]] = {}
        levels = {m["key"]: str(m.get("level", "turn")) for m in info.metrics}
        for i, r in enumerate(rows):  # (conversation id, turn): a conversation's own row has no turn
            level = "conversation" if r[3] is not None and r[4] is None else "turn"
            for m in metrics:
                if levels.get(m, "turn") != level:
                    outcomes[m][i] = NOT_APPLICABLE
        for sid, metric, outcome, value, reason in store.score_rows(run_id):
            if metric not in values:  # a score of a metric the run record does not name
                metrics.append(metric)
                values[metric] = [None] * len(ids)
                outcomes[metric] = ["missing"] * len(ids)
            i = position[sid]
            outcomes[metric][i] = outcome
            values[metric][i] = value if outcome == "scored" else None
            if outcome != "scored":
                reasons.setdefault(metric, {})[i] = reason
        return cls(info, ids, [r[2] for r in rows], metrics, lower, values, outcomes, version, position,
                   reasons, [(r[3], r[4]) for r in rows])

    def __len__(self) -> int:
        return len(self.ids)

    def mean(self, metric: str) -> tuple[float | None, int]:
        """The mean of the metric's scored values and how many there are (as ``show`` reports);
        kept, as the table does not change."""
        if metric not in self._means:
            vals = [v for v in self.values.get(metric, []) if v is not None]
            self._means[metric] = ((math.fsum(vals) / len(vals) if vals else None), len(vals))
        return self._means[metric]

    def counts(self, metric: str) -> dict[str, int]:
        if metric not in self._counts:
            out = dict.fromkeys(OUTCOMES, 0)
            for o in self.outcomes.get(metric, []):
                out[o] = out.get(o, 0) + 1
            self._counts[metric] = out
        return dict(self._counts[metric])

    def informativeness(self, threshold: float) -> list[float | None]:
        """:func:`informativeness` of every sample, kept per threshold."""
        if threshold not in self._informative:
            if len(self._informative) >= 4:  # a few thresholds kept, not every one ever asked
                self._informative.pop(next(iter(self._informative)))
            self._informative[threshold] = [informativeness(self, i, threshold) for i in range(len(self.ids))]
        return self._informative[threshold]

    def oriented(self, metric: str, i: int) -> float | None:
        """The value with higher always better (a lower-is-better metric as 1 - value)."""
        v = self.values[metric][i]
        if v is None:
            return None
        return 1.0 - v if self.lower.get(metric) else v


def informativeness(table: RunTable, i: int, threshold: float = 0.5) -> float | None:
    """How much a person's label of sample ``i`` is worth, in [0, 2]: closeness of its nearest
    score to the threshold (1 at the threshold, 0 half a unit away) plus how far its metrics
    disagree (the range of its oriented scores, each clamped to [0, 1]). ``None`` when no metric
    scored it (nothing to check)."""
    scores = [table.oriented(m, i) for m in table.metrics]
    present = [min(1.0, max(0.0, v)) for v in scores if v is not None]
    if not present:
        return None
    near = max(0.0, 1.0 - 2.0 * min(abs(v - threshold) for v in present))
    spread = max(present) - min(present)
    return near + spread


@dataclass(frozen=True)
class Filter:
    """What a run page shows: the samples whose ``metric`` has ``outcome`` and a value within
    [``low``, ``high``], among ``only`` (search hits) when given, in ``sort`` order."""

    metric: str | None = None
    outcome: str | None = None
    low: float | None = None
    high: float | None = None
    sort: str = "data"
    threshold: float = 0.5

    def check(self, table: RunTable) -> None:
        if self.metric is not None and self.metric not in table.values:
            raise ConfigError(f"run {table.run_id} has no metric '{self.metric}'; it has "
                              f"{', '.join(table.metrics) or 'none'}")
        if self.outcome is not None and self.outcome not in OUTCOMES:
            raise ConfigError(f"outcome must be one of {', '.join(OUTCOMES)}, not '{self.outcome}'")
        if self.sort not in SORTS:
            raise ConfigError(f"sort must be one of {', '.join(SORTS)}, not '{self.sort}'")
        if self.sort in ("asc", "desc") and self.metric is None:
            raise ConfigError("sorting by value needs a metric: pick one")
        if (self.low is not None or self.high is not None or self.outcome) and self.metric is None:
            raise ConfigError("a score range or an outcome filters one metric: pick one")
        for name in ("low", "high", "threshold"):
            v = getattr(self, name)
            if v is not None and not math.isfinite(v):
                raise ConfigError(f"{name} must be a finite number")

    def select(self, table: RunTable, only: Iterable[str] | None = None) -> list[int]:
        """The positions of the matching samples, in order."""
        self.check(table)
        if only is None:
            rows: Sequence[int] = range(len(table))
        else:
            rows = sorted({table.position[s] for s in only if s in table.position})
        m = self.metric
        if m is not None:
            outs, vals = table.outcomes[m], table.values[m]
            if self.outcome is not None:
                rows = [i for i in rows if outs[i] == self.outcome]
            if self.low is not None or self.high is not None:
                lo = -math.inf if self.low is None else self.low
                hi = math.inf if self.high is None else self.high
                rows = [i for i in rows if (v := vals[i]) is not None and lo <= v <= hi]
        rows = list(rows)
        if self.sort in ("asc", "desc") and m is not None:
            vals = table.values[m]
            scored = [i for i in rows if vals[i] is not None]
            rest = [i for i in rows if vals[i] is None]
            sign = -1.0 if self.sort == "desc" else 1.0  # ties keep data order either way
            scored.sort(key=lambda i: (sign * vals[i], i))  # type: ignore[operator]
            rows = scored + rest
        elif self.sort == "informative":
            info = table.informativeness(self.threshold)
            rows = sorted(rows, key=lambda i: (info[i] is None, -(info[i] or 0.0), i))
        return rows


class Tables:
    """The read models of the runs the viewer has shown, kept while their run does not change."""

    def __init__(self) -> None:
        self._tables: dict[str, RunTable] = {}
        self._lock = threading.Lock()

    def get(self, store: Store, run_id: str) -> RunTable:
        info = store.run(run_id)
        done = store.sample_counts(run_id).get(run_id, (0, 0))
        version = (info.status, info.finished_at, done)
        with self._lock:
            cached = self._tables.get(run_id)
        if cached is not None and cached.version == version and info.status != "running":
            return cached
        table = RunTable.read(store, run_id, version)
        with self._lock:
            self._tables[run_id] = table
        return table
