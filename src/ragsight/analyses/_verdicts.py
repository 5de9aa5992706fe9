"""Claim verdicts: claims checked against a text (the joined contexts, the reference, the
response, or one chunk).

- remote judge (:func:`_by_json`): one ``verify_claims`` step with every claim numbered; the
  judge's boolean verdict stands, and the deterministic signals and the signals-only model's
  P(supported) are recorded beside it;
- embedded judge (:func:`_by_choices`): one yes/no call per claim, P(Yes) from the
  log-probabilities, combined with the deterministic signals and the judge's plausibility prior
  by the shipped model of this judge model (analyses/_calibrated.py); a reason is asked only
  when the explanation mode wants one (:func:`explain`).

:func:`against_contexts` checks the response's and the reference's claims against the contexts
in one step, so faithfulness and context recall share it.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Sequence
from typing import TYPE_CHECKING, Any, TypeAlias

from .._score import ClaimVerdict
from ..calls import FENCE_TOKENS, fit_for_judge
from ..errors import OutputError
from ..judge import Answer, Judge, JudgeFailedError, JudgeRejectedError
from ..prompts import Prompt, fence, load_prompt
from ._calibrated import PRIOR_SOURCE, assess_claim, combine, needs_prior
from ._declines import detect_declines
from ._signals import compute_signals, unfence
from ._types import (
    ClaimList,
    VerdictList,
    contexts_block,
    lenient_bool,
    numbered,
    refs,
    started_together,
    verdict_items,
)

if TYPE_CHECKING:
    from ._sample import SampleAnalyses

__all__ = ["against_contexts", "aligned_prompt", "explain", "plausibility", "prior_values", "reference_vs_response", "response_vs_reference", "verify"]


Checked: TypeAlias = "VerdictList | Exception | None"


async def _claims_or_error(want: bool, claims: Callable[[], Awaitable[ClaimList]]
                           ) -> ClaimList | Exception | None:
    if not want:
        return None  # not even asked for: asking starts the extraction
    try:
        return await claims()
    except Exception as exc:  # handed to the metrics that need these claims, raised there
        return exc


async def against_contexts(sa: SampleAnalyses) -> tuple[Checked, Checked]:
    """(response claims, reference claims) checked against the joined contexts, in one judge
    step for remote judges. Either is None when not planned for the run or unavailable, or the
    error that stopped its extraction: a failed extraction of the reference does not fail
    faithfulness, nor the response's context recall (a trial: the judge looped on the reference
    "The documents do not say." and faithfulness failed with it)."""
    s = sa.sample
    st = sa.settings
    want_resp = st.verify_response_vs_contexts and s.has("response")
    want_ref = st.verify_reference_vs_contexts and s.has("reference")
    # both extractions at once (one round trip, not two); an error is read by the await below
    await started_together(*([sa.response_claims()] if want_resp else []),
                           *([sa.reference_claims()] if want_ref else []))
    got_resp = await _claims_or_error(want_resp, sa.response_claims)
    got_ref = await _claims_or_error(want_ref, sa.reference_claims)
    resp = got_resp if isinstance(got_resp, ClaimList) else None
    ref = got_ref if isinstance(got_ref, ClaimList) else None
    claims: list[str] = []
    if resp:
        claims.extend(resp.claims)
    if ref:
        claims.extend(ref.claims)
    # a response claim that only declines ("That isn't covered in the documentation I have") is
    # not asked about: faithfulness sets it aside (it says what the documents lack, not a fact)
    aside = {i for i, c in enumerate(claims[:len(resp.claims) if resp else 0])
             if st.nonanswers and detect_declines(c).verdict == "declines"}
    asked = [c for i, c in enumerate(claims) if i not in aside]
    # the lowest-ranked chunks are dropped (and recorded) when not even a piece of each fits
    contexts = fit_for_judge(sa.judge, list(s.contexts or ()), field="contexts",
                             output_tokens=64 + 60 * len(asked), alongside=asked,
                             record=sa.truncations, per_item=FENCE_TOKENS, drop=True) if asked else []
    verdicts = _with_declines(await verify(sa, asked, "contexts", contexts_block(contexts),
                                           chunks=contexts if st.need_chunk_support else None), claims, aside)
    n_resp = len(resp.claims) if resp else 0
    out_resp: Checked = got_resp if isinstance(got_resp, Exception) else None
    out_ref: Checked = got_ref if isinstance(got_ref, Exception) else None
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


def _with_declines(verdicts: VerdictList, claims: list[str], aside: set[int]) -> VerdictList:
    """``verdicts`` of the claims asked about, with a verdict put back for each claim set aside
    as a decline (not supported, no probability, ``signals["declines"]`` 1), in claim order."""
    if not aside:
        return verdicts
    got = iter(verdicts.verdicts)
    support = iter(verdicts.chunk_support or ())
    out: list[ClaimVerdict] = []
    chunks: list[frozenset[int]] = []
    for i, c in enumerate(claims):
        if i in aside:
            out.append(ClaimVerdict(claim=c, supported=False, probability=None, target=verdicts.target,
                                    reason="a decline: it says what the documents do not contain (not judged)",
                                    signals={"declines": 1.0}))
            chunks.append(frozenset())
        else:
            out.append(next(got))
            chunks.append(next(support, frozenset()))
    return VerdictList(verdicts.target, tuple(out), tuple(chunks) if verdicts.chunk_support is not None else None,
                       verdicts.refs)


async def response_vs_reference(sa: SampleAnalyses) -> VerdictList:
    claims = (await sa.response_claims()).claims
    ref = sa.sample.reference_text or ""
    ref = fit_for_judge(sa.judge, [ref], field="reference", output_tokens=64 + 60 * len(claims),
                        alongside=claims, record=sa.truncations)[0] if claims else ref
    return await verify(sa, list(claims), "reference", fence("reference", ref))


async def reference_vs_response(sa: SampleAnalyses) -> VerdictList:
    claims = (await sa.reference_claims()).claims
    resp = fit_for_judge(sa.judge, [sa.sample.response or ""], field="response",
                         output_tokens=64 + 60 * len(claims), alongside=claims,
                         record=sa.truncations)[0] if claims else ""
    return await verify(sa, list(claims), "response", fence("response", resp))


async def verify(
    sa: SampleAnalyses, claims: list[str], target: str, source: str, chunks: list[str] | None = None,
    *, reasons: bool = True,
) -> VerdictList:
    """Verdicts for ``claims`` against the fenced ``source``; per-chunk attribution when
    ``chunks`` is given; ``reasons=False``: the embedded judge is asked for no reason."""
    if not claims:
        return VerdictList(target, (), () if chunks is not None else None, ())
    judge = sa.need_judge()
    if judge.supports_choices:
        return await _by_choices(sa, judge, claims, target, source, chunks, reasons)
    return await _by_json(sa, judge, claims, target, source, chunks)


async def _by_json(
    sa: SampleAnalyses, judge: Judge, claims: list[str], target: str, source: str,
    chunks: list[str] | None,
) -> VerdictList:
    n = len(claims)

    def validate(d: dict[str, Any]) -> list[tuple[bool, frozenset[int], str]]:
        out = []
        for i, item in enumerate(verdict_items(d, n, "claim")):
            supported = lenient_bool(item.get("supported"), f"verdict {i + 1} 'supported'")
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
        aligned_prompt(sa, "verify_claims"),
        {"source": source, "claims": numbered("claims", claims), "claim_list": list(claims),
         "target": target},
        validate, count=n, max_tokens=64 + 60 * n, use_cache=sa.settings.use_cache,
    )
    texts = unfence(source)
    verdicts = tuple(
        ClaimVerdict(claim=c, supported=sup, probability=None, reason=reason, target=target,
                     signals=_signals(c, texts))
        for c, (sup, _, reason) in zip(claims, ans.value)
    )
    support = tuple(nums for _, nums, _ in ans.value) if chunks is not None else None
    return VerdictList(target, verdicts, support, refs(ans))


def aligned_prompt(sa: SampleAnalyses, prompt_id: str) -> Prompt:
    """The claim-verdict prompt, with an alignment's worked examples when the run has one."""
    prompt = load_prompt(prompt_id)
    s = sa.settings
    return prompt.with_examples(s.verdict_examples, s.verdict_examples_tag or "aligned")


