"""Locks: one run is written by one process at a time (a lock in the run's row, kept fresh by a
background heartbeat while the run lives), and claims, a lease on a piece of work shared by
processes (a sweep's configuration), kept fresh the same way.
"""

from __future__ import annotations

import json
import logging
import os
import socket
import sqlite3
import threading
import time
from collections.abc import Callable
from typing import Any

from ..dataset import strict_json
from ..errors import StoreError
from ._connection import StoreBase, dumps

__all__ = ["LOCK_STALE_S", "LocksMixin", "lock_lease_s", "show_owner"]

# A run's lock is taken over only when its holder is gone: its process is dead, or its heartbeat
# is older than the lease. The heartbeat is refreshed by a background thread every
# min(lease / 4, 1 s) while the run lives, whatever the samples' pace. RAGSIGHT_LOCK_LEASE_S
# shortens the lease (tests) or lengthens it (a store on a slow network file system).
LOCK_STALE_S = 120.0
_BEAT_MAX_S = 1.0

log = logging.getLogger(__name__)


def lock_lease_s() -> float:
    """The lease of a run lock in seconds: $RAGSIGHT_LOCK_LEASE_S, else 120."""
    raw = os.environ.get("RAGSIGHT_LOCK_LEASE_S")
    if raw:
        try:
            value = float(raw)
        except ValueError:
            value = float("nan")
        if value == value and 0 < value < float("inf"):
            return value
        raise StoreError(f"RAGSIGHT_LOCK_LEASE_S must be a positive number of seconds, not {raw!r}")
    return LOCK_STALE_S


def _alive(owner: str) -> bool:
    """Whether the process holding a lock may still live: ``host:nonce:pid`` (or ``host:pid``)."""
    host, _, pid = owner.rpartition(":")
    host = host.split(":", 1)[0]
    if host != socket.gethostname():
        return True  # another machine: trust the heartbeat
    try:
        os.kill(int(pid), 0)
    except (ValueError, ProcessLookupError):
        return False
    except PermissionError:
        return True
    return True


def _claim_key(name: str) -> str:
    return "claim/" + name


def show_owner(owner: str) -> str:
    """``host:pid`` of a lock owner, for messages."""
    host, _, pid = owner.rpartition(":")
    return f"{host.split(':', 1)[0]}:{pid}"


class _Heartbeat:
    """A daemon thread, with its own connection, that refreshes a run's lock (and writes its
    statistics) every ``interval`` seconds while the process lives. It sets ``lost`` and stops
    when another process has taken the lock."""

    def __init__(self, path: str, run_id: str, owner: str, interval: float,
                 stats: Callable[[], dict[str, Any]] | None, claim: tuple[str, str] | None = None) -> None:
        self.path, self.run_id, self.owner, self.interval, self.stats = path, run_id, owner, interval, stats
        self.claim = claim  # a claim's (cache key, entry) instead of a run's lock
        self.lost = threading.Event()
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, name=f"ragsight-heartbeat-{run_id}", daemon=True)

    def start(self) -> None:
        self._thread.start()

    def stop(self) -> None:
        self._stop.set()
        if self._thread.is_alive() and self._thread is not threading.current_thread():
            self._thread.join(timeout=35)

    def _run(self) -> None:
        conn: sqlite3.Connection | None = None
        try:
            conn = sqlite3.connect(self.path, timeout=30.0, isolation_level=None)
            conn.execute("PRAGMA busy_timeout = 30000")
            while not self._stop.wait(self.interval):
                if not self._beat(conn):
                    self.lost.set()
                    log.warning("run %s: another process took its lock", self.run_id)
                    return
        except Exception as exc:  # never kill the run from here; the lease tells others
            log.warning("run %s: heartbeat stopped: %s", self.run_id, exc)
        finally:
            if conn is not None:
                conn.close()

    def _beat(self, conn: sqlite3.Connection) -> bool:
        try:
            if self.claim is not None:
                cur = conn.execute("UPDATE cache SET created_at=? WHERE key=? AND entry=?",
                                   (time.time(), *self.claim))
            elif self.stats is not None:
                cur = conn.execute("UPDATE runs SET lock_heartbeat=?, stats=? WHERE id=? AND lock_owner=?",
                                   (time.time(), dumps(self.stats()), self.run_id, self.owner))
            else:
                cur = conn.execute("UPDATE runs SET lock_heartbeat=? WHERE id=? AND lock_owner=?",
                                   (time.time(), self.run_id, self.owner))
        except sqlite3.OperationalError as exc:  # busy beyond 30 s, disk full: try again next beat
            log.warning("run %s: heartbeat failed: %s", self.run_id, exc)
            return True
        return cur.rowcount > 0


