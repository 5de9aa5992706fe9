"""Claims: a text (the response or the reference) decomposed into short, self-contained claims.

One generation step for every judge (remote or embedded): ``extract_claims`` returns a JSON list,
at most ``AnalysisSettings.max_claims`` long; repeats are dropped in order.

A text that is already one short statement is its own claim, with no judge call (issue 21; on
WiCE claims, checking the whole sentence ranked as well as checking the claims extracted from
it, docs/validity.md): one sentence, at most :data:`OWN_CLAIM_WORDS` words, at least
:data:`OWN_CLAIM_MIN_CONTENT` content words, not a question, and no first- or second-person
word (so "I am not sure." or "Hello, how can I help you?" still go to the judge, which may find
no claim in them). ``AnalysisSettings.own_claim`` turns this off.

No claim the response does not make enters the evidence (issue 30: "I don't know." came back with
a claim about gzip). Each claim extracted from a response is checked against its own words
(:func:`grounded`); when some are not found, the judge is asked once more
(``extract_claims_recheck``, naming them), and a claim still not found is dropped and listed in
``ClaimList.dropped``. ``AnalysisSettings.nonanswers`` turns this off (for the before/after bench).
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

__all__ = ["GROUNDED_SHARE", "OWN_CLAIM_MIN_CONTENT", "OWN_CLAIM_WORDS", "extract", "grounded", "own_claim"]

OWN_CLAIM_WORDS = 25  # a single statement of at most this many words is its own claim
OWN_CLAIM_MIN_CONTENT = 3  # ... with at least this many content words
GROUNDED_SHARE = 0.5  # at least this share of a claim's content words must be the text's own
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


def grounded(claim: str, text: str, question: str = "") -> bool:
    """Whether ``claim`` is made of the text's own words: every number in it is in the text, and
    at least :data:`GROUNDED_SHARE` of its content words are (a word found only in the question
    counts half, since a claim names its subject where the text said "it")."""
    words = content_words(claim)
    if not words:
        return True
    own = set(content_words(text))
    asked = set(content_words(question))
    if any(w[0].isdigit() and w not in own for w in words):
        return False
    found = sum(1.0 if w in own else 0.5 if w in asked else 0.0 for w in words)
    return found >= GROUNDED_SHARE * len(words)


async def _recheck(sa: SampleAnalyses, source: str, values: dict[str, str], claims: list[str],
                   text: str, validate: Any) -> tuple[list[str], list[str], Any]:
    """(kept, dropped, the re-ask's answer or None). When some claims are not found in the text,
    the judge is asked once more, naming them; the claims found in the text from both replies are
    kept (in order, without repeats), the others dropped."""
    question = sa.sample.question or ""
    missing = [c for c in claims if not grounded(c, text, question)]
    if not missing or source != "response" or not sa.settings.nonanswers:
        return claims, [], None
    judge = sa.need_judge()
    listed = "\n".join(f"- {c}" for c in missing)
    again = await judge.ask(
        load_prompt("extract_claims_recheck"),
        {**values, "not_found": fence("claims", listed)},
        validate, max_tokens=1024, use_cache=sa.settings.use_cache,
    )
    both = list(dict.fromkeys([*claims, *again.value]))
    kept = [c for c in both if grounded(c, text, question)][: sa.settings.max_claims]
    dropped = [c for c in both if not grounded(c, text, question)]
    return kept, dropped, again


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

    values = {"question": question, "text": fence(source, text), "raw_text": text}
    ans = await judge.ask(load_prompt("extract_claims"), values, validate, max_tokens=1024,
                          use_cache=sa.settings.use_cache)
    claims = list(dict.fromkeys(ans.value))
    kept, dropped, again = await _recheck(sa, source, values, claims, text, validate)
    return ClaimList(source, tuple(kept), refs(ans, again), tuple(dropped))
