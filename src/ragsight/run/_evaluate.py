"""``evaluate()`` and ``aevaluate()``: the library entry points (load the data, choose the
metrics, preflight, create or resume the run). The result they return is in ``result.py``.

Before the first judge call, a run checks everything it will need (its *preflight*,
``_preflight.py``): the store path can be written, the optional packages of the chosen metrics
are installed, the judge answers a ping, and the embedder embeds one text. A failed preflight
raises before anything is written (no store file is created). The pings of a new run (in this
process) go on while its first samples are judged: nothing is written, to the store or to the
judge cache, until they have passed, and when one fails the samples in flight are cancelled and
what they got is dropped, so the run leaves nothing behind, as when the pings came first
(``_execute.py``). ``evaluate()`` runs the async core on an event loop of its own: in this
thread, or, when this thread already runs a loop (Jupyter, an async web app), in a worker
thread, so it works in a notebook without ``nest_asyncio``; ``await aevaluate(...)`` is the
direct form there (``_process.py``).
"""

from __future__ import annotations

import asyncio
import contextlib
import hashlib
import os
import signal
import time
from collections.abc import Mapping, Sequence
from dataclasses import replace
from pathlib import Path
from typing import Any, NoReturn

from .._terminal import visible
from ..analyses import AnalysisSettings
from ..dataset import Dataset, group_problems
from ..embed import Embedder, EmbedderSpec
from ..engine import Progress, ProgressDisplay
from ..errors import ConfigError, StoreError
from ..judge import Judge, JudgeProvider, JudgeSpec, conversation_notice
from ..metrics import Metric, metrics_of_run, named_on_their_own
from ..result import EvaluationResult, load_result
from ..store import Store
from ._execute import execute
from ._options import Plan, RunOptions, refuse_moved
from ._preflight import check_store_path, chosen_metrics, ping, prepare
from ._process import CtrlC, RunInterrupted, run_sync

__all__ = ["aevaluate", "evaluate", "interrupted_message", "new_run_id"]

# What evaluate() and aevaluate() take besides the data and the metrics (for the error that
# names a misspelt one).
_KEYWORDS = ("judge", "embedder", "store", "resume", "metadata", "run_id", "options")


def new_run_id() -> str:
    return time.strftime("%Y%m%d-%H%M%S") + "-" + hashlib.sha256(os.urandom(8)).hexdigest()[:6]


async def aevaluate(
    data: Any,
    metrics: Sequence[str | Metric] | str | None = None,
    *,
    judge: str | JudgeSpec | JudgeProvider | Judge | None = None,
    embedder: str | EmbedderSpec | Embedder | None = None,
    store: str | os.PathLike[str] | Store | None = None,
    resume: str | None = None,
    metadata: Mapping[str, Any] | None = None,
    run_id: str | None = None,
    options: RunOptions | None = None,
    **moved: NoReturn,
) -> EvaluationResult:
    """Async form of :func:`evaluate`, with the same arguments (in a notebook:
    ``result = await aevaluate(...)``).

    Cancelled (a notebook's "interrupt kernel" on ``await aevaluate(...)``), the run saves its
    finished samples and, unless the caller passed its own ``progress`` in ``options`` (the
    command line prints its own line), writes to standard error how many are saved and the call
    that continues it. Ctrl-C under the script's own ``asyncio.run(...)`` does the same and then
    raises :class:`RunInterrupted` (a KeyboardInterrupt) whose message is that line, as
    :func:`evaluate` does, not a CancelledError."""
    refuse_moved("aevaluate", moved, _KEYWORDS, judge=judge, embedder=embedder)
    opts = options if options is not None else RunOptions()
    plan = Plan(JudgeSpec.of(judge), EmbedderSpec.of(embedder), opts)
    counters = opts.progress if opts.progress is not None else Progress()
    mode = _display_mode(opts.show_progress, given=opts.progress is not None)
    watch = CtrlC.watch()
    try:
        with watch:
            return await _aevaluate(data, metrics, plan, store=store, resume=resume, metadata=metadata,
                                    run_id=run_id, counters=counters, mode=mode)
    except (asyncio.CancelledError, KeyboardInterrupt):
        message = interrupted_message(counters, store)
        if opts.progress is None:
            _say(f"ragsight: {message}")
        if watch.fired:  # Ctrl-C, not a cancellation by the caller's code: said as evaluate() says it
            raise RunInterrupted(signal.SIGINT, message) from None
        raise


