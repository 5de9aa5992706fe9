"""The background evaluation: sampled requests judged in micro-batches, each batch one run in the
store through :func:`ragsight.run.aevaluate` (the judge cache, the paced money limit, any judge,
the Ray backend), its scores copied beside the requests for the windows.

A batch is written (its requests marked ``batched`` with its run id) before its first judge call,
so a process killed mid-batch finds it at the next start and resumes its run (finished samples
are not judged again; finished judge steps come from the cache). The day's budget
(``max_cost_per_day``, US dollars, per UTC day) is what each batch may still spend: a batch
stopped by it leaves its unjudged requests ``not_evaluated`` with that reason, and so are the
requests still queued that day.
"""

from __future__ import annotations

import asyncio
import json
import logging
import os
import threading
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

from ..errors import BudgetExceededError, ConfigError, RagsightError
from ..judge import JudgeSpec
from ..run import RunOptions, aevaluate
from ..store import Store
from . import _ledger

__all__ = ["EvalSettings", "Evaluator"]

log = logging.getLogger("ragsight.monitor")


@dataclass(frozen=True)
class EvalSettings:
    """How the sampled requests are judged."""

    metrics: str | Sequence[str] | None = None  # names or groups, comma-separated or a list
    judge: Any = None                      # a name, a JudgeSpec, a provider or a Judge
    embedder: Any = None
    max_cost_per_day: float | None = None  # US dollars per UTC day
    batch_size: int = 16
    poll_s: float = 1.0
    backend: str = "local"
    ray_address: str | None = None
    concurrency: int | None = None
    retry_s: float = 30.0                   # wait after a batch failed as a whole (judge down)


