"""``ragsight monitor`` as one object: the receiver, the assembler (complete requests to samples,
sampled, queued; the windows and alerts after each batch) and the evaluator, each in a thread of
its own over its own connection to the store. :meth:`Monitor.stop` stops taking requests, lets
the assembler finish its step and cancels the batch in flight (its finished samples are saved;
the next start resumes it): nothing acknowledged is lost, and nothing is judged twice.
"""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

from ..store import Store
from . import _ledger
from ._assemble import assemble_due
from ._baseline import Baseline, save_baseline
from ._evaluator import EvalSettings, Evaluator
from ._otlp import proto
from ._receiver import Limits, Receiver
from ._sinks import AlertSinks
from ._windows import AlertRule, find_alerts, windows

__all__ = ["Monitor", "MonitorConfig"]

log = logging.getLogger("ragsight.monitor")


@dataclass(frozen=True)
class MonitorConfig:
    """Everything ``ragsight monitor`` is given. ``sample``: the share of requests judged (a
    deterministic function of the trace id and ``seed``). ``settle_s``: how long a trace stays
    quiet after its root span before it is read as complete; ``max_open_s``: how long one
    without a root span waits. ``max_queue``: sampled requests waiting for the judge beyond
    which new ones are counted not evaluated. ``min_scored`` and ``alpha``: an alert's minimum
    of scored values in a window and the level of the tests against the previous window and
    against ``baseline`` (a run's scores, :func:`load_baseline`)."""

    store: str
    host: str = "127.0.0.1"
    port: int = 4318
    sample: float = 1.0
    seed: int = 0
    settle_s: float = 5.0
    max_open_s: float = 300.0
    window_s: float = 3600.0
    alerts: Sequence[AlertRule] = ()
    min_scored: int = 10
    alpha: float = 0.01
    baseline: Baseline | None = None
    webhook: str | None = None
    token: str | None = None
    max_queue: int = 10_000
    limits: Limits = field(default_factory=Limits)
    tick_s: float = 0.5
    evaluation: EvalSettings = field(default_factory=EvalSettings)
    evaluate: bool = True  # False: receive and assemble only (the load benchmark's baseline)


class Monitor:
    def __init__(self, config: MonitorConfig, *, clock: Callable[[], float] = time.time,
                 say: Callable[[str], None] | None = None) -> None:
        proto()  # MissingExtraError naming ragsight[monitor] before anything is opened
        self.config = config
        self.clock = clock
        self._intake = Store(config.store)
        self._stop = threading.Event()
        self._scores_changed = threading.Event()
        self._scores_changed.set()  # windows read once at the start (alerts not yet delivered)
        try:
            _ledger.save_settings(self._intake.conn, {
                "sample": config.sample, "seed": config.seed, "window_s": config.window_s,
                "settle_s": config.settle_s, "alerts": [str(r) for r in config.alerts],
                "min_scored": config.min_scored, "alpha": config.alpha,
                "max_cost_per_day": config.evaluation.max_cost_per_day,
                "metrics": _metrics_text(config.evaluation.metrics),
                "judge": _judge_name(config.evaluation.judge), "started_at": clock(),
                "baseline_run": config.baseline.run_id if config.baseline is not None else None})
            save_baseline(self._intake.conn, config.baseline)
            self.receiver = Receiver((config.host, config.port), self._intake.conn, token=config.token,
                                     limits=config.limits, clock=clock)
        except BaseException:
            self._intake.close()
            raise
        self.sinks = AlertSinks(config.webhook, say=say)
        self.evaluator = Evaluator(config.store, config.evaluation, clock=clock,
                                   on_batch=self._scores_changed.set) if config.evaluate else None
        self._assembler: threading.Thread | None = None
        self._started = False
        self.assembled: dict[str, int] = {}

    @property
    def port(self) -> int:
        return self.receiver.port

    def start(self) -> None:
        self._started = True
        self.receiver.start()
        self._assembler = threading.Thread(target=self._assemble_loop, name="ragsight-monitor-assemble", daemon=True)
        self._assembler.start()
        if self.evaluator is not None:
            self.evaluator.start()

    def stop(self) -> None:
        self._stop.set()
        if self._started:
            self.receiver.shutdown()
        self.receiver.server_close()
        if self._assembler is not None:
            self._assembler.join(30)
        if self.evaluator is not None:
            self.evaluator.stop()
        with self.receiver._lock:  # a request being stored finishes first
            self._intake.close()

    def wait(self) -> None:
        """Block until :meth:`stop` is called (from a signal handler or another thread)."""
        while not self._stop.wait(0.5):
            pass

    # ---- the assembler thread ------------------------------------------------------------------

    def _assemble_loop(self) -> None:
        c = self.config
        with Store(c.store) as st:
            while not self._stop.is_set():
                try:
                    while not self._stop.is_set():  # until nothing complete is left
                        counts = assemble_due(st.conn, self.clock(), settle_s=c.settle_s, max_open_s=c.max_open_s,
                                              seed=c.seed, rate=c.sample, max_queue=c.max_queue)
                        for k, n in counts.items():
                            self.assembled[k] = self.assembled.get(k, 0) + n
                        if not counts:
                            break
                    if self._scores_changed.is_set():
                        self._scores_changed.clear()
                        self._alerts(st)
                except Exception as exc:  # said; the receiver keeps storing, the next tick tries again
                    log.error("ragsight monitor: assembling failed (%s: %s)", type(exc).__name__, exc)
                self._stop.wait(c.tick_s)

    def _alerts(self, st: Store) -> None:
        c = self.config
        since = self.clock() - 50 * c.window_s
        ws = windows(st.conn, c.window_s, since=since)
        self.sinks.record(st.conn, find_alerts(ws, c.alerts, min_scored=c.min_scored, alpha=c.alpha,
                                               baseline=c.baseline),
                          now=self.clock())


def _judge_name(judge: Any) -> str | None:
    if judge is None or isinstance(judge, str):
        return judge
    model = getattr(judge, "model", None)
    if isinstance(model, str):
        return model
    return getattr(judge, "name", None) or getattr(model, "name", None) or type(judge).__name__


def _metrics_text(metrics: Any) -> str | None:
    if not metrics:
        return None
    return metrics if isinstance(metrics, str) else ",".join(metrics)
