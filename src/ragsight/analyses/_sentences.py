"""Sentence labels (context relevance): each sentence of the retrieved contexts marked relevant
to the question or not.

- remote judge: one JSON step with every sentence numbered (``label_sentences``);
- embedded judge: one yes/no call per sentence (``sentence_relevant``), back to back.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from ..calls import fit_for_judge
from ..prompts import fence, load_prompt
from ._text import split_sentences
from ._types import SentenceLabels, lenient_bool, numbered, refs, verdict_items

if TYPE_CHECKING:
    from ._sample import SampleAnalyses

__all__ = ["label"]


async def label(sa: SampleAnalyses) -> SentenceLabels:
    judge = sa.need_judge()
    s = sa.sample
    chunks = fit_for_judge(judge, list(s.contexts or ()), field="contexts", output_tokens=32,
                           output_per_token=1.0, record=sa.truncations)
    sentences = tuple(
        (k, sent) for k, chunk in enumerate(chunks) for sent in split_sentences(chunk)
    )
    if not sentences:
        return SentenceLabels((), (), ())
    question = fence("question", s.question or "")
    if judge.supports_choices:
        prompt = load_prompt("sentence_relevant")
        answers = []
        async with sa.batch:
            for _, sent in sentences:
                answers.append(await judge.choose(
                    prompt, {"question": question, "sentence": fence("text", sent)},
                    use_cache=sa.settings.use_cache,
                ))
        thr = sa.settings.support_threshold
        return SentenceLabels(sentences, tuple(a.value["Yes"] >= thr for a in answers), refs(*answers))
    n = len(sentences)

    def validate(d: dict[str, Any]) -> list[bool]:
        return [lenient_bool(item.get("relevant"), f"verdict {i + 1} 'relevant'")
                for i, item in enumerate(verdict_items(d, n, "sentence"))]

    ans = await judge.ask(
        load_prompt("label_sentences"),
        {"question": question, "sentences": numbered("sentences", [t for _, t in sentences]),
         "sentence_list": [t for _, t in sentences]},
        validate, count=n, max_tokens=32 + 16 * n, use_cache=sa.settings.use_cache,
    )
    return SentenceLabels(sentences, tuple(ans.value), refs(ans))
