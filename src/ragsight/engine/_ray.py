"""The Ray backend: the engine's samples spread over the worker processes of a Ray cluster.

The driver splits the samples into batches of whole samples and hands them to a pool of worker
actors. Each worker builds its own judge and embedder from their specs (a live model or HTTP
client never crosses a process boundary), runs the normal per-sample engine
(:func:`~ragsight.engine.score_sample`) on its batch, and returns the scores and the judge calls
of every sample. The driver alone writes the SQLite store, one sample per transaction, as the
batches come back, so resume, evidence and reports work exactly as with the in-process engine.

Shared across the cluster:

* a rate-limiting actor holds the remote judge's concurrency limit for the cluster as a whole:
  each worker wraps its provider in a proxy that takes a permit before every provider call and
  gives it back after, saying how the call went, so the limit adapts (``ragsight._limiter``) to
  what the judge deployment accepts from all the workers together. The embedded judge (one model in each worker process) is not limited
  across workers, and a sample's calls stay on one worker so the model reuses prompt prefixes.
* a cache actor serves the judge-call cache: it reads through to the driver's SQLite store
  (it is placed on the driver's node) and keeps the entries written during the run in memory
  until the driver has written them to the store, so a finished call is never paid twice, on
  one node or on two.

A worker killed mid-batch loses nothing: its batches go back into the queue and run again on
whichever worker is free (Ray restarts the dead actor); the steps it had finished are cache
hits the second time. The driver keeps the first result of each sample and drops any later one.
"""

from __future__ import annotations

import asyncio
import math
import os
import time
import uuid
from collections import deque
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from .._score import Score
from ..analyses import AnalysisSettings
from ..calls import LimiterStats, call_priority
from ..dataset import Sample
from ..errors import ConfigError, MissingExtraError, RagsightError
from ..judge import (
    Judge,
    JudgeCall,
    JudgeProvider,
    JudgeStats,
    MemoryCallCache,
    RetryPolicy,
    record_calls,
)
from ..metrics import Metric
from ..store import SQLiteCallCache, Store
from ._engine import Progress, SampleOutcome, score_sample, settings_for
from ._ray_actors import CacheServer, LimitedProvider, Limiter, SharedCache, attempt_id

__all__ = ["WorkerLostError", "import_ray", "run_samples_ray"]


# Batches in flight per worker: the next batch starts while the last samples of the previous
# one finish, so a worker never idles at the tail of a batch.
_BATCHES_PER_WORKER = 2
_HEARTBEAT_S = 20.0
# a worker whose call failed rests before it gets another batch: 0.5 s, doubling to 8 s (while
# Ray restarts an actor, calls to it fail at once with ActorUnavailableError)
_REST_S = (0.5, 8.0)
# a batch may meet a temporarily unavailable worker this many times per allowed death
_UNAVAILABLE_PER_ATTEMPT = 5



class WorkerLostError(RagsightError):
    """A batch of samples lost its worker more often than allowed (a sample that crashes the
    worker process every time, or a cluster that keeps losing nodes)."""


def import_ray() -> Any:
    """The ``ray`` module, or MissingExtraError naming the extra to install."""
    # No telemetry: a Ray instance started by ragsight does not report usage.
    os.environ.setdefault("RAY_USAGE_STATS_ENABLED", "0")
    try:
        import ray
    except ImportError as exc:
        raise MissingExtraError("the Ray backend", "ray", "ray") from exc
    return ray


# ---- the worker -----------------------------------------------------------------------------


@dataclass(frozen=True)
class _JudgeRecipe:
    """How a worker builds its judge: a spec (``"openai:MODEL"``, ``"local..."``, a picklable
    provider, or a picklable callable returning a provider or Judge) and the driver's settings."""

    spec: Any
    base_url: str | None
    policy: RetryPolicy
    seed: int
    temperature: float


@dataclass(frozen=True)
class _SampleResult:
    sample_id: str
    scores: tuple[Score, ...]
    calls: tuple[JudgeCall, ...]
    node: str | None = None


@dataclass(frozen=True)
class _BatchResult:
    samples: tuple[_SampleResult, ...]
    stats: dict[str, Any]  # the judge stats of this worker since its last result


class _Escaped(Exception):
    """Carries a BaseException raised in a worker (e.g. the scripted judge's
    UnexpectedPromptError) back to the driver, which raises the original."""

    def __init__(self, exc: BaseException) -> None:
        super().__init__(f"{type(exc).__name__}: {exc}")
        self.exc = exc


