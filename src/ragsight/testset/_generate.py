"""Synthetic test-set generation: plan candidates, generate them, filter them.

Planning is deterministic for a seed: the number of questions of each type is apportioned from
the type mix (largest remainders); each type draws its chunks and styles from its own
``random.Random(f"{seed}/{type}")``, so adding a type or changing the size of another does not
change a type's draws. Candidates are generated in rounds: each round asks for as many candidates
of a type as it still lacks, and acceptance (including the near-duplicate check) is decided in
plan order after the round, so concurrency never changes the result. A type stops after
``attempts`` times its quota of candidates.

Question types:

- ``single_hop``: one chunk; a fact stated in it.
- ``multi_context``: two chunks from different documents (or non-adjacent chunks of one document)
  that share named-entity-like tokens: capitalised words that the corpus does not also use in
  lower case, and numbers; pairs are ranked by the summed inverse document frequency of the
  shared tokens (no embedder needed).
- ``reasoning``: one chunk; the answer follows from it by one inference step.
- ``comparative``: two chunks chosen like multi-context pairs; the question compares two things.
- ``out_of_scope``: one chunk as the topic; the documents do not answer the question, and the
  reference says so.
"""

from __future__ import annotations

import asyncio
import hashlib
import math
import os
import random
import re
import time
from collections import Counter
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from .._version import __version__
from ..embed import make_embedder
from ..errors import ConfigError, OutputError
from ..judge import Judge, JudgeFailedError, make_judge
from ..prompts import load_prompt, neutralise
from ._chunk import Chunk
from ._filter import (
    FilterSettings,
    content_tokens,
    critique,
    deterministic_checks,
    normalise_question,
    numbered,
)
from ._ingest import Corpus, load_corpus
from ._scenarios import SCENARIO_TYPES, check_mix, scenario_candidate, scenario_row

__all__ = [
    "DEFAULT_STYLES",
    "DEFAULT_TYPES",
    "OUT_OF_SCOPE_REFERENCE",
    "QUESTION_TYPES",
    "STYLES",
    "CandidateSpec",
    "GenerationResult",
    "TestsetSettings",
    "agenerate",
    "entity_pairs",
    "parse_mix",
    "plan",
    "quotas",
    "reference_spans",
    "related_chunks",
]

# follow_up: a two-turn conversation (a question, then a follow-up that needs the first turn);
# not in the default mix: ask for it with --types (e.g. single_hop=0.7,follow_up=0.3)
QUESTION_TYPES = ("single_hop", "multi_context", "reasoning", "comparative", "out_of_scope", "follow_up",
                  *SCENARIO_TYPES)  # scenarios for ragsight simulate: _scenarios.py
PAIR_TYPES = ("multi_context", "comparative")

DEFAULT_TYPES: Mapping[str, float] = {
    "single_hop": 0.4,
    "multi_context": 0.2,
    "reasoning": 0.15,
    "comparative": 0.1,
    "out_of_scope": 0.15,
}
DEFAULT_STYLES: Mapping[str, float] = {
    "well_formed": 0.4,
    "keywords": 0.2,
    "informal_typos": 0.2,
    "long_detailed": 0.2,
}

STYLES_VERSION = "1"
STYLES: Mapping[str, str] = {
    "well_formed": "a clear, grammatical, complete question, as a careful writer would ask it.",
    "keywords": (
        "a short search-engine query of two to six keywords, without a question mark "
        "and without full grammar (for example: parental leave weeks secondary carer)."
    ),
    "informal_typos": (
        "casual and informal, all in lower case, with one or two realistic spelling "
        "mistakes, as typed quickly in a chat (for example: how many days can i "
        "carry ovr to next yr)."
    ),
    "long_detailed": (
        "a long, detailed question of two or three sentences that first describes "
        "the asker's situation and then asks."
    ),
}

OUT_OF_SCOPE_REFERENCE = "The documents do not contain the answer to this question."


