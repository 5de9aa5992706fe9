"""Runs: a run's row (its settings, status and statistics) with its samples and row problems,
created in one transaction; the run's end; finding a run by id, prefix or 'last'.
"""

from __future__ import annotations

import json
import time
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from ..dataset import RowProblem, Sample
from ..errors import StoreError
from ._connection import dumps
from ._history import HistoryWriter
from ._labels import sample_key
from ._locks import LocksMixin
from ._texts import WrittenPacks, long_strings

__all__ = ["MAX_PREFIX", "RunInfo", "RunsMixin"]

# The longest run reference read as a prefix of an id; a longer one must be a whole id.
MAX_PREFIX = 1000


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


class RunsMixin(LocksMixin):
    """The Store's runs."""

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
                (run_id, now, "running", dataset, judge, embedder, dumps(metrics), dumps(config),
                 dumps(metadata), self.owner, now),
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
        histories = HistoryWriter(samples)  # a conversation's messages stored once, not once per turn
        messages: dict[int, Any] = {}  # ... and written as JSON once for the content keys
        for start in range(0, len(samples), 64):
            w = self.texts.writer()
            group = samples[start:start + 64]
            fields = [histories.fields(s, w) for s in group]
            w.prefetch(t for f in fields for t in long_strings(f))
            self.conn.executemany(
                "INSERT INTO samples (run_id, idx, sample_id, data, conversation_id, turn) VALUES (?,?,?,?,?,?)",
                [(run_id, i, s.id, self.texts.encode_json(f, w), s.conversation_id, s.turn)
                 for i, (s, f) in enumerate(zip(group, fields), start)],
            )
            self.conn.executemany("INSERT OR REPLACE INTO sample_keys (run_id, sample_id, sample_key) VALUES (?,?,?)",
                                  [(run_id, s.id, sample_key(s, memo=messages)) for s in group])
            w.finish()
            done.add(w)
        return [done]

    def finish_run(self, run_id: str, status: str, stats: dict[str, Any]) -> None:
        """Record the run's end, its status and statistics, and release its lock; nothing is
        changed when another process has taken the run over meanwhile."""
        self.stop_heartbeat()
        with self._tx():
            self.conn.execute(
                "UPDATE runs SET status=?, finished_at=?, stats=?, lock_owner=NULL, lock_heartbeat=NULL"
                " WHERE id=? AND (lock_owner IS NULL OR lock_owner=?)",
                (status, time.time(), dumps(stats), run_id, self.owner),
            )

    def resolve_run(self, ref: str) -> str:
        """A run id from an id, a unique id prefix, or 'last'. The prefix is matched as written
        (``%``, ``_`` and ``\\`` are characters of the id, not wildcards); an empty reference, or
        one past :data:`MAX_PREFIX` characters that is no whole id, is no run."""
        if ref == "last":
            row = self.conn.execute("SELECT id FROM runs ORDER BY created_at DESC, rowid DESC LIMIT 1").fetchone()
            if row is None:
                raise StoreError(f"no runs in {self.path} yet; run 'ragsight evaluate' first")
            return str(row[0])
        if ref and len(ref) <= MAX_PREFIX:
            pattern = ref.replace("\\", "\\\\").replace("%", "\\%").replace("_", "\\_") + "%"
            rows = self.conn.execute("SELECT id FROM runs WHERE id = ? OR id LIKE ? ESCAPE '\\'",
                                     (ref, pattern)).fetchall()
        else:
            rows = self.conn.execute("SELECT id FROM runs WHERE id = ?", (ref,)).fetchall()
        exact = [r[0] for r in rows if r[0] == ref]
        if exact:
            return str(exact[0])
        # LIKE is blind to ASCII case: a prefix counts only where it is the id's own beginning
        rows = [r for r in rows if str(r[0]).startswith(ref)]
        if len(rows) == 1:
            return str(rows[0][0])
        shown = ref if len(ref) <= 80 else f"{ref[:80]}... ({len(ref):,} characters)"
        if not rows:
            raise StoreError(f"no run '{shown}' in {self.path}; list runs with 'ragsight runs --store {self.path}'")
        raise StoreError(f"'{shown}' matches {len(rows)} runs; give more of the id")

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
