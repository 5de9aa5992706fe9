"""``evaluate()``: the library entry point, and the result it returns."""

from __future__ import annotations

import asyncio
import hashlib
import json
import os
import time
import warnings
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from ._http import display_url
from ._score import Outcome, Score
from ._version import __version__
from .analyses import AnalysisSettings
from .embed._protocol import Embedder
from .engine._engine import Progress, describe_metrics, run_samples, settings_for
from .errors import ConfigError, MissingExtraError
from .judge import Judge, JudgeProvider, RetryPolicy, make_embedder, make_judge
from .judge._judge import MemoryCallCache
from .metrics import Metric, resolve_metrics
from .prompts import load_prompt, prompt_ids
from .sample import Dataset, RowProblem, Sample
from .store import SQLiteCallCache, Store

__all__ = [
    "EvaluationResult",
    "JudgeSameAsGeneratorWarning",
    "MetricSummary",
    "aevaluate",
    "evaluate",
    "load_result",
]


class JudgeSameAsGeneratorWarning(UserWarning):
    """The judge model is the model that generated the responses (self-preference bias)."""


@dataclass(frozen=True)
class MetricSummary:
    """Aggregate of one metric over a run: computed over ``scored`` results only, with the
    count of every outcome beside it."""

    metric: str
    n: int
    mean: float | None
    sd: float | None
    ci_low: float | None
    ci_high: float | None
    counts: Mapping[str, int]
    lower_is_better: bool = False
    skip_reasons: Mapping[str, int] = field(default_factory=dict)
    fail_reasons: Mapping[str, int] = field(default_factory=dict)

    def to_dict(self) -> dict[str, Any]:
        return {
            "metric": self.metric, "n": self.n, "mean": self.mean, "sd": self.sd,
            "ci_low": self.ci_low, "ci_high": self.ci_high, "counts": dict(self.counts),
            "lower_is_better": self.lower_is_better, "skip_reasons": dict(self.skip_reasons),
            "fail_reasons": dict(self.fail_reasons),
        }


def summarize_scores(
    key: str, scores: Sequence[Score], lower_is_better: bool = False, seed: int = 0
) -> MetricSummary:
    from .report._stats import summarize

    values = [s.value for s in scores if s.outcome is Outcome.SCORED and s.value is not None]
    counts = {o.value: 0 for o in Outcome}
    skip: dict[str, int] = {}
    fail: dict[str, int] = {}
    for s in scores:
        counts[s.outcome.value] += 1
        if s.outcome is Outcome.SKIPPED:
            skip[s.reason] = skip.get(s.reason, 0) + 1
        elif s.outcome is Outcome.FAILED:
            reason = s.reason.split(":")[0] if s.reason else "failed"
            fail[reason] = fail.get(reason, 0) + 1
    st = summarize(values, seed=seed)
    return MetricSummary(key, st.n, st.mean, st.sd, st.ci_low, st.ci_high, counts, lower_is_better, skip, fail)


