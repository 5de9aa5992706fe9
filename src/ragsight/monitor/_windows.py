"""Time windows over the evaluated requests, and the alerts read from them.

A window is ``window_s`` seconds of requests by the time each request started (windows aligned
on multiples of ``window_s`` since the epoch, in UTC). Per window and metric: the mean of the
scored values with its 95% bootstrap CI (:func:`ragsight._stats.summarize`, seed 0) and the count
of each outcome (scored, undetermined, failed, skipped), beside the window's requests by state.

Alerts, for a window with at least ``min_scored`` scored values of a metric:

- ``below``: an ``--alert "METRIC<VALUE"`` rule whose mean is under the value (``METRIC>VALUE``
  for a metric where lower is better: its mean above the value);
- ``drop``: the mean worse than the previous window's that had ``min_scored`` scores too, by a
  one-sided Welch t-test (:func:`ragsight._stats.group_comparison`, the two-sample test of
  ``calibrate``; the windows hold different requests, so no pairing) with p below ``alpha``.
  Said with its p-value. Every metric with scores is tested, each window against the one
  before: with many metrics some drops at p < 0.01 are chance, which the p-value lets one weigh;
- ``baseline``: the mean worse than a named baseline run's scores of the metric (``--baseline
  RUN``, :mod:`._baseline`) by the same one-sided Welch t-test with p below ``alpha``, said with
  its p-value.
"""

from __future__ import annotations

import datetime as dt
import math
import re
import sqlite3
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from .._stats import group_comparison, summarize
from ..errors import ConfigError
from ..metrics import REGISTRY
from ._baseline import Baseline

__all__ = ["Alert", "AlertRule", "MetricWindow", "Window", "find_alerts", "parse_alert", "parse_window", "windows"]

_UNITS = {"s": 1, "m": 60, "h": 3600, "d": 86400}
_WINDOW = re.compile(r"^\s*([0-9]+(?:\.[0-9]+)?)\s*([smhd])\s*$")
_ALERT = re.compile(r"^\s*([A-Za-z_][\w().=,:-]*)\s*([<>])\s*(-?[0-9]+(?:\.[0-9]+)?)\s*$")
OUTCOMES = ("scored", "undetermined", "failed", "skipped")


def parse_window(text: str) -> float:
    """``30s``, ``15m``, ``1h``, ``1d`` as seconds; ConfigError otherwise."""
    m = _WINDOW.match(str(text))
    if not m or float(m.group(1)) <= 0:
        raise ConfigError(f"--window takes a length such as 30s, 15m, 1h or 1d, not {text!r}")
    return float(m.group(1)) * _UNITS[m.group(2)]


@dataclass(frozen=True)
class AlertRule:
    metric: str
    op: str  # "<": alert when the mean is below; ">": above
    value: float

    def __str__(self) -> str:
        return f"{self.metric}{self.op}{self.value:g}"

    def fires(self, mean: float) -> bool:
        return mean < self.value if self.op == "<" else mean > self.value


def parse_alert(text: str) -> AlertRule:
    """``faithfulness<0.7`` (or ``noise_sensitivity>0.3``); ConfigError otherwise."""
    m = _ALERT.match(str(text))
    if not m:
        raise ConfigError(f"--alert takes METRIC<VALUE (or METRIC>VALUE), e.g. \"faithfulness<0.7\", not {text!r}")
    value = float(m.group(3))
    if not math.isfinite(value):
        raise ConfigError(f"--alert {text!r}: the value must be a finite number")
    return AlertRule(m.group(1), m.group(2), value)


@dataclass
class MetricWindow:
    metric: str
    counts: dict[str, int]
    values: list[float] = field(repr=False)
    mean: float | None = None
    ci_low: float | None = None
    ci_high: float | None = None

    @property
    def scored(self) -> int:
        return len(self.values)

    def to_dict(self) -> dict[str, Any]:
        return {"metric": self.metric, "n_scored": self.scored, "mean": self.mean, "ci_low": self.ci_low,
                "ci_high": self.ci_high, "counts": dict(self.counts)}


@dataclass
class Window:
    start: float
    length: float
    requests: dict[str, int]
    metrics: dict[str, MetricWindow]

    @property
    def end(self) -> float:
        return self.start + self.length

    def label(self) -> str:
        a = dt.datetime.fromtimestamp(self.start, dt.timezone.utc)
        b = dt.datetime.fromtimestamp(self.end, dt.timezone.utc)
        fmt = "%Y-%m-%d %H:%M:%S" if self.length < 60 or self.start % 60 else "%Y-%m-%d %H:%M"
        return f"{a.strftime(fmt)}–{b.strftime('%H:%M:%S' if fmt.endswith('%S') else '%H:%M')} UTC"

    def to_dict(self) -> dict[str, Any]:
        return {"start": _iso(self.start), "end": _iso(self.end), "start_ts": self.start, "seconds": self.length,
                "requests": dict(self.requests), "metrics": {k: m.to_dict() for k, m in self.metrics.items()}}


def _iso(ts: float) -> str:
    return dt.datetime.fromtimestamp(ts, dt.timezone.utc).isoformat().replace("+00:00", "Z")


