"""Where an alert goes: a log line (``ragsight monitor: ALERT ...`` on standard error), a
webhook (a JSON POST, retried with a growing pause; one still undelivered is tried again later,
also after a restart) and the store (``monitor_alerts``: what ``monitor status``, ``monitor
check`` and the viewer read). Each alert is raised once per window, metric and kind.
"""

from __future__ import annotations

import json
import logging
import sqlite3
import time
from collections.abc import Callable, Sequence
from typing import Any

import httpx

from ._windows import Alert

__all__ = ["AlertSinks"]

log = logging.getLogger("ragsight.monitor")


class AlertSinks:
    """Records new alerts and delivers them. ``webhook``: a URL, or None."""

    def __init__(self, webhook: str | None = None, *, tries: int = 3, pause_s: float = 0.5,
                 timeout_s: float = 5.0, retry_every_s: float = 60.0,
                 say: Callable[[str], None] | None = None) -> None:
        self.webhook = webhook
        self.tries = tries
        self.pause_s = pause_s
        self.timeout_s = timeout_s
        self.retry_every_s = retry_every_s
        self.say = say or (lambda text: log.warning("%s", text))
        self._last_retry = 0.0

    def record(self, conn: sqlite3.Connection, alerts: Sequence[Alert], now: float | None = None) -> list[Alert]:
        """Store the alerts not stored yet, say each new one, and deliver what is undelivered.
        Returns the new ones."""
        now = time.time() if now is None else now
        new: list[Alert] = []
        conn.execute("BEGIN IMMEDIATE")
        try:
            for a in alerts:
                cur = conn.execute(
                    "INSERT OR IGNORE INTO monitor_alerts (window_start, window_s, metric, kind, raised_at, message,"
                    " detail, delivered) VALUES (?,?,?,?,?,?,?,?)",
                    (a.window_start, a.window_s, a.metric, a.kind, now, a.message,
                     json.dumps(a.detail, allow_nan=False), 0 if self.webhook else 1))
                if cur.rowcount:
                    new.append(a)
            conn.execute("COMMIT")
        except BaseException:
            conn.execute("ROLLBACK")
            raise
        for a in new:
            self.say(f"ragsight monitor: ALERT {a.kind}: {a.message}")
        if self.webhook and (new or time.monotonic() - self._last_retry >= self.retry_every_s):
            self._last_retry = time.monotonic()
            self._deliver(conn)
        return new

    def _deliver(self, conn: sqlite3.Connection) -> None:
        rows = conn.execute("SELECT window_start, window_s, metric, kind, raised_at, message, detail FROM monitor_alerts"
                            " WHERE delivered=0 ORDER BY raised_at LIMIT 100").fetchall()
        for ws, wl, metric, kind, raised, message, detail in rows:
            payload = {"source": "ragsight monitor", "kind": kind, "metric": metric, "message": message,
                       "window_start": ws, "window_s": wl, "raised_at": raised, **json.loads(detail)}
            if self._post(payload):
                conn.execute("UPDATE monitor_alerts SET delivered=1 WHERE window_start=? AND window_s=? AND metric=?"
                             " AND kind=?", (ws, wl, metric, kind))

    def _post(self, payload: dict[str, Any]) -> bool:
        assert self.webhook is not None
        pause = self.pause_s
        why = ""
        for attempt in range(self.tries):
            try:
                r = httpx.post(self.webhook, json=payload, timeout=self.timeout_s)
                if 200 <= r.status_code < 300:
                    return True
                why = f"HTTP {r.status_code}"
                if 400 <= r.status_code < 500 and r.status_code not in (408, 429):
                    break  # the hook refuses it: sending again changes nothing
            except httpx.HTTPError as exc:
                why = type(exc).__name__
            if attempt + 1 < self.tries:
                time.sleep(pause)
                pause *= 2
        log.error("ragsight monitor: the webhook did not take an alert (%s); it is tried again later", why)
        return False
