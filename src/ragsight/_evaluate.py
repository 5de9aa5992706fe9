"""``evaluate()``: the library entry point. The result it returns is in ``result.py``."""

from __future__ import annotations

import asyncio
import hashlib
import os
import time
import warnings
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, replace
from typing import Any

from ._http import display_url
from ._limiter import merge_limiter_stats
from ._version import __version__
from .analyses import AnalysisSettings
from .embed import Embedder, make_embedder
from .engine import Progress, describe_metrics, run_samples, settings_for
from .errors import ConfigError, JudgeSameAsGeneratorWarning
from .judge import Judge, JudgeProvider, MemoryCallCache, RetryPolicy, make_judge
from .metrics import Metric, resolve_metrics
from .prompts import load_prompt, prompt_ids
from .result import EvaluationResult
from .sample import Dataset, RowProblem, Sample, group_problems
from .store import SQLiteCallCache, Store

__all__ = ["RunOptions", "aevaluate", "evaluate", "new_run_id"]


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

    @property
    def embedder_url(self) -> str | None:
        """The embedder's server: its own URL, else the judge's."""
        return self.embedder_base_url or self.base_url


def new_run_id() -> str:
    return time.strftime("%Y%m%d-%H%M%S") + "-" + hashlib.sha256(os.urandom(8)).hexdigest()[:6]


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
    api_version: str | None = None,
) -> EvaluationResult:
    """Async form of :func:`evaluate`. ``notice`` receives one-line messages for the user;
    ``run_id`` names the new run (default: a timestamp and a random suffix)."""
    if backend not in ("local", "ray"):
        raise ConfigError(f"unknown backend '{backend}'; use 'local' (this process) or 'ray' (a Ray cluster)")
    if backend == "ray":
        from .engine import import_ray

        import_ray()  # MissingExtraError before anything is written
    opts = RunOptions(judge=judge, embedder=embedder, base_url=base_url,
                      embedder_base_url=embedder_base_url, cache=cache, concurrency=concurrency,
                      judge_concurrency=judge_concurrency, policy=policy, preflight=preflight,
                      backend=backend, ray_address=ray_address, api_version=api_version)
    own_store = not isinstance(store, Store)
    st = store if isinstance(store, Store) else Store(store if store is not None else ":memory:")
    try:
        if resume is not None:
            return await _resume(st, resume, opts, progress=progress, notice=notice)
        ds = Dataset.load(data)
        if not ds.samples:
            details = "; ".join(g.line() for g in group_problems(ds.errors)[:5])  # one per kind
            raise ConfigError(f"no usable sample in {ds.source}" + (f": {details}" if details else ""))
        chosen = _metrics(metrics, ds.samples)
        return await _run(st, run_id or new_run_id(), ds.samples, ds.problems, ds.source, chosen, opts,
                          settings=settings or AnalysisSettings(), metadata=metadata or {},
                          progress=progress, notice=notice, fresh=True)
    finally:
        if own_store:
            st.close()


def _metrics(metrics: Sequence[str | Metric] | str | None, samples: Sequence[Sample]) -> list[Metric]:
    if metrics is None or isinstance(metrics, str):
        return resolve_metrics(metrics, samples)
    names = [m for m in metrics if isinstance(m, str)]
    objs = [m for m in metrics if isinstance(m, Metric)]
    return (resolve_metrics(names, samples) if names else []) + objs


