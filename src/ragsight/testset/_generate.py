"""Generating a test set: the driver that asks for candidates, filters them and writes the rows.

Candidates are generated in rounds: each round asks for as many candidates of a type as it still
lacks, and acceptance (including the near-duplicate check) is decided in plan order after the
round, so concurrency never changes the result. A type stops after ``attempts`` times its quota
of candidates. What differs by kind of question is the kind's own (``_kinds.py``); the plan and
the settings are in ``_plan.py``.
"""

from __future__ import annotations

import asyncio
import os
import time
from collections import Counter
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from .._version import __version__
from ..embed import make_embedder
from ..judge import Judge, JudgeFailedError, make_judge
from ..prompts import load_prompt, neutralise
from ._chunk import Chunk
from ._filter import (
    critique,
    deterministic_checks,
    normalise_question,
    numbered,
)
from ._ingest import Corpus, load_corpus
from ._kind import CandidateSpec, Outcome
from ._kinds import KIND, QUESTION_TYPES
from ._out_of_scope import related_chunks
from ._plan import STYLES, STYLES_VERSION, TestsetSettings, plan
from ._scenarios import SCENARIO_TYPES, scenario_candidate, scenario_row

__all__ = [
    "GenerationResult",
    "agenerate",
    "reference_spans",
]


@dataclass
class GenerationResult:
    """The accepted rows (JSON-ready dicts, loadable by ``ragsight evaluate`` and ``run``), the
    rejected candidates with reasons, counts, and the spend of the generator and critic."""

    rows: list[dict[str, Any]]
    rejected: list[dict[str, Any]]
    quotas: dict[str, int]
    notes: list[str]
    generator_stats: dict[str, Any]
    critic_stats: dict[str, Any]
    seconds: float
    candidates: int = 0

    @property
    def rejected_by_reason(self) -> dict[str, int]:
        counts: Counter[str] = Counter()
        for r in self.rejected:
            counts.update(r["reasons"])
        return dict(sorted(counts.items(), key=lambda kv: (-kv[1], kv[0])))

    @property
    def acceptance_rate(self) -> float | None:
        return len(self.rows) / self.candidates if self.candidates else None

    @property
    def by_type(self) -> dict[str, int]:
        return dict(Counter(r["metadata"]["question_type"] for r in self.rows))


class _Run:
    def __init__(
        self,
        corpus: Corpus,
        generator: Judge,
        critic: Judge,
        embedder: Any,
        settings: TestsetSettings,
    ) -> None:
        self.corpus = corpus
        self.by_id = {c.id: c for c in corpus.chunks}
        self.generator = generator
        self.critic = critic
        self.embedder = embedder
        self.settings = settings

    async def candidate(self, spec: CandidateSpec) -> Outcome:
        kind = KIND[spec.question_type]
        out = Outcome(spec)
        chunks = tuple(self.by_id[c] for c in spec.chunk_ids)
        if spec.question_type in SCENARIO_TYPES:
            await scenario_candidate(out, chunks, self.generator, self.critic, STYLES[spec.style], self.settings.filter,
                                     lambda text: related_chunks(self.corpus, text, spec.chunk_ids[0],
                                                                 self.settings.critic_sample))
            return out
        prompt = load_prompt(kind.prompt)
        out.prompts[prompt.id] = prompt.version
        values = {
            "contexts": numbered(c.text for c in chunks),
            "style": STYLES[spec.style],
            "shared": ", ".join(neutralise(s) for s in spec.shared) or "-",
        }
        try:
            answer = await self.generator.ask(prompt, values, kind.validate, max_tokens=480)
        except JudgeFailedError as exc:
            out.reasons.append("generation_failed")
            out.details["error"] = str(exc)
            return out
        gen = answer.value
        out.question = gen.question
        kind.take(out, gen, chunks)
        reasons, details = deterministic_checks(
            spec.question_type,
            out.question,
            out.reference,
            [c.text for c in chunks],
            self.settings.filter,
        )
        out.details.update(details)
        reasons = kind.more_checks(out, gen, chunks, self.settings.filter, reasons)
        if reasons:
            out.reasons.extend(reasons)
            return out
        texts, cprompt = kind.critic_view(self.corpus, out, chunks, self.settings.critic_sample)
        out.prompts[cprompt] = load_prompt(cprompt).version
        reasons, verdict, _ = await critique(
            self.critic, spec.question_type, out.question, out.reference, texts
        )
        if verdict is not None:
            out.details["critic_reason"] = verdict.reason
        out.reasons.extend(reasons)
        return out

    async def embed(self, questions: list[str]) -> np.ndarray | None:
        if self.embedder is None or not questions:
            return None
        vectors: np.ndarray = await self.embedder.embed(questions, kind="query")
        return vectors


