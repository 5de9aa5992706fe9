"""Shared per-sample analyses, computed once and reused by every metric that needs them.

A :class:`SampleContext` is made by the engine for each sample. Metrics ask it for analyses
(``await ctx.response_claims()``, ``await ctx.context_verdicts()``...). Each analysis runs at most
once per sample: concurrent requests share one task. Two ways of asking the judge:

- remote judges (no log-probabilities): one JSON call per step, all claims (or chunks, or
  sentences) of the sample together, with the expected count stated in the schema;
- the embedded judge (``supports_choices``): one yes/no call per item, read from next-token
  log-probabilities, the long shared text first and the item last, run back to back so the
  model reuses the prompt prefix.
"""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass
from typing import Any, TypeVar

import numpy as np

from .._budget import Truncation, fit_for_judge
from .._score import ClaimVerdict, JudgeCallRef
from ..embed import Embedder
from ..errors import OutputError
from ..judge import Answer, Judge, JudgeFailedError
from ..prompts import fence, load_prompt, neutralise
from ..sample import Sample
from ._calibrated import PRIOR_SOURCE, assess_claim, combine, combine_answer, needs_prior
from ._signals import alias_signals, compute_signals, is_short_reference, unfence
from ._text import normalise_entity, split_sentences

__all__ = [
    "AnalysisSettings",
    "ChunkJudgement",
    "ClaimList",
    "EntityList",
    "GeneratedQuestions",
    "SampleContext",
    "ShortAnswer",
    "VerdictList",
    "contexts_block",
]

T = TypeVar("T")


@dataclass(frozen=True)
class AnalysisSettings:
    """Knobs shared by the analyses of a run (recorded with the run)."""

    n_questions: int = 3
    support_threshold: float = 0.5  # P(Yes) at or above which a claim counts as supported
    explain: str = "unsupported"  # embedded judge: "none" | "unsupported" | "all"
    max_claims: int = 64
    need_chunk_support: bool = False  # per-chunk attribution (noise sensitivity)
    verify_reference_vs_contexts: bool = False  # context recall / noise sensitivity in the run
    verify_response_vs_contexts: bool = False  # faithfulness / noise sensitivity in the run
    use_cache: bool = True
    # Claim verdicts of the embedded judge combine its P(Yes) with deterministic signals and its
    # plausibility prior (analyses/_calibrated.py); False keeps the bare P(Yes).
    calibrated: bool = True
    # A reference whose shortest alias has at most SHORT_ANSWER_WORDS words is graded as a whole
    # (question, response, every alias) instead of being split into claims; False turns this off.
    short_answers: bool = True

    def to_dict(self) -> dict[str, Any]:
        return {k: getattr(self, k) for k in self.__dataclass_fields__}


def _refs(*answers: Answer[Any] | None) -> tuple[JudgeCallRef, ...]:
    out: list[JudgeCallRef] = []
    for a in answers:
        if a is None:
            continue
        out.append(JudgeCallRef(a.step, a.prompt_id, a.prompt_version, a.cached))
    return tuple(out)


@dataclass(frozen=True)
class ClaimList:
    source: str  # "response" | "reference"
    claims: tuple[str, ...]
    refs: tuple[JudgeCallRef, ...] = ()


@dataclass(frozen=True)
class VerdictList:
    """Verdicts for claims against one target text, in claim order.

    ``chunk_support[i]`` is the set of chunk numbers (1-based) that support claim i, when the
    analysis asked for per-chunk attribution (else None).
    """

    target: str
    verdicts: tuple[ClaimVerdict, ...]
    chunk_support: tuple[frozenset[int], ...] | None = None
    refs: tuple[JudgeCallRef, ...] = ()


@dataclass(frozen=True)
class ChunkJudgement:
    against: str  # "reference" | "response"
    relevant: tuple[bool, ...]
    reasons: tuple[str, ...]
    probabilities: tuple[float | None, ...]
    refs: tuple[JudgeCallRef, ...] = ()