def parse_mix(
    text: str | Mapping[str, float] | None,
    known: Sequence[str],
    what: str,
    default: Mapping[str, float],
) -> dict[str, float]:
    """``"a=0.4,b=0.6"`` (or a mapping) to weights that sum to 1. Unknown names raise."""
    if text is None:
        raw: Mapping[str, float] = default
    elif isinstance(text, str):
        parsed: dict[str, float] = {}
        for part in text.split(","):
            part = part.strip()
            if not part:
                continue
            name, sep, value = part.partition("=")
            try:
                parsed[name.strip()] = float(value) if sep else 1.0
            except ValueError:
                raise ConfigError(
                    f"--{what} '{part}': the weight must be a number, e.g. {name}=0.3"
                ) from None
        raw = parsed
    else:
        raw = text
    for name, w in raw.items():
        if name not in known:
            raise ConfigError(f"unknown {what[:-1]} '{name}'; known: {', '.join(known)}")
        if not math.isfinite(w) or w < 0:
            raise ConfigError(f"--{what}: the weight of '{name}' must be a number >= 0")
    total = sum(raw.values())
    if total <= 0:
        raise ConfigError(f"--{what}: at least one weight must be above 0")
    return {n: raw[n] / total for n in known if raw.get(n, 0) > 0}


def quotas(size: int, mix: Mapping[str, float]) -> dict[str, int]:
    """Apportion ``size`` by the weights (largest remainders; ties to the earlier name)."""
    exact = {n: size * w for n, w in mix.items()}
    out = {n: math.floor(v) for n, v in exact.items()}
    left = size - sum(out.values())
    order = sorted(mix, key=lambda n: (-(exact[n] - out[n]), list(mix).index(n)))
    for n in order[:left]:
        out[n] += 1
    return out


# ---- chunk selection ---------------------------------------------------------------------------

_CAP_RUN = re.compile(r"\b[A-Z][\w&-]*(?:\s+[A-Z][\w&-]*)*")
_NUM = re.compile(r"[£€$]?\d+(?:[.,:]\d+)*%?")
NUMBER_WEIGHT = 0.5  # a shared number links two chunks less surely than a shared name
MAX_POSTINGS = 200  # a token in more chunks than this links too much to be worth the pairs


def _entities_by_chunk(chunks: Sequence[Chunk]) -> list[set[str]]:
    """Named-entity-like tokens of each chunk: runs of capitalised words, without the leading
    words that the corpus also uses in lower case (so sentence-initial words drop out: "Under
    Ivar Lunde" gives "Ivar Lunde", "The" alone gives nothing), and numbers with two or more
    digits or a currency sign ("10:00", "£500", "2011")."""
    lower_counts: Counter[str] = Counter()
    for c in chunks:
        lower_counts.update(re.findall(r"\b[a-z][\w&-]*", c.text))
    out: list[set[str]] = []
    for c in chunks:
        ents: set[str] = set()
        for run in _CAP_RUN.findall(c.text):
            words = run.split()
            while words and (lower_counts[words[0].lower()] or len(words[0]) < 2):
                words.pop(0)  # "The", "Under": capitalised only because a sentence starts
            if words:
                ents.add(" ".join(words))
        ents |= {
            n.rstrip(".,:")
            for n in _NUM.findall(c.text)
            if len(re.sub(r"\D", "", n)) >= 2 or n[:1] in "£€$"
        }
        out.append(ents)
    return out


def _is_number(token: str) -> bool:
    return token[:1].isdigit() or token[:1] in "£€$"