def _signals(claim: str, texts: list[str]) -> dict[str, float]:
    sig = compute_signals(claim, texts)
    sig["p_signals"] = combine(None, sig)
    return sig


async def _by_choices(
    sa: SampleAnalyses, judge: Judge, claims: list[str], target: str, source: str,
    chunks: list[str] | None, want_reasons: bool = True,
) -> VerdictList:
    """Every input of the verdict is recorded in ``ClaimVerdict.signals``."""
    prompt = aligned_prompt(sa, "verify_claim")
    thr = sa.settings.support_threshold
    calibrated = sa.settings.calibrated
    use_cache = sa.settings.use_cache
    answers: list[Answer[dict[str, float]]] = []
    async with sa.batch:
        # These share a short prefix, so they go first; the calls against the source then run
        # back to back with the explanations that follow (same long prefix).
        prior_answers = await plausibility(sa, judge, prompt, claims)
        # Back to back, same source first: the model reuses the prompt prefix.
        for c in claims:
            answers.append(await judge.choose(
                prompt, {"source": source, "claim": fence("claim", c), "claim_text": c,
                         "target": target},
                use_cache=use_cache,
            ))
    priors = prior_values(prior_answers, claims)
    texts = unfence(source)
    probs: list[float] = []
    signals: list[dict[str, float]] = []
    for c, a, prior in zip(claims, answers, priors):
        p_yes = a.value["Yes"]
        if calibrated:
            p, sig = assess_claim(c, source, p_yes, prior, model=judge.model, question=sa.sample.question or "",
                                  across_languages=sa.languages is not None)
            assert p is not None
        else:
            p, sig = p_yes, {**compute_signals(c, texts), "judge_yes": p_yes}
        probs.append(p)
        signals.append(sig)
    support: tuple[frozenset[int], ...] | None = None
    chunk_answers: list[Answer[dict[str, float]]] = []
    if chunks is not None:
        async with sa.batch:
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
                        combined, _ = assess_claim(c, src, p_chunk, priors[i], model=judge.model,
                                                   question=sa.sample.question or "",
                                                   across_languages=sa.languages is not None)
                        assert combined is not None  # a judge probability was given
                        p_chunk = combined
                    if p_chunk >= thr:
                        per_claim[i].add(k)
        support = tuple(frozenset(s) for s in per_claim)
    reasons = await explain(sa, judge, claims, probs, source) if want_reasons else [""] * len(claims)
    verdicts = tuple(
        ClaimVerdict(claim=c, supported=p >= thr, probability=p, reason=r, target=target, signals=sig)
        for c, p, r, sig in zip(claims, probs, reasons, signals)
    )
    return VerdictList(target, verdicts, support, refs(*prior_answers, *answers, *chunk_answers))