@dataclass(frozen=True)
class ShortAnswer:
    """A response graded as a whole against a short-form reference (every alias counts).

    ``verdict.claim`` is the response; ``verdict.probability`` the P(correct) of the embedded
    judge combined with the alias signals (None for a judge without probabilities, whose
    boolean verdict stands); the signals are in ``verdict.signals``."""

    verdict: ClaimVerdict
    refs: tuple[JudgeCallRef, ...] = ()

    @property
    def p_correct(self) -> float:
        p = self.verdict.probability
        return float(self.verdict.supported) if p is None else p


@dataclass(frozen=True)
class GeneratedQuestions:
    questions: tuple[str, ...]
    noncommittal: bool
    refs: tuple[JudgeCallRef, ...] = ()


@dataclass(frozen=True)
class EntityList:
    source: str
    entities: tuple[str, ...]
    normalised: frozenset[str]
    refs: tuple[JudgeCallRef, ...] = ()


@dataclass(frozen=True)
class SentenceLabels:
    sentences: tuple[tuple[int, str], ...]  # (chunk index 0-based, sentence)
    relevant: tuple[bool, ...]
    refs: tuple[JudgeCallRef, ...] = ()


def _bool(v: Any, what: str) -> bool:
    if isinstance(v, bool):
        return v
    if isinstance(v, str) and v.strip().lower() in ("yes", "true", "no", "false"):
        return v.strip().lower() in ("yes", "true")
    if isinstance(v, int) and v in (0, 1):
        return bool(v)
    raise OutputError(f"{what} must be true or false, got {v!r}")


def _list_of_str(d: dict[str, Any], key: str) -> list[str]:
    value = d.get(key)
    if not isinstance(value, list):
        raise OutputError(f'expected "{key}" to be a list')
    out = []
    for i, item in enumerate(value):
        if not isinstance(item, str):
            raise OutputError(f'"{key}" item {i + 1} is not a string')
        if item.strip():
            out.append(item.strip())
    return out


def _verdict_items(d: dict[str, Any], n: int, what: str) -> list[dict[str, Any]]:
    items = d.get("verdicts")
    if not isinstance(items, list):
        raise OutputError('expected "verdicts" to be a list')
    if len(items) != n:
        raise OutputError(f"expected exactly {n} verdicts, one per {what}, got {len(items)}")
    for i, item in enumerate(items):
        if not isinstance(item, dict):
            raise OutputError(f"verdict {i + 1} is not an object")
    return items


def numbered(tag: str, items: Sequence[str]) -> str:
    """A numbered list of untrusted items inside one fenced block."""
    body = "\n".join(f"{i}. {neutralise(' '.join(s.split()))}" for i, s in enumerate(items, start=1))
    return f"<{tag}>\n{body}\n</{tag}>"


def contexts_block(contexts: Sequence[str]) -> str:
    return "\n".join(fence("context", c, n=i) for i, c in enumerate(contexts, start=1))


