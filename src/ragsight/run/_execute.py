"""A run once its judge and embedder are built: the judge bound to the run's cache and money
limit, the run's record in the store (opened at once, or, while a new run's preflight goes on, only
when it has passed: :class:`_Gate`, :class:`_HeldCache`), the samples handed to the engine (this
process or a Ray cluster), and the result read back. A resume comes here too, with the samples it
has left."""

from __future__ import annotations

import asyncio
import warnings
from array import array
from collections.abc import Callable, Coroutine, Iterator, Mapping, Sequence
from dataclasses import replace
from typing import Any

from .._version import __version__
from ..analyses import AnalysisSettings
from ..calls import display_url, merge_limiter_stats, price_for
from ..dataset import RowProblem, Sample
from ..engine import Progress, describe_metrics, run_samples, settings_for
from ..errors import BudgetExceededError, JudgeSameAsGeneratorWarning
from ..judge import Judge, MemoryCallCache
from ..metrics import Metric
from ..prompts import load_prompt, prompt_ids
from ..result import LAZY_FROM, EvaluationResult, StoredRun, run_cost
from ..store import SQLiteCallCache, Store
from ._options import Plan
from ._preflight import Parts, check_budget
from ._spend import PacedSpendLimit

__all__ = ["default_concurrency", "execute", "replace_cache"]


class _Pending(Sequence[Sample]):
    """The samples not yet finished, in data order: their positions are kept, not the samples."""

    def __init__(self, samples: Sequence[Sample], done: set[str]) -> None:
        self._samples, self._done = samples, done
        self._at = array("q", (i for i, s in enumerate(samples) if s.id not in done))

    def __len__(self) -> int:
        return len(self._at)

    def __getitem__(self, i: Any) -> Any:
        if isinstance(i, slice):
            return [self._samples[self._at[k]] for k in range(*i.indices(len(self)))]
        return self._samples[self._at[i]]

    def __iter__(self) -> Iterator[Sample]:
        return (s for s in self._samples if s.id not in self._done)


def _check_generator(samples: Sequence[Sample], judge: Judge | None) -> None:
    if judge is None:
        return
    keys = ("generator_model", "generator", "model", "llm")
    for s in samples:
        for k in keys:
            v = s.metadata.get(k)
            if isinstance(v, str) and v and (v == judge.model or judge.model.endswith(v) or v.endswith(judge.model)):
                warnings.warn(
                    f"the judge ({judge.model}) is the model that generated the responses (sample '{s.id}' "
                    f"metadata '{k}'); judges tend to prefer their own answers. Pick another judge with --judge.",
                    JudgeSameAsGeneratorWarning, stacklevel=3,
                )
                return


class _HeldCache:
    """The run's judge cache while its preflight goes on: finished steps are kept in memory
    (and an existing store's cache is read) until :meth:`open`, which writes them to the store
    and hands every later call to it. A failed preflight leaves no cache entry."""

    def __init__(self, store: Store | None) -> None:
        self._readable = store
        self._held: dict[str, dict[str, Any]] = {}
        self._target: SQLiteCallCache | None = None

    async def get(self, key: str) -> dict[str, Any] | None:
        if self._target is not None:
            return await self._target.get(key)
        if key in self._held:
            return self._held[key]
        return self._readable.cache_get(key) if self._readable is not None else None

    async def put(self, key: str, entry: dict[str, Any]) -> None:
        if self._target is not None:
            await self._target.put(key, entry)
        else:
            self._held[key] = entry

    def open(self, store: Store) -> None:
        self._target = SQLiteCallCache(store)
        for key, entry in self._held.items():
            store.cache_put(key, entry)
        self._held.clear()


class _Gate:
    """Holds a new run's writes while its preflight (``ping``, started at once) goes on. When it
    passes, the run is opened in the store (``open_run``) at once; :meth:`wait` returns that
    store, or raises the preflight's error when it failed."""

    def __init__(self, ping: Coroutine[Any, Any, None], open_run: Callable[[], Store]) -> None:
        self.store: Store | None = None

        async def ping_then_open() -> None:
            await ping
            self.store = open_run()

        self._task = asyncio.ensure_future(ping_then_open())

    async def wait(self) -> Store:
        await asyncio.shield(self._task)
        assert self.store is not None
        return self.store

    async def settle(self) -> None:
        """After the run stopped early: wait for the preflight, raising its error when it failed
        (that says more than what stopped the run). Once it passed the run is open, and so is
        recorded with its status."""
        try:
            await asyncio.shield(self._task)
        except asyncio.CancelledError:
            if not self._task.cancelled():
                raise

    async def close(self) -> None:
        if not self._task.done():
            self._task.cancel()
            await asyncio.gather(self._task, return_exceptions=True)


