"""The async scheduler: samples x metrics, shared analyses deduplicated per sample, bounded
concurrency, progress, crash-safe saving, and resume.

Flow of one sample: a SampleAnalyses is made; every selected metric's ``score`` runs concurrently
on it; metrics ask the context for shared analyses, each computed once; a metric whose judge step
fails ends ``failed`` with the step's calls in its evidence (never NaN, never dropped); then the
sample's scores and judge calls are committed to the store in one transaction.
"""

from __future__ import annotations

import asyncio
import time
import traceback
from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass, field, replace
from typing import Any

from .._score import Evidence, JudgeCallRef, Outcome, Score
from ..analyses import AnalysisSettings, SampleAnalyses
from ..calls import call_priority
from ..dataset import Sample, metric_level, sample_level
from ..embed import Embedder
from ..errors import BudgetExceededError, EmbeddingError, JudgeUnavailableError, StoreError
from ..judge import Judge, JudgeCall, JudgeFailedError, record_calls
from ..metrics import Metric
from ..store import Store

__all__ = ["Progress", "SampleOutcome", "describe_metrics", "metrics_for", "run_samples", "score_sample",
           "settings_for"]

@dataclass
class Progress:
    """Counters the progress display reads."""

    total: int = 0
    done: int = 0
    outcomes: dict[str, int] = field(default_factory=lambda: {o.value: 0 for o in Outcome})
    run_id: str = ""
    judge_stats: Any = None
    on_update: Callable[[Progress], None] | None = None


@dataclass(frozen=True)
class SampleOutcome:
    sample_id: str
    scores: tuple[Score, ...]
    node: str | None = None  # with the Ray backend: the id of the cluster node that evaluated it


def settings_for(metrics: Sequence[Metric], base: AnalysisSettings) -> AnalysisSettings:
    flags: dict[str, Any] = {}
    for m in metrics:
        flags.update({need.value: True for need in m.needs})
    return replace(base, **flags)


def _failed(metric: Metric, exc: BaseException) -> Score:
    if isinstance(exc, JudgeFailedError):
        calls = exc.calls
        refs = (JudgeCallRef(exc.step, calls[0].prompt_id, calls[0].prompt_version, False),) if calls else ()
        last = next((c.error for c in reversed(calls) if c.error), None) or str(exc)
        return Score.failed(metric.key, f"judge step {calls[0].prompt_id if calls else '?'} failed: {last}",
                            Evidence(details={"attempts": len(calls)}, calls=refs))
    if isinstance(exc, EmbeddingError):
        return Score.failed(metric.key, f"embedding failed: {exc}",
                            Evidence(details={"attempts": exc.attempts} if exc.attempts else {}))
    return Score.failed(
        metric.key, f"internal error: {type(exc).__name__}: {exc}",
        Evidence(details={"traceback": "".join(traceback.format_exception(exc))[-2000:]}),
    )


def metrics_for(sample: Sample, metrics: Sequence[Metric]) -> list[Metric]:
    """The metrics of the sample's level: turn-level metrics score a single-turn sample or an
    assistant turn, conversation-level metrics a conversation's own sample; neither is run
    (nor counted) on the other level."""
    level = sample_level(sample)
    return [m for m in metrics if metric_level(m) == level]


async def score_sample(
    sample: Sample, metrics: Sequence[Metric], judge: Judge | None, embedder: Embedder | None,
    settings: AnalysisSettings,
) -> tuple[Score, ...]:
    metrics = metrics_for(sample, metrics)
    ctx = SampleAnalyses(sample, judge, embedder, settings)

    async def one(m: Metric) -> Score:
        try:
            return await m.score(ctx)
        except (StoreError, BudgetExceededError, JudgeUnavailableError):
            # the store cannot be read or written, the money limit is reached, or the judge
            # stopped answering (its circuit opened): the run stops, it is not this metric's fault
            raise
        except Exception as exc:
            return _failed(m, exc)

    tasks = [asyncio.ensure_future(one(m)) for m in metrics]
    try:
        scores = tuple(await asyncio.gather(*tasks))
    finally:
        # A metric that stops the run (or a cancelled sample) leaves the other metrics and the
        # shared analyses behind: stop them here, so that no call goes out after the sample.
        for task in tasks:
            task.cancel()
        ctx.cancel()  # at once: the waits below may be cut short by a second cancellation
        await asyncio.gather(*tasks, return_exceptions=True)
        await ctx.aclose()
    if ctx.truncations:
        # Over-long text was cut to fit the judge: every judged score that reads a cut field says so.
        cuts = list(dict.fromkeys(ctx.truncations))
        by_key = {m.key: m for m in metrics}
        scores = tuple(_mark_truncated(s, by_key.get(s.metric), cuts) for s in scores)
    if ctx.languages is not None:
        # A question and answer in one language over contexts in another: said on every judged
        # score that reads the contexts (their claim verdicts left word overlap out).
        by_key = {m.key: m for m in metrics}
        scores = tuple(_mark_languages(s, by_key.get(s.metric), ctx.languages) for s in scores)
    return scores


