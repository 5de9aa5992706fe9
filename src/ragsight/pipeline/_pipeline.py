"""The reference RAG pipeline: documents -> chunks -> index -> top-k -> answer.

Each stage is cached by content, so a sweep that adds one configuration pays only for what that
configuration changes:

- chunking (a document's text and the chunk settings) and the indexes are kept in memory for the
  pipeline's life (both are cheap to rebuild);
- embeddings are cached per (embedder, query or passage, text) in the run store's cache table;
- the generator's steps (query rewrites, answers) go through a :class:`ragsight.judge.Judge` with
  the store's call cache: a step is keyed by the model, the prompt's hash and the full rendered
  prompt, so the same question with the same retrieved chunks is answered once, whatever
  configuration asks; its tokens and latency are recorded beside it, so a cached answer still
  reports what it cost when it was made.

Generation uses the prompt ``rag_answer`` (this package's ``prompts/``), adapted from the
thesis's template (answer from the context only; say so when it does not answer; no citations, no
speculation); RAG-fusion's rewrites use ``rag_rewrite``. Both ask for a small JSON object, so any
judge-style provider (the embedded model, an OpenAI-compatible server) can generate.
"""

from __future__ import annotations

import asyncio
import base64
import hashlib
import os
import time
from collections.abc import Iterable, Mapping, Sequence
from contextvars import ContextVar
from dataclasses import dataclass, field
from importlib import resources
from typing import Any

import numpy as np

from ..embed import make_embedder
from ..errors import InputError, OutputError, RagsightError
from ..judge import CallCache, Judge, JudgeFailedError, MemoryCallCache, RetryPolicy, make_judge
from ..prompts import Prompt, fence, load_prompt_file
from ..store import SQLiteCallCache, Store
from ..testset import Chunk, ChunkSettings, Corpus, chunk_document, load_corpus
from ._config import PipelineConfig
from ._index import BM25Index, DenseIndex, reciprocal_rank_fusion

__all__ = ["GenerationError", "RagAnswer", "RagPipeline", "RetrievedChunk", "StageCache",
           "pipeline_prompt", "spans_of"]


def pipeline_prompt(name: str) -> Prompt:
    """``rag_answer`` or ``rag_rewrite``, from this package's prompt files."""
    path = resources.files(__package__).joinpath("prompts").joinpath(f"{name}.txt")
    return load_prompt_file(str(path))


@dataclass(frozen=True)
class RetrievedChunk:
    """One retrieved chunk, with its document span (character offsets in the document's text)."""

    id: str
    doc_id: str
    start: int | None
    end: int | None
    text: str
    score: float
    rank: int

    def to_context(self) -> dict[str, Any]:
        return {"id": self.id, "text": self.text, "doc_id": self.doc_id, "start": self.start,
                "end": self.end, "score": round(self.score, 6)}


# The seconds the cached vectors of the current question's retrieval took to make (per task: each
# question is answered in its own task, so concurrent questions do not mix their sums).
_REPLAYED: ContextVar[list[float] | None] = ContextVar("ragsight_pipeline_replayed", default=None)


@dataclass(frozen=True)
class RagAnswer:
    """What the pipeline did for one question in one configuration.

    ``answer`` is None when only retrieval was asked. ``retrieval_s``: retrieval time in this
    call (embedding the question included: a query vector read from the cache counts at its share
    of the time of the batch that made it; loading the embedder and building the index are not
    included); ``generation_s`` and the token counts: the
    generator's work for this answer (rewrites and answer) as measured when it was made, so a
    cached answer reports the same cost as a fresh one. ``generator_calls``: calls actually sent
    to the generator by this call (0 when every step came from the cache).
    """

    question: str
    config: PipelineConfig
    contexts: tuple[RetrievedChunk, ...]
    answer: str | None
    rewrites: tuple[str, ...] = ()
    retrieval_s: float = 0.0
    generation_s: float = 0.0
    prompt_tokens: int = 0
    completion_tokens: int = 0
    generator_calls: int = 0
    generator_steps: tuple[str, ...] = ()
    generator_model: str | None = None

    def to_reply(self) -> dict[str, Any]:
        """The reply as a target returns it (``ragsight.testset`` reads it)."""
        out: dict[str, Any] = {"answer": self.answer or "",
                               "contexts": [c.to_context() for c in self.contexts]}
        if self.generator_model:
            out["model"] = self.generator_model
        return out