def windows(conn: sqlite3.Connection, window_s: float, *, since: float | None = None,
            confidence: float = 0.95) -> list[Window]:
    """The windows that hold requests, oldest first (from ``since`` on, when given)."""
    lo = -math.inf if since is None else since
    out: dict[int, Window] = {}

    def at(k: int) -> Window:
        if k not in out:
            out[k] = Window(k * window_s, window_s, {}, {})
        return out[k]

    for k, state, n in conn.execute(
            "SELECT CAST(coalesce(started_at, first_seen) / ? AS INTEGER) AS w, state, count(*) FROM monitor_requests"
            " WHERE coalesce(started_at, first_seen) >= ? GROUP BY w, state", (window_s, lo)):
        at(int(k)).requests[str(state)] = int(n)
    for k, metric, outcome, value in conn.execute(
            "SELECT CAST(started_at / ? AS INTEGER) AS w, metric, outcome, value FROM monitor_scores"
            " WHERE started_at >= ? ORDER BY w, metric, trace_id", (window_s, lo)):
        w = at(int(k))
        mw = w.metrics.get(str(metric))
        if mw is None:
            mw = w.metrics[str(metric)] = MetricWindow(str(metric), dict.fromkeys(OUTCOMES, 0), [])
        mw.counts[str(outcome)] = mw.counts.get(str(outcome), 0) + 1
        if outcome == "scored" and value is not None:
            mw.values.append(float(value))
    for w in out.values():
        for mw in w.metrics.values():
            s = summarize(mw.values, seed=0, confidence=confidence)
            mw.mean, mw.ci_low, mw.ci_high = s.mean, s.ci_low, s.ci_high
    return [out[k] for k in sorted(out)]


@dataclass(frozen=True)
class Alert:
    window_start: float
    window_s: float
    metric: str
    kind: str  # below, drop, baseline
    message: str
    detail: dict[str, Any]

    def to_dict(self) -> dict[str, Any]:
        return {"window_start": _iso(self.window_start), "window_s": self.window_s, "metric": self.metric,
                "kind": self.kind, "message": self.message, **self.detail}


def _lower_is_better(metric: str) -> bool:
    cls = REGISTRY.get(metric.split("(")[0].split(":")[0])
    return bool(getattr(cls, "lower_is_better", False))


def _f(x: float | None) -> str:
    return "–" if x is None else f"{x:.3f}"


def find_alerts(ws: Sequence[Window], rules: Sequence[AlertRule], *, min_scored: int = 10,
                alpha: float = 0.01, baseline: Baseline | None = None) -> list[Alert]:
    """Every alert the windows raise (oldest window first); with ``baseline``, its alerts too."""
    out: list[Alert] = []
    base: Mapping[str, Sequence[float]] = baseline.values if baseline is not None else {}
    last: dict[str, Window] = {}  # per metric: the latest earlier window with enough scores
    for w in ws:
        for metric, mw in sorted(w.metrics.items()):
            if mw.scored < min_scored or mw.mean is None:
                continue
            ci = f"[{_f(mw.ci_low)}, {_f(mw.ci_high)}]"
            for rule in rules:
                if rule.metric == metric and rule.fires(mw.mean):
                    word = "below" if rule.op == "<" else "above"
                    out.append(Alert(w.start, w.length, metric, "below",
                                     f"{metric} {_f(mw.mean)} {ci} is {word} {rule.value:g} in the window "
                                     f"{w.label()} ({mw.scored} scored)",
                                     {"mean": mw.mean, "ci_low": mw.ci_low, "ci_high": mw.ci_high,
                                      "n_scored": mw.scored, "rule": str(rule)}))
            prev = last.get(metric)
            if prev is not None:
                pm = prev.metrics[metric]
                lower = _lower_is_better(metric)
                cmp = group_comparison(mw.values, pm.values, "greater") if lower else \
                    group_comparison(pm.values, mw.values, "greater")
                if cmp.p_value is not None and cmp.p_value < alpha:
                    verb = "rose" if lower else "fell"
                    out.append(Alert(w.start, w.length, metric, "drop",
                                     f"{metric} {verb} from {_f(pm.mean)} ({prev.label()}, {pm.scored} scored) to "
                                     f"{_f(mw.mean)} {ci} ({w.label()}, {mw.scored} scored): one-sided Welch "
                                     f"t-test p={cmp.p_value:.2g}",
                                     {"mean": mw.mean, "ci_low": mw.ci_low, "ci_high": mw.ci_high,
                                      "n_scored": mw.scored, "previous_mean": pm.mean, "previous_n": pm.scored,
                                      "previous_start": _iso(prev.start), "p_value": cmp.p_value,
                                      "test": "one-sided Welch t-test"}))
            if baseline is not None and metric in base:
                out.extend(_against_baseline(w, mw, baseline.run_id, base[metric], alpha))
            last[metric] = w
    return out


def _against_baseline(w: Window, mw: MetricWindow, run_id: str, values: Sequence[float],
                      alpha: float) -> list[Alert]:
    lower = _lower_is_better(mw.metric)
    cmp = group_comparison(mw.values, values, "greater") if lower else group_comparison(values, mw.values, "greater")
    if cmp.p_value is None or cmp.p_value >= alpha:
        return []
    bmean = sum(values) / len(values)
    word = "above" if lower else "below"
    return [Alert(w.start, w.length, mw.metric, "baseline",
                  f"{mw.metric} {_f(mw.mean)} [{_f(mw.ci_low)}, {_f(mw.ci_high)}] in the window {w.label()} "
                  f"({mw.scored} scored) is {word} the baseline run {run_id} ({_f(bmean)}, {len(values)} scored): "
                  f"one-sided Welch t-test p={cmp.p_value:.2g}",
                  {"mean": mw.mean, "ci_low": mw.ci_low, "ci_high": mw.ci_high, "n_scored": mw.scored,
                   "baseline_run": run_id, "baseline_mean": bmean, "baseline_n": len(values),
                   "p_value": cmp.p_value, "test": "one-sided Welch t-test"})]
