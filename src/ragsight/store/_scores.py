"""A run's samples, scores and judge calls: a finished sample saved in one transaction, and
read back whole, light (no text decoded) or streamed (a batch at a time).
"""

from __future__ import annotations

import json
import time
from collections.abc import Iterable, Iterator, Sequence
from typing import Any

from .._score import Evidence, Outcome, Score
from ..dataset import RowProblem, Sample, strict_json
from ..errors import StoreError
from ..judge import JudgeCall
from ._compact import INSERT_CALL, RAW_OUTPUT, call_row, call_texts, read_calls, step_key_db
from ._connection import StoreBase
from ._history import HistoryReader
from ._locks import show_owner

__all__ = ["ScoresMixin"]

_SCORES = ("SELECT s.sample_id, s.metric, s.outcome, s.value, s.reason, s.evidence FROM scores s"
           " JOIN samples p ON p.run_id = s.run_id AND p.sample_id = s.sample_id")
_READ_BATCH = 256  # samples decoded at a time by the streamed reads


class ScoresMixin(StoreBase):
    """The Store's samples, scores and judge calls."""

    def samples(self, run_id: str) -> list[Sample]:
        read = HistoryReader(self.texts)
        return [read.sample(data) for (data,) in self.conn.execute(
            "SELECT data FROM samples WHERE run_id=? ORDER BY idx", (run_id,)).fetchall()]

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
        return HistoryReader(self.texts).sample(row[0])

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
                    f"run {run_id} was taken over by another process ({show_owner(row[0])}) while this "
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
        read = HistoryReader(self.texts)
        while rows := cur.fetchmany(batch):
            for (data,) in rows:
                yield read.sample(data)

    def sample_ids(self, run_id: str) -> list[str]:
        """The ids of the run's samples in data order (no field decoded)."""
        return [str(r[0]) for r in self.conn.execute(
            "SELECT sample_id FROM samples WHERE run_id=? ORDER BY idx", (run_id,))]

    def samples_by_id(self, run_id: str, sample_ids: Sequence[str]) -> list[Sample]:
        """The run's samples of these ids, in the order given (each read by its key)."""
        found: dict[str, Sample] = {}
        read = HistoryReader(self.texts)
        for i in range(0, len(sample_ids), 500):
            chunk = list(sample_ids[i:i + 500])
            for sid, data in self.conn.execute(
                    f"SELECT sample_id, data FROM samples WHERE run_id=? AND sample_id IN ({','.join('?' * len(chunk))})",
                    [run_id, *chunk]):
                found[str(sid)] = read.sample(data)
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
