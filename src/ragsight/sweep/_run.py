"""Running a sweep: one test set, every configuration answered and evaluated as a run.

Each configuration becomes a run in the store, tagged with the sweep (``metadata.sweep``), its
configuration id and its settings, under a run id made of the sweep's name, the configuration's
id and a fingerprint of what the run measures (test set, metrics, judge, judged questions, target).
Running the same sweep again reuses every completed run, continues an interrupted one where it
stopped (``--resume`` semantics), and answers and evaluates only the configurations that are new;
the pipeline's stages and the judge's steps come from the content caches in the same store.

Every configuration sees the same questions with the same ids, so every comparison is paired.
Judge metrics run on the first ``judge_questions`` questions of each kind (in scope, out of
scope); the other questions carry no response or reference in their sample, so judge metrics
skip them (counted, with the reason) while the span metrics score every question.
"""

from __future__ import annotations

import asyncio
import contextlib
import hashlib
import json
import math
import os
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from ..calls import display_url
from ..dataset import atomic_write, check_writable_target, sample_from_mapping
from ..embed import make_embedder
from ..engine import Progress
from ..errors import ConfigError, InputError, StoreError
from ..judge import Judge, JudgeSpec, make_judge
from ..metrics import resolve_metrics
from ..pipeline import GenerationError, PipelineConfig, RagPipeline, spans_of
from ..result import EvaluationResult, load_result
from ..run import RunOptions, aevaluate
from ..store import Store
from ..testset import (
    ChunkSettings,
    TargetReply,
    TestsetSettings,
    agenerate,
    arun,
    load_corpus,
    make_target,
    read_testset,
)
from ._factory import SpanLocator, answer_with_factory, build_pipeline, load_factory
from ._spec import Configuration, SweepSpec, load_sweep

__all__ = ["ConfigRun", "SweepPlan", "SweepResult", "asweep", "plan_sweep", "sweep"]

OUT_OF_SCOPE = "out_of_scope"
# Judge steps per judged sample for a remote (JSON) judge, by metric: shared steps are counted once
# (faithfulness and context_recall share the verdict call against the contexts). The embedded
# judge verifies one claim per call, so it makes more calls than this. abstention's step is
# skipped when its phrase detector finds a clean decline: counted here as at most one.
JUDGE_STEPS: dict[str, frozenset[str]] = {
    "faithfulness": frozenset({"claims:response", "verify:contexts"}),
    "context_recall": frozenset({"claims:reference", "verify:contexts"}),
    "answer_relevancy": frozenset({"questions:response"}),
    "context_precision": frozenset({"chunks:reference"}),
    "context_precision_without_reference": frozenset({"chunks:response"}),
    "abstention": frozenset({"declines:response"}),
}
ANSWER_TEMPLATE_TOKENS = 150
REWRITE_TEMPLATE_TOKENS = 120


_CLAIM_POLL_S = 0.5  # how often a sweep looks whether another sweep's configuration is done


def _tokens(text: str) -> int:
    return max(len(text.split()), math.ceil(len(text) / 4))


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


@dataclass
class SweepResult:
    """The runs of a sweep, in the order of its configurations (the baseline marked)."""

    spec: SweepSpec
    runs: list[ConfigRun]
    seconds: float
    store_path: str
    judge_stats: dict[str, Any] = field(default_factory=dict)

    @property
    def run_ids(self) -> list[str]:
        return [r.run_id for r in self.runs]

    @property
    def generator_calls(self) -> int:
        return sum(r.generator_calls for r in self.runs)

    @property
    def target_calls(self) -> int:
        return sum(r.target_calls for r in self.runs)


