"""Answering the test set in one configuration: by the reference pipeline, by a target (its
answers kept in the store as they come, so that an interrupted sweep asks only the questions not
yet answered) or by a LangChain / LlamaIndex pipeline factory; each counts what it did into the
configuration's :class:`ConfigRun`.
"""

from __future__ import annotations

import asyncio
import contextlib
import hashlib
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from ..errors import StoreError
from ..pipeline import GenerationError, PipelineConfig, RagPipeline, spans_of
from ..result import EvaluationResult
from ..store import Store
from ..testset import TargetReply, arun, make_target
from ._factory import SpanLocator, answer_with_factory, build_pipeline
from ._questions import _row_id, _sample_row
from ._spec import Configuration, SweepSpec

__all__ = ["ConfigRun"]


@dataclass
class ConfigRun:
    """One configuration's run: its id, status, and what it cost this time."""

    config: Configuration
    run_id: str
    status: str = "pending"  # completed | interrupted | reused
    answered: int = 0
    failed: int = 0
    target_calls: int = 0
    generator_calls: int = 0
    seconds: float = 0.0
    result: EvaluationResult | None = None
    errors: dict[str, int] = field(default_factory=dict)


async def _answer_reference(
    pipeline: RagPipeline, rows: Sequence[Mapping[str, Any]], config: Configuration, spec: SweepSpec,
    judged: set[str], run: ConfigRun,
) -> list[dict[str, Any]]:
    cfg = PipelineConfig.from_mapping(config.params)
    sem = asyncio.Semaphore(max(1, spec.concurrency))

    async def one(row: Mapping[str, Any]) -> dict[str, Any]:
        rid = _row_id(row)
        question = str(row.get("question", row.get("user_input")))
        async with sem:
            t0 = time.monotonic()
            try:
                a = await pipeline.answer(question, cfg, generate=rid in judged)
            except GenerationError as exc:
                run.failed += 1
                key = str(exc).split(": ", 1)[-1][:80]
                run.errors[key] = run.errors.get(key, 0) + 1
                return _sample_row(row, config, spec, judged=rid in judged, response=None, contexts=None,
                                   ids=None, spans=None,
                                   meta={"error": str(exc), "latency_s": round(time.monotonic() - t0, 4)})
        run.answered += 1
        run.generator_calls += a.generator_calls
        meta = {
            "retrieval_s": round(a.retrieval_s, 4), "generation_s": round(a.generation_s, 4),
            "latency_s": round(a.retrieval_s + a.generation_s, 4),
            "prompt_tokens": a.prompt_tokens, "completion_tokens": a.completion_tokens,
            "generator_model": a.generator_model, "rewrites": list(a.rewrites) or None,
        }
        return _sample_row(row, config, spec, judged=rid in judged, response=a.answer,
                           contexts=[c.text for c in a.contexts], ids=[c.id for c in a.contexts],
                           spans=spans_of(a.contexts), meta=meta)

    return list(await asyncio.gather(*(one(r) for r in rows)))


class _KeptAnswers:
    """A target whose answers are kept in the store as they come (cache keys ``sweep-answer/``
    of the sweep's fingerprint, the configuration and the question): a sweep interrupted while
    a configuration is being answered asks only the questions not yet answered when it runs
    again. Failures are not kept: they are asked again. Each kept answer keeps the seconds the
    target took to give it (``kept``: question -> those seconds, None when not known), so the
    sweep's latency counts a reused answer at its own time, not at the time of reading it back."""

    def __init__(self, inner: Any, store: Store, scope: str) -> None:
        self.inner = inner
        self.name = getattr(inner, "name", "target")
        self.store = store
        self.scope = scope
        self.kept: dict[str, float | None] = {}

    def _key(self, question: str) -> str:
        return "sweep-answer/" + hashlib.sha256(f"{self.scope}\n{question}".encode()).hexdigest()

    async def __call__(self, question: str) -> TargetReply:
        hit = self.store.cache_get(self._key(question))
        if isinstance(hit, dict) and isinstance(hit.get("answer"), str):
            def tup(v: Any) -> Any:
                return tuple(v) if isinstance(v, list) else None
            took = hit.get("latency_s")
            self.kept[question] = float(took) if isinstance(took, (int, float)) and not isinstance(took, bool) \
                else None
            return TargetReply(hit["answer"], tup(hit.get("contexts")), tup(hit.get("context_ids")),
                               hit.get("model") if isinstance(hit.get("model"), str) else None,
                               tup(hit.get("context_spans")))
        t0 = time.monotonic()
        reply: TargetReply = await self.inner(question)
        took = round(time.monotonic() - t0, 4)
        with contextlib.suppress(StoreError, ValueError):  # an answer the store cannot keep is still used
            self.store.cache_put(self._key(question), {
                "answer": reply.answer, "latency_s": took, "contexts": list(reply.contexts) if reply.contexts is not None else None,
                "context_ids": list(reply.context_ids) if reply.context_ids is not None else None,
                "model": reply.model,
                "context_spans": list(reply.context_spans) if reply.context_spans is not None else None})
        return reply

    async def aclose(self) -> None:
        close = getattr(self.inner, "aclose", None)
        if close is not None:
            await close()