class EvaluationResult:
    """What ``evaluate()`` returns: per-metric summaries, per-sample scores with evidence, the
    run id in the store, judge spend, and the input rows that could not be used."""

    def __init__(
        self, run_id: str, samples: Sequence[Sample], metrics: Sequence[Metric],
        scores: Mapping[str, Mapping[str, Score]], judge_stats: Mapping[str, Any],
        problems: Sequence[RowProblem], store_path: str | None, status: str = "completed",
        config: Mapping[str, Any] | None = None,
    ) -> None:
        self.run_id = run_id
        self.samples = list(samples)
        self.metric_keys = [m.key for m in metrics]
        self._lower = {m.key: m.lower_is_better for m in metrics}
        self.scores = {sid: dict(v) for sid, v in scores.items()}
        self.judge_stats = dict(judge_stats)
        self.problems = list(problems)
        self.store_path = store_path
        self.status = status
        self.config = dict(config or {})
        self.summary: dict[str, MetricSummary] = {
            k: summarize_scores(k, [self.scores[s.id][k] for s in self.samples if k in self.scores.get(s.id, {})],
                                self._lower[k])
            for k in self.metric_keys
        }

    @property
    def overall(self) -> float | None:
        """Harmonic mean of the metric means (lower-is-better metrics enter as 1 - mean)."""
        from .report._stats import overall_score

        # A cosine-based mean can be negative; it enters the harmonic mean as 0 (clamped to [0, 1]).
        means = {k: min(1.0, max(0.0, s.mean)) for k, s in self.summary.items() if s.mean is not None}
        if not means:
            return None
        return overall_score(means, {k for k in means if self._lower[k]})

    def __getitem__(self, metric: str) -> MetricSummary:
        return self.summary[metric]

    def records(self) -> list[dict[str, Any]]:
        """One dict per sample, in input order: {"id", "run_id", "scores": {metric: {...}}}."""
        out = []
        for s in self.samples:
            per = self.scores.get(s.id, {})
            out.append({"id": s.id, "run_id": self.run_id,
                        "scores": {k: per[k].to_dict() for k in self.metric_keys if k in per}})
        return out

    def write_jsonl(self, path: str | os.PathLike[str]) -> None:
        with open(path, "w", encoding="utf-8") as f:
            for rec in self.records():
                f.write(json.dumps(rec, ensure_ascii=False) + "\n")

    def to_pandas(self) -> Any:
        """A DataFrame with one row per sample: id, question, and for each metric its value,
        ``<metric>__outcome`` and ``<metric>__reason``."""
        try:
            import pandas as pd
        except ImportError as exc:
            raise MissingExtraError("to_pandas()", "pandas", "pandas") from exc
        rows = []
        for s in self.samples:
            row: dict[str, Any] = {"id": s.id, "question": s.question, "response": s.response}
            for k in self.metric_keys:
                sc = self.scores.get(s.id, {}).get(k)
                row[k] = sc.value if sc else None
                row[f"{k}__outcome"] = sc.outcome.value if sc else None
                row[f"{k}__reason"] = sc.reason if sc else None
            rows.append(row)
        return pd.DataFrame(rows)

    def __repr__(self) -> str:
        parts = []
        for k, s in self.summary.items():
            mean = "n/a" if s.mean is None else f"{s.mean:.3f}"
            parts.append(f"{k}={mean} ({s.counts['scored']}/{sum(s.counts.values())} scored)")
        return f"EvaluationResult(run_id={self.run_id!r}, {', '.join(parts)})"


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
) -> EvaluationResult:
    """Async form of :func:`evaluate`. ``notice`` receives one-line messages for the user;
    ``run_id`` names the new run (default: a timestamp and a random suffix)."""
    if backend not in ("local", "ray"):
        raise ConfigError(f"unknown backend '{backend}'; use 'local' (this process) or 'ray' (a Ray cluster)")
    if backend == "ray":
        from .engine._ray import import_ray

        import_ray()  # MissingExtraError before anything is written
    own_store = not isinstance(store, Store)
    st = store if isinstance(store, Store) else Store(store if store is not None else ":memory:")
    try:
        if resume is not None:
            return await _resume(st, resume, judge, embedder, cache, concurrency, policy, base_url,
                                 embedder_base_url, progress, preflight, notice, backend, ray_address,
                                 judge_concurrency)
        ds = Dataset.load(data)
        if not ds.samples:
            details = "; ".join(str(p) for p in ds.errors[:5])
            raise ConfigError(f"no usable sample in {ds.source}" + (f": {details}" if details else ""))
        chosen = _metrics(metrics, ds.samples)
        return await _run(st, run_id or new_run_id(), ds.samples, ds.problems, ds.source, chosen, judge, embedder,
                          cache, concurrency, settings or AnalysisSettings(), policy, metadata or {},
                          base_url, embedder_base_url, progress, preflight, notice, fresh=True,
                          backend=backend, ray_address=ray_address,
                          judge_concurrency=judge_concurrency)
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
    chosen: Sequence[Metric], judge_spec: Any, embedder_spec: Any, cache: bool,
    concurrency: int | None, settings: AnalysisSettings, policy: RetryPolicy | None,
    metadata: Mapping[str, Any], base_url: str | None, embedder_base_url: str | None,
    progress: Progress | None, preflight: bool, notice: Any, fresh: bool,
    backend: str = "local", ray_address: str | None = None, judge_concurrency: int | None = None,
) -> EvaluationResult:
    need_judge = any(m.needs_judge for m in chosen)
    need_embedder = any(m.needs_embedder for m in chosen)
    judge = None
    if need_judge:
        judge = make_judge(judge_spec, base_url=base_url, policy=policy, notice=notice,
                           max_concurrency=judge_concurrency)
        judge.cache = (SQLiteCallCache(st) if st.path != ":memory:" else MemoryCallCache()) if cache else None
        judge.start_run()  # a Judge passed in again: its memo of the last run's answers is dropped
    emb = make_embedder(embedder_spec, base_url=embedder_base_url or base_url, notice=notice) if need_embedder else None
    try:
        if judge is not None and preflight:
            await judge.provider.preflight()
        _check_generator(samples, judge)
        settings = settings_for(chosen, replace_cache(settings, cache))
        conc = concurrency or (1 if judge is not None and judge.supports_choices else 16)
        config = {
            "settings": settings.to_dict(), "concurrency": conc, "cache": cache,
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
        }
        if fresh:
            st.create_run(run_id, dataset=source, judge=judge.name if judge else None,
                          embedder=emb.name if emb else None, metrics=describe_metrics(chosen),
                          config=config, metadata=dict(metadata), samples=samples, problems=problems)
        else:
            st.acquire(run_id)
        done = st.finished_samples(run_id)
        todo = [s for s in samples if s.id not in done]
        if progress is not None:
            progress.total = len(samples)
            progress.done = len(done)
            progress.run_id = run_id
            progress.judge_stats = judge.stats if judge is not None else None
        status = "interrupted"
        try:
            if backend == "ray":
                from .engine._ray import run_samples_ray

                await run_samples_ray(
                    todo, chosen, judge=judge, judge_spec=judge_spec, base_url=base_url,
                    embedder_spec=embedder_spec, embedder_base_url=embedder_base_url or base_url,
                    settings=settings, store=st, run_id=run_id, concurrency=conc,
                    ray_address=ray_address, progress=progress,
                )
            else:
                await run_samples(todo, chosen, judge=judge, embedder=emb, settings=settings, store=st,
                                  run_id=run_id, concurrency=conc, progress=progress)
            status = "completed"
        finally:
            stats = judge.stats.to_dict() if judge else {}
            prev = st.run(run_id).stats
            if prev and not fresh:
                stats = _merge_stats(prev, stats)
            st.finish_run(run_id, status, stats)
        scores = st.scores(run_id)
        return EvaluationResult(run_id, samples, chosen, scores, stats, st.problems(run_id),
                                None if st.path == ":memory:" else st.path, status, config)
    finally:
        if judge is not None:
            await judge.aclose()
        if emb is not None:
            await emb.aclose()


