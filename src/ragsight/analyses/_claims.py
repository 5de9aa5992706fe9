"""Claims: a text (the response or the reference) decomposed into short, self-contained claims.

One generation step for every judge (remote or embedded): ``extract_claims`` returns a JSON list,
at most ``AnalysisSettings.max_claims`` long; repeats are dropped in order.

A text that is already one short statement is its own claim, with no judge call (issue 21; on
WiCE claims, checking the whole sentence ranked as well as checking the claims extracted from
it, docs/validity.md): one sentence, at most :data:`OWN_CLAIM_WORDS` words, at least
:data:`OWN_CLAIM_MIN_CONTENT` content words, not a question, and no first- or second-person
word (so "I am not sure." or "Hello, how can I help you?" still go to the judge, which may find
no claim in them). ``AnalysisSettings.own_claim`` turns this off.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from .._budget import fit_for_judge
from ..errors import OutputError
from ..prompts import fence, load_prompt
from ._text import content_words, split_sentences, tokens
from ._types import ClaimList, list_of_str, refs

if TYPE_CHECKING:
    from ._sample import SampleAnalyses

__all__ = ["OWN_CLAIM_MIN_CONTENT", "OWN_CLAIM_WORDS", "extract", "own_claim"]

OWN_CLAIM_WORDS = 25  # a single statement of at most this many words is its own claim
OWN_CLAIM_MIN_CONTENT = 3  # ... with at least this many content words
_PERSONAL = frozenset({"i", "me", "my", "mine", "we", "us", "our", "ours", "you", "your", "yours",
                       "i'm", "i've", "i'd", "i'll", "we're", "we've", "you're", "you've"})


def own_claim(text: str, max_words: int = OWN_CLAIM_WORDS) -> str | None:
    """The text itself (whitespace collapsed) when it is one short statement (see the module
    docstring), else None."""
    sentences = split_sentences(text)
    if len(sentences) != 1 or sentences[0].endswith("?"):
        return None
    words = tokens(text)
    if not 0 < len(words) <= max_words or any(w.lower() in _PERSONAL for w in words):
        return None
    if len(set(content_words(text))) < OWN_CLAIM_MIN_CONTENT:
        return None
    return sentences[0]


async def extract(sa: SampleAnalyses, source: str) -> ClaimList:
    judge = sa.need_judge()
    text = sa.sample.response if source == "response" else sa.sample.reference_text
    assert text is not None
    if sa.settings.own_claim and (single := own_claim(text)) is not None:
        return ClaimList(source, (single,), ())
    question = fence("question", sa.sample.question) if sa.sample.question else ""
    limit = sa.settings.max_claims
    text = fit_for_judge(judge, [text], field=source, output_tokens=1024, alongside=[question],
                         record=sa.truncations)[0]

    def validate(d: dict[str, Any]) -> list[str]:
        claims = list_of_str(d, "claims")
        if len(claims) > limit:
            raise OutputError(f"too many claims ({len(claims)}); give at most {limit}")
        return claims

    ans = await judge.ask(
        load_prompt("extract_claims"),
        {"question": question, "text": fence(source, text), "raw_text": text},
        validate, max_tokens=1024, use_cache=sa.settings.use_cache,
    )
    return ClaimList(source, tuple(dict.fromkeys(ans.value)), refs(ans))