def entity_pairs(
    corpus: Corpus, max_df: float = 0.4
) -> list[tuple[float, str, str, tuple[str, ...]]]:
    """Pairs of chunks that share entity-like tokens: (score, chunk id, chunk id, shared), best
    first. Chunks of different documents only; when the corpus has one document, chunks at least
    two apart. Tokens in more than ``max_df`` of the chunks (and in more than two) are too common
    to link anything."""
    chunks = list(corpus.chunks)
    ents = _entities_by_chunk(chunks)
    df: Counter[str] = Counter()
    for e in ents:
        df.update(e)
    n = len(chunks)
    limit = max(2.0, max_df * n)  # in a small corpus, a token shared by two chunks still links
    idf = {
        t: math.log(n / d) * (NUMBER_WEIGHT if _is_number(t) else 1.0)
        for t, d in df.items()
        if 2 <= d <= limit and d < n
    }
    one_doc = len({c.doc_id for c in chunks}) == 1
    # inverted index: only pairs that share a token are looked at (a corpus of thousands of
    # chunks has millions of pairs, few of them linked)
    postings: dict[str, list[int]] = {}
    for i, e in enumerate(ents):
        for t in e:
            if t in idf:
                postings.setdefault(t, []).append(i)
    shared_by: dict[tuple[int, int], list[str]] = {}
    for t, docs in postings.items():
        if len(docs) > MAX_POSTINGS:
            continue
        for x in range(len(docs)):
            for y in range(x + 1, len(docs)):
                i, j = docs[x], docs[y]
                a, b = chunks[i], chunks[j]
                if a.doc_id == b.doc_id and not (one_doc and abs(a.index - b.index) >= 2):
                    continue
                shared_by.setdefault((i, j), []).append(t)
    pairs = []
    for (i, j), shared in shared_by.items():
        score = sum(idf[t] for t in shared)
        ordered = tuple(sorted(shared, key=lambda t: (-idf[t], t)))
        pairs.append((round(score, 6), chunks[i].id, chunks[j].id, ordered))
    pairs.sort(key=lambda p: (-p[0], p[1], p[2]))
    return pairs


def related_chunks(corpus: Corpus, question: str, anchor: str | None, k: int = 6) -> list[Chunk]:
    """The ``k`` chunks sharing the most idf-weighted content words with ``question`` (the anchor
    chunk first when given). What the out-of-scope critic sees of the corpus."""
    chunks = list(corpus.chunks)
    toks = [set(content_tokens(c.text)) for c in chunks]
    df: Counter[str] = Counter()
    for t in toks:
        df.update(t)
    q = set(content_tokens(question))
    n = len(chunks)
    scored = sorted(
        ((sum(math.log(1 + n / df[w]) for w in q & t), -i) for i, t in enumerate(toks)),
        reverse=True,
    )
    order = [chunks[-i] for _, i in scored]
    picked = [c for c in order if c.id == anchor][:1]
    for c in order:
        if len(picked) >= k:
            break
        if c.id != anchor:
            picked.append(c)
    return picked


@dataclass(frozen=True)
class CandidateSpec:
    """What one candidate is made from: decided before any model call."""

    question_type: str
    index: int  # n-th candidate of its type
    style: str
    chunk_ids: tuple[str, ...]
    shared: tuple[str, ...] = ()


@dataclass(frozen=True)
class TestsetSettings:
    """How a test set is generated. ``attempts``: candidates per wanted question, at most, for
    each type. ``min_chunk_words``: shorter chunks are not used on their own."""

    __test__ = False  # not a pytest class

    size: int = 10
    seed: int = 0
    types: Mapping[str, float] | str = field(default_factory=lambda: dict(DEFAULT_TYPES))
    styles: Mapping[str, float] | str = field(default_factory=lambda: dict(DEFAULT_STYLES))
    filter: FilterSettings = field(default_factory=FilterSettings)
    attempts: float = 3.0
    min_chunk_words: int = 40
    critic_sample: int = 6

    def __post_init__(self) -> None:
        if self.size < 1:
            raise ConfigError("--size must be at least 1")
        if self.attempts < 1:
            raise ConfigError("--attempts must be at least 1")
        check_mix(parse_mix(self.types, QUESTION_TYPES, "types", DEFAULT_TYPES))  # fail early on a typo
        parse_mix(self.styles, tuple(STYLES), "styles", DEFAULT_STYLES)


