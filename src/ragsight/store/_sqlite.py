"""The run store: one SQLite file holding runs, samples, scores, evidence, judge calls and the
judge-call cache.

Writes are crash-safe: a sample's scores and judge calls are committed in one transaction when the
sample finishes, so a run killed at any point (even ``kill -9``) holds only whole samples and is
continued with ``--resume``. Cache entries are committed as soon as a judge step succeeds, so a
resumed run never pays twice for finished judge work. WAL mode lets readers (``ragsight show``)
look while a run writes; one run is written by one process at a time (a lock in the run's row,
kept fresh by a background heartbeat while the run lives: see :meth:`Store.start_heartbeat`).

Every SQLite failure reaches the caller as a :class:`~ragsight.errors.StoreError` that says what
is wrong with the file (read-only, damaged, locked, full, not a ragsight store) and what to do.
"""

from __future__ import annotations

import json
import logging
import os
import re
import socket
import sqlite3
import threading
import time
from collections.abc import Callable, Iterable, Iterator, Sequence
from dataclasses import dataclass
from importlib import resources
from pathlib import Path
from typing import Any

from .._score import Evidence, Outcome, Score
from ..dataset import RowProblem, Sample, sample_from_mapping, strict_json
from ..errors import StoreError
from ..judge import JudgeCall
from ._compact import (
    INSERT_CALL,
    RAW_OUTPUT,
    call_row,
    call_texts,
    compact_v1,
    decode_cache_entry,
    encode_cache_entry,
    is_step_key,
    read_calls,
    step_key_db,
)
from ._labels import Label, add_labels, delete_label, read_labels, sample_key
from ._texts import TextStore, WrittenPacks, long_strings

__all__ = ["RunInfo", "SQLiteCallCache", "Store"]

_SCORES = ("SELECT s.sample_id, s.metric, s.outcome, s.value, s.reason, s.evidence FROM scores s"
           " JOIN samples p ON p.run_id = s.run_id AND p.sample_id = s.sample_id")
_READ_BATCH = 256  # samples decoded at a time by the streamed reads
_OPEN_RETRY_S = 30.0  # how long opening a store retries "database is locked" (see Store.__init__)
PAGE_SIZE = 2048

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


def _describe(path: str, exc: sqlite3.Error) -> str:
    """What an SQLite failure means for the user, and what to do."""
    text = str(exc)
    low = text.lower()
    if "readonly" in low or "read-only" in low:
        return (f"the store {path} is read-only ({text}); make the file and its folder writable, "
                "or pick another --store path")
    if "not a database" in low or "file is encrypted" in low:
        return f"{path} is not a usable ragsight store ({text}). Pick another --store path."
    if any(w in low for w in ("malformed", "disk i/o", "corrupt")):
        return (f"the store {path} is damaged ({text}). Copy what can be read with "
                f"'sqlite3 {path} .recover', and pick another --store path for new runs")
    if "locked" in low or "busy" in low:
        return (f"the store {path} stayed locked by another process for {_OPEN_RETRY_S:g} s ({text}); "
                "try again when that process is done")
    if "disk is full" in low or "database or disk is full" in low:
        return f"the disk holding the store {path} is full ({text}); free some space and resume the run"
    if "no such table" in low or "no such column" in low:
        return (f"{path} is not a usable ragsight store ({text}): a table is missing. "
                "Pick another --store path")
    if "unable to open" in low:
        return f"cannot open the store {path} ({text}); check the path and its permissions"
    return f"the store {path} failed ({type(exc).__name__}: {text})"