@dataclass(frozen=True)
class SweepPlan:
    """What a sweep will do, before it does it (``--dry-run``)."""

    configurations: int
    to_run: int
    reused: int
    questions: int
    out_of_scope: int
    judged: int
    target_calls: int
    generator_rewrites: int
    generator_answers: int
    generator_prompt_tokens: int
    generator_completion_tokens: int
    judge_samples: int
    judge_steps: int | None
    judge_metrics: tuple[str, ...]
    retrieval_metrics: tuple[str, ...]
    notes: tuple[str, ...] = ()

    @property
    def generator_calls(self) -> int:
        return self.generator_rewrites + self.generator_answers

    def lines(self) -> list[str]:
        out = [
            f"configurations: {self.configurations} ({self.to_run} to run, {self.reused} already in the store)",
            f"questions: {self.questions} ({self.out_of_scope} out of scope), the same for every configuration",
            f"judged questions per configuration: {self.judged} (judge metrics: "
            f"{', '.join(self.judge_metrics) or 'none'})",
            f"retrieval metrics on every question: {', '.join(self.retrieval_metrics) or 'none'}",
        ]
        if self.target_calls:
            out.append(f"calls to the system under test: {self.target_calls}")
        out.append(
            f"generator calls: at most {self.generator_calls} ({self.generator_rewrites} RAG-fusion "
            f"rewrites, {self.generator_answers} answers; repeats come from the cache), about "
            f"{self.generator_prompt_tokens:,} prompt and at most {self.generator_completion_tokens:,} "
            "completion tokens"
        )
        steps = "unknown for these metrics" if self.judge_steps is None else str(self.judge_steps)
        out.append(f"judge: {self.judge_samples} samples, at most {steps} judge steps with a remote judge "
                   "(an answer of one short sentence needs no claim extraction; the embedded judge "
                   "makes one call per claim verdict: more)")
        out.extend(self.notes)
        return out


def _slug(name: str) -> str:
    return "".join(c if c.isalnum() or c in "-_" else "-" for c in name.lower()).strip("-") or "sweep"


def _row_id(row: Mapping[str, Any]) -> str:
    if row.get("id") is not None:
        return str(row["id"])
    q = str(row.get("question", row.get("user_input", "")))
    return "q-" + hashlib.sha256(q.encode()).hexdigest()[:10]


def _is_oos(row: Mapping[str, Any]) -> bool:
    return (row.get("metadata") or {}).get("question_type") == OUT_OF_SCOPE


def judged_ids(rows: Sequence[Mapping[str, Any]], n: int | None, n_oos: int | None = -1) -> set[str]:
    """The first ``n`` questions in scope and the first ``n_oos`` out of scope (default ``n``;
    None: all)."""
    inside = [_row_id(r) for r in rows if not _is_oos(r)]
    outside = [_row_id(r) for r in rows if _is_oos(r)]
    k = n if n_oos == -1 else n_oos
    return set(inside if n is None else inside[:n]) | set(outside if k is None else outside[:k])


def _split_metrics(names: Sequence[str]) -> tuple[list[str], list[str]]:
    metrics = resolve_metrics(list(names))
    judge = [m.key for m in metrics if m.needs_judge or m.needs_embedder]
    other = [m.key for m in metrics if not (m.needs_judge or m.needs_embedder)]
    return other, judge


def _who(model: Any) -> Any:
    """What names a judge or embedder in the fingerprint: its spec, or an instance's identity
    (server, model, model file) or name."""
    if model is None or isinstance(model, str):
        return model
    ident = getattr(model, "identity", None)
    if callable(ident):
        ident = ident()
    if isinstance(ident, Mapping):
        return {str(k): v for k, v in ident.items()}
    inner = getattr(model, "inner", None) or getattr(model, "provider", None)
    return [getattr(model, "name", type(model).__name__), _who(inner) if inner is not None else None]


def _fingerprint(spec: SweepSpec, rows: Sequence[Mapping[str, Any]], *, judge: Any = None,
                 embedder: Any = None) -> str:
    """Everything that changes an answer or a score: the questions, metrics, judge and embedder
    actually used (``judge``/``embedder``: the command line's, else the file's), the server
    they are asked at, the target or pipeline, and the sweep's exact name (two names that slug
    alike never share runs)."""
    basis = {
        "rows": [[_row_id(r), r.get("question"), r.get("reference"),
                  (r.get("metadata") or {}).get("reference_spans")] for r in rows],
        "metrics": list(spec.metrics),
        "judge": _who(judge if judge is not None else spec.judge),
        "embedder": _who(embedder if embedder is not None else spec.embedder),
        "judged": [spec.judge_questions, spec.judge_out_of_scope], "target": spec.target, "template": spec.request_template,
        "documents": [os.path.abspath(spec.path(d)) for d in spec.documents] if spec.reference or spec.factory else None,
    }
    if spec.factory is not None:  # only then: the run ids of the other sweeps stay as they were
        basis["factory"] = [spec.factory, dict(spec.factory_options)]
    server = spec.base_url or os.environ.get("OPENAI_BASE_URL")
    if server:  # the judge, embedder and generator are asked there
        basis["base_url"] = display_url(server.strip().rstrip("/"))
    if _slug(spec.name) != spec.name:
        basis["name"] = spec.name
    return hashlib.sha256(json.dumps(basis, sort_keys=True, default=str).encode()).hexdigest()[:6]


