"""Chunk relevance (context precision): whether each retrieved chunk holds information that the
reference (or the response) needs, not merely whether it is on the same topic.

- embedded judge, against the reference (:func:`_by_claims`): a chunk is relevant when it
  supports at least one of the reference's claims (RAGChecker's claim-level definition): each
  claim is checked against each chunk alone (``verify_claim``, the claim verdict of
  context_recall, with its number and word guards). The claims are the ones context recall
  extracts, so in a run with context recall nothing is generated for this step, and the reason
  names the claim a chunk supports (or the closest one) without a generated explanation. A
  reference with no claims falls back to the chunk step below;
- embedded judge, against the response (or a claimless reference): one yes/no call per chunk
  (``chunk_relevant``) with that chunk alone: the question and the answer first (evaluated once
  for all the chunks of a sample), the chunk last. A verdict of not relevant or near the
  threshold (or every verdict, with explain="all") gets a short reason (``explain_chunk``).
  Either way neither the other chunks nor the rank is shown, so a chunk's verdict cannot depend
  on its neighbours or its place;
- remote judge: one JSON step with every chunk fenced and numbered and a reason for each
  (``chunk_relevance``). One call per sample keeps the call budget; the chunks are shown in an
  order fixed by their text, so the same chunks make the same prompt whatever their ranking
  (a chunk's verdict cannot follow its rank), and the prompt asks for each chunk to be judged
  on its own.
"""

from __future__ import annotations

import hashlib
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

from ..calls import FENCE_TOKENS, fit_for_judge
from ..errors import OutputError
from ..judge import Answer, Judge, JudgeFailedError
from ..prompts import fence, load_prompt
from ._calibrated import assess_claim, combine
from ._signals import compute_signals
from ._types import ChunkJudgement, contexts_block, lenient_bool, refs, verdict_items
from ._verdicts import aligned_prompt, plausibility, prior_values

if TYPE_CHECKING:
    from ._sample import SampleAnalyses

__all__ = ["BORDERLINE", "STATES_THE_ANSWER", "relevance", "shown_order", "states_the_answer"]

# In the default explanation mode an embedded chunk verdict gets a reason when it lowers the
# score (not relevant) or is borderline: relevant with P(Yes) within this distance of the
# threshold. (A band of 0.3 took in nearly every verdict of the 1.5B judge, whose P(Yes) for a
# relevant chunk sits at 0.5-0.85: three reasons a sample, a fifth of its time.)
BORDERLINE = 0.1

# A chunk that states the reference (or response) nearly word for word holds what it needs,
# whatever the judge says: when the signals-only P(supported) of the whole answer against the
# chunk alone (the claim model's word, number and entity signals, no judge) reaches this, the
# chunk is relevant. Chosen on the MTRAG development chunks of bench/chunk_relevance_check.py
# (65 turns): at 0.7 it takes 20 of 65 needed passages and none of 130 distractors (at 0.5, 4
# same-conversation distractors). A new-user trial found the 1.5B judge calling a chunk that
# holds "The default value of scale is 0." verbatim not relevant (P(Yes) 0.33): its signals P is
# 0.86.
STATES_THE_ANSWER = 0.7
STATED_MIN_WORDS = 3  # content words the answer must have for its words alone to decide


def states_the_answer(answer: str, chunk: str) -> float | None:
    """The signals-only P(supported) of ``answer`` against ``chunk`` when it reaches
    :data:`STATES_THE_ANSWER` and the answer has :data:`STATED_MIN_WORDS` content words or more
    (the chunk is relevant without the judge), else None."""
    signals = compute_signals(answer, chunk)
    if signals["n_content"] < STATED_MIN_WORDS:  # "Paris" or "X is Y" found says little
        return None
    p = combine(None, signals)
    return p if p >= STATES_THE_ANSWER else None


def _stated_reason(against: str, p: float) -> str:
    return f"the chunk states the {against} nearly word for word (word signals P {p:.2f})"


def shown_order(contexts: Sequence[str]) -> list[int]:
    """The 0-based indices of ``contexts`` in the order the remote judge sees them: sorted by a
    hash of their text, so that any ranking of the same chunks gives the same prompt."""
    return sorted(range(len(contexts)),
                  key=lambda i: (hashlib.sha256(contexts[i].encode("utf-8")).hexdigest(), i))