class _Cursor(sqlite3.Cursor):
    """A cursor whose SQLite failures are StoreErrors naming the file (see :func:`_describe`)."""

    def _fail(self, exc: sqlite3.Error) -> StoreError:
        path = getattr(self.connection, "store_path", "") or "?"
        return StoreError(_describe(path, exc))

    def execute(self, sql: str, parameters: Any = (), /) -> _Cursor:
        try:
            super().execute(sql, parameters)
        except sqlite3.Error as exc:
            raise self._fail(exc) from exc
        return self

    def executemany(self, sql: str, seq_of_parameters: Any, /) -> _Cursor:
        try:
            super().executemany(sql, seq_of_parameters)
        except sqlite3.Error as exc:
            raise self._fail(exc) from exc
        return self

    def fetchone(self) -> Any:
        try:
            return super().fetchone()
        except sqlite3.Error as exc:
            raise self._fail(exc) from exc

    def fetchall(self) -> list[Any]:
        try:
            return super().fetchall()
        except sqlite3.Error as exc:
            raise self._fail(exc) from exc

    def fetchmany(self, size: int | None = 1) -> list[Any]:
        try:
            return super().fetchmany(size if size is not None else self.arraysize)
        except sqlite3.Error as exc:
            raise self._fail(exc) from exc

    def __next__(self) -> Any:
        try:
            return super().__next__()
        except sqlite3.Error as exc:
            raise self._fail(exc) from exc


class _Connection(sqlite3.Connection):
    """The store's connection: its cursors turn SQLite failures into StoreErrors."""

    store_path = ""

    def cursor(self, factory: Any = _Cursor) -> Any:
        return super().cursor(factory)

    def execute(self, sql: str, parameters: Any = (), /) -> Any:
        return self.cursor().execute(sql, parameters)

    def executemany(self, sql: str, parameters: Any, /) -> Any:
        return self.cursor().executemany(sql, parameters)


def _busy(exc: BaseException) -> bool:
    cause = exc.__cause__ if isinstance(exc, StoreError) else exc
    return isinstance(cause, sqlite3.OperationalError) and ("locked" in str(cause) or "busy" in str(cause))


def _migrations() -> list[tuple[int, str]]:
    base = resources.files(__package__).joinpath("migrations")
    out = []
    for entry in base.iterdir():
        if entry.name.endswith(".sql"):
            out.append((int(entry.name.split("_", 1)[0]), entry.read_text("utf-8")))
    return sorted(out)


# A migration that needs code (converting data, not only the schema) names it on a line of its
# own, "-- python: NAME": its statements before the line run first, then the code, then the rest.
_PYTHON_STEPS: dict[str, Callable[[sqlite3.Connection], None]] = {"compact": compact_v1}
_PYTHON_LINE = re.compile(r"^--\s*python:\s*(\w+)\s*$", re.M)


def _run_migration(conn: sqlite3.Connection, sql: str) -> None:
    parts = _PYTHON_LINE.split(sql)  # [sql, name, sql, name, sql...]
    for i, part in enumerate(parts):
        if i % 2:
            _PYTHON_STEPS[part](conn)
        else:
            for statement in _statements(part):
                conn.execute(statement)


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
    return strict_json(value)  # never a bare NaN token in the store