def run_id_for(spec: SweepSpec, config: Configuration, fingerprint: str) -> str:
    return f"sweep-{_slug(spec.name)}-{config.id}-{fingerprint}"


def _sample_row(
    row: Mapping[str, Any], config: Configuration, spec: SweepSpec, *, judged: bool,
    response: str | None, contexts: Sequence[str] | None, ids: Sequence[str] | None,
    spans: Sequence[Mapping[str, Any] | None] | None, meta: Mapping[str, Any],
) -> dict[str, Any]:
    src = dict(row.get("metadata") or {})
    metadata: dict[str, Any] = {
        "question_type": src.get("question_type"),
        "reference_spans": src.get("reference_spans") or [],
        "sweep": spec.name, "config_id": config.id, "judged": judged, **meta,
    }
    if spans is not None:
        metadata["retrieved_spans"] = list(spans)
    out: dict[str, Any] = {"id": _row_id(row), "question": str(row.get("question", row.get("user_input")))}
    if contexts is not None:
        out["contexts"] = list(contexts)
    if ids is not None:
        out["retrieved_ids"] = list(ids)
    if judged:
        if response is not None:
            out["response"] = response
        if row.get("reference") is not None:
            out["reference"] = row["reference"]
        if row.get("reference_contexts"):
            out["reference_contexts"] = row["reference_contexts"]
    elif response is not None:
        metadata["unjudged_response"] = response
    out["metadata"] = {k: v for k, v in metadata.items() if v is not None}
    return out


class _SharedEmbedder:
    """An embedder passed to several runs: a run's ``aclose`` leaves it open (the sweep closes
    it once, at the end)."""

    def __init__(self, inner: Any) -> None:
        self.inner = inner
        self.name = inner.name

    async def embed(self, texts: Sequence[str], kind: str = "passage") -> Any:
        return await self.inner.embed(texts, kind=kind)

    async def aclose(self) -> None:
        return None


async def _load_rows(spec: SweepSpec, store: Store, generator: Any, notice: Any) -> list[dict[str, Any]]:
    if spec.testset is None:
        raise ConfigError("sweep: no test set")
    path = Path(spec.path(spec.testset))
    if not path.is_file():
        if spec.generate is None:
            raise InputError(f"{path}: no such test set; give an existing file or [generate] settings")
        try:  # the generated test set is written after paying for it: its path is checked first
            check_writable_target(path, "test set to generate")
        except OSError as exc:
            raise InputError(str(exc)) from None
        # claimed in the store while it is generated: a second sweep waits for the file, and
        # does not pay for another one
        claim = "sweep-testset/" + str(path.resolve())
        told = False
        while not path.is_file() and (holder := store.claim(claim)) is not None:
            if notice and not told:
                notice(f"the test set {path} is being generated by another sweep ({holder}); waiting for it")
                told = True
            await asyncio.sleep(_CLAIM_POLL_S)
        try:
            if not path.is_file():
                await _generate_testset(spec, path, generator, notice)
        finally:
            store.release(claim)
    rows = read_testset(path)
    ids = [_row_id(r) for r in rows]
    if len(set(ids)) != len(ids):
        dup = next(i for i in ids if ids.count(i) > 1)
        raise InputError(f"{path}: question id '{dup}' occurs twice; every question needs its own id "
                         "so that the configurations pair")
    return rows


