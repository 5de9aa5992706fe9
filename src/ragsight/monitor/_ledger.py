"""The monitor's tables in the run store (schema 5): spans written as they arrive, one row per
request (trace) with its state, the micro-batches, each evaluated request's scores, the alerts
and the settings. Every function takes the connection of the thread that calls it (the receiver's
handlers share one under a lock; the assembler and the evaluator have their own).

States of a request: ``open`` (its spans arriving), ``skipped`` (not a RAG request or not
readable: ``reason``), ``unsampled``, ``queued`` (sampled, waiting for the judge), ``batched``
(in a micro-batch being evaluated), ``evaluated``, ``not_evaluated`` (sampled, never judged:
``reason``).
"""

from __future__ import annotations

import datetime as dt
import hashlib
import json
import sqlite3
from collections.abc import Iterable, Sequence
from typing import Any

from ._otlp import WireSpan

__all__ = [
    "PENDING",
    "SAMPLED",
    "is_sampled",
    "utc_day",
]

SAMPLED = ("skipped", "queued", "batched", "evaluated", "not_evaluated")  # skipped: sampled, then not RAG
PENDING = ("queued", "batched")


def utc_day(ts: float) -> str:
    return dt.datetime.fromtimestamp(ts, dt.timezone.utc).strftime("%Y-%m-%d")


def is_sampled(trace_id: str, seed: int, rate: float) -> bool:
    """Whether a request is sampled: a hash of the seed and the trace id, read as a number in
    [0, 1), below ``rate``. Deterministic: the same trace id and seed decide the same on any
    machine, in any order, after any restart."""
    if rate >= 1.0:
        return True
    if rate <= 0.0:
        return False
    digest = hashlib.sha256(f"{seed}:{trace_id.lower()}".encode()).digest()
    return int.from_bytes(digest[:8], "big") / 2**64 < rate


def record_spans(conn: sqlite3.Connection, spans: Sequence[WireSpan], now: float) -> int:
    """Write a request's spans and their traces' rows in one transaction (committed when this
    returns). A span already stored (an exporter sending again) is kept once. Returns the number
    of new spans."""
    by_trace: dict[str, list[WireSpan]] = {}
    for s in spans:
        by_trace.setdefault(s.trace_id, []).append(s)
    new = 0
    conn.execute("BEGIN IMMEDIATE")
    try:
        for trace_id, group in by_trace.items():
            added = 0
            root = 0
            for s in group:
                cur = conn.execute("INSERT OR IGNORE INTO monitor_spans (trace_id, span_id, parent_id, received_at,"
                                   " span) VALUES (?,?,?,?,?)", (trace_id, s.span_id, s.parent_id, now, s.data))
                if cur.rowcount:
                    added += 1
                    root = root or int(s.parent_id is None)
            new += added
            conn.execute(
                "INSERT INTO monitor_requests (trace_id, first_seen, last_seen, spans, root_ended) VALUES (?,?,?,?,?)"
                " ON CONFLICT(trace_id) DO UPDATE SET last_seen=excluded.last_seen, spans=spans+excluded.spans,"
                " root_ended=max(root_ended, excluded.root_ended)", (trace_id, now, now, added, root))
        conn.execute("COMMIT")
    except BaseException:
        conn.execute("ROLLBACK")
        raise
    return new


def due_requests(conn: sqlite3.Connection, now: float, settle_s: float, max_open_s: float,
                 limit: int = 500) -> list[tuple[str, bool]]:
    """Open requests that are complete: the root span ended and nothing came for ``settle_s``
    seconds; or open for ``max_open_s`` without a root span (read as they are, said).
    (trace id, whether its root span came), oldest first."""
    rows = conn.execute(
        "SELECT trace_id, root_ended FROM monitor_requests WHERE state='open' AND"
        " ((root_ended=1 AND last_seen<=?) OR first_seen<=?) ORDER BY first_seen LIMIT ?",
        (now - settle_s, now - max_open_s, limit)).fetchall()
    return [(str(t), bool(r)) for t, r in rows]


def span_blobs(conn: sqlite3.Connection, trace_id: str) -> list[bytes]:
    return [bytes(r[0]) for r in conn.execute("SELECT span FROM monitor_spans WHERE trace_id=?", (trace_id,))]