def evaluate(
    data: Any,
    metrics: Sequence[str | Metric] | str | None = None,
    *,
    judge: str | JudgeSpec | JudgeProvider | Judge | None = None,
    embedder: str | EmbedderSpec | Embedder | None = None,
    store: str | os.PathLike[str] | Store | None = None,
    resume: str | None = None,
    metadata: Mapping[str, Any] | None = None,
    run_id: str | None = None,
    options: RunOptions | None = None,
    **moved: NoReturn,
) -> EvaluationResult:
    """Evaluate a RAG data set.

    ``data``: a path (.jsonl, .json, .csv, .parquet), a pandas DataFrame, a list of dicts or a
    :class:`Dataset` (None with ``resume``). ``metrics``: names, groups (``retrieval``,
    ``generation``, ``reference-free``, ``lexical``, ``ir``), ``all``, or None for the core
    metrics the data's fields allow. ``judge``: a name (``"openai:MODEL"``, ``"local"``,
    ``"local:PATH.gguf"``, ``"anthropic:MODEL"``, ``"gemini:MODEL"``, ``"bedrock:MODEL"``,
    ``"azure:DEPLOYMENT"``; the last four need ``ragsight[litellm]``), a
    :class:`~ragsight.JudgeSpec` (the name with its server ``base_url``, ``api_version``,
    ``concurrency`` and ``prices``), a provider or a Judge; None for the embedded judge.
    ``embedder``: a name (``"openai:MODEL"``, ``"local"``), a :class:`~ragsight.EmbedderSpec`
    (with its ``base_url``) or an Embedder; None chooses. ``store``: a SQLite path (runs,
    evidence, cache; default in memory for the API, ``./ragsight.db`` for the CLI).
    ``resume``: a run id (or a prefix) in ``store`` to continue. ``metadata``: recorded with the
    run. ``run_id``: names the new run (default: a timestamp and a random suffix).
    ``options``: a :class:`~ragsight.RunOptions` (cache, concurrency, settings, retry policy,
    preflight, progress, backend, ``max_cost``...); its defaults otherwise.

    Works inside a running event loop too (Jupyter): the evaluation then runs on its own loop
    in a worker thread while this call waits. There, ``await ragsight.aevaluate(...)`` (same
    arguments) is the direct form.

    Example::

        result = ragsight.evaluate("data.jsonl", ["faithfulness", "context_recall"],
                                   judge="openai:gpt-4o-mini")
        print(result.summary["faithfulness"].mean)
    """
    refuse_moved("evaluate", moved, _KEYWORDS, judge=judge, embedder=embedder)
    opts = options if options is not None else RunOptions()
    plan = Plan(JudgeSpec.of(judge), EmbedderSpec.of(embedder), opts)
    counters = opts.progress if opts.progress is not None else Progress()
    mode = _display_mode(opts.show_progress, given=False)
    try:
        return run_sync(lambda: _aevaluate(data, metrics, plan, store=store, resume=resume,
                                           metadata=metadata, run_id=run_id, counters=counters,
                                           mode=mode))
    except KeyboardInterrupt as stop:
        # the cell (or the script) is told what was kept and how to go on, not a bare
        # KeyboardInterrupt: the message is also printed, the traceback's end may scroll away
        message = interrupted_message(counters, store)
        _say(f"ragsight: {message}")
        raise RunInterrupted(getattr(stop, "signum", signal.SIGINT), message) from None


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
    if progress.total and progress.done >= progress.total:
        # the interrupt came as the run ended: nothing is left to continue
        return (f"interrupted as the run ended: all {progress.total} samples are saved in {path} "
                f"(run {progress.run_id}); nothing is left to resume.")
    return (f"interrupted: {progress.done} of {progress.total} samples are saved in {path} (run "
            f"{progress.run_id}). Continue with: ragsight.evaluate(None, resume={progress.run_id!r}, "
            f"store={str(path)!r})")


