"""Full-text search over a run's questions, responses, contexts and references.

The store keeps texts compressed in packs, so a search cannot scan them quickly. The first search
of a run (or the viewer, ahead of it) reads the run's samples once through the store's API and
writes them into an SQLite FTS5 index in a file of its own beside the store
(``<store>.search-index``; ``:memory:`` keeps it in memory). The index is a cache: deleting the
file costs one rebuild. It records each run's creation time and sample count, and rebuilds a run
whose record no longer matches.

Queries: words, all of which must occur (in any of the four fields), the last one also as a
prefix ("warr" finds "warranty"); ``"a phrase"`` in double quotes matches the words in a row.
Words are matched without case and accents (FTS5's ``unicode61`` tokenizer).
"""

from __future__ import annotations

import re
import sqlite3
import threading
import time
from collections import OrderedDict
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path

from ..errors import ConfigError
from ..store import Store

__all__ = ["RunKey", "SearchIndex", "fts_query", "index_path_for"]

_SCHEMA = (
    # a run's documents have the rowids first .. first + samples - 1, in the run's sample order
    "CREATE TABLE IF NOT EXISTS indexed (run_id TEXT PRIMARY KEY, created_at REAL NOT NULL,"
    " samples INTEGER NOT NULL, first INTEGER NOT NULL, built_s REAL NOT NULL)",
    "CREATE VIRTUAL TABLE IF NOT EXISTS docs USING fts5(run_id UNINDEXED, sample_id UNINDEXED,"
    " question, response, contexts, reference, tokenize = 'unicode61 remove_diacritics 2')",
)
_TOKEN = re.compile(r'"([^"]*)"|(\w+)', re.UNICODE)
_WORD = re.compile(r"\w+", re.UNICODE)
MAX_TERMS = 16
RECENT_SEARCHES = 64  # results kept: paging through a search asks it again


def index_path_for(store_path: str) -> str:
    """Where a store's search index lives by default: beside it, or in memory for ``:memory:``."""
    return ":memory:" if store_path == ":memory:" else store_path + ".search-index"


def fts_query(text: str) -> str | None:
    """An FTS5 query from what a person typed: every word or quoted phrase must match; the last
    bare word also matches as a prefix. Only words reach FTS5 (each quoted), so no input is an
    FTS5 syntax error. ``None`` when the text holds no word."""
    terms: list[str] = []
    last_bare = False
    for m in _TOKEN.finditer(text):
        phrase, word = m.group(1), m.group(2)
        words = _WORD.findall(phrase) if phrase is not None else [word]
        if not words:
            continue
        terms.append('"' + " ".join(words) + '"')
        last_bare = phrase is None
    if not terms:
        return None
    if len(terms) > MAX_TERMS:
        raise ConfigError(f"a search takes at most {MAX_TERMS} words or phrases")
    if last_bare:
        terms[-1] += "*"
    return " ".join(terms)


@dataclass(frozen=True)
class RunKey:
    """What the index records of a run to know its documents are current."""

    run_id: str
    created_at: float
    samples: int

    @classmethod
    def of(cls, store: Store, run_id: str) -> RunKey:
        return cls(run_id, store.run(run_id).created_at, store.sample_counts(run_id).get(run_id, (0, 0))[0])