def decide(conn: sqlite3.Connection, decisions: Iterable[tuple[str, str, str | None, float | None,
                                                           dict[str, Any] | None]], now: float) -> None:
    """Close assembled requests in one transaction: (trace id, state, reason, start time, sample
    row)."""
    conn.execute("BEGIN IMMEDIATE")
    try:
        for trace_id, state, reason, started, row in decisions:
            conn.execute(
                "UPDATE monitor_requests SET state=?, reason=?, started_at=coalesce(?, first_seen), sample=?,"
                " done_at=CASE WHEN ? IN ('skipped','unsampled','not_evaluated') THEN ? ELSE NULL END"
                " WHERE trace_id=? AND state='open'",
                (state, reason, started, None if row is None else json.dumps(row, ensure_ascii=False,
                                                                             allow_nan=False),
                 state, now, trace_id))
        conn.execute("COMMIT")
    except BaseException:
        conn.execute("ROLLBACK")
        raise


def count(conn: sqlite3.Connection, states: Sequence[str]) -> int:
    marks = ",".join("?" * len(states))
    return int(conn.execute(f"SELECT count(*) FROM monitor_requests WHERE state IN ({marks})",
                            tuple(states)).fetchone()[0])


def reasons(conn: sqlite3.Connection, state: str) -> dict[str, int]:
    return {str(r or "no reason given"): int(n) for r, n in conn.execute(
        "SELECT reason, count(*) FROM monitor_requests WHERE state=? GROUP BY reason ORDER BY 2 DESC", (state,))}


def spent_on(conn: sqlite3.Connection, day: str) -> float:
    """What the batches of a UTC day cost (US dollars)."""
    row = conn.execute("SELECT value FROM monitor_state WHERE key=?", (f"spent:{day}",)).fetchone()
    return float(json.loads(row[0])) if row is not None else 0.0


def settings(conn: sqlite3.Connection) -> dict[str, Any]:
    """The monitor's settings as last started."""
    return {str(k)[len("setting:"):]: json.loads(v) for k, v in conn.execute(
        "SELECT key, value FROM monitor_state WHERE key >= 'setting:' AND key < 'setting;'")}


def save_settings(conn: sqlite3.Connection, values: dict[str, Any]) -> None:
    conn.execute("BEGIN IMMEDIATE")
    try:
        conn.executemany("INSERT OR REPLACE INTO monitor_state (key, value) VALUES (?,?)",
                         [(f"setting:{k}", json.dumps(v)) for k, v in values.items()])
        conn.execute("COMMIT")
    except BaseException:
        conn.execute("ROLLBACK")
        raise


def open_batch(conn: sqlite3.Connection, batch_id: str, run_id: str, day: str, now: float,
               trace_ids: Sequence[str]) -> None:
    """A micro-batch written before its first judge call: its requests ``batched`` with its run."""
    conn.execute("BEGIN IMMEDIATE")
    try:
        conn.execute("INSERT INTO monitor_state (key, value) VALUES (?,?)",
                     (f"batch:{batch_id}", json.dumps({"run_id": run_id, "day": day, "created_at": now,
                                                      "cost_usd": 0.0})))
        conn.executemany("UPDATE monitor_requests SET state='batched', batch_id=?, run_id=? WHERE trace_id=?"
                         " AND state='queued'", [(batch_id, run_id, t) for t in trace_ids])
        conn.execute("COMMIT")
    except BaseException:
        conn.execute("ROLLBACK")
        raise


def running_batch(conn: sqlite3.Connection) -> tuple[str, str, str] | None:
    """The oldest batch left running (batch id, run id, UTC day), or None."""
    rows = [(str(k)[len("batch:"):], json.loads(v)) for k, v in conn.execute(
        "SELECT key, value FROM monitor_state WHERE key >= 'batch:' AND key < 'batch;'")]
    if not rows:
        return None
    batch_id, b = min(rows, key=lambda kv: (kv[1]["created_at"], kv[0]))
    return batch_id, str(b["run_id"]), str(b["day"])


def drop_batch(conn: sqlite3.Connection, batch_id: str) -> None:
    """Forget a batch (in the caller's transaction)."""
    conn.execute("DELETE FROM monitor_state WHERE key=?", (f"batch:{batch_id}",))


def charge(conn: sqlite3.Connection, batch_id: str, day: str, cost: float) -> None:
    """Set a batch's cost (its run's, all attempts) and add the change to its day's spend (in the
    caller's transaction)."""
    row = conn.execute("SELECT value FROM monitor_state WHERE key=?", (f"batch:{batch_id}",)).fetchone()
    before = float(json.loads(row[0]).get("cost_usd", 0.0)) if row is not None else 0.0
    spent = spent_on(conn, day) + max(0.0, cost - before)
    conn.execute("INSERT OR REPLACE INTO monitor_state (key, value) VALUES (?,?)", (f"spent:{day}", json.dumps(spent)))