async def plausibility(sa: SampleAnalyses, judge: Judge, prompt: Prompt, claims: Sequence[str]
                       ) -> list[Answer[dict[str, float]]]:
    """Each claim against an empty text (how plausible the judge finds it on its own), when the
    run is calibrated and the judge model's claim model reads that prior; else none. Called
    inside the sample's batch lock."""
    if not (sa.settings.calibrated and needs_prior(judge.model)):
        return []
    return [await judge.choose(prompt, {"source": PRIOR_SOURCE, "claim": fence("claim", c), "claim_text": c,
                                        "target": "prior"}, use_cache=sa.settings.use_cache)
            for c in claims]


def prior_values(prior_answers: Sequence[Answer[dict[str, float]]], claims: Sequence[str]) -> list[float | None]:
    """The priors' P(Yes) per claim, or None for each claim when no prior was asked."""
    return [a.value["Yes"] for a in prior_answers] or [None] * len(claims)


async def explain(
    sa: SampleAnalyses, judge: Judge, claims: list[str], probs: list[float], source: str
) -> list[str]:
    """A reason per claim from the embedded judge, for the claims the explanation mode wants
    ("unsupported" by default); "" for the others, and "" when the judge gives no usable reason
    (a reason is a courtesy; the verdict stands without it)."""
    mode = sa.settings.explain
    thr = sa.settings.support_threshold
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
                validate, max_tokens=64, use_cache=sa.settings.use_cache,
            )
            reasons.append(ans.value)
        except JudgeRejectedError:
            raise  # a rejected key stops the run; it is not a missing courtesy
        except JudgeFailedError:
            reasons.append("")
    return reasons