class StageCache:
    """Content-keyed records of the pipeline's stages: in the run store's cache table (shared
    with the judge cache, keys prefixed ``pipeline/``), or in memory."""

    def __init__(self, store: Store | None = None) -> None:
        self.store = store
        self._mem: dict[str, dict[str, Any]] = {}

    def get(self, key: str) -> dict[str, Any] | None:
        if self.store is not None:
            return self.store.cache_get("pipeline/" + key)
        return self._mem.get(key)

    def put(self, key: str, entry: dict[str, Any]) -> None:
        if self.store is not None:
            self.store.cache_put("pipeline/" + key, entry)
        else:
            self._mem[key] = entry


def _digest(*parts: str) -> str:
    return hashlib.sha256("\x1f".join(parts).encode()).hexdigest()


def _pack(v: np.ndarray) -> str:
    return base64.b64encode(np.asarray(v, dtype=np.float32).tobytes()).decode()


def _unpack(s: str) -> np.ndarray:
    return np.frombuffer(base64.b64decode(s), dtype=np.float32)


@dataclass
class _Chunking:
    chunks: list[Chunk]
    dense: dict[str, DenseIndex] = field(default_factory=dict)  # by embedder spec
    bm25: BM25Index | None = None


def _validate_answer(data: dict[str, Any]) -> str:
    answer = data.get("answer")
    if not isinstance(answer, str) or not answer.strip():
        raise OutputError('"answer" must be a non-empty string')
    return " ".join(answer.split())


def _queries_validator(n: int) -> Any:
    def validate(data: dict[str, Any]) -> tuple[str, ...]:
        qs = data.get("queries")
        if not isinstance(qs, list) or not all(isinstance(q, str) and q.strip() for q in qs):
            raise OutputError('"queries" must be a list of non-empty strings')
        if len(qs) != n:
            raise OutputError(f'"queries" must hold exactly {n} queries, not {len(qs)}')
        return tuple(" ".join(q.split()) for q in qs)

    return validate