class Evaluator:
    """Judges the queued requests of a store, batch after batch, in a thread of its own
    (:meth:`start`) until :meth:`stop`."""

    def __init__(self, store_path: str, settings: EvalSettings, *,
                 clock: Callable[[], float] = time.time, on_batch: Callable[[], None] | None = None) -> None:
        self.path = store_path
        self.s = settings
        self.clock = clock
        self.on_batch = on_batch
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None
        self._loop: asyncio.AbstractEventLoop | None = None
        self._task: asyncio.Task[Any] | None = None
        self.batches = 0
        self.last_error = ""

    # ---- the thread --------------------------------------------------------------------------

    def start(self) -> None:
        self._thread = threading.Thread(target=self._main, name="ragsight-monitor-evaluate", daemon=True)
        self._thread.start()

    def stop(self, timeout: float = 60.0) -> None:
        """Stop: a batch in flight is cancelled (its finished samples are saved, its run marked
        interrupted; the next start resumes it)."""
        self._stop.set()
        loop, task = self._loop, self._task
        if loop is not None and task is not None:
            loop.call_soon_threadsafe(task.cancel)
        if self._thread is not None:
            self._thread.join(timeout)

    def _main(self) -> None:
        loop = asyncio.new_event_loop()
        self._loop = loop
        try:
            with Store(self.path) as st:
                while not self._stop.is_set():
                    try:
                        worked = self._step(loop, st)
                    except Exception as exc:  # the monitor keeps receiving; said once per kind
                        text = f"{type(exc).__name__}: {exc}"
                        if text != self.last_error:
                            log.error("ragsight monitor: evaluation failed (%s); retrying in %g s", text,
                                      self.s.retry_s)
                        self.last_error = text
                        self._stop.wait(self.s.retry_s)
                        continue
                    if not worked:
                        self._stop.wait(self.s.poll_s)
        finally:
            loop.close()

    def _run(self, loop: asyncio.AbstractEventLoop, coro: Any) -> Any:
        task = loop.create_task(coro)
        self._task = task
        try:
            return loop.run_until_complete(task)
        finally:
            self._task = None

    # ---- one step ----------------------------------------------------------------------------

    def _step(self, loop: asyncio.AbstractEventLoop, st: Store) -> bool:
        """Resume a batch left running, else start one; False when there was nothing to do."""
        conn = st.conn
        left = _ledger.running_batch(conn)
        if left is not None:
            self._evaluate(loop, st, *left)
            return True
        now = self.clock()
        day = _ledger.utc_day(now)
        remaining = self._remaining(conn, day)
        if remaining is not None and remaining <= 0:
            self._out_of_budget(conn, day, now)
            return False
        rows = conn.execute("SELECT trace_id FROM monitor_requests WHERE state='queued'"
                            " ORDER BY started_at, trace_id LIMIT ?", (self.s.batch_size,)).fetchall()
        if not rows:
            return False
        batch_id = time.strftime("%Y%m%d-%H%M%S", time.gmtime(now)) + "-" + os.urandom(3).hex()
        run_id = f"monitor-{batch_id}"
        _ledger.open_batch(conn, batch_id, run_id, day, now, [str(r[0]) for r in rows])
        self._evaluate(loop, st, batch_id, run_id, day)
        return True

    def _remaining(self, conn: Any, day: str) -> float | None:
        if self.s.max_cost_per_day is None:
            return None
        return self.s.max_cost_per_day - _ledger.spent_on(conn, day)

    def _out_of_budget(self, conn: Any, day: str, now: float) -> None:
        reason = f"the day's budget (${self.s.max_cost_per_day:g}, UTC {day}) was spent"
        conn.execute("UPDATE monitor_requests SET state='not_evaluated', reason=?, done_at=? WHERE state='queued'",
                     (reason, now))

    def _evaluate(self, loop: asyncio.AbstractEventLoop, st: Store, batch_id: str, run_id: str, day: str) -> None:
        conn = st.conn
        exists = conn.execute("SELECT 1 FROM runs WHERE id=?", (run_id,)).fetchone() is not None
        remaining = self._remaining(conn, day)
        options = RunOptions(show_progress=False, backend=self.s.backend, ray_address=self.s.ray_address,
                             concurrency=self.s.concurrency,
                             max_cost=remaining if remaining is not None and remaining > 0 else None)
        judge = self.s.judge if isinstance(self.s.judge, JudgeSpec) else JudgeSpec.of(self.s.judge)
        stop_reason = ""
        try:
            if exists:
                result = self._run(loop, aevaluate(None, judge=judge, embedder=self.s.embedder, store=st,
                                                   resume=run_id, options=options))
            else:
                rows = [json.loads(r[0]) for r in conn.execute(
                    "SELECT sample FROM monitor_requests WHERE batch_id=? ORDER BY started_at, trace_id",
                    (batch_id,))]
                if not rows:  # nothing left in it (a restart after it was closed)
                    self._close(conn, batch_id, run_id, day, 0.0, "")
                    return
                metrics = self.s.metrics if isinstance(self.s.metrics, str) or not self.s.metrics \
                    else list(self.s.metrics)
                result = self._run(loop, aevaluate(rows, metrics, judge=judge, embedder=self.s.embedder, store=st,
                                                   run_id=run_id, options=options,
                                                   metadata={"source": "ragsight monitor", "batch": batch_id}))
            del result
        except BudgetExceededError:
            stop_reason = f"the day's budget (${self.s.max_cost_per_day:g}, UTC {day}) was spent"
        except asyncio.CancelledError:
            return  # stopping: the batch stays running, and the next start resumes it
        except ConfigError:
            exists_now = conn.execute("SELECT 1 FROM runs WHERE id=?", (run_id,)).fetchone() is not None
            if not exists_now:  # a preflight failed: nothing written; the requests wait again
                self._undo(conn, batch_id)
            raise
        except RagsightError:
            raise
        self._close(conn, batch_id, run_id, day, _run_cost(st, run_id), stop_reason)
        self.batches += 1
        self.last_error = ""
        if self.on_batch is not None:
            self.on_batch()

    def _undo(self, conn: Any, batch_id: str) -> None:
        conn.execute("BEGIN IMMEDIATE")
        try:
            conn.execute("UPDATE monitor_requests SET state='queued', batch_id=NULL, run_id=NULL WHERE batch_id=?",
                         (batch_id,))
            _ledger.drop_batch(conn, batch_id)
            conn.execute("COMMIT")
        except BaseException:
            conn.execute("ROLLBACK")
            raise

    def _close(self, conn: Any, batch_id: str, run_id: str, day: str, spent: float, stop_reason: str) -> None:
        """The batch's scores beside its requests, each request evaluated or not (with why), the
        batch done with its cost: one transaction."""
        now = self.clock()
        finished = {str(r[0]) for r in conn.execute(
            "SELECT sample_id FROM samples WHERE run_id=? AND finished=1", (run_id,))}
        scores = conn.execute("SELECT s.sample_id, s.metric, s.outcome, s.value FROM scores s WHERE s.run_id=?",
                              (run_id,)).fetchall()
        started = {str(t): float(s) for t, s in conn.execute(
            "SELECT trace_id, started_at FROM monitor_requests WHERE batch_id=?", (batch_id,))}
        reason = stop_reason or "the run ended without judging it (see ragsight show RUN)"
        conn.execute("BEGIN IMMEDIATE")
        try:
            conn.executemany(
                "INSERT OR REPLACE INTO monitor_scores (trace_id, metric, outcome, value, started_at) VALUES (?,?,?,?,?)",
                [(str(t), str(m), str(o), v, started.get(str(t), now)) for t, m, o, v in scores
                 if str(t) in finished and str(t) in started])
            for trace_id in started:
                if trace_id in finished:
                    conn.execute("UPDATE monitor_requests SET state='evaluated', reason=NULL, done_at=? WHERE"
                                 " trace_id=?", (now, trace_id))
                else:
                    conn.execute("UPDATE monitor_requests SET state='not_evaluated', reason=?, done_at=? WHERE"
                                 " trace_id=?", (reason, now, trace_id))
            _ledger.charge(conn, batch_id, day, spent)
            _ledger.drop_batch(conn, batch_id)
            conn.execute("COMMIT")
        except BaseException:
            conn.execute("ROLLBACK")
            raise


def _run_cost(st: Store, run_id: str) -> float:
    """What a batch's run cost (US dollars, all its attempts: the run's stats add up its resumes);
    0 when its judge has no price (a local judge)."""
    try:
        cost = st.run(run_id).stats.get("cost")
    except RagsightError:
        return 0.0
    usd = cost.get("usd") if isinstance(cost, dict) else None
    return float(usd) if isinstance(usd, (int, float)) else 0.0
