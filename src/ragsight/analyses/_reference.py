"""The reference's claims: its facts, one claim each, and none it does not state.

A reference is split into sentences deterministically (:func:`split_sentences`). An English
sentence that states one plain fact (:func:`split_reason` gives None) is its own claim, with no
judge call. The other sentences (two clauses, a list, several numbers, a pronoun, over 25 words;
every sentence of a reference not in English) go to the judge in one ``extract_claims_part``
call, which shows the whole reference (to name what "it" stands for) and asks for the claims of
those sentences only.

Every claim the judge writes is checked against the reference itself before it counts:

1. made of the reference's words (:func:`grounded`: every number, at least half the content
   words; a word of the question counts half), with no judge call;
2. supported by the reference, by the claim-verdict machinery (``verify_claim`` per claim for the
   embedded judge, one ``verify_claims`` call for a remote one), the reference as the text: a
   claim below the run's support threshold is dropped.

A dropped claim is listed in ``ClaimList.dropped`` and its verdict kept in ``ClaimList.checks``
(the evidence of context recall shows both). A sentence none of whose claims survive is its own
claim, as written: a fact is never lost to a bad split (each claim belongs to the sentence sharing
most of its words; a sentence the judge finds no claim in, "Hope this helps.", has none). So a
one-sentence reference never grows a claim it does not state (a new-user trial: a one-sentence reference became four claims, one never said, and an answer
identical to it scored recall 0.75), and a reference of several facts is counted fact by fact
(the same trial: references of several facts kept whole and accepted on a weak yes, context
recall 1.0 on real retrieval misses).

Cost: a reference of plain sentences costs no call (before: one generation unless it was one short
sentence); otherwise one generation for its other sentences (fewer tokens than the whole text)
and one yes/no call per claim written (a reply of one token, the reference as a shared prefix;
and the claim's plausibility prior where the judge's claim model reads one), no reasons asked.

``AnalysisSettings.reference_facts`` (on by default) turns this off: the whole reference is
extracted as a response is (analyses/_claims.py), unchecked, for the before/after bench.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from .._score import ClaimVerdict
from ..prompts import fence
from . import _claims
from ._declines import detect_declines
from ._text import content_words, language, split_sentences
from ._types import ClaimList, refs

if TYPE_CHECKING:
    from ._sample import SampleAnalyses

__all__ = ["reference_claims"]


async def reference_claims(sa: SampleAnalyses) -> ClaimList:
    """The reference's claims (module docstring)."""
    if not sa.settings.reference_facts:
        return await _claims.extract(sa, "reference")
    text = sa.sample.reference_text or ""
    if sa.settings.nonanswers and detect_declines(text).verdict == "declines":
        return ClaimList("reference", (), ())  # "The documents do not say." states no fact
    sentences = list(dict.fromkeys(split_sentences(text)))
    if not sentences:
        return ClaimList("reference", (), ())
    english = language(text) == "en"
    plain = [english and _claims.split_reason(s) is None for s in sentences]
    limit = sa.settings.max_claims
    if all(plain):
        return ClaimList("reference", tuple(sentences[:limit]), ())
    hard = [s for s, p in zip(sentences, plain) if not p]
    written, calls = await _split(sa, text, hard)
    question = sa.sample.question or ""
    ours = [c for c in dict.fromkeys(written) if not _claims.bare(c)]
    worded = [c for c in ours if _claims.grounded(c, text, question)]
    dropped = [c for c in ours if c not in worded]
    checks: tuple[ClaimVerdict, ...] = ()
    if worded:
        checked = await sa.verify(worded, "reference", fence("reference", text), reasons=False)
        checks = checked.verdicts
        calls += checked.refs
        dropped += [v.claim for v in checks if not v.supported]
    kept = [v.claim for v in checks if v.supported]
    per_sentence: dict[str, list[str]] = {s: [] for s in hard}
    for c in kept:
        per_sentence[_home(c, hard)].append(c)
    lost = {_home(c, hard) for c in dropped}
    claims: list[str] = []
    for s, p in zip(sentences, plain):
        if p:
            claims.append(s)
        elif per_sentence[s]:
            claims.extend(per_sentence[s])
        elif s in lost:
            claims.append(s)  # the judge's claims of it were all dropped: the sentence as written
    return ClaimList("reference", tuple(dict.fromkeys(claims))[:limit], calls, tuple(dropped), checks)


def _home(claim: str, sentences: list[str]) -> str:
    """The sentence sharing most of the claim's content words (ties: the earliest)."""
    words = set(content_words(claim))
    return max(sentences, key=lambda s: len(words & set(content_words(s))))


async def _split(sa: SampleAnalyses, text: str, hard: list[str]) -> tuple[list[str], tuple[Any, ...]]:
    """The judge's claims for the ``hard`` sentences of the reference ``text`` (one
    ``extract_claims_part`` call), and the call's reference."""
    ans, _ = await _claims.ask_sentence_claims(sa, "reference", text, hard)
    return list(ans.value), refs(ans)