class SampleContext:
    """The analyses of one sample, each computed at most once."""

    def __init__(
        self,
        sample: Sample,
        judge: Judge | None,
        embedder: Embedder | None,
        settings: AnalysisSettings | None = None,
    ) -> None:
        self.sample = sample
        self.judge = judge
        self.embedder = embedder
        self.settings = settings or AnalysisSettings()
        self._memo: dict[str, asyncio.Task[Any]] = {}
        # The embedded judge runs one call at a time; a batch of yes/no calls that share a long
        # prefix must run back to back, not interleaved with another batch.
        self._batch = asyncio.Lock()
        self.truncations: list[Truncation] = []  # over-long texts cut to fit the judge (_budget)

    def _once(self, key: str, make: Callable[[], Awaitable[T]]) -> Awaitable[T]:
        task = self._memo.get(key)
        if task is None:
            task = asyncio.ensure_future(make())
            self._memo[key] = task
        return asyncio.shield(task)

    def _need_judge(self) -> Judge:
        if self.judge is None:
            raise RuntimeError("this metric needs a judge, and none is configured")
        return self.judge

    # ---- claims -----------------------------------------------------------------------------

    def response_claims(self) -> Awaitable[ClaimList]:
        return self._once("claims:response", lambda: self._claims("response"))

    def reference_claims(self) -> Awaitable[ClaimList]:
        return self._once("claims:reference", lambda: self._claims("reference"))

    async def _claims(self, source: str) -> ClaimList:
        judge = self._need_judge()
        text = self.sample.response if source == "response" else self.sample.reference_text
        assert text is not None
        question = fence("question", self.sample.question) if self.sample.question else ""
        limit = self.settings.max_claims
        text = fit_for_judge(judge, [text], field=source, output_tokens=1024, alongside=[question],
                             record=self.truncations)[0]

        def validate(d: dict[str, Any]) -> list[str]:
            claims = _list_of_str(d, "claims")
            if len(claims) > limit:
                raise OutputError(f"too many claims ({len(claims)}); give at most {limit}")
            return claims

        ans = await judge.ask(
            load_prompt("extract_claims"),
            {"question": question, "text": fence(source, text), "raw_text": text},
            validate, max_tokens=1024, use_cache=self.settings.use_cache,
        )
        return ClaimList(source, tuple(dict.fromkeys(ans.value)), _refs(ans))

    # ---- claim verdicts ---------------------------------------------------------------------

    def context_verdicts(self) -> Awaitable[tuple[VerdictList | None, VerdictList | None]]:
        """(response claims, reference claims) checked against the joined contexts, in one
        judge step for remote judges. Either is None when not needed by the run or unavailable."""
        return self._once("verdicts:contexts", self._context_verdicts)

    async def _context_verdicts(self) -> tuple[VerdictList | None, VerdictList | None]:
        s = self.sample
        st = self.settings
        want_resp = st.verify_response_vs_contexts and s.has("response")
        want_ref = st.verify_reference_vs_contexts and s.has("reference")
        resp = await self.response_claims() if want_resp else None
        ref = await self.reference_claims() if want_ref else None
        claims: list[str] = []
        if resp:
            claims.extend(resp.claims)
        if ref:
            claims.extend(ref.claims)
        contexts = fit_for_judge(self.judge, list(s.contexts or ()), field="contexts",
                                 output_tokens=64 + 60 * len(claims), alongside=claims,
                                 record=self.truncations) if claims else []
        verdicts = await self._verify(claims, "contexts", contexts_block(contexts),
                                      chunks=contexts if st.need_chunk_support else None)
        n_resp = len(resp.claims) if resp else 0
        out_resp = out_ref = None
        if resp is not None:
            out_resp = VerdictList(
                "contexts", verdicts.verdicts[:n_resp],
                verdicts.chunk_support[:n_resp] if verdicts.chunk_support is not None else None,
                verdicts.refs,
            )
        if ref is not None:
            out_ref = VerdictList(
                "contexts", verdicts.verdicts[n_resp:],
                verdicts.chunk_support[n_resp:] if verdicts.chunk_support is not None else None,
                verdicts.refs,
            )
        return out_resp, out_ref

    def response_vs_reference(self) -> Awaitable[VerdictList]:
        """Response claims checked against the reference (factual correctness TP/FP)."""
        async def run() -> VerdictList:
            claims = (await self.response_claims()).claims
            ref = self.sample.reference_text or ""
            ref = fit_for_judge(self.judge, [ref], field="reference", output_tokens=64 + 60 * len(claims),
                                alongside=claims, record=self.truncations)[0] if claims else ref
            return await self._verify(list(claims), "reference", fence("reference", ref))

        return self._once("verdicts:response_vs_reference", run)

    def reference_vs_response(self) -> Awaitable[VerdictList]:
        """Reference claims checked against the response (factual correctness FN)."""
        async def run() -> VerdictList:
            claims = (await self.reference_claims()).claims
            resp = fit_for_judge(self.judge, [self.sample.response or ""], field="response",
                                 output_tokens=64 + 60 * len(claims), alongside=claims,
                                 record=self.truncations)[0] if claims else ""
            return await self._verify(list(claims), "response", fence("response", resp))

        return self._once("verdicts:reference_vs_response", run)

    # ---- short answers ----------------------------------------------------------------------

    def short_answer(self) -> Awaitable[ShortAnswer | None]:
        """The response graded as a whole when the reference is short-form ("Paris", or a list
        of aliases) and there is a question; None otherwise (claims are used instead)."""
        return self._once("short_answer", self._short_answer)

    async def _short_answer(self) -> ShortAnswer | None:
        s = self.sample
        if not (self.settings.short_answers and s.question and s.response is not None
                and is_short_reference(s.references)):
            return None
        judge = self._need_judge()
        aliases = [r for r in s.references if r.strip()]
        question = fence("question", s.question)
        reference = fence("reference", " / ".join(aliases))
        response = fit_for_judge(judge, [s.response], field="response", output_tokens=64,
                                 alongside=[question, reference], record=self.truncations)[0]
        values = {"question": question, "reference": reference, "response": fence("response", response)}
        sig = alias_signals(s.response, aliases)
        thr = self.settings.support_threshold
        use_cache = self.settings.use_cache
        if judge.supports_choices:
            async with self._batch:
                ans = await judge.choose(load_prompt("verify_claim_answer"), values, use_cache=use_cache)
                p_yes = ans.value["Yes"]
                p = combine_answer(p_yes, sig, model=judge.model) if self.settings.calibrated else p_yes
                signals = {**sig, "judge_yes": p_yes, "p_combined": p}
                reason = (await self._explain(judge, [s.response], [p], f"{question}\n{reference}"))[0]
            verdict = ClaimVerdict(claim=s.response, supported=p >= thr, probability=p, reason=reason,
                                   target="reference", signals=signals)
            return ShortAnswer(verdict, _refs(ans))

        def validate(d: dict[str, Any]) -> bool:
            return _bool(d.get("correct"), "'correct'")

        jans = await judge.ask(load_prompt("verify_claim_answer_json"), values, validate,
                               max_tokens=16, use_cache=use_cache)
        signals = {**sig, "p_signals": combine_answer(None, sig)}
        verdict = ClaimVerdict(claim=s.response, supported=jans.value, probability=None,
                               target="reference", signals=signals)
        return ShortAnswer(verdict, _refs(jans))

    async def _verify(
        self, claims: list[str], target: str, source: str, chunks: list[str] | None = None
    ) -> VerdictList:
        if not claims:
            return VerdictList(target, (), () if chunks is not None else None, ())
        judge = self._need_judge()
        if judge.supports_choices:
            return await self._verify_by_choices(judge, claims, target, source, chunks)
        n = len(claims)

        def validate(d: dict[str, Any]) -> list[tuple[bool, frozenset[int], str]]:
            out = []
            for i, item in enumerate(_verdict_items(d, n, "claim")):
                supported = _bool(item.get("supported"), f"verdict {i + 1} 'supported'")
                raw_chunks = item.get("chunks") or []
                if not isinstance(raw_chunks, list):
                    raise OutputError(f"verdict {i + 1} 'chunks' must be a list of numbers")
                nums = frozenset(
                    int(c) for c in raw_chunks
                    if isinstance(c, (int, float)) and not isinstance(c, bool)
                    and chunks is not None and 1 <= int(c) <= len(chunks)
                )
                reason = item.get("reason")
                out.append((supported, nums, reason if isinstance(reason, str) else ""))
            return out

        ans = await judge.ask(
            load_prompt("verify_claims"),
            {"source": source, "claims": numbered("claims", claims), "claim_list": list(claims),
             "target": target},
            validate, count=n, max_tokens=64 + 60 * n, use_cache=self.settings.use_cache,
        )
        # The judge's boolean verdict stands; the deterministic signals and the signals-only
        # model's P(supported) are recorded beside it as evidence.
        texts = unfence(source)
        verdicts = tuple(
            ClaimVerdict(claim=c, supported=sup, probability=None, reason=reason, target=target,
                         signals=self._signals(c, texts))
            for c, (sup, _, reason) in zip(claims, ans.value)
        )
        support = tuple(nums for _, nums, _ in ans.value) if chunks is not None else None
        return VerdictList(target, verdicts, support, _refs(ans))

    @staticmethod
    def _signals(claim: str, texts: list[str]) -> dict[str, float]:
        sig = compute_signals(claim, texts)
        sig["p_signals"] = combine(None, sig)
        return sig

    async def _verify_by_choices(
        self, judge: Judge, claims: list[str], target: str, source: str, chunks: list[str] | None
    ) -> VerdictList:
        """One yes/no call per claim, P(Yes) from the log-probabilities, then (``calibrated``)
        combined with the deterministic signals and the judge's plausibility prior by the
        shipped model of this judge model (analyses/_calibrated.py). Every input of the verdict
        is recorded in ``ClaimVerdict.signals``."""
        prompt = load_prompt("verify_claim")
        thr = self.settings.support_threshold
        calibrated = self.settings.calibrated
        use_cache = self.settings.use_cache
        prior_answers: list[Answer[dict[str, float]]] = []
        answers: list[Answer[dict[str, float]]] = []
        async with self._batch:
            if calibrated and needs_prior(judge.model):
                # The claim against an empty text: how plausible the judge finds it on its own.
                # These share a short prefix, so they go first; the calls against the source
                # then run back to back with the explanations that follow (same long prefix).
                for c in claims:
                    prior_answers.append(await judge.choose(
                        prompt, {"source": PRIOR_SOURCE, "claim": fence("claim", c), "claim_text": c,
                                 "target": "prior"},
                        use_cache=use_cache,
                    ))
            # Back to back, same source first: the model reuses the prompt prefix.
            for c in claims:
                answers.append(await judge.choose(
                    prompt, {"source": source, "claim": fence("claim", c), "claim_text": c,
                             "target": target},
                    use_cache=use_cache,
                ))
        priors: list[float | None] = [a.value["Yes"] for a in prior_answers] or [None] * len(claims)
        texts = unfence(source)
        probs: list[float] = []
        signals: list[dict[str, float]] = []
        for c, a, prior in zip(claims, answers, priors):
            p_yes = a.value["Yes"]
            if calibrated:
                p, sig = assess_claim(c, source, p_yes, prior, model=judge.model)
                assert p is not None
            else:
                p, sig = p_yes, {**compute_signals(c, texts), "judge_yes": p_yes}
            probs.append(p)
            signals.append(sig)
        support: tuple[frozenset[int], ...] | None = None
        chunk_answers: list[Answer[dict[str, float]]] = []
        if chunks is not None:
            async with self._batch:
                per_claim: list[set[int]] = [set() for _ in claims]
                for k, chunk in enumerate(chunks, start=1):
                    src = fence("context", chunk, n=k)
                    for i, c in enumerate(claims):
                        a = await judge.choose(
                            prompt, {"source": src, "claim": fence("claim", c), "claim_text": c,
                                     "target": f"chunk:{k}"},
                            use_cache=use_cache,
                        )
                        chunk_answers.append(a)
                        p_chunk = a.value["Yes"]
                        if calibrated:
                            combined, _ = assess_claim(c, src, p_chunk, priors[i], model=judge.model)
                            assert combined is not None  # a judge probability was given
                            p_chunk = combined
                        if p_chunk >= thr:
                            per_claim[i].add(k)
            support = tuple(frozenset(s) for s in per_claim)
        reasons = await self._explain(judge, claims, probs, source)
        verdicts = tuple(
            ClaimVerdict(claim=c, supported=p >= thr, probability=p, reason=r, target=target, signals=sig)
            for c, p, r, sig in zip(claims, probs, reasons, signals)
        )
        return VerdictList(target, verdicts, support, _refs(*prior_answers, *answers, *chunk_answers))

    async def _explain(self, judge: Judge, claims: list[str], probs: list[float], source: str) -> list[str]:
        mode = self.settings.explain
        thr = self.settings.support_threshold
        reasons: list[str] = []
        for c, p in zip(claims, probs):
            wanted = mode == "all" or (mode == "unsupported" and p < thr)
            if not wanted:
                reasons.append("")
                continue

            def validate(d: dict[str, Any]) -> str:
                reason = d.get("reason")
                if not isinstance(reason, str):
                    raise OutputError('"reason" must be a string')
                return reason.strip()

            try:
                ans = await judge.ask(
                    load_prompt("explain_verdict"),
                    {"source": source, "claim": fence("claim", c),
                     "verdict": "supported" if p >= thr else "not supported"},
                    validate, max_tokens=64, use_cache=self.settings.use_cache,
                )
                reasons.append(ans.value)
            except JudgeFailedError:
                reasons.append("")  # a reason is a courtesy; the verdict stands without it
        return reasons

    # ---- chunk relevance --------------------------------------------------------------------

    def chunk_relevance(self, against: str) -> Awaitable[ChunkJudgement]:
        """Whether each retrieved chunk was useful for the reference (or the response)."""
        return self._once(f"chunks:{against}", lambda: self._chunk_relevance(against))

    async def _chunk_relevance(self, against: str) -> ChunkJudgement:
        judge = self._need_judge()
        s = self.sample
        contexts = list(s.contexts or ())
        answer_text = s.reference_text if against == "reference" else s.response
        question = fence("question", s.question or "")
        answer_text, *contexts = fit_for_judge(judge, [answer_text or "", *contexts],
                                               field=[against, *(f"contexts[{k}]" for k in range(1, len(contexts) + 1))],
                                               output_tokens=64 + 50 * len(contexts),
                                               alongside=[question], record=self.truncations)
        answer = fence(against, answer_text or "")
        if not contexts:
            return ChunkJudgement(against, (), (), (), ())
        if judge.supports_choices:
            # Laid out like the claim verdicts (same system text, then all the contexts), then the
            # question and the answer, then the one short ask that names chunk k: the contexts are
            # evaluated once for the verdicts, the chunks and the explanations of a sample.
            prompt = load_prompt("chunk_relevant")
            source = contexts_block(contexts)
            answers = []
            async with self._batch:
                for k, chunk in enumerate(contexts, start=1):
                    answers.append(await judge.choose(
                        prompt, {"source": source, "question": question, "answer": answer, "k": str(k),
                                 "opening": neutralise(" ".join(chunk.split()[:8])), "chunk_text": chunk},
                        use_cache=self.settings.use_cache,
                    ))
            probs = [a.value["Yes"] for a in answers]
            thr = self.settings.support_threshold
            return ChunkJudgement(against, tuple(p >= thr for p in probs), tuple("" for _ in probs),
                                  tuple(probs), _refs(*answers))
        n = len(contexts)

        def validate(d: dict[str, Any]) -> list[tuple[bool, str]]:
            out = []
            for i, item in enumerate(_verdict_items(d, n, "chunk")):
                reason = item.get("reason")
                out.append((_bool(item.get("relevant"), f"verdict {i + 1} 'relevant'"),
                            reason if isinstance(reason, str) else ""))
            return out

        ans = await judge.ask(
            load_prompt("chunk_relevance"),
            {"question": question, "answer": answer,
             "chunks": "\n".join(fence("chunk", c, n=k) for k, c in enumerate(contexts, start=1)),
             "chunk_list": contexts, "against": against},
            validate, count=n, max_tokens=64 + 50 * n, use_cache=self.settings.use_cache,
        )
        return ChunkJudgement(against, tuple(r for r, _ in ans.value), tuple(x for _, x in ans.value),
                              tuple(None for _ in ans.value), _refs(ans))

    # ---- answer relevancy -------------------------------------------------------------------

    def generated_questions(self) -> Awaitable[GeneratedQuestions]:
        return self._once("questions", self._generated_questions)

    async def _generated_questions(self) -> GeneratedQuestions:
        judge = self._need_judge()
        n = self.settings.n_questions

        def validate(d: dict[str, Any]) -> tuple[list[str], bool]:
            questions = _list_of_str(d, "questions")
            if len(questions) != n:
                raise OutputError(f"expected exactly {n} questions, got {len(questions)}")
            # Repeats are dropped (the mean is over distinct questions, recorded in the evidence);
            # only a reply with no usable question is re-asked.
            distinct = list(dict.fromkeys(q.strip() for q in questions))
            return distinct, _bool(d.get("noncommittal"), '"noncommittal"')

        response = fit_for_judge(judge, [self.sample.response or ""], field="response",
                                 output_tokens=80 + 50 * n, record=self.truncations)[0]
        ans = await judge.ask(
            load_prompt("generate_questions"),
            {"response": fence("response", response), "n": str(n),
             "response_text": self.sample.response or ""},
            validate, count=n, max_tokens=80 + 50 * n, use_cache=self.settings.use_cache,
        )
        qs, noncommittal = ans.value
        return GeneratedQuestions(tuple(qs), noncommittal, _refs(ans))

    # ---- entities -----------------------------------------------------------------------------

    def entities(self, source: str) -> Awaitable[EntityList]:
        return self._once(f"entities:{source}", lambda: self._entities(source))

    async def _entities(self, source: str) -> EntityList:
        judge = self._need_judge()
        s = self.sample
        text = s.reference_text if source == "reference" else "\n\n".join(s.contexts or ())
        text = fit_for_judge(judge, [text or ""], field=source, output_tokens=512,
                             record=self.truncations)[0]
        ans = await judge.ask(
            load_prompt("extract_entities"),
            {"text": fence("text", text or ""), "raw_text": text or "", "source": source},
            lambda d: _list_of_str(d, "entities"), max_tokens=512, use_cache=self.settings.use_cache,
        )
        ents = tuple(dict.fromkeys(ans.value))
        normed = frozenset(n for n in (normalise_entity(e) for e in ents) if n)
        return EntityList(source, ents, normed, _refs(ans))

    # ---- sentence relevance (context relevance) ---------------------------------------------

    def sentence_labels(self) -> Awaitable[SentenceLabels]:
        return self._once("sentences", self._sentence_labels)

    async def _sentence_labels(self) -> SentenceLabels:
        judge = self._need_judge()
        s = self.sample
        chunks = fit_for_judge(judge, list(s.contexts or ()), field="contexts", output_tokens=32,
                               output_per_token=1.0, record=self.truncations)
        sentences = tuple(
            (k, sent) for k, chunk in enumerate(chunks) for sent in split_sentences(chunk)
        )
        if not sentences:
            return SentenceLabels((), (), ())
        question = fence("question", s.question or "")
        if judge.supports_choices:
            prompt = load_prompt("sentence_relevant")
            answers = []
            async with self._batch:
                for _, sent in sentences:
                    answers.append(await judge.choose(
                        prompt, {"question": question, "sentence": fence("text", sent)},
                        use_cache=self.settings.use_cache,
                    ))
            thr = self.settings.support_threshold
            return SentenceLabels(sentences, tuple(a.value["Yes"] >= thr for a in answers), _refs(*answers))
        n = len(sentences)

        def validate(d: dict[str, Any]) -> list[bool]:
            return [_bool(item.get("relevant"), f"verdict {i + 1} 'relevant'")
                    for i, item in enumerate(_verdict_items(d, n, "sentence"))]

        ans = await judge.ask(
            load_prompt("label_sentences"),
            {"question": question, "sentences": numbered("sentences", [t for _, t in sentences]),
             "sentence_list": [t for _, t in sentences]},
            validate, count=n, max_tokens=32 + 16 * n, use_cache=self.settings.use_cache,
        )
        return SentenceLabels(sentences, tuple(ans.value), _refs(ans))

    # ---- embeddings -------------------------------------------------------------------------

    async def embed(self, texts: Sequence[str], kind: str = "passage") -> np.ndarray:
        if self.embedder is None:
            raise RuntimeError("this metric needs an embedder, and none is configured")
        return await self.embedder.embed(list(texts), kind=kind)