class RagPipeline:
    """A small, complete RAG pipeline to tune before you build your own, and the system behind
    ``ragsight sweep --example``.

    ``documents``: a :class:`~ragsight.testset.Corpus` or what ``ragsight generate`` reads (a
    folder, files of type .txt .md .html .pdf .docx). ``store``: where stage results are cached
    (a :class:`~ragsight.store.Store`; None keeps them in memory). ``embedders`` / ``generators``:
    instances to use for given specs (tests pass deterministic ones); other specs are made with
    ``make_embedder`` / ``make_judge`` (``base_url`` for OpenAI-compatible servers).
    """

    def __init__(
        self,
        documents: Corpus | str | os.PathLike[str] | Sequence[str | os.PathLike[str]],
        *,
        store: Store | None = None,
        embedders: Mapping[str, Any] | None = None,
        generators: Mapping[str, Any] | None = None,
        base_url: str | None = None,
        embedder_base_url: str | None = None,
        policy: RetryPolicy | None = None,
        notice: Any = None,
    ) -> None:
        corpus = documents if isinstance(documents, Corpus) else load_corpus(documents)
        if not corpus.documents:
            raise InputError("the reference pipeline chunks documents itself: give documents "
                             "(.txt .md .html .pdf .docx), not pre-chunked .jsonl")
        self.documents = corpus.documents
        self.cache = StageCache(store)
        self._call_cache: CallCache = SQLiteCallCache(store) if store is not None and store.path != ":memory:" \
            else MemoryCallCache()
        self._given_embedders = dict(embedders or {})
        self._given_generators = dict(generators or {})
        self._embedders: dict[str, Any] = {}
        self._generators: dict[str, Judge] = {}
        self._ready: dict[str, asyncio.Task[None]] = {}
        self._own: list[Any] = []
        self._chunkings: dict[tuple[int, int], _Chunking] = {}
        self.base_url = base_url
        self.embedder_base_url = embedder_base_url
        self.policy = policy
        self.notice = notice
        self._lock = asyncio.Lock()
        self.answer_prompt = pipeline_prompt("rag_answer")
        self.rewrite_prompt = pipeline_prompt("rag_rewrite")

    # ---- components --------------------------------------------------------------------------

    def embedder(self, spec: str) -> Any:
        if spec not in self._embedders:
            given = self._given_embedders.get(spec)
            if given is not None:
                self._embedders[spec] = given
            else:
                emb = make_embedder(spec, base_url=self.embedder_base_url or self.base_url,
                                    notice=self.notice)
                self._embedders[spec] = emb
                self._own.append(emb)
        return self._embedders[spec]

    def generator(self, spec: str) -> Judge:
        if spec not in self._generators:
            given = self._given_generators.get(spec)
            base = given if given is not None else make_judge(spec, base_url=self.base_url,
                                                             policy=self.policy)
            judge = make_judge(base).for_run(cache=self._call_cache)
            self._generators[spec] = judge
            if given is None:
                self._own.append(judge)
        return self._generators[spec]

    def chunks(self, config: PipelineConfig) -> list[Chunk]:
        return self._chunking(config).chunks

    def _chunking(self, config: PipelineConfig) -> _Chunking:
        key = (config.chunk_size, config.chunk_overlap)
        if key not in self._chunkings:
            settings = ChunkSettings(config.chunk_size, config.chunk_overlap, "tokens")
            chunks = [c for d in self.documents for c in chunk_document(d.id, d.text, settings)]
            self._chunkings[key] = _Chunking(chunks)
        return self._chunkings[key]

    async def embed(self, spec: str, texts: Sequence[str], kind: str) -> np.ndarray:
        """Vectors for ``texts``, from the stage cache where present; the rest in one batch."""
        emb = self.embedder(spec)
        name = getattr(emb, "name", spec)
        keys = [f"emb/{_digest(name, kind, t)}" for t in texts]
        rows: list[np.ndarray | None] = []
        replayed = 0.0  # what the vectors read from the cache took to make
        for k in keys:
            hit = self.cache.get(k)
            rows.append(_unpack(hit["v"]) if hit is not None else None)
            if hit is not None and isinstance(hit.get("s"), (int, float)):
                replayed += float(hit["s"])
        todo = [i for i, r in enumerate(rows) if r is None]
        if todo:
            t0 = time.monotonic()
            fresh = np.asarray(await emb.embed([texts[i] for i in todo], kind=kind), dtype=np.float32)
            share = round((time.monotonic() - t0) / len(todo), 6)
            for j, i in enumerate(todo):
                rows[i] = fresh[j]
                self.cache.put(keys[i], {"v": _pack(fresh[j]), "s": share})
        timing = _REPLAYED.get()
        if timing is not None:
            timing.append(replayed)
        return np.vstack([r for r in rows if r is not None]) if rows else np.zeros((0, 0), np.float32)

    async def _dense(self, config: PipelineConfig) -> DenseIndex:
        ch = self._chunking(config)
        if config.embedder not in ch.dense:
            async with self._lock:  # concurrent questions build one index, once
                if config.embedder not in ch.dense:
                    vectors = await self.embed(config.embedder, [c.text for c in ch.chunks], "passage")
                    ch.dense[config.embedder] = DenseIndex(vectors)
        return ch.dense[config.embedder]

    def _bm25(self, config: PipelineConfig) -> BM25Index:
        ch = self._chunking(config)
        if ch.bm25 is None:
            ch.bm25 = BM25Index([c.text for c in ch.chunks])
        return ch.bm25

    async def prepare(self, config: PipelineConfig) -> None:
        """Make ready what answering in ``config`` needs, once per pipeline: the embedder's model
        (a local one is otherwise loaded by its first query), the chunking's dense index (its
        passages embedded) and BM25 index. :meth:`answer` calls it before it starts timing, so a
        question's retrieval time holds no loading; the generator's model is loaded before its
        first timed call too."""
        if config.retrieval in ("dense", "hybrid", "fusion"):
            ready = self._ready.get(f"embedder/{config.embedder}")
            if ready is None:
                load = getattr(self.embedder(config.embedder), "load", None)
                ready = self._ready[f"embedder/{config.embedder}"] = asyncio.ensure_future(
                    load() if callable(load) else asyncio.sleep(0))
            await asyncio.shield(ready)
            await self._dense(config)
        if config.retrieval in ("bm25", "hybrid"):
            self._bm25(config)

    # ---- retrieval ---------------------------------------------------------------------------

    async def _dense_ranking(self, config: PipelineConfig, queries: Sequence[str], depth: int) -> list[list[tuple[int, float]]]:
        index = await self._dense(config)
        vectors = await self.embed(config.embedder, list(queries), "query")
        return [index.search(v, depth) for v in vectors]

    async def rewrites(self, question: str, config: PipelineConfig) -> tuple[tuple[str, ...], dict[str, Any]]:
        """RAG-fusion's query rewrites: (queries, cost record)."""
        n = config.fusion_queries
        gen = self.generator(config.generator)
        values = {"question": fence("question", question), "n": str(n)}
        return await self._ask(gen, self.rewrite_prompt, values, _queries_validator(n),
                               count=n, max_tokens=60 * n + 40)

    async def retrieve(self, question: str, config: PipelineConfig) -> tuple[list[RetrievedChunk], tuple[str, ...], dict[str, Any]]:
        """The top ``config.top_k`` chunks for ``question``; RAG-fusion's rewrites and their
        cost record (empty for the other methods)."""
        chunks = self._chunking(config).chunks
        k, depth = config.top_k, max(config.candidates, config.top_k)
        rewrites: tuple[str, ...] = ()
        cost: dict[str, Any] = {}
        if config.retrieval == "dense":
            ranked = [(chunks[i].id, s) for i, s in (await self._dense_ranking(config, [question], k))[0]]
        elif config.retrieval == "bm25":
            ranked = [(chunks[i].id, s) for i, s in self._bm25(config).search(question, k)]
        elif config.retrieval == "hybrid":
            dense = (await self._dense_ranking(config, [question], depth))[0]
            lexical = self._bm25(config).search(question, depth)
            ranked = reciprocal_rank_fusion([[chunks[i].id for i, _ in dense],
                                             [chunks[i].id for i, _ in lexical]], config.rrf_k)[:k]
        else:  # fusion
            rewrites, cost = await self.rewrites(question, config)
            lists = await self._dense_ranking(config, [question, *rewrites], depth)
            ranked = reciprocal_rank_fusion([[chunks[i].id for i, _ in hits] for hits in lists],
                                            config.rrf_k)[:k]
        by_id = {c.id: c for c in chunks}
        out = [
            RetrievedChunk(cid, by_id[cid].doc_id, by_id[cid].start, by_id[cid].end, by_id[cid].text,
                           score, rank)
            for rank, (cid, score) in enumerate(ranked[:k], start=1)
        ]
        return out, rewrites, cost

    # ---- generation --------------------------------------------------------------------------

    async def _ask(self, gen: Judge, prompt: Prompt, values: Mapping[str, str], validate: Any,
                   *, count: int | None = None, max_tokens: int) -> tuple[Any, dict[str, Any]]:
        # load the model (the embedded one) before the first call, so its loading time is not
        # recorded as the cost of an answer
        ready = self._ready.get(gen.name)
        if ready is None:
            ready = self._ready[gen.name] = asyncio.ensure_future(gen.provider.preflight())
        await asyncio.shield(ready)
        t0 = time.monotonic()
        try:
            answer = await gen.ask(prompt, values, validate, count=count, max_tokens=max_tokens)
        except JudgeFailedError as exc:
            raise GenerationError(f"the generator ({gen.name}) failed on {prompt.id}: {exc}") from exc
        elapsed = time.monotonic() - t0
        key = f"cost/{answer.step}"
        fresh = [c for c in answer.calls if not c.cached]
        if fresh:
            # the calls' own time (from when each could go out), not the wait for the generator
            record = {"latency_s": round(sum(c.latency_s for c in fresh), 4),
                      "prompt_tokens": sum(c.prompt_tokens for c in fresh),
                      "completion_tokens": sum(c.completion_tokens for c in fresh)}
            self.cache.put(key, record)
        else:
            record = self.cache.get(key) or {"latency_s": 0.0, "prompt_tokens": 0, "completion_tokens": 0}
        return answer.value, {**record, "calls": len(fresh), "step": answer.step, "elapsed": elapsed}

    async def answer(self, question: str, config: PipelineConfig | Mapping[str, Any] | None = None,
                     *, generate: bool = True) -> RagAnswer:
        """Retrieve for ``question`` and (unless ``generate`` is False) answer it."""
        cfg = config if isinstance(config, PipelineConfig) else PipelineConfig.from_mapping(config or {})
        await self.prepare(cfg)  # loading is not answering: not in the question's retrieval time
        # a query vector reused from the cache counts at the time it took to make, as a reused
        # generator step does: a configuration is not faster for coming after another
        replayed: list[float] = []
        token = _REPLAYED.set(replayed)
        t0 = time.monotonic()
        try:
            hits, rewrites, rcost = await self.retrieve(question, cfg)
        finally:
            _REPLAYED.reset(token)
        retrieval_s = time.monotonic() - t0 - float(rcost.get("elapsed", 0.0)) + sum(replayed)
        costs = [rcost] if rcost else []
        text: str | None = None
        model = None
        if generate:
            gen = self.generator(cfg.generator)
            model = gen.model
            values = {"contexts": "\n\n".join(fence("chunk", c.text, n=c.rank) for c in hits)
                      or "(no excerpts were found)",
                      "question": fence("question", question)}
            text, acost = await self._ask(gen, self.answer_prompt, values, _validate_answer,
                                          max_tokens=cfg.max_answer_tokens)
            costs.append(acost)
        elif rewrites:
            model = self.generator(cfg.generator).model
        return RagAnswer(
            question=question, config=cfg, contexts=tuple(hits), answer=text, rewrites=rewrites,
            retrieval_s=max(0.0, retrieval_s),
            generation_s=sum(float(c.get("latency_s", 0.0)) for c in costs),
            prompt_tokens=sum(int(c.get("prompt_tokens", 0)) for c in costs),
            completion_tokens=sum(int(c.get("completion_tokens", 0)) for c in costs),
            generator_calls=sum(int(c.get("calls", 0)) for c in costs),
            generator_steps=tuple(str(c["step"]) for c in costs if "step" in c),
            generator_model=model,
        )

    def target(self, config: PipelineConfig | Mapping[str, Any], *, generate: bool = True) -> Any:
        """A callable ``fn(question)`` for ``ragsight.testset.arun``."""
        cfg = config if isinstance(config, PipelineConfig) else PipelineConfig.from_mapping(config)

        async def call(question: str) -> dict[str, Any]:
            return (await self.answer(question, cfg, generate=generate)).to_reply()

        return call

    def describe(self) -> dict[str, Any]:
        return {"documents": len(self.documents),
                "prompts": {p.id: {"version": p.version, "hash": p.hash}
                            for p in (self.answer_prompt, self.rewrite_prompt)}}

    async def aclose(self) -> None:
        for obj in self._own:
            await obj.aclose()
        self._own.clear()


class GenerationError(RagsightError):
    """The generator gave no usable output for a step after its retries and re-asks."""


def spans_of(contexts: Iterable[RetrievedChunk]) -> list[dict[str, Any] | None]:
    return [None if c.start is None or c.end is None else
            {"doc_id": c.doc_id, "start": c.start, "end": c.end} for c in contexts]
