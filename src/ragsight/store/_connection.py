"""The store's SQLite connection: every SQLite failure reaches the caller as a StoreError that
says what is wrong with the file and what to do; the write transaction; and ``StoreBase``, what
every part of the :class:`~ragsight.store.Store` holds.
"""

from __future__ import annotations

import sqlite3
from typing import Any

from ..dataset import strict_json
from ..errors import StoreError
from ._texts import TextStore

__all__ = ["OPEN_RETRY_S", "StoreBase", "StoreConnection", "Transaction", "connect", "dumps", "is_busy"]

OPEN_RETRY_S = 30.0  # how long opening a store retries "database is locked" (see Store.__init__)


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
        return (f"the store {path} stayed locked by another process for {OPEN_RETRY_S:g} s ({text}); "
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


class StoreConnection(sqlite3.Connection):
    """The store's connection: its cursors turn SQLite failures into StoreErrors."""

    store_path = ""

    def cursor(self, factory: Any = _Cursor) -> Any:
        return super().cursor(factory)

    def execute(self, sql: str, parameters: Any = (), /) -> Any:
        return self.cursor().execute(sql, parameters)

    def executemany(self, sql: str, parameters: Any, /) -> Any:
        return self.cursor().executemany(sql, parameters)


def is_busy(exc: BaseException) -> bool:
    cause = exc.__cause__ if isinstance(exc, StoreError) else exc
    return isinstance(cause, sqlite3.OperationalError) and ("locked" in str(cause) or "busy" in str(cause))


def connect(path: str) -> StoreConnection:
    # check_same_thread off: evaluate() called inside a running event loop (Jupyter) runs the
    # evaluation in a worker thread while the caller's thread waits, so a Store opened by the
    # caller is used by one thread at a time, never two at once.
    conn = sqlite3.connect(path, timeout=30.0, isolation_level=None, factory=StoreConnection,
                           check_same_thread=False)
    assert isinstance(conn, StoreConnection)
    conn.store_path = path
    conn.execute("PRAGMA busy_timeout = 30000")
    return conn


def dumps(value: Any) -> str:
    return strict_json(value)  # never a bare NaN token in the store


class Transaction:
    """``with store._tx():`` one write transaction, taken at once (BEGIN IMMEDIATE), rolled back
    when the block raises."""

    def __init__(self, conn: sqlite3.Connection) -> None:
        self.conn = conn

    def __enter__(self) -> None:
        self.conn.execute("BEGIN IMMEDIATE")

    def __exit__(self, exc_type: object, *rest: object) -> None:
        self.conn.execute("ROLLBACK" if exc_type else "COMMIT")


class StoreBase:
    """What every part of the Store holds (the Store sets them when it opens the file)."""

    path: str
    conn: StoreConnection
    texts: TextStore
    owner: str

    def _tx(self) -> Transaction:
        return Transaction(self.conn)