def _turns_notice(judge: Judge | None, samples: Sequence[Any]) -> str | None:
    """The embedded judge's line on conversation turns, for data that has them; else None."""
    if judge is None or not judge.name.startswith("local:"):
        return None
    if not any(getattr(s, "turn", None) is not None for s in samples):
        return None
    return conversation_notice(judge.model)


def _say(text: str) -> None:
    import sys

    with contextlib.suppress(Exception):  # a closed or odd stderr must not hide the interrupt
        print(visible(text), file=sys.stderr, flush=True)



async def _aevaluate(
    data: Any, metrics: Sequence[str | Metric] | str | None, plan: Plan, *, store: Any,
    resume: str | None, metadata: Mapping[str, Any] | None, run_id: str | None, counters: Progress,
    mode: str | None,
) -> EvaluationResult:
    opts = plan.options
    notice = opts.notice
    if opts.backend == "ray":
        from ..engine import import_ray

        import_ray()  # MissingExtraError before anything is written
    with ProgressDisplay(counters, mode):
        if resume is not None:
            return await _resume(store, resume, plan, progress=counters, notice=notice)
        ds = Dataset.load(data)
        if (misnamed := ds.misnamed_message()) is not None:
            raise ConfigError(misnamed)
        if not ds.samples:
            details = "; ".join(g.line() for g in group_problems(ds.errors)[:5])  # one per kind
            raise ConfigError(f"no usable sample in {ds.source}" + (f": {details}" if details else ""))
        chosen = chosen_metrics(metrics, ds.samples)
        # A store that exists is opened (and checked: schema, damage, read-only) before the
        # preflight; a new one is created only after it, so a failed preflight leaves no file.
        own_store = not isinstance(store, Store)
        path = None if isinstance(store, Store) else (":memory:" if store is None else str(store))
        st = store if isinstance(store, Store) else None
        if path is not None:
            check_store_path(path)
            if path != ":memory:" and Path(path).exists():
                st = Store(path)
        # In this process the pings go on while the first samples are judged (the gate); a Ray
        # run pings first, as its workers make their own judges.
        concurrent = opts.preflight and opts.backend == "local"
        try:
            parts = await prepare(chosen, plan, notice, ping_now=not concurrent,
                                  named=named_on_their_own(metrics))
        except BaseException:
            if own_store and st is not None:
                st.close()
            raise
        chosen = [m for m in chosen if m.key not in parts.left_out]  # said by prepare, recorded by execute
        if notice is not None and (line := _turns_notice(parts.judge, ds.samples)) is not None:
            notice(line)
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
            return await execute(st, run_id or new_run_id(), ds.samples, ds.problems, ds.source, chosen,
                                 plan, parts, settings=opts.settings or AnalysisSettings(),
                                 metadata=metadata or {}, progress=counters, fresh=True,
                                 ping=ping(parts) if concurrent else None,
                                 new_store=new_store if st is None else None)
        finally:
            if own_store:
                for opened in ([st] if st is not None else made):
                    opened.close()


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


async def _resume(
    store: str | os.PathLike[str] | Store | None, ref: str, plan: Plan, *,
    progress: Progress | None, notice: Any,
) -> EvaluationResult:
    """Continue a stored run: what it measures comes from the store; how to run it from ``plan``,
    with the stored judge, embedder, URLs and concurrency where ``plan`` leaves them unset."""
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
        named = plan.judge.model is not None or plan.embedder.model is not None  # checked against the run below
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
        jd, emb = plan.judge, plan.embedder
        plan = Plan(
            replace(jd, model=jd.model if jd.model is not None else cfg.get("judge_spec"),
                    base_url=jd.base_url or cfg.get("base_url"),
                    api_version=jd.api_version or cfg.get("api_version")),
            replace(emb, model=emb.model if emb.model is not None else cfg.get("embedder_spec"),
                    base_url=emb.base_url or cfg.get("embedder_base_url")),
            replace(plan.options, concurrency=plan.options.concurrency or cfg.get("concurrency")),
        )
        parts = await prepare(chosen, plan, notice,
                              check=lambda judge, emb: _check_same_tools(st, run_id, judge, emb))
        return await execute(st, run_id, samples, [], info.dataset or "", chosen, plan, parts,
                             settings=settings, metadata=info.metadata, progress=progress, fresh=False)
    finally:
        if own_store:
            st.close()