class _BatchWorker:
    """One worker process (a Ray actor): one judge and one embedder for its lifetime."""

    def __init__(
        self, metrics: Sequence[Metric], settings: AnalysisSettings, recipe: _JudgeRecipe | None,
        embedder_spec: Any, embedder_base_url: str | None, need_embedder: bool, concurrency: int,
        limiter: str | None, cache: str | None,
    ) -> None:
        # The shared actors are found by name (a restarted worker finds them again; handles as
        # constructor arguments would live in the object store).
        import ray

        self.metrics = list(metrics)
        self.settings = settings_for(self.metrics, settings)
        self.recipe = recipe
        self.embedder_spec = embedder_spec
        self.embedder_base_url = embedder_base_url
        self.need_embedder = need_embedder
        self.concurrency = max(1, concurrency)
        self.limiter = ray.get_actor(limiter) if limiter else None
        self.cache = ray.get_actor(cache) if cache else None
        self.node = ray.get_runtime_context().get_node_id()
        self.judge: Judge | None = None
        self.embedder: Any = None
        self._ready = False
        self._sem: asyncio.Semaphore | None = None

    def _setup(self) -> None:
        from ..embed import make_embedder
        from ..judge import make_judge

        if self.recipe is not None:
            r = self.recipe
            spec = r.spec
            if callable(spec) and not isinstance(spec, (JudgeProvider, Judge)):
                spec = spec()
            provider = make_judge(spec, base_url=r.base_url, policy=r.policy).provider
            if self.limiter is not None:
                provider = LimitedProvider(provider, self.limiter)
            # With the cluster's limiter the worker's own limit is fixed at the provider's
            # ceiling: one limit adapts, for the whole cluster.
            self.judge = Judge(
                provider, cache=SharedCache(self.cache) if self.cache is not None else None,
                policy=r.policy, seed=r.seed, temperature=r.temperature,
                adaptive=self.limiter is None,
            )
        if self.need_embedder:
            self.embedder = make_embedder(self.embedder_spec, base_url=self.embedder_base_url)
        self._sem = asyncio.Semaphore(self.concurrency)
        self._ready = True

    async def run_batch(self, attempt: str, samples: Sequence[Sample], first: int = 0) -> _BatchResult:
        if not self._ready:
            self._setup()
        assert self._sem is not None
        sem = self._sem
        attempt_token = attempt_id.set(attempt)

        async def one(position: int, sample: Sample) -> _SampleResult:
            async with sem:
                calls: list[JudgeCall] = []
                # the cluster's limiter serves earlier samples' calls first, as in one process
                with record_calls(calls.append), call_priority(position):
                    scores = await score_sample(sample, self.metrics, self.judge, self.embedder,
                                                self.settings)
                return _SampleResult(sample.id, scores, tuple(calls), self.node)

        try:
            done = await asyncio.gather(*(one(first + i, s) for i, s in enumerate(samples)))
            if self.judge is not None and isinstance(self.judge.cache, SharedCache):
                await self.judge.cache.flush()
        except (Exception, asyncio.CancelledError, KeyboardInterrupt, SystemExit):
            raise
        except BaseException as exc:
            raise _Escaped(exc) from exc
        finally:
            attempt_id.reset(attempt_token)
        stats: dict[str, Any] = {}
        if self.judge is not None:
            stats = self.judge.stats.to_dict()
            self.judge.stats = JudgeStats()
        return _BatchResult(tuple(done), stats)

    async def close(self) -> None:
        if self.judge is not None:
            await self.judge.aclose()
        if self.embedder is not None:
            await self.embedder.aclose()


# ---- the driver -----------------------------------------------------------------------------


def _is_embedded(spec: Any) -> bool:
    if spec is None:
        return True
    return isinstance(spec, str) and spec.strip().partition(":")[0] == "local"


def _merge_stats(stats: JudgeStats, d: Mapping[str, Any]) -> None:
    for name in ("steps", "calls", "cache_hits", "retries", "reasks", "failed_steps",
                 "prompt_tokens", "completion_tokens"):
        setattr(stats, name, getattr(stats, name) + int(d.get(name, 0)))
    stats.latency_s += float(d.get("latency_s", 0.0))
    for k, v in (d.get("by_prompt") or {}).items():
        stats.by_prompt[k] = stats.by_prompt.get(k, 0) + int(v)