def replace_cache(settings: AnalysisSettings, cache: bool) -> AnalysisSettings:
    from dataclasses import replace

    return replace(settings, use_cache=cache)


def _merge_stats(a: Mapping[str, Any], b: Mapping[str, Any]) -> dict[str, Any]:
    out: dict[str, Any] = dict(a)
    for k, v in b.items():
        if isinstance(v, (int, float)) and isinstance(a.get(k), (int, float)):
            out[k] = a[k] + v
        elif isinstance(v, dict) and isinstance(a.get(k), dict):
            out[k] = _merge_stats(a[k], v)
        else:
            out[k] = v
    return out


async def _resume(
    st: Store, ref: str, judge_spec: Any, embedder_spec: Any, cache: bool,
    concurrency: int | None, policy: RetryPolicy | None, base_url: str | None,
    embedder_base_url: str | None, progress: Progress | None, preflight: bool, notice: Any,
    backend: str = "local", ray_address: str | None = None, judge_concurrency: int | None = None,
) -> EvaluationResult:
    run_id = st.resolve_run(ref)
    info = st.run(run_id)
    samples = st.samples(run_id)
    chosen = resolve_metrics([m["key"] for m in info.metrics], samples)
    cfg = info.config
    s = cfg.get("settings", {})
    settings = AnalysisSettings(**{k: v for k, v in s.items() if k in AnalysisSettings.__dataclass_fields__})
    return await _run(
        st, run_id, samples, [], info.dataset or "", chosen,
        judge_spec if judge_spec is not None else cfg.get("judge_spec"),
        embedder_spec if embedder_spec is not None else cfg.get("embedder_spec"),
        cache, concurrency or cfg.get("concurrency"), settings, policy, info.metadata,
        base_url or cfg.get("base_url"), embedder_base_url or cfg.get("embedder_base_url"),
        progress, preflight, notice, fresh=False, backend=backend, ray_address=ray_address,
        judge_concurrency=judge_concurrency,
    )


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
) -> EvaluationResult:
    """Evaluate a RAG data set.

    ``data``: a path (.jsonl, .json, .csv, .parquet), a pandas DataFrame, a list of dicts or a
    :class:`Dataset`. ``metrics``: names, groups (``retrieval``, ``generation``,
    ``reference-free``, ``lexical``, ``ir``), ``all``, or None for the core metrics the data's
    fields allow. ``judge``: ``"openai:MODEL"``, ``"local"``, ``"local:PATH.gguf"``, a provider,
    or None for the embedded judge. ``store``: a SQLite path (runs, evidence, cache; default in
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
    ))


def load_result(store: Store, ref: str) -> EvaluationResult:
    """The result of a stored run (by id, id prefix, or 'last')."""
    run_id = store.resolve_run(ref)
    info = store.run(run_id)
    samples = store.samples(run_id)
    metrics = resolve_metrics([m["key"] for m in info.metrics], samples)
    return EvaluationResult(run_id, samples, metrics, store.scores(run_id), info.stats,
                            store.problems(run_id), store.path, info.status, info.config)