async def relevance(sa: SampleAnalyses, against: str) -> ChunkJudgement:
    judge = sa.need_judge()
    s = sa.sample
    contexts = list(s.contexts or ())
    answer_text = s.reference_text if against == "reference" else s.response
    question = fence("question", s.question or "")
    # each chunk costs its tags and its verdict in the reply; the lowest-ranked chunks are
    # dropped (and recorded) when not even a piece of each fits: the others are judged
    answer_text, *contexts = fit_for_judge(judge, [answer_text or "", *contexts],
                                           field=[against, *(f"contexts[{k}]" for k in range(1, len(contexts) + 1))],
                                           output_tokens=64, alongside=[question], record=sa.truncations,
                                           per_item=FENCE_TOKENS + (0 if judge.supports_choices else 50),
                                           keep_first=1, drop=True)
    answer = fence(against, answer_text or "")
    if not contexts:
        return ChunkJudgement(against, (), (), (), ())
    if judge.supports_choices:
        if against == "reference":
            claims = (await sa.reference_claims()).claims
            if claims:
                return await _by_claims(sa, judge, list(claims), answer_text or "", contexts)
        return await _by_choices(sa, judge, against, question, answer, answer_text or "", contexts)
    n = len(contexts)
    order = shown_order(contexts)

    def validate(d: dict[str, Any]) -> list[tuple[bool, str]]:
        out = []
        for i, item in enumerate(verdict_items(d, n, "chunk")):
            reason = item.get("reason")
            out.append((lenient_bool(item.get("relevant"), f"verdict {i + 1} 'relevant'"),
                        reason.strip() if isinstance(reason, str) else ""))
        return out

    shown = [contexts[i] for i in order]
    ans = await judge.ask(
        load_prompt("chunk_relevance"),
        {"question": question, "answer": answer,
         "chunks": "\n".join(fence("chunk", c, n=k) for k, c in enumerate(shown, start=1)),
         "chunk_list": shown, "chunk_ranks": [i + 1 for i in order], "against": against},
        validate, count=n, max_tokens=64 + 50 * n, use_cache=sa.settings.use_cache,
    )
    by_rank: list[tuple[bool, str]] = [(False, "")] * n
    for pos, i in enumerate(order):
        by_rank[i] = ans.value[pos]
    for i, chunk in enumerate(contexts):
        if not by_rank[i][0] and (stated := states_the_answer(answer_text or "", chunk)) is not None:
            by_rank[i] = (True, _stated_reason(against, stated))
    return ChunkJudgement(against, tuple(r for r, _ in by_rank), tuple(x for _, x in by_rank),
                          tuple(None for _ in by_rank), refs(ans))


async def _by_claims(
    sa: SampleAnalyses, judge: Judge, claims: list[str], answer_text: str, contexts: list[str]
) -> ChunkJudgement:
    """Each reference claim against each chunk alone; a chunk is relevant when its best claim's
    P(supported) reaches the threshold. The chunk is shown as a one-chunk contexts block, so its
    calls are the same whatever its rank (and, for a sample of one chunk, the same as context
    recall's). The calls of a chunk run back to back: the chunk is the shared prefix."""
    prompt = aligned_prompt(sa, "verify_claim")
    thr = sa.settings.support_threshold
    calibrated = sa.settings.calibrated
    use_cache = sa.settings.use_cache
    question = sa.sample.question or ""
    answers: list[Answer[dict[str, float]]] = []
    table: list[list[float]] = []  # chunk x claim
    async with sa.batch:
        prior_answers = await plausibility(sa, judge, prompt, claims)  # context recall's calls
        priors = prior_values(prior_answers, claims)
        for chunk in contexts:
            source = contexts_block([chunk])
            row: list[float] = []
            for c, prior in zip(claims, priors):
                a = await judge.choose(
                    prompt, {"source": source, "claim": fence("claim", c), "claim_text": c,
                             "chunk_text": chunk, "target": "chunk"},
                    use_cache=use_cache,
                )
                answers.append(a)
                p = a.value["Yes"]
                if calibrated:
                    combined, _ = assess_claim(c, source, p, prior, model=judge.model, question=question,
                                               across_languages=sa.languages is not None)
                    assert combined is not None  # a judge probability was given
                    p = combined
                row.append(p)
            table.append(row)
    relevant: list[bool] = []
    reasons: list[str] = []
    probs: list[float] = []
    supports: list[tuple[int, ...]] = []
    for chunk, row in zip(contexts, table):
        best = max(range(len(row)), key=lambda i: (row[i], -i))
        held = tuple(i + 1 for i, p in enumerate(row) if p >= thr)
        p = row[best]
        if held:
            listed = [f"{i} (P {row[i - 1]:.2f})" for i in held]
            if len(held) == 1:
                why = f"supports reference claim {listed[0]}: \"{claims[held[0] - 1]}\""
            else:
                why = (f"supports reference claims {', '.join(listed[:-1])} and {listed[-1]}; "
                       f"claim {held[0]}: \"{claims[held[0] - 1]}\"")
        elif (stated := states_the_answer(answer_text, chunk)) is not None:
            p = max(p, stated)
            why = _stated_reason("reference", stated)
        elif len(claims) == 1:
            why = f"does not support the reference's one claim (P {p:.2f})"
        else:
            why = (f"supports none of the {len(claims)} reference claims; "
                   f"closest: claim {best + 1} (P {p:.2f}) \"{claims[best]}\"")
        relevant.append(p >= thr)
        reasons.append(why)
        probs.append(p)
        supports.append(held)
    return ChunkJudgement("reference", tuple(relevant), tuple(reasons), tuple(probs),
                          refs(*prior_answers, *answers), claims=tuple(claims), supports=tuple(supports))