async def _generate_testset(spec: SweepSpec, path: Path, generator: Any, notice: Any) -> None:
    g = spec.generate
    assert g is not None
    if notice:
        notice(f"generating the test set once: {g.size} questions from {', '.join(spec.documents)} "
               f"(seed {g.seed}) -> {path}")
    corpus = load_corpus([spec.path(d) for d in spec.documents],
                         ChunkSettings(g.chunk_size, g.chunk_overlap, "words"))
    settings = (TestsetSettings(size=g.size, seed=g.seed, types=g.types) if g.types
                else TestsetSettings(size=g.size, seed=g.seed))
    gen = g.generator if g.generator is not None else generator
    result = await agenerate(corpus, gen, settings=settings, notice=notice)
    with atomic_write(path) as f:
        f.write("".join(json.dumps(r, ensure_ascii=False) + "\n" for r in result.rows))


def plan_sweep(spec: SweepSpec, rows: Sequence[Mapping[str, Any]], store: Store | None = None, *,
               judge: Any = None, embedder: Any = None) -> SweepPlan:
    """Count what running ``spec`` on ``rows`` will do (the dry-run); ``judge``/``embedder``:
    those that replace the file's (they decide which finished runs are reused)."""
    fp = _fingerprint(spec, rows, judge=judge, embedder=embedder)
    existing = set()
    if store is not None:
        existing = {r.id for r in store.runs() if r.status == "completed"}
    todo = [c for c in spec.configurations if run_id_for(spec, c, fp) not in existing]
    retrieval, judge_metrics = _split_metrics(spec.metrics)
    judged = judged_ids(rows, spec.judge_questions, spec.judge_out_of_scope)
    n_judged = sum(1 for r in rows if _row_id(r) in judged)
    oos = sum(1 for r in rows if _is_oos(r))
    rewrites = answers = ptok = ctok = target_calls = 0
    notes: list[str] = []
    q_tokens = {_row_id(r): _tokens(str(r.get("question", ""))) for r in rows}
    if spec.reference:
        # rewrites depend on the question, the generator and their number only: one per question
        seen_rw: set[tuple[str, str, int]] = set()
        for c in todo:
            cfg = PipelineConfig.from_mapping(c.params)
            for r in rows:
                rid = _row_id(r)
                if cfg.retrieval == "fusion" and (rid, cfg.generator, cfg.fusion_queries) not in seen_rw:
                    seen_rw.add((rid, cfg.generator, cfg.fusion_queries))
                    rewrites += 1
                    ptok += REWRITE_TEMPLATE_TOKENS + q_tokens[rid]
                    ctok += 60 * cfg.fusion_queries + 40
                if rid in judged:
                    answers += 1
                    ptok += ANSWER_TEMPLATE_TOKENS + q_tokens[rid] + cfg.top_k * cfg.chunk_size
                    ctok += cfg.max_answer_tokens
    else:
        target_calls = len(todo) * len(rows)
        if spec.factory is not None:
            notes.append(f"the factory builds one pipeline per configuration to run ({len(todo)}); each "
                         "answers every question")
        notes.append("the system under test generates its own answers: its tokens are not counted here")
    # judge steps: per judged question, the steps of the metrics that run on it (a metric's own
    # rules decide: abstention(scope=out_of_scope) only on out-of-scope questions, ...)
    chosen = [m for m in resolve_metrics(list(spec.metrics)) if m.key in judge_metrics]
    steps: int | None = 0 if all(m.name in JUDGE_STEPS for m in chosen) else None
    if steps is not None:
        for r in rows:
            if _row_id(r) not in judged:
                continue
            probe = sample_from_mapping({**_sample_row(r, spec.baseline, spec, judged=True, response="x",
                                                       contexts=["x"], ids=["x"], spans=[None], meta={}),
                                         "response": "x"})[0]
            union: set[str] = set()
            for m in chosen:
                if m.missing(probe) is None:
                    union |= JUDGE_STEPS[m.name]
            steps += len(union) * len(todo)
    return SweepPlan(
        configurations=len(spec.configurations), to_run=len(todo),
        reused=len(spec.configurations) - len(todo), questions=len(rows), out_of_scope=oos,
        judged=n_judged, target_calls=target_calls, generator_rewrites=rewrites,
        generator_answers=answers, generator_prompt_tokens=ptok, generator_completion_tokens=ctok,
        judge_samples=n_judged * len(todo) if judge_metrics else 0, judge_steps=steps if judge_metrics else 0,
        judge_metrics=tuple(judge_metrics), retrieval_metrics=tuple(retrieval), notes=tuple(notes),
    )


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