def _mark_languages(score: Score, metric: Metric | None, langs: tuple[str, str]) -> Score:
    """``score`` with ``details["across_languages"]`` ({"text": "de", "contexts": "en"}) when it
    was judged and its metric reads the contexts."""
    if not score.evidence.calls or metric is None:
        return score
    reads = set(metric.requires).union(*metric.requires_any) if metric.requires_any else set(metric.requires)
    if "contexts" not in reads:
        return score
    mark = {"text": langs[0], "contexts": langs[1]}
    return replace(score, evidence=replace(score.evidence, details={**score.evidence.details, "across_languages": mark}))


def _mark_truncated(score: Score, metric: Metric | None, cuts: Sequence[Any]) -> Score:
    """``score`` with ``details["truncated"]``: the cuts of the fields its metric reads (a cut
    of the contexts is not on answer_relevancy, which reads the question and the response)."""
    if not score.evidence.calls:
        return score
    reads: set[str] = set()
    if metric is not None:
        reads.update(metric.requires)
        for group in metric.requires_any:
            reads.update(group)
    mine = [t.to_dict() for t in cuts if metric is None or t.field.split("[", 1)[0] in reads]
    if not mine:
        return score
    return replace(score, evidence=replace(score.evidence, details={**score.evidence.details, "truncated": mine}))


async def run_samples(
    samples: Sequence[Sample],
    metrics: Sequence[Metric],
    *,
    judge: Judge | None,
    embedder: Embedder | None,
    settings: AnalysisSettings,
    store: Store | None,
    run_id: str,
    concurrency: int,
    progress: Progress | None = None,
    on_sample: Callable[[SampleOutcome], None] | None = None,
    keep_results: bool = True,
    opened: Callable[[], Awaitable[Store]] | None = None,
) -> dict[str, tuple[Score, ...]]:
    """Evaluate ``samples``; each finished sample is saved before the next result is reported.
    The scores are returned by sample id; ``keep_results=False`` returns nothing and keeps
    nothing in memory (the store has them: a long run's memory stays flat).

    Cancellation (Ctrl-C) stops the samples in flight; everything finished is already saved.
    With ``opened``, the samples are saved in the store it returns, awaited before each save:
    it holds the writes of a run whose preflight is still going on (the store may not exist
    yet), and raises, which stops the run, when that preflight fails.
    """
    settings = settings_for(metrics, settings)
    results: dict[str, tuple[Score, ...]] = {}
    last_beat = time.monotonic()

    async def one(position: int, sample: Sample) -> None:
        nonlocal last_beat
        calls: list[JudgeCall] = []
        # the judge serves the calls of earlier samples first: they finish (and are saved)
        # first, and a sample's chain of calls does not queue behind later samples' first calls
        with record_calls(calls.append), call_priority(position):
            scores = await score_sample(sample, metrics, judge, embedder, settings)
        st = await opened() if opened is not None else store
        if st is not None:
            st.save_sample(run_id, sample.id, scores, [(sample.id, c) for c in calls])
        if keep_results:
            results[sample.id] = scores
        if progress is not None:
            progress.done += 1
            for s in scores:
                progress.outcomes[s.outcome.value] += 1
            if progress.on_update is not None:
                progress.on_update(progress)
        if on_sample is not None:
            on_sample(SampleOutcome(sample.id, scores))
        if st is not None and time.monotonic() - last_beat > 20:
            last_beat = time.monotonic()
            st.heartbeat(run_id)

    # ``concurrency`` workers take the samples in order: a task per sample in flight, not per
    # sample of the run (a million samples made a million waiting tasks, some 3 GB)
    pending = iter(enumerate(samples))

    async def worker() -> None:
        for position, sample in pending:
            await one(position, sample)

    tasks = [asyncio.ensure_future(worker()) for _ in range(max(1, min(concurrency, len(samples))))]
    try:
        await asyncio.gather(*tasks)
    except BaseException:
        for t in tasks:
            t.cancel()
        await asyncio.gather(*tasks, return_exceptions=True)
        raise
    return results


def describe_metrics(metrics: Sequence[Metric]) -> list[dict[str, Any]]:
    out = []
    for m in metrics:
        d = {"key": m.key, "name": m.name, "params": m.params(), "lower_is_better": m.lower_is_better}
        if metric_level(m) != "turn":  # a conversation-level metric says so (exports read it)
            d["level"] = metric_level(m)
        out.append(d)
    return out