def plan(
    corpus: Corpus, settings: TestsetSettings
) -> tuple[dict[str, list[CandidateSpec]], dict[str, int], list[str]]:
    """Candidate specs per type (as many as may be tried), the quotas, and notes for the user."""
    types = parse_mix(settings.types, QUESTION_TYPES, "types", DEFAULT_TYPES)
    styles = parse_mix(settings.styles, tuple(STYLES), "styles", DEFAULT_STYLES)
    quota = quotas(settings.size, types)
    notes: list[str] = []
    singles = [c for c in corpus.chunks if len(c.text.split()) >= settings.min_chunk_words] or list(
        corpus.chunks
    )
    pairs = entity_pairs(corpus) if any(quota.get(t) for t in PAIR_TYPES) else []
    for t in PAIR_TYPES:
        if quota.get(t) and not pairs:
            notes.append(
                f"no two chunks share a named entity or number, so the {quota[t]} {t} "
                "question(s) are generated as single_hop"
            )
            quota["single_hop"] = quota.get("single_hop", 0) + quota[t]
            quota[t] = 0
    style_names = list(styles)
    style_weights = [styles[s] for s in style_names]
    specs: dict[str, list[CandidateSpec]] = {}
    for t in QUESTION_TYPES:
        q = quota.get(t, 0)
        if not q:
            continue
        n = max(q, math.ceil(q * settings.attempts))
        rng = random.Random(f"{settings.seed}/{t}")
        style_rng = random.Random(f"{settings.seed}/{t}/style")
        out: list[CandidateSpec] = []
        if t in PAIR_TYPES:
            pool = pairs[: max(20, 3 * n)]
            pool = pool[:]
            rng.shuffle(pool)
            for i in range(n):
                _, a, b, shared = pool[i % len(pool)]
                style = style_rng.choices(style_names, style_weights)[0]
                out.append(CandidateSpec(t, i, style, (a, b), shared[:5]))
        else:
            order = singles[:]
            rng.shuffle(order)
            for i in range(n):
                style = style_rng.choices(style_names, style_weights)[0]
                out.append(CandidateSpec(t, i, style, (order[i % len(order)].id,)))
        specs[t] = out
    return specs, quota, notes


# ---- generation --------------------------------------------------------------------------------


@dataclass(frozen=True)
class _Generated:
    question: str
    answer: str
    missing: str = ""
    follow_up: str = ""
    follow_up_answer: str = ""


def _validate_follow_up(data: dict[str, Any]) -> _Generated:
    first = _validate_qa(data)
    q, a = data.get("follow_up"), data.get("follow_up_answer")
    if not isinstance(q, str) or not q.strip():
        raise OutputError('"follow_up" must be a non-empty string')
    if not isinstance(a, str) or not a.strip():
        raise OutputError('"follow_up_answer" must be a non-empty string')
    return _Generated(first.question, first.answer, follow_up=" ".join(q.split()),
                      follow_up_answer=" ".join(a.split()))


def _validate_qa(data: dict[str, Any]) -> _Generated:
    q, a = data.get("question"), data.get("answer", data.get("missing"))
    if not isinstance(q, str) or not q.strip():
        raise OutputError('"question" must be a non-empty string')
    if not isinstance(a, str) or not a.strip():
        key = "missing" if "missing" in data else "answer"
        raise OutputError(f'"{key}" must be a non-empty string')
    if "missing" in data:
        return _Generated(" ".join(q.split()), "", " ".join(a.split()))
    return _Generated(" ".join(q.split()), " ".join(a.split()))