class Store:
    """A SQLite run store. ``Store(":memory:")`` keeps everything in memory."""

    def __init__(self, path: str | os.PathLike[str] = "ragsight.db") -> None:
        self.path = str(path)
        if self.path != ":memory:":
            parent = Path(self.path).parent
            if not parent.exists():
                raise StoreError(f"cannot create the store {self.path}: folder {parent} does not exist")
            if Path(self.path).is_dir():
                raise StoreError(f"the store {self.path} is a folder; give a file name for --store")
        self.lock_lease_s = lock_lease_s()
        self.unreadable_cache_entries = 0  # damaged entries read as misses (cache_get)
        self._beat: _Heartbeat | None = None
        self._claims: dict[str, _Heartbeat] = {}
        # Several processes opening a new store at once: switching it to WAL needs an exclusive
        # lock, and SQLite answers "database is locked" at once, without waiting, where waiting
        # could deadlock. Those attempts are retried (with a growing pause) for up to 30 s.
        deadline = time.monotonic() + _OPEN_RETRY_S
        pause = 0.02
        while True:
            conn = None
            try:
                conn = _connect(self.path)
                self.conn = conn
                # the schema version is read before anything is written: a store of a newer
                # ragsight is refused as it is (not even switched to WAL first)
                self._check_version(_migrations()[-1][0])
                # 2 kB pages for a new file: a sample's pack (2-3 kB compressed) fills them with
                # little slack, where 4 kB pages wasted 40% of the packs' pages (bench/store_size.py)
                conn.execute(f"PRAGMA page_size = {PAGE_SIZE}")  # no effect on an existing file
                if self.path != ":memory:":
                    conn.execute("PRAGMA journal_mode = WAL")
                conn.execute("PRAGMA synchronous = NORMAL")
                conn.execute("PRAGMA foreign_keys = ON")
                self._check_tables()  # the tables its version promises, before converting them
                self._migrate()
                self._check_tables()
                self.texts = TextStore(conn)
                break
            except StoreError as exc:
                if conn is not None:
                    conn.close()
                if exc.__cause__ is None or not _busy(exc) or time.monotonic() + pause > deadline:
                    raise
                time.sleep(pause)
                pause = min(pause * 2, 0.5)
        self.owner = f"{socket.gethostname()}:{os.urandom(3).hex()}:{os.getpid()}"

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
                _run_migration(self.conn, sql)
                self.conn.execute(f"PRAGMA user_version = {number}")
            self.conn.execute("COMMIT")
        except BaseException:
            self.conn.execute("ROLLBACK")
            raise
        if current >= 1 and self.path != ":memory:":
            self._vacuum()

    def _vacuum(self) -> None:
        """After converting a store: give the old layout's pages back to the file system, with
        the page size of a new store (which needs the write-ahead log off for a moment)."""
        try:
            self.conn.execute("PRAGMA journal_mode = DELETE")
            self.conn.execute(f"PRAGMA page_size = {PAGE_SIZE}")
            self.conn.execute("VACUUM")
        except StoreError as exc:  # another process has the file open: it shrinks another time
            log.info("%s: VACUUM after the migration skipped: %s", self.path, exc)
        finally:
            self.conn.execute("PRAGMA journal_mode = WAL")

    def _check_version(self, latest: int) -> int:
        current = int(self.conn.execute("PRAGMA user_version").fetchone()[0])
        if current > latest:
            raise StoreError(
                f"{self.path} was written by a newer ragsight (schema {current} > {latest}); upgrade "
                "ragsight to read it. The file was not changed."
            )
        return current

    def _check_tables(self) -> None:
        """Every table the store's schema version promises is there (a file with a ragsight
        schema number but without its tables is not a usable store)."""
        version = self.schema_version
        expected: set[str] = set()
        for number, sql in _migrations():
            if number > version:
                break
            expected |= {m.lower() for m in _CREATE.findall(sql)}
            expected -= {m.lower() for m in _DROP.findall(sql)}
            for old, new in _RENAME.findall(sql):
                expected.discard(old.lower())
                expected.add(new.lower())
        found = {r[0].lower() for r in self.conn.execute("SELECT name FROM sqlite_master WHERE type='table'")}
        missing = sorted(expected - found)
        if missing:
            raise StoreError(
                f"{self.path} is not a usable ragsight store: it says schema {version}, but has no "
                f"table {', '.join(missing)}. It was damaged or written by another program; pick "
                "another --store path."
            )

    @property
    def schema_version(self) -> int:
        return int(self.conn.execute("PRAGMA user_version").fetchone()[0])

    def close(self) -> None:
        self.stop_heartbeat()
        for name in list(self._claims):
            self.release(name)
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
            writers = self._insert_samples(run_id, samples)
            self.conn.executemany(
                "INSERT INTO problems (run_id, source, row, field, message) VALUES (?,?,?,?,?)",
                [(run_id, p.source, p.row, p.field, p.message) for p in problems],
            )
        for w in writers:
            w.committed()

    def _insert_samples(self, run_id: str, samples: Sequence[Sample]) -> list[Any]:
        """A run's samples, their long fields as texts, in packs of 64 samples (a read of one
        sample decompresses its group only). Returns what to do once the transaction commits
        (the writers' bytes are let go as each pack is written)."""
        done = WrittenPacks(self.texts)
        for start in range(0, len(samples), 64):
            w = self.texts.writer()
            group = samples[start:start + 64]
            fields = [s.to_dict() for s in group]
            w.prefetch(t for f in fields for t in long_strings(f))
            self.conn.executemany(
                "INSERT INTO samples (run_id, idx, sample_id, data, conversation_id, turn) VALUES (?,?,?,?,?,?)",
                [(run_id, i, s.id, self.texts.encode_json(f, w), s.conversation_id, s.turn)
                 for i, (s, f) in enumerate(zip(group, fields), start)],
            )
            self.conn.executemany("INSERT OR REPLACE INTO sample_keys (run_id, sample_id, sample_key) VALUES (?,?,?)",
                                  [(run_id, s.id, sample_key(s)) for s in group])
            w.finish()
            done.add(w)
        return [done]

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
                    f"run {run_id} is being written by another process ({_show_owner(owner)}); wait for it "
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
                    return _show_owner(owner)
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

    def finish_run(self, run_id: str, status: str, stats: dict[str, Any]) -> None:
        """Record the run's end, its status and statistics, and release its lock; nothing is
        changed when another process has taken the run over meanwhile."""
        self.stop_heartbeat()
        with self._tx():
            self.conn.execute(
                "UPDATE runs SET status=?, finished_at=?, stats=?, lock_owner=NULL, lock_heartbeat=NULL"
                " WHERE id=? AND (lock_owner IS NULL OR lock_owner=?)",
                (status, time.time(), _dumps(stats), run_id, self.owner),
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
        for (data,) in self.conn.execute("SELECT data FROM samples WHERE run_id=? ORDER BY idx", (run_id,)).fetchall():
            raw = self.texts.decode_json(data)
            sample, _ = sample_from_mapping(raw)
            out.append(sample)
        return out

    def finished_samples(self, run_id: str) -> set[str]:
        return {r[0] for r in self.conn.execute("SELECT sample_id FROM samples WHERE run_id=? AND finished=1", (run_id,))}

    def failed_samples(self, run_id: str) -> set[str]:
        """The finished samples with a score that failed (a judge that refused, timed out or
        stopped answering): ``--resume`` asks them again."""
        return {r[0] for r in self.conn.execute(
            "SELECT DISTINCT s.sample_id FROM scores s JOIN samples p ON p.run_id = s.run_id AND "
            "p.sample_id = s.sample_id WHERE s.run_id=? AND s.outcome='failed' AND p.finished=1", (run_id,))}

    # ---- light reads (a viewer over large runs: no text decoded) ------------------------------

    def sample_rows(self, run_id: str) -> list[tuple[int, str, bool, str | None, int | None]]:
        """(index, sample id, finished, conversation id, turn) of every sample of the run, in data
        order; no field of a sample is decoded, so this stays fast on a run of tens of thousands
        of samples."""
        return [(int(i), str(s), bool(f), c, t) for i, s, f, c, t in self.conn.execute(
            "SELECT idx, sample_id, finished, conversation_id, turn FROM samples WHERE run_id=? ORDER BY idx",
            (run_id,))]

    def score_rows(self, run_id: str) -> list[tuple[str, str, str, float | None, str]]:
        """(sample id, metric, outcome, value, reason) of every score of the run, in sample
        order, without the evidence (which :meth:`scores` decodes)."""
        return [(str(s), str(m), str(o), v, str(r)) for s, m, o, v, r in self.conn.execute(
            "SELECT s.sample_id, s.metric, s.outcome, s.value, s.reason FROM scores s JOIN samples p"
            " ON p.run_id = s.run_id AND p.sample_id = s.sample_id WHERE s.run_id=? ORDER BY p.idx",
            (run_id,))]

    def sample(self, run_id: str, sample_id: str) -> Sample:
        """One sample of a run, decoding its own fields only."""
        row = self.conn.execute("SELECT data FROM samples WHERE run_id=? AND sample_id=?",
                                (run_id, sample_id)).fetchone()
        if row is None:
            raise StoreError(f"no sample '{sample_id}' in run {run_id} of {self.path}")
        sample, _ = sample_from_mapping(self.texts.decode_json(row[0]))
        return sample

    def sample_counts(self, run_id: str | None = None) -> dict[str, tuple[int, int]]:
        """Run id -> (samples, finished samples), for every run of the store (or one)."""
        where, args = ("WHERE run_id=? ", (run_id,)) if run_id is not None else ("", ())
        return {str(r): (int(n), int(f or 0)) for r, n, f in self.conn.execute(
            f"SELECT run_id, COUNT(*), SUM(finished) FROM samples {where}GROUP BY run_id", args)}

    def save_sample(self, run_id: str, sample_id: str, scores: Iterable[Score], calls: Iterable[tuple[str | None, JudgeCall]]) -> None:
        """Commit one finished sample: its scores and the judge calls made for it, atomically.
        Refused (StoreError) when another process holds the run's lock: one writer per run."""
        now = time.time()
        with self._tx():
            row = self.conn.execute("SELECT lock_owner FROM runs WHERE id=?", (run_id,)).fetchone()
            if row is not None and row[0] and row[0] != self.owner:
                raise StoreError(
                    f"run {run_id} was taken over by another process ({_show_owner(row[0])}) while this "
                    "one was writing it; this process stops without saving more.")
            w = self.texts.writer(dictionary_source=True)
            calls = list(calls)
            w.prefetch(call_texts(c for _, c in calls))
            self.conn.executemany(
                "INSERT OR REPLACE INTO scores (run_id, sample_id, metric, outcome, value, reason, evidence, created_at)"
                " VALUES (?,?,?,?,?,?,?,?)",
                [(run_id, sample_id, s.metric, s.outcome.value, s.value, s.reason,
                  w.put(strict_json(s.evidence.to_dict(), separators=(",", ":"))), now) for s in scores],
            )
            rows = [call_row(run_id, sid, c, w) for sid, c in calls]
            self.conn.executemany(INSERT_CALL, rows)
            w.adopt(r[RAW_OUTPUT] for r in rows if r[RAW_OUTPUT] is not None)  # raw outputs of cache entries
            w.finish()
            self.conn.execute("UPDATE samples SET finished=1 WHERE run_id=? AND sample_id=?", (run_id, sample_id))
            self.conn.execute("UPDATE runs SET lock_heartbeat=? WHERE id=?", (now, run_id))
        w.committed()

    def scores(self, run_id: str, sample_id: str | None = None) -> dict[str, dict[str, Score]]:
        """sample id -> metric key -> Score, in sample order (a sample's metrics by key)."""
        q = _SCORES + " WHERE s.run_id=?"
        args: list[Any] = [run_id]
        if sample_id is not None:
            q += " AND s.sample_id=?"
            args.append(sample_id)
        out: dict[str, dict[str, Score]] = {}
        self._read_scores(self.conn.execute(q + " ORDER BY p.idx, s.metric", args).fetchall(), out)
        return out

    def _read_scores(self, rows: Sequence[Any], out: dict[str, dict[str, Score]]) -> None:
        evidence = self.texts.get_many(r[5] for r in rows)
        for sid, metric, outcome, value, reason, ev in rows:
            out.setdefault(sid, {})[metric] = Score(metric, Outcome(outcome), value, reason,
                                                    Evidence.from_dict(json.loads(evidence[ev])))

    # ---- streamed reads (a large run's result reads its samples and scores from here) ---------

    def iter_samples(self, run_id: str, start: int = 0, stop: int | None = None,
                     batch: int = _READ_BATCH) -> Iterator[Sample]:
        """The run's samples ``start:stop`` in data order (as :meth:`samples`), decoded
        ``batch`` at a time: memory holds one batch, not the run."""
        q = "SELECT data FROM samples WHERE run_id=? ORDER BY idx"
        args: list[Any] = [run_id]
        if start or stop is not None:
            q += " LIMIT ? OFFSET ?"
            args += [-1 if stop is None else max(0, stop - start), start]
        cur = self.conn.execute(q, args)
        while rows := cur.fetchmany(batch):
            for (data,) in rows:
                yield sample_from_mapping(self.texts.decode_json(data))[0]

    def sample_ids(self, run_id: str) -> list[str]:
        """The ids of the run's samples in data order (no field decoded)."""
        return [str(r[0]) for r in self.conn.execute(
            "SELECT sample_id FROM samples WHERE run_id=? ORDER BY idx", (run_id,))]

    def samples_by_id(self, run_id: str, sample_ids: Sequence[str]) -> list[Sample]:
        """The run's samples of these ids, in the order given (each read by its key)."""
        found: dict[str, Sample] = {}
        for i in range(0, len(sample_ids), 500):
            chunk = list(sample_ids[i:i + 500])
            for sid, data in self.conn.execute(
                    f"SELECT sample_id, data FROM samples WHERE run_id=? AND sample_id IN ({','.join('?' * len(chunk))})",
                    [run_id, *chunk]):
                found[str(sid)] = sample_from_mapping(self.texts.decode_json(data))[0]
        missing = [sid for sid in sample_ids if sid not in found]
        if missing:
            raise StoreError(f"no sample '{missing[0]}' in run {run_id} of {self.path}")
        return [found[sid] for sid in sample_ids]

    def iter_scores(self, run_id: str, batch: int = _READ_BATCH, by_id: bool = False
                    ) -> Iterator[tuple[str, dict[str, Score]]]:
        """(sample id, metric key -> Score) of the run's scored samples, in the order and with
        the values of :meth:`scores` (``by_id``: in the order of the sample ids), about
        ``batch`` samples decoded at a time."""
        order = "s.sample_id, s.metric" if by_id else "p.idx, s.metric"
        cur = self.conn.execute(_SCORES + f" WHERE s.run_id=? ORDER BY {order}", (run_id,))
        pending: list[Any] = []
        while rows := cur.fetchmany(batch * 8):
            pending += rows
            # a sample's rows may go on in the next fetch: keep its rows until then
            last = pending[-1][0]
            cut = len(pending)
            while cut and pending[cut - 1][0] == last:
                cut -= 1
            if cut:
                out: dict[str, dict[str, Score]] = {}
                self._read_scores(pending[:cut], out)
                yield from out.items()
                pending = pending[cut:]
        if pending:
            out = {}
            self._read_scores(pending, out)
            yield from out.items()

    def scored_sample_ids(self, run_id: str) -> Iterator[str]:
        """The ids of the run's samples that have a score, in data order."""
        cur = self.conn.execute(
            "SELECT p.sample_id FROM samples p WHERE p.run_id=? AND EXISTS (SELECT 1 FROM scores s"
            " WHERE s.run_id = p.run_id AND s.sample_id = p.sample_id) ORDER BY p.idx", (run_id,))
        while rows := cur.fetchmany(_READ_BATCH * 8):
            for (sid,) in rows:
                yield str(sid)

    def has_scores(self, run_id: str, sample_id: str) -> bool:
        return self.conn.execute("SELECT 1 FROM scores WHERE run_id=? AND sample_id=? LIMIT 1",
                                 (run_id, sample_id)).fetchone() is not None

    def score_outcomes(self, run_id: str, metric: str) -> Iterator[tuple[str, float | None, str]]:
        """(outcome, value, reason) of every score of ``metric`` in the run, in data order,
        without the evidence: what a metric's summary is computed from."""
        cur = self.conn.execute(
            "SELECT s.outcome, s.value, s.reason FROM scores s JOIN samples p ON p.run_id = s.run_id"
            " AND p.sample_id = s.sample_id WHERE s.run_id=? AND s.metric=? ORDER BY p.idx", (run_id, metric))
        while rows := cur.fetchmany(_READ_BATCH * 8):
            for outcome, value, reason in rows:
                yield str(outcome), value, str(reason)

    def judge_calls(self, run_id: str, sample_id: str | None = None, step: str | None = None) -> list[dict[str, Any]]:
        """The run's judge calls (a sample's, a step's), oldest first, each as it was made: step,
        attempt, prompt, model, messages, raw output, parsed output, tokens, latency, error."""
        q = "SELECT * FROM judge_calls WHERE run_id=?"
        args: list[Any] = [run_id]
        if sample_id is not None:
            q += " AND sample_id=?"
            args.append(sample_id)
        if step is not None:
            q += " AND step=?"
            args.append(step_key_db(step))
        cur = self.conn.execute(q + " ORDER BY id", args)  # ids grow call by call
        cols = [d[0] for d in cur.description]
        return read_calls(self.texts, [dict(zip(cols, r)) for r in cur.fetchall()])

    def call_tokens(self, run_id: str) -> list[tuple[str | None, str, int, int]]:
        """(sample id, step, prompt tokens, completion tokens) of the run's calls that reached
        the judge (cache hits cost nothing), without reading their texts; by sample id, then
        call by call."""
        return list(self.iter_call_tokens(run_id))

    def iter_call_tokens(self, run_id: str) -> Iterator[tuple[str | None, str, int, int]]:
        """:meth:`call_tokens` one call at a time (a large run's cost is worked out from here)."""
        cur = self.conn.execute(
            "SELECT sample_id, step, prompt_tokens, completion_tokens FROM judge_calls"
            " WHERE run_id=? AND cached=0 ORDER BY sample_id, id", (run_id,))
        while rows := cur.fetchmany(_READ_BATCH * 8):
            for sid, step, p, c in rows:
                yield sid, step.hex() if isinstance(step, (bytes, bytearray)) else str(step), int(p), int(c)

    def problems(self, run_id: str) -> list[RowProblem]:
        return [RowProblem(*r) for r in self.conn.execute(
            "SELECT source, row, field, message FROM problems WHERE run_id=? ORDER BY row", (run_id,))]

    # ---- labels (store/_labels.py) -------------------------------------------------------------

    def sample_keys(self, run_id: str) -> dict[str, str]:
        """sample id -> content key (:func:`~ragsight.store.sample_key`) of the run's samples, in
        sample order. A run written before labels existed has its keys computed and kept now."""
        rows = self.conn.execute("SELECT p.sample_id, k.sample_key FROM samples p LEFT JOIN sample_keys k"
                                 " ON k.run_id = p.run_id AND k.sample_id = p.sample_id WHERE p.run_id=?"
                                 " ORDER BY p.idx", (run_id,)).fetchall()
        if all(key is not None for _, key in rows):
            return {sid: key for sid, key in rows}
        keys = {s.id: sample_key(s) for s in self.samples(run_id)}
        try:
            with self._tx():
                self.conn.executemany("INSERT OR REPLACE INTO sample_keys (run_id, sample_id, sample_key)"
                                      " VALUES (?,?,?)", [(run_id, sid, key) for sid, key in keys.items()])
        except StoreError as exc:  # a read-only store: the keys are computed again next time
            log.info("%s: sample keys of run %s not kept: %s", self.path, run_id, exc)
        return keys

    def add_labels(self, labels: Iterable[Label]) -> int:
        """Add or replace labels (one per sample key, metric, claim, field and who), in one
        transaction; returns how many were written. A bad label (empty key, metric or field, a
        value that is not a finite number) raises InputError and writes none."""
        with self._tx():
            return add_labels(self.conn, labels)

    def labels(self, run_id: str | None = None, *, metric: str | None = None, field: str | None = None,
               sample_key: str | None = None) -> list[Label]:
        """The stored labels, optionally of one metric, field or sample key. With ``run_id``: the
        labels whose sample key is that of a sample of the run, in sample order, each naming that
        run and that sample in ``run_id`` and ``sample_id`` (a label applies to every sample of the
        run with the same content)."""
        if run_id is not None and self._keys_missing(run_id):
            self.sample_keys(run_id)  # a run older than the labels gets its keys
        return read_labels(self.conn, run_id, metric, field, sample_key)

    def _keys_missing(self, run_id: str) -> bool:
        """Whether a sample of the run has no content key yet (counted in SQLite: reading the
        keys of 20,000 samples into Python for this took 0.17 s a call)."""
        return bool(self.conn.execute(
            "SELECT EXISTS (SELECT 1 FROM samples p LEFT JOIN sample_keys k ON k.run_id = p.run_id"
            " AND k.sample_id = p.sample_id WHERE p.run_id=? AND k.sample_key IS NULL)", (run_id,)).fetchone()[0])

    def delete_label(self, label: Label | str, metric: str | None = None, *, claim: str | None = None,
                     field: str = "human", who: str = "") -> bool:
        """Delete one label, given as a :class:`Label` (its value is not compared) or by its key
        (sample key, metric, claim, field, who). True when there was one."""
        if isinstance(label, Label):
            key, metric, claim, field, who = label.sample_key, label.metric, label.claim, label.field, label.who
        else:
            key = label
        if metric is None:
            raise TypeError("delete_label needs the metric when the label is given by its sample key")
        with self._tx():
            return delete_label(self.conn, key, metric, claim, field, who)

    # ---- cache --------------------------------------------------------------------------------

    def cache_get(self, key: str) -> dict[str, Any] | None:
        """The cached entry of a judge step, or None: not cached, or an entry that cannot be read
        (damaged JSON or texts; counted in ``unreadable_cache_entries``). Such an entry is a miss:
        the step is asked again and its new answer replaces it."""
        row = self.conn.execute("SELECT entry FROM cache WHERE key=?", (step_key_db(key),)).fetchone()
        if row is None:
            return None
        try:
            entry = decode_cache_entry(key, row[0], self.texts)
        except (StoreError, ValueError, TypeError, KeyError, IndexError, AttributeError, RecursionError):
            self.unreadable_cache_entries += 1
            return None
        return entry if isinstance(entry, dict) else None

    def cache_put(self, key: str, entry: dict[str, Any]) -> None:
        """Store a finished judge step's entry at once (its raw output as a text in a loose pack,
        which the step's sample takes into its own pack when it is saved)."""
        w = self.texts.writer(loose=is_step_key(key))
        with self._tx():
            stored = encode_cache_entry(key, entry, self.texts, w)
            w.finish()
            self.conn.execute("INSERT OR REPLACE INTO cache (key, entry, created_at) VALUES (?,?,?)",
                              (step_key_db(key), stored, time.time()))
        w.committed()

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



_CREATE = re.compile(r"(?i)\bCREATE\s+TABLE\s+(?:IF\s+NOT\s+EXISTS\s+)?[\"`]?(\w+)")
_DROP = re.compile(r"(?i)\bDROP\s+TABLE\s+(?:IF\s+EXISTS\s+)?[\"`]?(\w+)")
_RENAME = re.compile(r"(?i)\bALTER\s+TABLE\s+[\"`]?(\w+)[\"`]?\s+RENAME\s+TO\s+[\"`]?(\w+)")


def _connect(path: str) -> _Connection:
    # check_same_thread off: evaluate() called inside a running event loop (Jupyter) runs the
    # evaluation in a worker thread while the caller's thread waits, so a Store opened by the
    # caller is used by one thread at a time, never two at once.
    conn = sqlite3.connect(path, timeout=30.0, isolation_level=None, factory=_Connection,
                           check_same_thread=False)
    assert isinstance(conn, _Connection)
    conn.store_path = path
    conn.execute("PRAGMA busy_timeout = 30000")
    return conn


def _statements(sql: str) -> list[str]:
    lines = [ln for ln in sql.splitlines() if not ln.strip().startswith("--")]
    return [s.strip() for s in "\n".join(lines).split(";") if s.strip()]


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


def _show_owner(owner: str) -> str:
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
                                   (time.time(), _dumps(self.stats()), self.run_id, self.owner))
            else:
                cur = conn.execute("UPDATE runs SET lock_heartbeat=? WHERE id=? AND lock_owner=?",
                                   (time.time(), self.run_id, self.owner))
        except sqlite3.OperationalError as exc:  # busy beyond 30 s, disk full: try again next beat
            log.warning("run %s: heartbeat failed: %s", self.run_id, exc)
            return True
        return cur.rowcount > 0


class SQLiteCallCache:
    """The judge-call cache kept in a store (the default)."""

    def __init__(self, store: Store) -> None:
        self.store = store

    async def get(self, key: str) -> dict[str, Any] | None:
        return self.store.cache_get(key)

    async def put(self, key: str, entry: dict[str, Any]) -> None:
        self.store.cache_put(key, entry)