async def _by_choices(
    sa: SampleAnalyses, judge: Judge, against: str, question: str, answer: str, answer_text: str,
    contexts: list[str],
) -> ChunkJudgement:
    prompt = load_prompt("chunk_relevant")
    thr = sa.settings.support_threshold
    answers: list[Answer[dict[str, float]]] = []
    explained: list[Answer[str]] = []
    reasons: list[str] = []
    probs: list[float] = []
    async with sa.batch:
        # Back to back: the question and the answer are the shared prefix, the chunk varies; a
        # reason, when wanted, is asked right after its chunk's verdict, whose prompt it extends.
        for k, chunk in enumerate(contexts, start=1):
            answer_k = await judge.choose(
                prompt, {"question": question, "answer": answer, "chunk": fence("chunk", chunk),
                         "chunk_text": chunk, "k": str(k), "against": against},
                use_cache=sa.settings.use_cache,
            )
            answers.append(answer_k)
            p = answer_k.value["Yes"]
            why = None
            stated = states_the_answer(answer_text, chunk) if p < thr + BORDERLINE else None
            if stated is not None:  # relevant by its words: the judge's doubt needs no reason
                p = max(p, stated)
                reasons.append(_stated_reason(against, stated))
                probs.append(p)
                continue
            if wants_reason(sa.settings.explain, p, thr):
                why = await _explain(sa, judge, question, answer, chunk, p >= thr)
            reasons.append(why.value if why is not None else "")
            probs.append(p)
            if why is not None:
                explained.append(why)
    return ChunkJudgement(against, tuple(p >= thr for p in probs), tuple(reasons), tuple(probs),
                          refs(*answers, *explained))


def wants_reason(mode: str, p: float, threshold: float) -> bool:
    """Whether the explanation mode wants a reason for a chunk verdict of probability ``p``: every
    verdict with "all"; with the default "unsupported", the chunks judged not relevant (they
    lower the score, as unsupported claims do) and the borderline relevant ones (within
    :data:`BORDERLINE` above the threshold); none with "none"."""
    return mode == "all" or (mode == "unsupported" and p < threshold + BORDERLINE)


async def _explain(
    sa: SampleAnalyses, judge: Judge, question: str, answer: str, chunk: str, relevant: bool
) -> Answer[str] | None:
    """A short reason for one chunk verdict, or None when the judge gives no usable reason (a
    reason is a courtesy: the verdict stands without it)."""

    def validate(d: dict[str, Any]) -> str:
        reason = d.get("reason")
        if not isinstance(reason, str) or not reason.strip():
            raise OutputError('"reason" must be a non-empty string')
        return " ".join(reason.split())

    try:
        return await judge.ask(
            load_prompt("explain_chunk"),
            {"question": question, "answer": answer, "chunk": fence("chunk", chunk),
             "chunk_text": chunk, "verdict": "relevant" if relevant else "not relevant"},
            validate, max_tokens=64, use_cache=sa.settings.use_cache,
        )
    except JudgeFailedError:
        return None