async def asweep(
    source: str | os.PathLike[str] | Mapping[str, Any] | SweepSpec,
    *,
    store: str | os.PathLike[str] | Store = "ragsight.db",
    judge: Any = None,
    embedder: Any = None,
    target: Callable[..., Any] | None = None,
    factory: Callable[..., Any] | None = None,
    pipeline: RagPipeline | None = None,
    backend: str = "local",
    ray_address: str | None = None,
    progress: Callable[[str, ConfigRun, int, int], None] | None = None,
    eval_progress: Progress | None = None,
    notice: Any = None,
    preflight: bool = True,
) -> SweepResult:
    """Run a sweep: answer the test set in every configuration and evaluate each as a run.

    ``source``: a sweep file (.toml, .yaml), a dict or a :class:`SweepSpec`. ``judge`` /
    ``embedder``: for the judge metrics (specs or instances; default: the sweep's own, else the
    embedded ones). ``target``: a Python callable ``fn(question, **config)`` to sweep instead of
    the definition's pipeline. ``factory``: a LangChain / LlamaIndex pipeline factory
    ``make_pipeline(**config)`` returning an LCEL runnable or a query engine, built once per
    configuration and asked through ``ragsight.integrations`` (docs/integrations/).
    ``pipeline``: a ready :class:`RagPipeline` (tests). ``progress`` is called with (event, run,
    index, total) as configurations start and finish.
    """
    spec = load_sweep(source)
    if target is not None and factory is not None:
        raise ConfigError("give sweep(..., target=fn) or sweep(..., factory=fn), not both")
    if target is not None:
        spec = SweepSpec(**{**spec.__dict__, "target": "callable", "factory": None})
    elif factory is not None:
        spec = SweepSpec(**{**spec.__dict__, "factory": "callable", "target": None})
    elif spec.target == "callable":
        raise ConfigError("the sweep's pipeline is 'callable': pass the function, sweep(..., target=fn)")
    elif spec.factory == "callable":
        raise ConfigError("the sweep's pipeline factory is 'callable': pass it, sweep(..., factory=make_pipeline)")
    if spec.target is not None and spec.factory is not None:
        raise ConfigError("the sweep names a target and a pipeline factory: give one")
    make: Callable[..., Any] | None = None
    if spec.factory is not None:
        make = factory if factory is not None else load_factory(spec.factory)
    own_store = not isinstance(store, Store)
    st = store if isinstance(store, Store) else Store(store)
    t0 = time.monotonic()
    judge_spec = judge if judge is not None else spec.judge
    emb_spec = embedder if embedder is not None else spec.embedder
    shared_emb: Any = None
    own: list[Any] = []
    try:
        rows = await _load_rows(spec, st, judge_spec, notice)
        _, judge_metrics = _split_metrics(spec.metrics)
        fp = _fingerprint(spec, rows, judge=judge_spec, embedder=emb_spec)
        judged = judged_ids(rows, spec.judge_questions, spec.judge_out_of_scope)
        needs_embedder = any(m.needs_embedder for m in resolve_metrics(list(spec.metrics)))
        if needs_embedder or spec.reference:
            base = make_embedder(emb_spec, base_url=spec.base_url, notice=notice)
            own.append(base)
            shared_emb = _SharedEmbedder(base)
        if spec.reference and pipeline is None:
            pipeline = RagPipeline(
                [spec.path(d) for d in spec.documents], store=st,
                embedders={"local": shared_emb} if (emb_spec in (None, "local")) else None,
                base_url=spec.base_url, notice=notice,
            )
            own.append(pipeline)
        locator: SpanLocator | None = None
        if make is not None and spec.documents:  # to place the factory's chunks in the documents
            locator = SpanLocator(load_corpus([spec.path(d) for d in spec.documents]).documents)
        elif make is not None and notice and any(m.startswith("span_") for m in spec.metrics):
            notice("the span metrics need each retrieved chunk's document span: name the sweep's documents "
                   "(the chunks are found in them) or give doc_id, start and end in each chunk's metadata")
        eval_judge: Any = judge_spec
        if judge_metrics and not isinstance(judge_spec, Judge):
            eval_judge = make_judge(judge_spec, base_url=spec.base_url, notice=notice)
            own.append(eval_judge)
        total = len(spec.configurations)
        runs = [ConfigRun(config, run_id_for(spec, config, fp)) for config in spec.configurations]

        async def one(i: int, run: ConfigRun) -> None:
            config = run.config
            if progress:
                progress("start", run, i, total)
            c0 = time.monotonic()
            known = {r.id: r.status for r in st.runs()}
            meta = {"sweep": spec.name, "sweep_config": config.label, "config_id": config.id,
                    "baseline": i == spec.baseline_index, **dict(config.params)}
            # a Ray cluster's workers build their own judge and embedder from the specs
            on_ray = backend == "ray"
            common: dict[str, Any] = dict(
                judge=JudgeSpec(judge_spec if on_ray else eval_judge, base_url=spec.base_url),
                embedder=emb_spec if on_ray else shared_emb, store=st,
                options=RunOptions(backend=backend, ray_address=ray_address, progress=eval_progress,
                                   notice=notice, preflight=preflight))
            if known.get(run.run_id) == "completed":
                run.status = "reused"
                run.result = load_result(st, run.run_id)
            elif run.run_id in known:
                run.result = await aevaluate(None, resume=run.run_id, **common)
                run.status = run.result.status
            else:
                if spec.reference:
                    assert pipeline is not None
                    samples = await _answer_reference(pipeline, rows, config, spec, judged, run)
                elif make is not None:
                    samples = await _answer_factory(make, rows, config, spec, judged, run, locator)
                else:
                    samples = await _answer_target(target if target is not None else spec.target, rows,
                                                   config, spec, judged, run, st)
                run.result = await aevaluate(samples, list(spec.metrics), metadata=meta, run_id=run.run_id,
                                             **common)
                run.status = run.result.status
            run.seconds = time.monotonic() - c0
            if progress:
                progress("done", run, i, total)

        def finished(run: ConfigRun) -> bool:
            return any(r.id == run.run_id and r.status == "completed" for r in st.runs())

        # Each configuration is claimed in the store while it is answered and evaluated: a second
        # sweep of the same file on the same store runs the others meanwhile, then waits for the
        # claimed ones and reuses them (nothing is paid twice, no run is written by two).
        deferred: list[tuple[int, ConfigRun]] = []
        for i, run in enumerate(runs):
            holder = None if finished(run) else st.claim(run.run_id)
            if holder is not None:
                deferred.append((i, run))
                if notice:
                    notice(f"configuration {run.config.label} is being run by another sweep ({holder}); "
                           "the others first, then it is reused from the store")
                continue
            try:
                await one(i, run)
            finally:
                st.release(run.run_id)
        for i, run in deferred:
            said = time.monotonic()
            while not finished(run):
                held_by = st.claim(run.run_id)
                if held_by is None:  # its holder stopped before finishing it: this sweep continues it
                    break
                if notice and time.monotonic() - said > 30:
                    notice(f"still waiting for configuration {run.config.label} ({held_by})")
                    said = time.monotonic()
                await asyncio.sleep(_CLAIM_POLL_S)
            try:
                await one(i, run)
            finally:
                st.release(run.run_id)
        return SweepResult(spec, runs, time.monotonic() - t0, st.path)
    finally:
        for obj in reversed(own):
            await obj.aclose()
        if own_store:
            st.close()


def sweep(source: str | os.PathLike[str] | Mapping[str, Any] | SweepSpec, **kwargs: Any) -> SweepResult:
    """Synchronous :func:`asweep`.

    Example::

        def my_rag(question, top_k, chunk_size):
            ...
            return {"answer": ..., "contexts": [{"id", "text", "doc_id", "start", "end"}]}

        result = ragsight.sweep({"name": "mine", "testset": "ts.jsonl", "pipeline": {"target": "x"},
                                 "grid": {"top_k": [3, 5], "chunk_size": [256, 512]}},
                                target=my_rag, store="runs.db")
    """
    return asyncio.run(asweep(source, **kwargs))
