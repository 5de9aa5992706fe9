"""Chunk relevance (context precision): whether each retrieved chunk was useful for the reference
(or the response).

- remote judge: one JSON step with every chunk fenced and numbered (``chunk_relevance``);
- embedded judge: one yes/no call per chunk (``chunk_relevant``), laid out like the claim
  verdicts (same system text, then all the contexts) so the contexts are evaluated once for the
  verdicts, the chunks and the explanations of a sample.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from .._budget import FENCE_TOKENS, fit_for_judge
from ..prompts import fence, load_prompt, neutralise
from ._types import ChunkJudgement, contexts_block, lenient_bool, refs, verdict_items

if TYPE_CHECKING:
    from ._sample import SampleAnalyses

__all__ = ["relevance"]


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
        # Then the question and the answer, then the one short ask that names chunk k.
        prompt = load_prompt("chunk_relevant")
        source = contexts_block(contexts)
        answers = []
        async with sa.batch:
            for k, chunk in enumerate(contexts, start=1):
                answers.append(await judge.choose(
                    prompt, {"source": source, "question": question, "answer": answer, "k": str(k),
                             "opening": neutralise(" ".join(chunk.split()[:8])), "chunk_text": chunk},
                    use_cache=sa.settings.use_cache,
                ))
        probs = [a.value["Yes"] for a in answers]
        thr = sa.settings.support_threshold
        return ChunkJudgement(against, tuple(p >= thr for p in probs), tuple("" for _ in probs),
                              tuple(probs), refs(*answers))
    n = len(contexts)

    def validate(d: dict[str, Any]) -> list[tuple[bool, str]]:
        out = []
        for i, item in enumerate(verdict_items(d, n, "chunk")):
            reason = item.get("reason")
            out.append((lenient_bool(item.get("relevant"), f"verdict {i + 1} 'relevant'"),
                        reason if isinstance(reason, str) else ""))
        return out

    ans = await judge.ask(
        load_prompt("chunk_relevance"),
        {"question": question, "answer": answer,
         "chunks": "\n".join(fence("chunk", c, n=k) for k, c in enumerate(contexts, start=1)),
         "chunk_list": contexts, "against": against},
        validate, count=n, max_tokens=64 + 50 * n, use_cache=sa.settings.use_cache,
    )
    return ChunkJudgement(against, tuple(r for r, _ in ans.value), tuple(x for _, x in ans.value),
                          tuple(None for _ in ans.value), refs(ans))
