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

The parts of the :class:`Store`: the connection (``_connection.py``), runs (``_runs.py``), locks
and claims (``_locks.py``), samples, scores and judge calls (``_scores.py``), labels
(``_labels.py``), the texts (``_texts.py``); here the schema (numbered migrations), opening and
closing, and the judge-call cache.
"""

from __future__ import annotations

import logging
import os
import re
import socket
import sqlite3
import time
from collections.abc import Callable
from importlib import resources
from pathlib import Path
from typing import Any

from ..errors import StoreError
from ._compact import compact_v1, decode_cache_entry, encode_cache_entry, is_step_key, step_key_db
from ._connection import OPEN_RETRY_S, connect, is_busy
from ._labels import LabelsMixin
from ._locks import LocksMixin, lock_lease_s
from ._runs import RunsMixin
from ._scores import ScoresMixin
from ._texts import TextStore

__all__ = ["SQLiteCallCache", "Store"]

PAGE_SIZE = 2048

log = logging.getLogger(__name__)


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


_CREATE = re.compile(r"(?i)\bCREATE\s+TABLE\s+(?:IF\s+NOT\s+EXISTS\s+)?[\"`]?(\w+)")
_DROP = re.compile(r"(?i)\bDROP\s+TABLE\s+(?:IF\s+EXISTS\s+)?[\"`]?(\w+)")
_RENAME = re.compile(r"(?i)\bALTER\s+TABLE\s+[\"`]?(\w+)[\"`]?\s+RENAME\s+TO\s+[\"`]?(\w+)")


def _statements(sql: str) -> list[str]:
    lines = [ln for ln in sql.splitlines() if not ln.strip().startswith("--")]
    return [s.strip() for s in "\n".join(lines).split(";") if s.strip()]


_HINT = "give the --store file that 'ragsight evaluate' wrote, or a new path"


class Store(RunsMixin, LocksMixin, LabelsMixin, ScoresMixin):
    """A SQLite run store. ``Store(":memory:")`` keeps everything in memory.

    A file that is not one of ragsight's stores is refused, naming the path, before anything is
    written to it or beside it: a device or pipe (``/dev/null``), a file that is not SQLite, another
    program's SQLite database. With ``create=False`` (the commands that read runs) the store must
    exist already: a missing path, an empty file or an empty database is refused too; with
    ``create=True`` (a run) they become a new store."""

    def __init__(self, path: str | os.PathLike[str] = "ragsight.db", *, create: bool = True) -> None:
        self.path = str(path)
        if self.path != ":memory:":
            p = Path(self.path)
            if not p.parent.exists():
                raise StoreError(f"cannot create the store {self.path}: folder {p.parent} does not exist")
            if p.is_dir():
                raise StoreError(f"the store {self.path} is a folder; give a file name for --store")
            if p.exists() and not p.is_file():
                raise StoreError(f"{self.path} is not a ragsight store (not a regular file); {_HINT}")
            if not create and not p.exists():
                raise StoreError(f"no store at {self.path}; {_HINT}")
            if not create and p.stat().st_size == 0:
                raise StoreError(f"{self.path} is not a ragsight store (an empty file); {_HINT}")
        self.lock_lease_s = lock_lease_s()
        self.unreadable_cache_entries = 0  # damaged entries read as misses (cache_get)
        self._beat = None
        self._claims = {}
        # Several processes opening a new store at once: switching it to WAL needs an exclusive
        # lock, and SQLite answers "database is locked" at once, without waiting, where waiting
        # could deadlock. Those attempts are retried (with a growing pause) for up to 30 s.
        deadline = time.monotonic() + OPEN_RETRY_S
        pause = 0.02
        while True:
            conn = None
            try:
                conn = connect(self.path)
                self.conn = conn
                # read before anything is written: another program's database, a store of a newer
                # ragsight or one without the tables its version promises is refused as it is
                # (not even switched to WAL first)
                self._check_ours(_migrations()[-1][0], create)
                self._check_tables()
                # 2 kB pages for a new file: a sample's pack (2-3 kB compressed) fills them with
                # little slack, where 4 kB pages wasted 40% of the packs' pages (bench/store_size.py)
                conn.execute(f"PRAGMA page_size = {PAGE_SIZE}")  # no effect on an existing file
                if self.path != ":memory:":
                    conn.execute("PRAGMA journal_mode = WAL")
                conn.execute("PRAGMA synchronous = NORMAL")
                conn.execute("PRAGMA foreign_keys = ON")
                self._migrate()
                self._check_tables()
                self.texts = TextStore(conn)
                break
            except StoreError as exc:
                if conn is not None:
                    conn.close()
                if exc.__cause__ is None or not is_busy(exc) or time.monotonic() + pause > deadline:
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

    def _check_ours(self, latest: int, create: bool) -> None:
        """Refuse, before anything is written, a database that is not a ragsight store: schema 0
        (no ragsight schema) with tables, views or indexes of its own is another program's (and a
        schema above ``latest``, a newer ragsight's). Schema 0 and nothing in it is a new store,
        refused unless ``create``."""
        current = self._check_version(latest)
        if current == 0 and self.conn.execute("SELECT 1 FROM sqlite_master LIMIT 1").fetchone() is not None:
            raise StoreError(f"{self.path} is not a ragsight store (an SQLite database of another program); "
                             f"{_HINT}. The file was not changed.")
        if current == 0 and not create and self.path != ":memory:":
            raise StoreError(f"{self.path} is not a ragsight store (an empty database); {_HINT}")

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


class SQLiteCallCache:
    """The judge-call cache kept in a store (the default)."""

    def __init__(self, store: Store) -> None:
        self.store = store

    async def get(self, key: str) -> dict[str, Any] | None:
        return self.store.cache_get(key)

    async def put(self, key: str, entry: dict[str, Any]) -> None:
        self.store.cache_put(key, entry)