async def agenerate(
    corpus: Corpus | str | os.PathLike[str] | Sequence[str | os.PathLike[str]],
    generator: Judge | str | None = None,
    critic: Judge | str | None = None,
    embedder: Any = "local",
    settings: TestsetSettings | None = None,
    progress: Any = None,
    notice: Any = None,
) -> GenerationResult:
    """Generate and filter a test set.

    ``corpus``: a :class:`Corpus` or the documents to load (a folder, a file, a list).
    ``generator`` and ``critic``: a Judge or a judge spec (``"openai:MODEL"``, ``"local"``...;
    None is the embedded judge); the critic defaults to the generator. ``embedder``: an Embedder,
    a spec (``"local"``, ``"openai:MODEL"``), or None for exact-duplicate removal only.
    ``progress`` is called with (accepted, wanted, tried) as each candidate is checked and after
    each round. Judges made here from specs are closed at the end; judges passed in are not.
    """
    st = settings or TestsetSettings()
    if not isinstance(corpus, Corpus):
        corpus = load_corpus(corpus)
    own: list[Judge] = []
    if not isinstance(generator, Judge):
        generator = make_judge(generator, notice=notice)
        own.append(generator)
    if critic is None:
        critic = generator
    elif not isinstance(critic, Judge):
        critic = make_judge(critic, notice=notice)
        own.append(critic)
    own_embedder = embedder is not None and (isinstance(embedder, str))
    if isinstance(embedder, str):
        embedder = None if embedder == "none" else make_embedder(embedder, notice=notice)
    try:
        return await _generate(corpus, generator, critic, embedder, st, progress)
    finally:
        for j in own:
            await j.aclose()
        if own_embedder and embedder is not None:
            await embedder.aclose()