async def _run(
    st: Store, run_id: str, samples: Sequence[Sample], problems: Sequence[RowProblem], source: str,
    chosen: Sequence[Metric], opts: RunOptions, *, settings: AnalysisSettings,
    metadata: Mapping[str, Any], progress: Progress | None, notice: Any, fresh: bool,
) -> EvaluationResult:
    judge_spec, embedder_spec, cache, base_url = opts.judge, opts.embedder, opts.cache, opts.base_url
    embedder_base_url, backend = opts.embedder_base_url, opts.backend
    need_judge = any(m.needs_judge for m in chosen)
    need_embedder = any(m.needs_embedder for m in chosen)
    judge = None
    if need_judge:
        # A fresh wrapper for this run (its cache, stats and memo); a Judge passed in is not changed.
        judge = make_judge(judge_spec, base_url=base_url, policy=opts.policy, notice=notice,
                           max_concurrency=opts.judge_concurrency, api_version=opts.api_version).for_run(
            cache=(SQLiteCallCache(st) if st.path != ":memory:" else MemoryCallCache()) if cache else None)
    emb = make_embedder(embedder_spec, base_url=opts.embedder_url, notice=notice) if need_embedder else None
    try:
        if not fresh:
            _check_same_tools(st, run_id, judge, emb)
        if judge is not None and opts.preflight:
            await judge.provider.preflight()
        _check_generator(samples, judge)
        settings = settings_for(chosen, replace_cache(settings, cache))
        conc = opts.concurrency or default_concurrency(judge)
        config = {
            "settings": settings.to_dict(), "concurrency": conc, "cache": cache,
            "judge_concurrency": ({"ceiling": judge.max_concurrency, "initial": judge.limiter.limit,
                                   "adaptive": judge.limiter.adaptive} if judge else None),
            "prompts": {pid: load_prompt(pid).version for pid in prompt_ids()},
            "prompt_hashes": {pid: load_prompt(pid).hash for pid in prompt_ids()},
            "ragsight_version": __version__,
            "judge_model": judge.model if judge else None,
            "judge_spec": judge_spec if isinstance(judge_spec, str) else (judge.name if judge else None),
            "embedder_spec": embedder_spec if isinstance(embedder_spec, str) else (emb.name if emb else None),
            # user info in a URL may hold a key: only the redacted form is stored
            "base_url": display_url(base_url) if base_url else None,
            "embedder_base_url": display_url(embedder_base_url) if embedder_base_url else None,
            "backend": backend,
            "api_version": opts.api_version,
        }
        if fresh:
            st.create_run(run_id, dataset=source, judge=judge.name if judge else None,
                          embedder=emb.name if emb else None, metrics=describe_metrics(chosen),
                          config=config, metadata=dict(metadata), samples=samples, problems=problems)
        else:
            st.acquire(run_id)
        # What earlier processes of this run paid; the heartbeat adds this process's spend as it
        # goes (stats_now), so a kill loses at most the last second of it.
        prev = {} if fresh else st.run(run_id).stats

        def stats_now() -> dict[str, Any]:
            current = judge.stats.to_dict() if judge else {}
            return _merge_stats(prev, current) if prev else current

        done = st.finished_samples(run_id)
        todo = [s for s in samples if s.id not in done]
        if progress is not None:
            progress.total = len(samples)
            progress.done = len(done)
            progress.run_id = run_id
            progress.judge_stats = judge.stats if judge is not None else None
        status = "interrupted"
        st.start_heartbeat(run_id, stats_now)
        try:
            if backend == "ray":
                from .engine import run_samples_ray

                await run_samples_ray(
                    todo, chosen, judge=judge, judge_spec=judge_spec, base_url=base_url,
                    embedder_spec=embedder_spec, embedder_base_url=opts.embedder_url,
                    settings=settings, store=st, run_id=run_id, concurrency=conc,
                    ray_address=opts.ray_address, progress=progress,
                )
            else:
                await run_samples(todo, chosen, judge=judge, embedder=emb, settings=settings, store=st,
                                  run_id=run_id, concurrency=conc, progress=progress, keep_results=False)
            status = "completed"
        finally:
            st.stop_heartbeat()
            stats = stats_now()
            st.finish_run(run_id, status, stats)
        scores = st.scores(run_id)
        return EvaluationResult(run_id, samples, chosen, scores, stats, st.problems(run_id),
                                None if st.path == ":memory:" else st.path, status, config)
    finally:
        if judge is not None:
            await judge.aclose()
        if emb is not None:
            await emb.aclose()


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
    st: Store, ref: str, opts: RunOptions, *, progress: Progress | None, notice: Any
) -> EvaluationResult:
    """Continue a stored run: what it measures comes from the store; how to run it from ``opts``,
    with the stored judge, embedder, URLs and concurrency where ``opts`` leaves them unset."""
    run_id = st.resolve_run(ref)
    info = st.run(run_id)
    samples = st.samples(run_id)
    chosen = resolve_metrics([m["key"] for m in info.metrics], samples)
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
    return await _run(st, run_id, samples, [], info.dataset or "", chosen, opts, settings=settings,
                      metadata=info.metadata, progress=progress, notice=notice, fresh=False)


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
    api_version: str | None = None,
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

    Example::

        result = ragsight.evaluate("data.jsonl", ["faithfulness", "context_recall"],
                                   judge="openai:gpt-4o-mini")
        print(result.summary["faithfulness"].mean)
    """
    return asyncio.run(aevaluate(
        data, metrics, judge=judge, embedder=embedder, store=store, cache=cache, resume=resume,
        concurrency=concurrency, settings=settings, policy=policy, metadata=metadata,
        base_url=base_url, embedder_base_url=embedder_base_url, preflight=preflight,
        backend=backend, ray_address=ray_address, judge_concurrency=judge_concurrency,
        api_version=api_version,
    ))
