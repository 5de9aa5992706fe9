"""The run store: one SQLite file holding runs, samples, scores, evidence, judge calls and the
judge-call cache.

Writes are crash-safe: a sample's scores and judge calls are committed in one transaction when the
sample finishes, so a run killed at any point (even ``kill -9``) holds only whole samples and is
continued with ``--resume``. Cache entries are committed as soon as a judge step succeeds, so a
resumed run never pays twice for finished judge work. WAL mode lets readers (``ragsight show``)
look while a run writes; one run is written by one process at a time (a lock in the run's row).
"""

from __future__ import annotations

import json
import os
import socket
import sqlite3
import time
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from importlib import resources
from pathlib import Path
from typing import Any

from .._score import Evidence, Outcome, Score
from ..errors import StoreError
from ..judge import JudgeCall
from ..sample import RowProblem, Sample, sample_from_mapping

__all__ = ["RunInfo", "SQLiteCallCache", "Store"]

_OPEN_RETRY_S = 30.0  # how long opening a store retries "database is locked" (see Store.__init__)

LOCK_STALE_S = 120.0


def _migrations() -> list[tuple[int, str]]:
    base = resources.files(__package__).joinpath("migrations")
    out = []
    for entry in base.iterdir():
        if entry.name.endswith(".sql"):
            out.append((int(entry.name.split("_", 1)[0]), entry.read_text("utf-8")))
    return sorted(out)


@dataclass(frozen=True)
class RunInfo:
    id: str
    created_at: float
    finished_at: float | None
    status: str
    dataset: str | None
    judge: str | None
    embedder: str | None
    metrics: list[dict[str, Any]]
    config: dict[str, Any]
    metadata: dict[str, Any]
    stats: dict[str, Any]

    @property
    def metric_keys(self) -> list[str]:
        return [m["key"] for m in self.metrics]


def _dumps(value: Any) -> str:
    return json.dumps(value, ensure_ascii=False, default=str)