class SearchIndex:
    """The FTS5 index of the runs searched so far (one SQLite file, or memory).

    Reads use one connection under a short lock; a build writes through a connection of its own
    (the file is in WAL mode), so pages keep answering from the index, or without it, while a
    run is being indexed. An in-memory index builds on its one connection."""

    def __init__(self, path: str) -> None:
        self.path = path
        if path != ":memory:" and not Path(path).parent.exists():
            raise ConfigError(f"cannot keep the search index at {path}: its folder does not exist")
        self.conn = sqlite3.connect(path, check_same_thread=False, isolation_level=None)
        self.conn.execute("PRAGMA journal_mode = WAL" if path != ":memory:" else "PRAGMA journal_mode = MEMORY")
        self.conn.execute("PRAGMA synchronous = NORMAL")
        for statement in _SCHEMA:
            self.conn.execute(statement)
        self._read = threading.Lock()
        self._build = threading.Lock()
        self._recent: OrderedDict[tuple[RunKey, int, str], list[str]] = OrderedDict()
        self.last_build_s: float | None = None

    def close(self) -> None:
        with self._read:
            self.conn.close()

    def _entry(self, key: RunKey, blocking: bool = True) -> tuple[int, int] | None:
        """(first rowid, samples) of the run's documents when they are current, else None (also
        when ``blocking`` is off and a reader holds the connection)."""
        if not self._read.acquire(blocking=blocking):
            return None
        try:
            row = self.conn.execute("SELECT created_at, samples, first FROM indexed WHERE run_id=?",
                                    (key.run_id,)).fetchone()
        finally:
            self._read.release()
        if row is None or row[0] != key.created_at or row[1] != key.samples:
            return None
        return int(row[2]), int(row[1])

    def ready(self, key: RunKey) -> bool:
        return self._entry(key) is not None

    def ensure(self, store: Store, key: RunKey) -> float:
        """Index the run if it is not (or no longer) indexed, reading its samples from ``store``;
        the seconds it took (0 if it was current)."""
        with self._build:
            if self._entry(key) is not None:
                return 0.0
            t0 = time.perf_counter()
            samples = store.samples(key.run_id)
            memory = self.path == ":memory:"
            conn = self.conn if memory else sqlite3.connect(self.path, isolation_level=None)
            if memory:
                self._read.acquire()
            try:
                conn.execute("PRAGMA busy_timeout = 30000")
                conn.execute("BEGIN IMMEDIATE")
                try:
                    old = conn.execute("SELECT first, samples FROM indexed WHERE run_id=?", (key.run_id,)).fetchone()
                    if old is not None:
                        conn.execute("DELETE FROM docs WHERE rowid BETWEEN ? AND ?", (old[0], old[0] + old[1] - 1))
                    first = int(conn.execute("SELECT COALESCE(MAX(rowid), 0) + 1 FROM docs").fetchone()[0])
                    conn.executemany(
                        "INSERT INTO docs (rowid, run_id, sample_id, question, response, contexts, reference)"
                        " VALUES (?,?,?,?,?,?,?)",
                        [(first + i, key.run_id, s.id, s.question or "", s.response or "",
                          "\n\n".join(s.contexts or ()), "\n".join(s.references)) for i, s in enumerate(samples)])
                    took = time.perf_counter() - t0
                    conn.execute("INSERT OR REPLACE INTO indexed (run_id, created_at, samples, first, built_s)"
                                 " VALUES (?,?,?,?,?)", (key.run_id, key.created_at, len(samples), first, took))
                    conn.execute("COMMIT")
                except BaseException:
                    conn.execute("ROLLBACK")
                    raise
            finally:
                if memory:
                    self._read.release()
                else:
                    conn.close()
            self.last_build_s = took
            return took

    def search(self, key: RunKey, text: str) -> list[str] | None:
        """The ids of the run's samples matching ``text``, in the run's order (the page sorts
        them as it is asked); ``None`` when the text holds no word to search for. The run must be
        indexed (:meth:`ensure`). The last searches are kept."""
        query = fts_query(text)
        if query is None:
            return None
        entry = self._entry(key)
        if entry is None:
            raise ConfigError(f"run {key.run_id} is not indexed for search yet")
        first, n = entry
        memo = (key, first, query)
        with self._read:
            hit = self._recent.get(memo)
            if hit is not None:
                self._recent.move_to_end(memo)
                return list(hit)
            rows = self.conn.execute(
                "SELECT sample_id FROM docs WHERE docs MATCH ? AND rowid BETWEEN ? AND ? ORDER BY rowid",
                (query, first, first + n - 1)).fetchall()
            found = [r[0] for r in rows]
            self._recent[memo] = found
            if len(self._recent) > RECENT_SEARCHES:
                self._recent.popitem(last=False)
        return list(found)

    def questions(self, key: RunKey, positions: Iterable[int]) -> dict[int, str] | None:
        """The questions of the run's samples at these positions (data order), read from the
        index; ``None`` when the run is not indexed (yet), or the index is busy."""
        entry = self._entry(key, blocking=False)
        if entry is None:
            return None
        first, n = entry
        wanted = [first + p for p in positions if 0 <= p < n]
        out: dict[int, str] = {}
        if not self._read.acquire(blocking=False):
            return None
        try:
            for i in range(0, len(wanted), 500):
                chunk = wanted[i:i + 500]
                out.update((int(r) - first, q) for r, q in self.conn.execute(
                    f"SELECT rowid, question FROM docs WHERE rowid IN ({','.join('?' * len(chunk))})", chunk))
        finally:
            self._read.release()
        return out