def default_batch_size(n: int, workers: int, concurrency: int) -> int:
    """About four batches per worker (balance, and little work lost with a worker), each at most
    four times the samples a worker runs at once."""
    return max(1, min(4 * max(1, concurrency), math.ceil(n / (4 * max(1, workers)))))


async def run_samples_ray(
    samples: Sequence[Sample],
    metrics: Sequence[Metric],
    *,
    judge: Judge | None,
    judge_spec: Any = None,
    base_url: str | None = None,
    embedder_spec: Any = None,
    embedder_base_url: str | None = None,
    need_embedder: bool | None = None,
    settings: AnalysisSettings,
    store: Store | None,
    run_id: str,
    concurrency: int,
    ray_address: str | None = None,
    progress: Progress | None = None,
    on_sample: Callable[[SampleOutcome], None] | None = None,
    workers: int | None = None,
    batch_size: int | None = None,
    judge_limit: int | None = None,
    worker_cpus: float = 1.0,
    max_attempts: int = 3,
    limiter_stats: dict[str, int] | None = None,
) -> dict[str, tuple[Score, ...]]:
    """Evaluate ``samples`` on a Ray cluster; same contract as :func:`run_samples`.

    ``judge`` is the driver's Judge (None when no metric needs one): its cache is served to the
    workers, its retry policy, seed and temperature are theirs, its stats receive the workers'
    counts, and its ceiling of calls in flight (``Judge.max_concurrency``) is the cluster-wide
    ceiling (``judge_limit`` overrides it), below which the limit adapts as in one process
    unless the Judge was made with ``adaptive=False``. ``judge_spec`` is what each worker builds its own judge from:
    what ``make_judge`` accepts (``"openai:MODEL"``, ``"local..."``, None for the embedded
    judge, a picklable provider) or a picklable callable returning one; a Judge is replaced by
    its provider. API keys reach the workers through their environment, never through here.
    ``embedder_spec`` likewise (what ``make_embedder`` accepts); ``need_embedder`` defaults to
    whether a metric needs one. ``concurrency`` is samples in flight per worker.

    ``ray_address``: None connects as ``ray.init()`` does ($RAY_ADDRESS, a cluster started with
    ``ray start`` on this machine, else a new local instance); ``"auto"`` or ``"HOST:PORT"`` name
    a cluster this machine is a node of; ``"local"`` always starts a new one. Ray Client
    (``ray://``) is refused: the driver writes the store and must run on a node. When Ray is
    already initialised in this process it is used as is.
    ``workers``: worker actors (default: the cluster's CPUs / ``worker_cpus``).
    ``max_attempts``: runs of a batch whose worker died before :class:`WorkerLostError`.
    ``limiter_stats``, when given, receives the rate limiter's figures (limit, peak, the
    ``LimiterStats`` fields); the driver Judge's stats record them too.
    """
    if ray_address is not None and ray_address.startswith("ray://"):
        raise ConfigError(
            "the Ray backend does not run through Ray Client (ray://): the driver writes the run "
            "store and must run on a node of the cluster. Run ragsight on the head node with "
            "--ray-address auto."
        )
    ray = import_ray()
    from ray.util.scheduling_strategies import NodeAffinitySchedulingStrategy

    results: dict[str, tuple[Score, ...]] = {}
    if not samples:
        return results
    started_ray = False
    if not ray.is_initialized():
        import logging

        kwargs: dict[str, Any] = {"logging_level": logging.WARNING}
        if ray_address in (None, "local"):
            kwargs["include_dashboard"] = False
        ray.init(address=ray_address, **kwargs)
        started_ray = True
    if need_embedder is None:
        need_embedder = any(m.needs_embedder for m in metrics)
    settings = settings_for(metrics, settings)

    spec = judge_spec.provider if isinstance(judge_spec, Judge) else judge_spec
    tag = uuid.uuid4().hex[:12]
    limiter_name = cache_name = None
    recipe = None
    limiter = cache_server = None
    actors: list[Any] = []
    try:
        if judge is not None:
            recipe = _JudgeRecipe(spec, base_url, judge.policy, judge.seed, judge.temperature)
            here = ray.get_runtime_context().get_node_id()
            if not _is_embedded(spec):
                limit = judge_limit or judge.max_concurrency
                limiter_name = f"ragsight-limiter-{tag}"
                # on the driver's node, as the cache: a lost worker node must not take it along
                limiter = ray.remote(Limiter).options(
                    name=limiter_name, max_concurrency=100_000, num_cpus=0,
                    scheduling_strategy=NodeAffinitySchedulingStrategy(here, soft=False),
                ).remote(limit, judge.adaptive, judge.limiter.retry_after_cap_s)
            if judge.cache is not None:
                path = None
                seed: dict[str, dict[str, Any]] | None = None
                if isinstance(judge.cache, SQLiteCallCache) and judge.cache.store.path != ":memory:":
                    path = os.path.abspath(judge.cache.store.path)
                elif isinstance(judge.cache, MemoryCallCache):
                    seed = dict(judge.cache._d)
                cache_name = f"ragsight-cache-{tag}"
                cache_server = ray.remote(CacheServer).options(
                    name=cache_name, num_cpus=0,
                    scheduling_strategy=NodeAffinitySchedulingStrategy(here, soft=False),
                ).remote(path, seed)
        n_workers = workers or max(1, int(ray.cluster_resources().get("CPU", 1) // max(worker_cpus, 1e-3)))
        size = batch_size or default_batch_size(len(samples), n_workers, concurrency)
        batches = [list(samples[i:i + size]) for i in range(0, len(samples), size)]
        n_workers = max(1, min(n_workers, len(batches)))
        # SPREAD: the workers over as many nodes as the cluster has (one node's loss costs
        # the fewest workers); a worker restarted after its node is lost goes where there is room
        worker_cls = ray.remote(_BatchWorker).options(
            num_cpus=worker_cpus, max_restarts=max_attempts, max_concurrency=_BATCHES_PER_WORKER + 1,
            scheduling_strategy="SPREAD",
        )
        actors = [
            worker_cls.remote(list(metrics), settings, recipe, embedder_spec, embedder_base_url,
                              need_embedder, concurrency, limiter_name, cache_name)
            for _ in range(n_workers)
        ]
        await _drive(ray, actors, batches, judge, limiter, cache_server, store, run_id, results,
                     progress, on_sample, max_attempts)
        if limiter is not None and judge is not None:
            figures = await limiter.stats.remote()
            if limiter_stats is not None:
                limiter_stats.update(figures)
            # the run records the cluster's limit, not the driver's unused one
            judge.stats.limiter = LimiterStats(**{k: v for k, v in figures.items()
                                                  if k in LimiterStats.__dataclass_fields__})
    finally:
        closing = [asyncio.wrap_future(a.close.remote().future()) for a in actors]
        if closing:
            await asyncio.wait(closing, timeout=10)
            for f in closing:
                if f.done() and not f.cancelled():
                    f.exception()  # a worker that is gone cannot close: nothing to do
                else:
                    f.cancel()
        for a in (*actors, limiter, cache_server):
            if a is not None:
                ray.kill(a, no_restart=True)
        if started_ray:
            ray.shutdown()
    return results


async def _drive(
    ray: Any, actors: list[Any], batches: list[list[Sample]], judge: Judge | None, limiter: Any,
    cache_server: Any, store: Store | None, run_id: str, results: dict[str, tuple[Score, ...]],
    progress: Progress | None, on_sample: Callable[[SampleOutcome], None] | None, max_attempts: int,
) -> None:
    """Hand out batches, save results as they come back, re-queue the batches of dead workers.

    A worker whose call failed rests (0.5 s, doubling to 8 s) before it gets another batch, and
    its batch goes to another worker when one is free: a worker that Ray is restarting answers
    every call at once with ActorUnavailableError, and re-sending the batch to it straight away
    used up the batch's attempts in milliseconds. A temporarily unavailable worker is not a death:
    it counts against neither the worker nor the batch's ``max_attempts`` (up to
    ``_UNAVAILABLE_PER_ATTEMPT`` times as many meetings)."""
    from ray.exceptions import ActorDiedError, ActorUnavailableError, ObjectLostError, RayActorError

    lost = (RayActorError, ActorDiedError, ActorUnavailableError, ObjectLostError)
    queue: deque[int] = deque(range(len(batches)))
    starts = [sum(len(x) for x in batches[:i]) for i in range(len(batches))]
    attempts = [0] * len(batches)
    unavailable = [0] * len(batches)
    deaths = [0] * len(actors)
    failures_in_a_row = [0] * len(actors)
    rest_until = [0.0] * len(actors)
    load = [0] * len(actors)
    inflight: dict[asyncio.Future[Any], tuple[int, int, str]] = {}  # -> (worker, batch, attempt)
    last_beat = time.monotonic()

    def usable(w: int) -> bool:
        return deaths[w] <= max_attempts

    def submit() -> None:
        now = time.monotonic()
        while queue:
            live = [w for w in range(len(actors))
                    if usable(w) and load[w] < _BATCHES_PER_WORKER and rest_until[w] <= now]
            if not live:
                return
            w = min(live, key=lambda i: load[i])
            b = queue.popleft()
            attempts[b] += 1
            attempt = uuid.uuid4().hex
            ref = actors[w].run_batch.remote(attempt, batches[b], starts[b])
            inflight[asyncio.wrap_future(ref.future())] = (w, b, attempt)
            load[w] += 1

    async def save_cache() -> None:
        if cache_server is None or judge is None or judge.cache is None:
            return
        entries = await cache_server.drain.remote()
        for key, entry in entries:
            await judge.cache.put(key, entry)
        if entries:
            cache_server.forget.remote([k for k, _ in entries])

    try:
        while queue or inflight:
            submit()
            now = time.monotonic()
            resting = [rest_until[w] for w in range(len(actors)) if usable(w) and rest_until[w] > now]
            if not inflight and not resting:
                raise WorkerLostError(
                    f"every Ray worker died more than {max_attempts} times; {len(queue)} batch(es) left. "
                    "The finished samples are saved: fix the cluster and resume the run."
                )
            wake = max(0.0, min(resting) - now) if queue and resting else None
            if not inflight:
                await asyncio.sleep(wake or 0.0)
                continue
            done, _ = await asyncio.wait(inflight, timeout=wake, return_when=asyncio.FIRST_COMPLETED)
            for fut in done:
                w, b, attempt = inflight.pop(fut)
                load[w] -= 1
                try:
                    res: _BatchResult = fut.result()
                except lost as exc:
                    failures_in_a_row[w] += 1
                    rest = min(_REST_S[1], _REST_S[0] * 2 ** (failures_in_a_row[w] - 1))
                    rest_until[w] = time.monotonic() + rest
                    if limiter is not None:
                        await limiter.release_holders.remote([attempt])
                    transient = isinstance(exc, ActorUnavailableError)
                    if transient and unavailable[b] < _UNAVAILABLE_PER_ATTEMPT * max_attempts:
                        unavailable[b] += 1
                        attempts[b] -= 1  # the worker is restarting or out of reach: not a death
                        queue.appendleft(b)
                        continue
                    deaths[w] += 1
                    if attempts[b] >= max_attempts:
                        ids = ", ".join(s.id for s in batches[b][:5])
                        times = f"{attempts[b]} time{'s' if attempts[b] != 1 else ''}"
                        raise WorkerLostError(
                            f"the batch with samples {ids}{'...' if len(batches[b]) > 5 else ''} lost its "
                            f"worker {times} (last: {type(exc).__name__}). A sample may crash "
                            "the worker; the finished samples are saved: resume the run without it."
                        ) from exc
                    queue.appendleft(b)
                    continue
                except ray.exceptions.RayTaskError as exc:
                    if isinstance(exc.cause, _Escaped):
                        raise exc.cause.exc from None
                    raise exc.as_instanceof_cause() from None
                failures_in_a_row[w] = 0
                if judge is not None:
                    _merge_stats(judge.stats, res.stats)
                await save_cache()
                for r in res.samples:
                    if r.sample_id in results:
                        continue  # a batch that ran twice: the first result stands
                    if store is not None:
                        store.save_sample(run_id, r.sample_id, r.scores, [(r.sample_id, c) for c in r.calls])
                    results[r.sample_id] = r.scores
                    if progress is not None:
                        progress.done += 1
                        for s in r.scores:
                            progress.outcomes[s.outcome.value] += 1
                        if progress.on_update is not None:
                            progress.on_update(progress)
                    if on_sample is not None:
                        on_sample(SampleOutcome(r.sample_id, r.scores, r.node))
                if store is not None and time.monotonic() - last_beat > _HEARTBEAT_S:
                    last_beat = time.monotonic()
                    store.heartbeat(run_id)
        await save_cache()  # entries of attempts that died after putting them
    finally:
        for fut in inflight:
            if fut.done() and not fut.cancelled():
                fut.exception()  # retrieved: the run already failed for another reason
            else:
                fut.cancel()
