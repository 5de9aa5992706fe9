"""A named baseline run for the monitor's alerts (``--baseline RUN``): the per-sample scores a
stored run (``ragsight evaluate``'s, or any run of a store) gave each metric, read once when the
monitor or ``monitor check`` starts, against which each window's scores are tested (one-sided
Welch t-test, as for the previous window).

Which metrics: every metric named in the monitor's ``--metrics`` must have been scored by the
baseline on at least ``min_scored`` samples, else the start stops with an error naming the run
and the metric (an alert that could never fire is not left to look like a quiet one). With groups
or the default selection, the baseline is compared on the metrics of the selection it scored that
often, and a baseline that scored none of them is an error too.

The values are kept in the monitor's store (``monitor_state`` key ``baseline``), so ``monitor
status``, ``monitor check`` and the viewer read the alerts of the baseline the monitor runs with,
even when the run lives in another store.
"""

from __future__ import annotations

import json
import sqlite3
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from ..errors import ConfigError, RagsightError
from ..metrics import GROUPS, resolve_metrics
from ..store import Store

__all__ = ["Baseline", "load_baseline", "save_baseline", "saved_baseline"]

_STATE_KEY = "baseline"
_SELECTIONS = ("default", "core", "all", *GROUPS)


@dataclass(frozen=True)
class Baseline:
    """A run's scored values per metric (key), in data order; ``store``: where the run was read."""

    run_id: str
    values: Mapping[str, tuple[float, ...]]
    store: str | None = None

    def describe(self) -> str:
        parts = [f"{m} {sum(v) / len(v):.3f} ({len(v)} scored)" for m, v in sorted(self.values.items())]
        return f"baseline run {self.run_id}: " + "; ".join(parts)

    def to_state(self) -> dict[str, Any]:
        return {"run_id": self.run_id, "store": self.store, "values": {m: list(v) for m, v in self.values.items()}}

    @classmethod
    def from_state(cls, data: Mapping[str, Any]) -> Baseline:
        values = {str(m): tuple(float(x) for x in v) for m, v in dict(data.get("values") or {}).items()}
        return cls(str(data["run_id"]), values, data.get("store"))


def _split(text: str) -> list[str]:
    """``a,b(x=1,y=2),c`` split at its top-level commas."""
    out, depth, cur = [], 0, ""
    for ch in text:
        depth += (ch == "(") - (ch == ")")
        if ch == "," and depth == 0:
            out.append(cur)
            cur = ""
        else:
            cur += ch
    out.append(cur)
    return [p.strip() for p in out if p.strip()]


def _selection(metrics: str | Sequence[str] | None) -> tuple[list[str], list[str] | None]:
    """(the metric keys named, the keys a group or the default selection may score, or None for
    the default selection: any metric)."""
    specs = _split(metrics) if isinstance(metrics, str) else [s for m in (metrics or ()) for s in _split(m)]
    named = [s for s in specs if s.lower() not in _SELECTIONS]
    groups = [s for s in specs if s.lower() in _SELECTIONS and s.lower() not in ("default", "core")]
    default = not specs or any(s.lower() in ("default", "core") for s in specs)
    named_keys = [m.key for m in resolve_metrics(named)] if named else []
    if default:
        return named_keys, None
    grouped = [m.key for m in resolve_metrics(groups)] if groups else []
    return named_keys, grouped


def load_baseline(st: Store, ref: str, *, metrics: str | Sequence[str] | None, min_scored: int) -> Baseline:
    """The baseline run ``ref`` (an id, a unique prefix or ``last``) of the store ``st``, checked
    against the monitor's metric selection (see the module docstring). ConfigError naming the run
    and the metric otherwise."""
    conn, store_name = st.conn, str(st.path)
    try:
        run_id = st.resolve_run(ref)
    except RagsightError as exc:
        raise ConfigError(f"--baseline {ref}: {exc}") from None
    scored: dict[str, list[float]] = {}
    for metric, value in conn.execute("SELECT metric, value FROM scores WHERE run_id=? AND outcome='scored'"
                                      " AND value IS NOT NULL ORDER BY sample_id", (run_id,)):
        scored.setdefault(str(metric), []).append(float(value))
    named, grouped = _selection(metrics)
    have = ", ".join(f"{m} ({len(v)})" for m, v in sorted(scored.items())) or "no metric"
    for key in named:
        n = len(scored.get(key, ()))
        if n == 0:
            raise ConfigError(f"--baseline: run {run_id} (in {store_name}) did not score {key}, which the monitor "
                              f"measures; it scored {have}. Give a run that scored {key}, or leave it out of "
                              "--metrics.")
        if n < min_scored:
            raise ConfigError(f"--baseline: run {run_id} (in {store_name}) scored {key} on {n} samples; a comparison "
                              f"with it needs at least {min_scored} (--min-scored)")
    chosen = {k: tuple(scored[k]) for k in named}
    for key, vals in scored.items():
        if key not in chosen and len(vals) >= min_scored and (grouped is None or key in grouped):
            chosen[key] = tuple(vals)
    if not chosen:
        what = "the monitor's metrics" if grouped is None else f"the metrics of {', '.join(sorted(grouped))}"
        raise ConfigError(f"--baseline: run {run_id} (in {store_name}) scored none of {what} on at least "
                          f"{min_scored} samples (--min-scored); it scored {have}")
    return Baseline(run_id, chosen, store_name)


def save_baseline(conn: sqlite3.Connection, baseline: Baseline | None) -> None:
    """Keep the baseline the monitor runs with (None: it runs without one)."""
    if baseline is None:
        conn.execute("DELETE FROM monitor_state WHERE key=?", (_STATE_KEY,))
    else:
        conn.execute("INSERT OR REPLACE INTO monitor_state (key, value) VALUES (?,?)",
                     (_STATE_KEY, json.dumps(baseline.to_state(), allow_nan=False)))


def saved_baseline(conn: sqlite3.Connection) -> Baseline | None:
    """The baseline the monitor last started with, or None."""
    try:
        row = conn.execute("SELECT value FROM monitor_state WHERE key=?", (_STATE_KEY,)).fetchone()
    except sqlite3.Error:
        return None
    return None if row is None else Baseline.from_state(json.loads(row[0]))