async def _answer_target(
    target_spec: Any, rows: Sequence[Mapping[str, Any]], config: Configuration, spec: SweepSpec,
    judged: set[str], run: ConfigRun, store: Store | None = None,
) -> list[dict[str, Any]]:
    target = make_target(target_spec, config=dict(config.params), template=spec.request_template,
                         timeout=spec.target_timeout)
    kept: _KeptAnswers | None = None
    if store is not None and store.path != ":memory:":
        target = kept = _KeptAnswers(target, store, run.run_id)
    result = await arun(rows, target, concurrency=max(1, spec.concurrency), timeout=spec.target_timeout)
    run.target_calls += len(rows)
    out = []
    for row, got in zip(rows, result.rows):
        meta = dict(got.get("metadata") or {})
        rid = _row_id(row)
        if meta.get("error"):
            run.failed += 1
            key = str(meta["error"]).split(": ", 1)[-1][:80]
            run.errors[key] = run.errors.get(key, 0) + 1
        else:
            run.answered += 1
        question = str(row.get("question", row.get("user_input")))
        if kept is not None and not meta.get("error") and question in kept.kept:
            # read back from the store: its latency is the target's when it answered (unknown
            # for an answer kept by an older version: then left out of the latency), not the read
            meta["answer_kept"] = True
            meta.pop("latency_s", None)
            if kept.kept[question] is not None:
                meta["latency_s"] = kept.kept[question]
        keep = {k: meta[k] for k in ("latency_s", "error", "generator_model", "attempts", "prompt_tokens",
                                     "completion_tokens", "answer_kept") if k in meta}
        out.append(_sample_row(
            row, config, spec, judged=rid in judged, response=got.get("response"),
            contexts=got.get("contexts"), ids=got.get("retrieved_ids"),
            spans=meta.get("retrieved_spans"), meta=keep,
        ))
    return out


async def _answer_factory(
    factory: Callable[..., Any], rows: Sequence[Mapping[str, Any]], config: Configuration, spec: SweepSpec,
    judged: set[str], run: ConfigRun, locator: SpanLocator | None,
) -> list[dict[str, Any]]:
    built = await build_pipeline(factory, dict(config.params), config.label)
    questions = [{"id": _row_id(r), "question": str(r.get("question", r.get("user_input")))} for r in rows]
    answered = await answer_with_factory(built, questions, spec.factory_options, max(1, spec.concurrency))
    run.target_calls += len(rows)
    out = []
    for row, got in zip(rows, answered.rows):
        meta = dict(got.get("metadata") or {})
        keep = {k: meta[k] for k in ("latency_s", "error", "pipeline", "langchain_run_id", "retriever_runs",
                                     "retrievals", "contexts_from") if meta.get(k) is not None}
        if meta.get("error"):
            run.failed += 1
            key = str(meta["error"])[:80]
            run.errors[key] = run.errors.get(key, 0) + 1
        else:
            run.answered += 1
        contexts = got.get("contexts") if not meta.get("error") else None
        spans = None
        if contexts is not None:
            documents = [{"text": t, **d} for t, d in zip(contexts, meta.get("documents") or [])]
            keep["documents"] = meta.get("documents")
            if locator is not None or any((d.get("metadata") or {}).get("doc_id") for d in documents):
                placer = locator if locator is not None else SpanLocator(())
                spans = [placer.span(d) for d in documents]
                keep["spans_located"] = sum(1 for x in spans if x is not None)
        out.append(_sample_row(row, config, spec, judged=_row_id(row) in judged, response=got.get("response"),
                               contexts=contexts, ids=got.get("retrieved_ids"), spans=spans, meta=keep))
    return out