@dataclass
class _Outcome:
    spec: CandidateSpec
    question: str = ""
    reference: str = ""
    contexts: tuple[Chunk, ...] = ()
    reasons: list[str] = field(default_factory=list)
    details: dict[str, Any] = field(default_factory=dict)
    prompts: dict[str, str] = field(default_factory=dict)
    follow_up: str = ""  # a follow_up conversation's second question and its reference
    follow_up_reference: str = ""


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

    async def candidate(self, spec: CandidateSpec) -> _Outcome:
        out = _Outcome(spec)
        chunks = tuple(self.by_id[c] for c in spec.chunk_ids)
        if spec.question_type in SCENARIO_TYPES:
            await scenario_candidate(out, chunks, self.generator, self.critic, STYLES[spec.style], self.settings.filter,
                                     lambda text: related_chunks(self.corpus, text, spec.chunk_ids[0],
                                                                 self.settings.critic_sample))
            return out
        prompt = load_prompt(f"testset_{spec.question_type}")
        out.prompts[prompt.id] = prompt.version
        values = {
            "contexts": numbered(c.text for c in chunks),
            "style": STYLES[spec.style],
            "shared": ", ".join(neutralise(s) for s in spec.shared) or "-",
        }
        try:
            validate = _validate_follow_up if spec.question_type == "follow_up" else _validate_qa
            answer = await self.generator.ask(prompt, values, validate, max_tokens=480)
        except JudgeFailedError as exc:
            out.reasons.append("generation_failed")
            out.details["error"] = str(exc)
            return out
        gen = answer.value
        out.question = gen.question
        if spec.question_type == "out_of_scope":
            out.reference = OUT_OF_SCOPE_REFERENCE
            out.details["missing"] = gen.missing
        else:
            out.reference = gen.answer
            out.contexts = chunks
        reasons, details = deterministic_checks(
            spec.question_type,
            out.question,
            out.reference,
            [c.text for c in chunks],
            self.settings.filter,
        )
        out.details.update(details)
        if spec.question_type == "follow_up":  # the follow-up's answer is held to the same rules
            out.follow_up, out.follow_up_reference = gen.follow_up, gen.follow_up_answer
            more, fdetails = deterministic_checks(spec.question_type, gen.follow_up, gen.follow_up_answer,
                                                  [c.text for c in chunks], self.settings.filter)
            out.details["follow_up_grounding"] = fdetails.get("grounding")
            reasons = list(dict.fromkeys([*reasons, *more]))
            if normalise_question(gen.follow_up) == normalise_question(gen.question):
                reasons.append("duplicate")
        if reasons:
            out.reasons.extend(reasons)
            return out
        if spec.question_type == "out_of_scope":
            shown = related_chunks(
                self.corpus, out.question, spec.chunk_ids[0], self.settings.critic_sample
            )
            out.details["critic_chunks"] = [c.id for c in shown]
            texts = [c.text for c in shown]
            cprompt = "testset_critique_oos"
        else:
            texts = [c.text for c in chunks]
            cprompt = "testset_critique"
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


def _row_id(question: str, chunk_ids: Sequence[str], qtype: str) -> str:
    basis = "\x1f".join([qtype, question, *chunk_ids])
    return "ts-" + hashlib.sha256(basis.encode()).hexdigest()[:10]


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
    accepted: list[tuple[tuple[int, int], _Outcome]] = []
    rejected: list[_Outcome] = []
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

    async def bounded(spec: CandidateSpec) -> _Outcome:
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
    o: _Outcome, generator: Judge, critic: Judge, st: TestsetSettings, common: Mapping[str, str]
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
    if o.spec.question_type == "follow_up":  # a conversation: ragsight answer holds it turn by turn
        meta["follow_up_grounding"] = o.details.get("follow_up_grounding")
        return {
            "id": _row_id(o.question + "\x1f" + o.follow_up, o.spec.chunk_ids, o.spec.question_type),
            "turns": [{"role": "user", "content": o.question}, {"role": "assistant", "reference": o.reference},
                      {"role": "user", "content": o.follow_up},
                      {"role": "assistant", "reference": o.follow_up_reference}],
            "reference_contexts": [c.text for c in o.contexts],
            "relevant_ids": ids,
            "metadata": meta,
        }
    return {
        "id": _row_id(o.question, o.spec.chunk_ids, o.spec.question_type),
        "question": o.question,
        "reference": o.reference,
        "reference_contexts": [c.text for c in o.contexts],
        "relevant_ids": ids,
        "metadata": meta,
    }


def reference_spans(chunks: Sequence[Chunk]) -> list[dict[str, Any]]:
    """The document spans of reference chunks, ``{"doc_id", "start", "end"}`` (character offsets
    in the document's text), independent of any chunking that is later evaluated. Chunks read
    as given from a ``.jsonl`` file have no span and are left out."""
    return [
        {"doc_id": c.doc_id, "start": c.start, "end": c.end}
        for c in chunks
        if c.start is not None and c.end is not None
    ]


def _rejected_row(o: _Outcome, st: TestsetSettings) -> dict[str, Any]:
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