async def _generate(
    corpus: Corpus,
    generator: Judge,
    critic: Judge,
    embedder: Any,
    st: TestsetSettings,
    progress: Any,
) -> GenerationResult:
    specs, quota, notes = plan(corpus, st)
    run = _Run(corpus, generator, critic, embedder, st)
    t0 = time.monotonic()
    accepted: list[tuple[tuple[int, int], Outcome]] = []
    rejected: list[Outcome] = []
    seen_norm: set[str] = set()
    kept_vectors: list[np.ndarray] = []
    counts = dict.fromkeys(specs, 0)
    next_spec = dict.fromkeys(specs, 0)
    tried = 0
    type_rank = {t: i for i, t in enumerate(QUESTION_TYPES)}
    # Candidates in flight: no more than the judges take at once. A step's deadline runs while it
    # waits for the judge, so queueing a whole round behind an in-process model (one call at a
    # time) would make the later steps time out before they are sent.
    limit = max(1, min(generator.provider.max_concurrency, critic.provider.max_concurrency))
    sem = asyncio.Semaphore(limit)

    finished = 0  # candidates of the current round checked so far

    async def bounded(spec: CandidateSpec) -> Outcome:
        nonlocal finished
        async with sem:
            outcome = await run.candidate(spec)
        # A heartbeat per candidate: with an in-process model a round of candidates takes many
        # minutes, and a generate that printed nothing for 47 minutes looked hung.
        finished += 1
        if progress is not None:
            progress(sum(counts.values()), st.size, tried + finished)
        return outcome

    while True:
        batch: list[CandidateSpec] = []
        for t, lst in specs.items():
            need = quota[t] - counts[t]
            take = lst[next_spec[t] : next_spec[t] + max(0, need)]
            next_spec[t] += len(take)
            batch.extend(take)
        if not batch:
            break
        batch.sort(key=lambda s: (s.index, type_rank[s.question_type]))
        finished = 0
        outcomes = await asyncio.gather(*(bounded(s) for s in batch))
        tried += len(batch)
        passing = [o for o in outcomes if not o.reasons]
        vectors = await run.embed([o.question for o in passing])
        vec_of = {id(o): vectors[i] for i, o in enumerate(passing)} if vectors is not None else {}
        for o in outcomes:
            if not o.reasons:
                norm = normalise_question(o.question)
                sim = 0.0
                v = vec_of.get(id(o))
                if v is not None and kept_vectors:
                    sims = np.vstack(kept_vectors) @ v
                    best = int(np.argmax(sims))
                    sim = float(sims[best])
                    o.details["max_similarity"] = round(sim, 4)
                if norm in seen_norm or sim >= st.filter.dedup_threshold:
                    o.reasons.append("duplicate")
                else:
                    seen_norm.add(norm)
                    if v is not None:
                        kept_vectors.append(v)
            if o.reasons:
                rejected.append(o)
            else:
                counts[o.spec.question_type] += 1
                accepted.append(((o.spec.index, type_rank[o.spec.question_type]), o))
        if progress is not None:
            progress(sum(counts.values()), st.size, tried)
    for t, q in quota.items():
        if q and counts.get(t, 0) < q:
            notes.append(
                f"{t}: {counts.get(t, 0)} of {q} accepted after {next_spec.get(t, 0)} candidates"
            )
    accepted.sort(key=lambda kv: kv[0])
    prompts_common = {"styles": STYLES_VERSION}
    rows = [_row(o, generator, critic, st, prompts_common) for _, o in accepted]
    rej = [_rejected_row(o, st) for o in rejected]
    return GenerationResult(
        rows=rows,
        rejected=rej,
        quotas={t: q for t, q in quota.items() if q},
        notes=notes,
        generator_stats=generator.stats.to_dict(),
        critic_stats=critic.stats.to_dict() if critic is not generator else {},
        seconds=time.monotonic() - t0,
        candidates=tried,
    )


def _row(
    o: Outcome, generator: Judge, critic: Judge, st: TestsetSettings, common: Mapping[str, str]
) -> dict[str, Any]:
    ids = [c.id for c in o.contexts]
    meta: dict[str, Any] = {
        "question_type": o.spec.question_type,
        "style": o.spec.style,
        "reference_context_ids": ids,
        "source_chunk_ids": list(o.spec.chunk_ids),
        "testset_generator": generator.name,
        "testset_critic": critic.name,
        "seed": st.seed,
        "prompts": {**o.prompts, **common},
        "ragsight_version": __version__,
    }
    spans = reference_spans(o.contexts)
    if spans:
        meta["reference_spans"] = spans
    if o.spec.shared:
        meta["shared_entities"] = list(o.spec.shared)
    for key in (
        "critic_reason",
        "grounding",
        "copied_ngram",
        "max_similarity",
        "missing",
        "critic_chunks",
        "tokens_per_context",
    ):
        if key in o.details:
            meta[key] = o.details[key]
    if o.spec.question_type in SCENARIO_TYPES:
        return scenario_row(o, meta)
    return KIND[o.spec.question_type].row(o, meta, ids)


def reference_spans(chunks: Sequence[Chunk]) -> list[dict[str, Any]]:
    """The document spans of reference chunks, ``{"doc_id", "start", "end"}`` (character offsets
    in the document's text), independent of any chunking that is later evaluated. Chunks read
    as given from a ``.jsonl`` file have no span and are left out."""
    return [
        {"doc_id": c.doc_id, "start": c.start, "end": c.end}
        for c in chunks
        if c.start is not None and c.end is not None
    ]


def _rejected_row(o: Outcome, st: TestsetSettings) -> dict[str, Any]:
    return {
        "question_type": o.spec.question_type,
        "candidate": o.spec.index,
        "style": o.spec.style,
        "question": o.question or None,
        "reference": o.reference or None,
        "source_chunk_ids": list(o.spec.chunk_ids),
        "reasons": list(dict.fromkeys(o.reasons)),
        "details": o.details,
        "seed": st.seed,
    }