async def execute(
    st: Store | None, run_id: str, samples: Sequence[Sample], problems: Sequence[RowProblem],
    source: str, chosen: Sequence[Metric], plan: Plan, parts: Parts, *,
    settings: AnalysisSettings, metadata: Mapping[str, Any], progress: Progress | None, fresh: bool,
    ping: Coroutine[Any, Any, None] | None = None, new_store: Callable[[], Store] | None = None,
) -> EvaluationResult:
    """Run the samples. With ``ping`` (a new run's preflight, not yet done) the samples start at
    once and the run is opened in the store (made by ``new_store`` when ``st`` is None) only when
    the preflight has passed; until then the judge cache is held in memory."""
    opts = plan.options
    judge_spec, cache, base_url = plan.judge.model, opts.cache, plan.judge.base_url
    backend = opts.backend
    emb = parts.embedder
    judge = None
    held: _HeldCache | None = None
    in_memory = (st is None and new_store is None) or (st is not None and st.path == ":memory:")
    price = price_for(parts.judge.name, parts.judge.model, plan.price_table) if parts.judge is not None else None
    if parts.judge is not None:
        # A fresh wrapper for this run (its cache, stats and memo); a Judge passed in is not changed.
        run_cache: Any = None
        if cache and ping is not None and not in_memory:
            run_cache = held = _HeldCache(st)
        elif cache:
            run_cache = MemoryCallCache() if in_memory or st is None else SQLiteCallCache(st)
        judge = parts.judge.for_run(cache=run_cache, spend_limit=check_budget(parts.judge, plan))
        if isinstance(judge.spend_limit, PacedSpendLimit):
            judge.spend_limit.pace(judge.limiter)  # calls wait for each other near the limit
    gate: _Gate | None = None
    try:
        _check_generator(samples, judge)
        settings = settings_for(chosen, replace_cache(settings, cache))
        conc = opts.concurrency or default_concurrency(judge)
        embedder_spec = parts.embedder_spec
        config = {
            "settings": settings.to_dict(), "concurrency": conc, "cache": cache,
            "judge_concurrency": ({"ceiling": judge.max_concurrency, "initial": judge.limiter.limit,
                                   "adaptive": judge.limiter.adaptive} if judge else None),
            "prompts": {pid: load_prompt(pid).version for pid in prompt_ids()},
            "prompt_hashes": {pid: load_prompt(pid).hash for pid in prompt_ids()},
            "ragsight_version": __version__,
            "judge_model": judge.model if judge else None,
            "judge_spec": judge_spec if isinstance(judge_spec, str) else (judge.name if judge else None),
            # what the cache key holds of the judge: its server, model, model file...
            "judge_identity": judge.identity if judge else None,
            "embedder_spec": embedder_spec if isinstance(embedder_spec, str) else (emb.name if emb else None),
            # user info in a URL may hold a key: only the redacted form is stored
            "base_url": display_url(base_url) if base_url else None,
            "embedder_base_url": display_url(parts.embedder_url)
            if parts.embedder_url and parts.embedder_url != base_url else None,
            "backend": backend,
            "api_version": plan.judge.api_version,
            "price": price.to_dict() if price is not None else None,
        }
        if parts.left_out:  # chosen by a group and refused by the judge: the overall names them
            config["left_out"] = dict(parts.left_out)
        prev: dict[str, Any] = {}

        def stats_now() -> dict[str, Any]:
            current = judge.stats.to_dict() if judge else {}
            # the preflight ping's refusals are the server's refusals too (CI saw "8 refused as
            # overloaded" from a server that had refused 9: the ping goes on beside the samples)
            refused = getattr(parts.judge.provider, "preflight_overloads", 0) if parts.judge else 0
            if isinstance(refused, int) and refused and isinstance(current.get("concurrency"), dict):
                current["concurrency"] = {**current["concurrency"],
                                          "overloads": current["concurrency"].get("overloads", 0) + refused}
            return _merge_stats(prev, current) if prev else current

        def open_run() -> Store:
            nonlocal st, prev
            if st is None:
                assert new_store is not None
                st = new_store()
            if held is not None:
                held.open(st)
            if fresh:
                st.create_run(run_id, dataset=source, judge=judge.name if judge else None,
                              embedder=emb.name if emb else None, metrics=describe_metrics(chosen),
                              config=config, metadata=dict(metadata), samples=samples, problems=problems)
            else:
                st.acquire(run_id)
                # What earlier processes of this run paid; the heartbeat adds this process's spend
                # as it goes (stats_now), so a kill loses at most the last second of it.
                # (its cost and how it stopped are worked out again when this process stops)
                prev = {k: v for k, v in st.run(run_id).stats.items() if k not in ("cost", "stopped_by")}
            if progress is not None:
                progress.run_id = run_id
            st.start_heartbeat(run_id, stats_now)
            return st

        if ping is not None:
            gate = _Gate(ping, open_run)
            ping = None
            done: set[str] = set()
        else:
            open_run()
            assert st is not None
            done = st.finished_samples(run_id)
            if not fresh:  # a resumed run asks its failed samples again (the cache keeps what worked)
                done -= st.failed_samples(run_id)
        # what is left, read from the data when its turn comes (a large file's samples are not held)
        todo: Sequence[Sample] = _Pending(samples, done) if done else samples
        if progress is not None:
            progress.total = len(samples)
            progress.done = len(done)
            progress.judge_stats = judge.stats if judge is not None else None
        status = "interrupted"
        stopped: BudgetExceededError | None = None
        try:
            if backend == "ray":
                from ..engine import run_samples_ray

                await run_samples_ray(
                    todo, chosen, judge=judge, judge_spec=judge_spec, base_url=base_url,
                    embedder_spec=embedder_spec, embedder_base_url=parts.embedder_url,
                    settings=settings, store=st, run_id=run_id, concurrency=conc,
                    ray_address=opts.ray_address, progress=progress,
                )
            else:
                await run_samples(todo, chosen, judge=judge, embedder=emb, settings=settings, store=st,
                                  run_id=run_id, concurrency=conc, progress=progress, keep_results=False,
                                  opened=gate.wait if gate is not None else None)
            if gate is not None:
                await gate.wait()  # a run with no sample to judge still has its preflight pass
            status = "completed"
        except BudgetExceededError as exc:
            stopped = exc  # the finished samples are saved; said below, with how to resume
            if gate is not None and gate.store is None:
                await gate.settle()
        except BaseException as exc:
            # Stopped before its preflight was over: the preflight's own error says more (a bad
            # key refused the first calls too); once it passed, the run is recorded with its
            # status. Ctrl-C writes nothing more.
            if gate is not None and gate.store is None and isinstance(exc, Exception):
                await gate.settle()
            raise
        finally:
            if gate is not None:
                await gate.close()
            if st is not None and (gate is None or gate.store is not None):
                st.stop_heartbeat()
                stats = stats_now()
                if stopped is not None:
                    if judge is not None and judge.spend_limit is not None:
                        # with the calls that ended after the stop; those cut off reported no usage
                        lim = judge.spend_limit
                        stopped.spent, stopped.unreported = lim.spent, lim.unreported
                        stopped.unreported_calls = lim.unreported_calls
                    stats["stopped_by"] = {"max_cost": stopped.limit, "spent": round(stopped.spent, 6),
                                           "unreported": round(stopped.unreported, 6),
                                           "unreported_calls": stopped.unreported_calls}
                if judge is not None:
                    stats["cost"] = run_cost(st, run_id, price, stats)
                st.finish_run(run_id, status, stats)
        assert st is not None
        if stopped is not None:
            stopped.run_id, stopped.total = run_id, len(samples)
            stopped.done = len(st.finished_samples(run_id))
            raise stopped
        if st.path != ":memory:" and len(samples) >= LAZY_FROM:
            # a large run's result reads its samples and scores from the store when asked
            return EvaluationResult.from_store(StoredRun(st.path, run_id), chosen, stats, st.problems(run_id),
                                               status, config)
        scores = st.scores(run_id)
        return EvaluationResult(run_id, samples, chosen, scores, stats, st.problems(run_id),
                                None if st.path == ":memory:" else st.path, status, config)
    finally:
        if ping is not None:  # stopped before the samples started: the preflight never began
            ping.close()
        if judge is not None:
            await judge.aclose()
        await parts.aclose()


def default_concurrency(judge: Judge | None) -> int:
    """Samples in flight by default: one for a judge that scores choices in this process (the
    embedded model); for a remote judge enough to fill its ceiling of calls in flight (a sample
    has two to five calls out at once), at least 16."""
    if judge is None:
        return 16
    if judge.supports_choices:
        return 1
    return max(16, judge.max_concurrency // 2)


def replace_cache(settings: AnalysisSettings, cache: bool) -> AnalysisSettings:
    return replace(settings, use_cache=cache)


def _merge_stats(a: Mapping[str, Any], b: Mapping[str, Any]) -> dict[str, Any]:
    out: dict[str, Any] = dict(a)
    for k, v in b.items():
        if k == "concurrency" and isinstance(v, dict) and isinstance(a.get(k), dict):
            out[k] = merge_limiter_stats(a[k], v)
        elif isinstance(v, (int, float)) and isinstance(a.get(k), (int, float)):
            out[k] = a[k] + v
        elif isinstance(v, dict) and isinstance(a.get(k), dict):
            out[k] = _merge_stats(a[k], v)
        else:
            out[k] = v
    return out