class LocksMixin(StoreBase):
    """The Store's run lock and claims."""

    lock_lease_s: float
    _beat: _Heartbeat | None
    _claims: dict[str, _Heartbeat]

    def acquire(self, run_id: str) -> None:
        """Take the run's write lock, refusing when another live process holds it: one whose
        process is alive (same machine) and whose heartbeat is younger than the lease."""
        now = time.time()
        with self._tx():
            row = self.conn.execute("SELECT lock_owner, lock_heartbeat, status FROM runs WHERE id=?", (run_id,)).fetchone()
            if row is None:
                raise StoreError(f"no run '{run_id}' in {self.path}; see 'ragsight runs --store {self.path}'")
            owner, beat, _status = row
            if owner and owner != self.owner and beat and now - beat < self.lock_lease_s and _alive(owner):
                raise StoreError(
                    f"run {run_id} is being written by another process ({show_owner(owner)}); wait for it "
                    "to finish, or stop it first."
                )
            self.conn.execute("UPDATE runs SET lock_owner=?, lock_heartbeat=?, status='running' WHERE id=?",
                              (self.owner, now, run_id))

    def heartbeat(self, run_id: str) -> None:
        with self._tx():
            self.conn.execute("UPDATE runs SET lock_heartbeat=? WHERE id=? AND lock_owner=?",
                              (time.time(), run_id, self.owner))

    def start_heartbeat(self, run_id: str, stats: Callable[[], dict[str, Any]] | None = None) -> None:
        """Keep the run's lock fresh from a background thread until :meth:`stop_heartbeat`,
        independent of how fast samples finish; with ``stats``, also write ``stats()`` as the
        run's statistics at each beat, so a run killed at any moment has counted what it paid
        up to its last beat (at most a second before). No-op for an in-memory store."""
        self.stop_heartbeat()
        if self.path == ":memory:":
            return
        self._beat = _Heartbeat(self.path, run_id, self.owner, min(self.lock_lease_s / 4, _BEAT_MAX_S), stats)
        self._beat.start()

    def stop_heartbeat(self) -> None:
        beat, self._beat = self._beat, None
        if beat is not None:
            beat.stop()

    @property
    def lock_lost(self) -> bool:
        """True when the heartbeat found that another process took the run's lock."""
        return self._beat is not None and self._beat.lost.is_set()

    # ---- claims: a lease on a piece of work shared by processes (a sweep's configuration) ----

    def claim(self, name: str) -> str | None:
        """Take the lease ``name`` (kept fresh by a background thread until :meth:`release`),
        unless another live process holds it, as a run's lock is taken: a holder whose process is
        alive and whose heartbeat is younger than the lease. Returns None when taken (or already
        held by this store), else the holder as ``host:pid``."""
        key, mine = _claim_key(name), strict_json({"owner": self.owner})
        now = time.time()
        with self._tx():
            row = self.conn.execute("SELECT entry, created_at FROM cache WHERE key=?", (key,)).fetchone()
            if row is not None and row[0] != mine:
                try:
                    owner = str(json.loads(row[0]).get("owner") or "")
                except (ValueError, AttributeError):
                    owner = ""
                if owner and now - float(row[1] or 0) < self.lock_lease_s and _alive(owner):
                    return show_owner(owner)
            self.conn.execute("INSERT OR REPLACE INTO cache (key, entry, created_at) VALUES (?,?,?)",
                              (key, mine, now))
        if name not in self._claims and self.path != ":memory:":
            beat = _Heartbeat(self.path, name, self.owner, min(self.lock_lease_s / 4, _BEAT_MAX_S), None,
                              claim=(key, mine))
            self._claims[name] = beat
            beat.start()
        return None

    def release(self, name: str) -> None:
        """Give the lease ``name`` back (nothing when another process has taken it over)."""
        beat = self._claims.pop(name, None)
        if beat is not None:
            beat.stop()
        with self._tx():
            self.conn.execute("DELETE FROM cache WHERE key=? AND entry=?",
                              (_claim_key(name), strict_json({"owner": self.owner})))