class Store:
    """A SQLite run store. ``Store(":memory:")`` keeps everything in memory."""

    def __init__(self, path: str | os.PathLike[str] = "ragsight.db") -> None:
        self.path = str(path)
        if self.path != ":memory:":
            parent = Path(self.path).parent
            if not parent.exists():
                raise StoreError(f"cannot create the store {self.path}: folder {parent} does not exist")
        # Several processes opening a new store at once: switching it to WAL needs an exclusive
        # lock, and SQLite answers "database is locked" at once, without waiting, where waiting
        # could deadlock. Those attempts are retried (with a growing pause) for up to 30 s.
        deadline = time.monotonic() + _OPEN_RETRY_S
        pause = 0.02
        while True:
            conn = None
            try:
                conn = sqlite3.connect(self.path, timeout=30.0, isolation_level=None)
                self.conn = conn
                conn.execute("PRAGMA busy_timeout = 30000")
                if self.path != ":memory:":
                    conn.execute("PRAGMA journal_mode = WAL")
                conn.execute("PRAGMA synchronous = NORMAL")
                conn.execute("PRAGMA foreign_keys = ON")
                self._migrate()
                break
            except sqlite3.DatabaseError as exc:
                if conn is not None:
                    conn.close()
                busy = isinstance(exc, sqlite3.OperationalError) and ("locked" in str(exc) or "busy" in str(exc))
                if not busy or time.monotonic() + pause > deadline:
                    raise StoreError(f"{self.path} is not a usable ragsight store ({exc}). "
                                     "Pick another --store path.") from exc
                time.sleep(pause)
                pause = min(pause * 2, 0.5)
        self.owner = f"{socket.gethostname()}:{os.getpid()}"

    # ---- schema -------------------------------------------------------------------------------

    def _migrate(self) -> None:
        migrations = _migrations()
        latest = migrations[-1][0]
        current = self._check_version(latest)
        if current == latest:
            return
        # Another process may be migrating the same file right now: take the write lock, then
        # read the version again, so each migration runs exactly once.
        self.conn.execute("BEGIN IMMEDIATE")
        try:
            current = self._check_version(latest)
            for number, sql in migrations:
                if number <= current:
                    continue
                for statement in _statements(sql):
                    self.conn.execute(statement)
                self.conn.execute(f"PRAGMA user_version = {number}")
            self.conn.execute("COMMIT")
        except BaseException:
            self.conn.execute("ROLLBACK")
            raise

    def _check_version(self, latest: int) -> int:
        current = int(self.conn.execute("PRAGMA user_version").fetchone()[0])
        if current > latest:
            raise StoreError(
                f"{self.path} was written by a newer ragsight (schema {current} > {latest}); upgrade ragsight."
            )
        return current

    @property
    def schema_version(self) -> int:
        return int(self.conn.execute("PRAGMA user_version").fetchone()[0])

    def close(self) -> None:
        self.conn.close()

    def __enter__(self) -> Store:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def integrity_check(self) -> str:
        return str(self.conn.execute("PRAGMA integrity_check").fetchone()[0])

    # ---- runs ---------------------------------------------------------------------------------

    def create_run(
        self, run_id: str, *, dataset: str | None, judge: str | None, embedder: str | None,
        metrics: list[dict[str, Any]], config: dict[str, Any], metadata: dict[str, Any],
        samples: Sequence[Sample], problems: Sequence[RowProblem] = (),
    ) -> None:
        now = time.time()
        with self._tx():
            self.conn.execute(
                "INSERT INTO runs (id, created_at, status, dataset, judge, embedder, metrics, config, metadata,"
                " lock_owner, lock_heartbeat) VALUES (?,?,?,?,?,?,?,?,?,?,?)",
                (run_id, now, "running", dataset, judge, embedder, _dumps(metrics), _dumps(config),
                 _dumps(metadata), self.owner, now),
            )
            self.conn.executemany(
                "INSERT INTO samples (run_id, idx, sample_id, data) VALUES (?,?,?,?)",
                [(run_id, i, s.id, _dumps(s.to_dict())) for i, s in enumerate(samples)],
            )
            self.conn.executemany(
                "INSERT INTO problems (run_id, source, row, field, message) VALUES (?,?,?,?,?)",
                [(run_id, p.source, p.row, p.field, p.message) for p in problems],
            )

    def acquire(self, run_id: str) -> None:
        """Take the run's write lock, refusing when another live process holds it."""
        now = time.time()
        with self._tx():
            row = self.conn.execute("SELECT lock_owner, lock_heartbeat, status FROM runs WHERE id=?", (run_id,)).fetchone()
            if row is None:
                raise StoreError(f"no run '{run_id}' in {self.path}; see 'ragsight runs --store {self.path}'")
            owner, beat, _status = row
            if owner and owner != self.owner and beat and now - beat < LOCK_STALE_S and _alive(owner):
                raise StoreError(
                    f"run {run_id} is being written by another process ({owner}); wait for it to finish, "
                    "or stop it first."
                )
            self.conn.execute("UPDATE runs SET lock_owner=?, lock_heartbeat=?, status='running' WHERE id=?",
                              (self.owner, now, run_id))

    def heartbeat(self, run_id: str) -> None:
        with self._tx():
            self.conn.execute("UPDATE runs SET lock_heartbeat=? WHERE id=? AND lock_owner=?",
                              (time.time(), run_id, self.owner))

    def finish_run(self, run_id: str, status: str, stats: dict[str, Any]) -> None:
        with self._tx():
            self.conn.execute(
                "UPDATE runs SET status=?, finished_at=?, stats=?, lock_owner=NULL, lock_heartbeat=NULL WHERE id=?",
                (status, time.time(), _dumps(stats), run_id),
            )

    def resolve_run(self, ref: str) -> str:
        """A run id from an id, a unique id prefix, or 'last'."""
        if ref == "last":
            row = self.conn.execute("SELECT id FROM runs ORDER BY created_at DESC, rowid DESC LIMIT 1").fetchone()
            if row is None:
                raise StoreError(f"no runs in {self.path} yet; run 'ragsight evaluate' first")
            return str(row[0])
        rows = self.conn.execute("SELECT id FROM runs WHERE id = ? OR id LIKE ?", (ref, ref + "%")).fetchall()
        exact = [r[0] for r in rows if r[0] == ref]
        if exact:
            return str(exact[0])
        if len(rows) == 1:
            return str(rows[0][0])
        if not rows:
            raise StoreError(f"no run '{ref}' in {self.path}; list runs with 'ragsight runs --store {self.path}'")
        raise StoreError(f"'{ref}' matches {len(rows)} runs; give more of the id")

    def run(self, run_id: str) -> RunInfo:
        row = self.conn.execute(
            "SELECT id, created_at, finished_at, status, dataset, judge, embedder, metrics, config, metadata, stats"
            " FROM runs WHERE id=?", (run_id,)).fetchone()
        if row is None:
            raise StoreError(f"no run '{run_id}' in {self.path}")
        return RunInfo(row[0], row[1], row[2], row[3], row[4], row[5], row[6], json.loads(row[7]),
                       json.loads(row[8]), json.loads(row[9]), json.loads(row[10]))

    def runs(self) -> list[RunInfo]:
        ids = [r[0] for r in self.conn.execute("SELECT id FROM runs ORDER BY created_at DESC, rowid DESC")]
        return [self.run(i) for i in ids]

    # ---- samples and scores -------------------------------------------------------------------

    def samples(self, run_id: str) -> list[Sample]:
        out = []
        for (data,) in self.conn.execute("SELECT data FROM samples WHERE run_id=? ORDER BY idx", (run_id,)):
            raw = json.loads(data)
            sample, _ = sample_from_mapping(raw)
            out.append(sample)
        return out

    def finished_samples(self, run_id: str) -> set[str]:
        return {r[0] for r in self.conn.execute("SELECT sample_id FROM samples WHERE run_id=? AND finished=1", (run_id,))}

    def save_sample(self, run_id: str, sample_id: str, scores: Iterable[Score], calls: Iterable[tuple[str | None, JudgeCall]]) -> None:
        """Commit one finished sample: its scores and the judge calls made for it, atomically."""
        now = time.time()
        with self._tx():
            self.conn.executemany(
                "INSERT OR REPLACE INTO scores (run_id, sample_id, metric, outcome, value, reason, evidence, created_at)"
                " VALUES (?,?,?,?,?,?,?,?)",
                [(run_id, sample_id, s.metric, s.outcome.value, s.value, s.reason, _dumps(s.evidence.to_dict()), now)
                 for s in scores],
            )
            self.conn.executemany(
                "INSERT INTO judge_calls (run_id, sample_id, step, attempt, prompt_id, prompt_version, prompt_hash,"
                " judge, model, kind, messages, raw_output, parsed, prompt_tokens, completion_tokens, latency_s,"
                " cached, error, structured, started_at) VALUES (?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?)",
                [(run_id, sid, c.step, c.attempt, c.prompt_id, c.prompt_version, c.prompt_hash, c.judge, c.model,
                  c.kind, _dumps([{"role": m.role, "content": m.content} for m in c.messages]), c.raw_output,
                  _dumps(c.parsed) if c.parsed is not None else None, c.prompt_tokens, c.completion_tokens,
                  c.latency_s, int(c.cached), c.error, c.structured, c.started_at) for sid, c in calls],
            )
            self.conn.execute("UPDATE samples SET finished=1 WHERE run_id=? AND sample_id=?", (run_id, sample_id))
            self.conn.execute("UPDATE runs SET lock_heartbeat=? WHERE id=?", (now, run_id))

    def scores(self, run_id: str, sample_id: str | None = None) -> dict[str, dict[str, Score]]:
        """sample id -> metric key -> Score, in sample order."""
        q = ("SELECT s.sample_id, s.metric, s.outcome, s.value, s.reason, s.evidence FROM scores s"
             " JOIN samples p ON p.run_id = s.run_id AND p.sample_id = s.sample_id WHERE s.run_id=?")
        args: list[Any] = [run_id]
        if sample_id is not None:
            q += " AND s.sample_id=?"
            args.append(sample_id)
        q += " ORDER BY p.idx"
        out: dict[str, dict[str, Score]] = {}
        for sid, metric, outcome, value, reason, evidence in self.conn.execute(q, args):
            out.setdefault(sid, {})[metric] = Score(metric, Outcome(outcome), value, reason,
                                                    Evidence.from_dict(json.loads(evidence)))
        return out

    def judge_calls(self, run_id: str, sample_id: str | None = None, step: str | None = None) -> list[dict[str, Any]]:
        q = "SELECT * FROM judge_calls WHERE run_id=?"
        args: list[Any] = [run_id]
        if sample_id is not None:
            q += " AND sample_id=?"
            args.append(sample_id)
        if step is not None:
            q += " AND step=?"
            args.append(step)
        cur = self.conn.execute(q + " ORDER BY id", args)
        cols = [d[0] for d in cur.description]
        rows = []
        for r in cur:
            d = dict(zip(cols, r))
            d["messages"] = json.loads(d["messages"])
            d["parsed"] = json.loads(d["parsed"]) if d["parsed"] is not None else None
            rows.append(d)
        return rows

    def problems(self, run_id: str) -> list[RowProblem]:
        return [RowProblem(*r) for r in self.conn.execute(
            "SELECT source, row, field, message FROM problems WHERE run_id=? ORDER BY row", (run_id,))]

    # ---- cache --------------------------------------------------------------------------------

    def cache_get(self, key: str) -> dict[str, Any] | None:
        row = self.conn.execute("SELECT entry FROM cache WHERE key=?", (key,)).fetchone()
        return json.loads(row[0]) if row else None

    def cache_put(self, key: str, entry: dict[str, Any]) -> None:
        with self._tx():
            self.conn.execute("INSERT OR REPLACE INTO cache (key, entry, created_at) VALUES (?,?,?)",
                              (key, _dumps(entry), time.time()))

    # ---- helpers ------------------------------------------------------------------------------

    class _Tx:
        def __init__(self, conn: sqlite3.Connection) -> None:
            self.conn = conn

        def __enter__(self) -> None:
            self.conn.execute("BEGIN IMMEDIATE")

        def __exit__(self, exc_type: object, *rest: object) -> None:
            self.conn.execute("ROLLBACK" if exc_type else "COMMIT")

    def _tx(self) -> Store._Tx:
        return Store._Tx(self.conn)



def _statements(sql: str) -> list[str]:
    lines = [ln for ln in sql.splitlines() if not ln.strip().startswith("--")]
    return [s.strip() for s in "\n".join(lines).split(";") if s.strip()]


def _alive(owner: str) -> bool:
    host, _, pid = owner.rpartition(":")
    if host != socket.gethostname():
        return True  # another machine: trust the heartbeat
    try:
        os.kill(int(pid), 0)
    except (ValueError, ProcessLookupError):
        return False
    except PermissionError:
        return True
    return True


class SQLiteCallCache:
    """The judge-call cache kept in a store (the default)."""

    def __init__(self, store: Store) -> None:
        self.store = store

    async def get(self, key: str) -> dict[str, Any] | None:
        return self.store.cache_get(key)

    async def put(self, key: str, entry: dict[str, Any]) -> None:
        self.store.cache_put(key, entry)
