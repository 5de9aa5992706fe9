"""What a monitor's store says: the counts of requests by state (with the reasons of those not
evaluated), the day's spend, the windows and the alerts (``ragsight monitor status``), and the
alerts of the latest windows (``ragsight monitor check``)."""

from __future__ import annotations

import json
import sqlite3
import time
from collections.abc import Sequence
from typing import Any

from . import _ledger
from ._baseline import Baseline, saved_baseline
from ._windows import Alert, AlertRule, Window, find_alerts, windows

__all__ = ["current_alerts", "status"]


def status(conn: sqlite3.Connection, *, window_s: float | None = None, last: int = 24,
           now: float | None = None) -> dict[str, Any]:
    """The monitor's state as plain JSON values. The top-level counts are integers:
    ``received`` (requests stored), ``sampled``, ``evaluated``, ``pending`` (sampled, not yet
    evaluated), ``not_evaluated``, ``unsampled``, ``skipped`` (sampled, then not a RAG request),
    ``open`` (spans still arriving). sampled = skipped + pending + evaluated + not_evaluated."""
    now = time.time() if now is None else now
    by_state = {str(s): int(n) for s, n in conn.execute("SELECT state, count(*) FROM monitor_requests GROUP BY state")}
    settings = _ledger.settings(conn)
    length = float(window_s or settings.get("window_s") or 3600.0)
    ws = windows(conn, length)[-last:]
    day = _ledger.utc_day(now)
    limit = settings.get("max_cost_per_day")
    alerts = [{"window_start": ws_, "window_s": wl, "metric": m, "kind": k, "raised_at": r, "message": msg,
               "delivered": bool(d), **json.loads(detail)}
              for ws_, wl, m, k, r, msg, detail, d in conn.execute(
                  "SELECT window_start, window_s, metric, kind, raised_at, message, detail, delivered"
                  " FROM monitor_alerts ORDER BY raised_at DESC LIMIT 100")]
    g = by_state.get
    return {
        "received": sum(by_state.values()),
        "sampled": sum(g(s, 0) for s in _ledger.SAMPLED),
        "evaluated": g("evaluated", 0),
        "pending": sum(g(s, 0) for s in _ledger.PENDING),
        "not_evaluated": g("not_evaluated", 0),
        "unsampled": g("unsampled", 0),
        "skipped": g("skipped", 0),
        "open": g("open", 0),
        "spans": int(conn.execute("SELECT count(*) FROM monitor_spans").fetchone()[0]),
        "not_evaluated_reasons": _ledger.reasons(conn, "not_evaluated"),
        "skipped_reasons": _ledger.reasons(conn, "skipped"),
        "budget": {"day": day, "spent_usd": round(_ledger.spent_on(conn, day), 6),
                   "limit_usd": limit},
        "runs": int(conn.execute("SELECT count(DISTINCT run_id) FROM monitor_requests WHERE run_id IS NOT NULL"
                                 ).fetchone()[0]),
        "settings": settings,
        "baseline": _baseline_summary(saved_baseline(conn)),
        "window_s": length,
        "windows": [w.to_dict() for w in ws],
        "alerts": alerts,
    }


def current_alerts(ws: Sequence[Window], rules: Sequence[AlertRule], *, min_scored: int,
                   alpha: float, baseline: Baseline | None = None) -> list[Alert]:
    """The alerts of each metric's latest window with ``min_scored`` scored values: what holds
    now (an older window's alert that a later window cleared is not among them)."""
    latest: dict[str, float] = {}
    for w in ws:
        for metric, mw in w.metrics.items():
            if mw.scored >= min_scored:
                latest[metric] = w.start
    return [a for a in find_alerts(ws, rules, min_scored=min_scored, alpha=alpha, baseline=baseline)
            if latest.get(a.metric) == a.window_start]


def _baseline_summary(b: Baseline | None) -> dict[str, Any] | None:
    """The baseline the monitor runs with: its run, store and, per metric, mean and count."""
    if b is None:
        return None
    return {"run_id": b.run_id, "store": b.store,
            "metrics": {m: {"mean": sum(v) / len(v), "n_scored": len(v)} for m, v in sorted(b.values.items())}}
