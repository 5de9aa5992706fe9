"""Claims: a text (the response or the reference) decomposed into short, self-contained claims.

One generation step for every judge (remote or embedded): ``extract_claims`` returns a JSON list,
at most ``AnalysisSettings.max_claims`` long; repeats are dropped in order.

A text that is already one short statement is its own claim, with no judge call (on
WiCE claims, checking the whole sentence ranked as well as checking the claims extracted from
it, docs/validity.md): one sentence, at most :data:`OWN_CLAIM_WORDS` words, at least
:data:`OWN_CLAIM_MIN_CONTENT` content words, not a question, and no first- or second-person
word (so "I am not sure." or "Hello, how can I help you?" still go to the judge, which may find
no claim in them), and no pronoun at its start ("It shows the ratio of each file.": the judge names what "it"
is from the question). ``AnalysisSettings.own_claim`` turns this off.

No claim the response does not make enters the evidence (a trial: "I don't know." came back with
a claim about gzip). Each claim extracted from a response is checked against its own words
(:func:`grounded`); when some are not found, the judge is asked once more
(``extract_claims_recheck``, naming them), and a claim still not found is dropped and listed in
``ClaimList.dropped``. When most of the reference's claims come back in another language than the
reference (a new-user trial: an English reference's claims in German), the reference's own
sentences are its claims and the translated ones are listed as dropped.
``AnalysisSettings.nonanswers`` turns this off (for the before/after bench).

Atomic claims: a sentence with two clauses ("gzip uses LZ77 and was written by
Microsoft"), a list or two numbers is never its own claim, so each fact gets its own verdict.

Claims from sentences (opt-in, ``AnalysisSettings.sentence_claims``, off by default:
measured with the embedded judge, it generated as many claim tokens as whole-text extraction,
docs/benchmarks.md): an English text is split into sentences; a plain sentence (:func:`split_reason` gives None) is
its own claim, and only the other sentences go to the judge, in one ``extract_claims_part`` call
that shows the whole text (to resolve "it" and "they") and asks for the claims of those
sentences only. Claims from that call that are not made of the text's own words are dropped
(no re-ask: the sentences asked about are the text's own). A text with no plain sentence, or not
in English, is extracted whole, as by remote judges.
"""

from __future__ import annotations

import re
from typing import TYPE_CHECKING, Any

from ..calls import fit_for_judge
from ..errors import OutputError
from ..prompts import fence, load_prompt
from ._declines import detect_declines
from ._text import NUMBER_WORDS, STOP_WORDS, content_words, language, split_sentences, tokens
from ._types import ClaimList, list_of_str, refs

if TYPE_CHECKING:
    from ._sample import SampleAnalyses

__all__ = ["GROUNDED_SHARE", "OWN_CLAIM_MIN_CONTENT", "OWN_CLAIM_WORDS", "apart_from_declines", "bare", "compound",
           "extract", "grounded", "own_claim", "split_reason"]

OWN_CLAIM_WORDS = 25  # a single statement of at most this many words is its own claim
OWN_CLAIM_MIN_CONTENT = 3  # ... with at least this many content words
GROUNDED_SHARE = 0.5  # at least this share of a claim's content words must be the text's own
_PERSONAL = frozenset({"i", "me", "my", "mine", "we", "us", "our", "ours", "you", "your", "yours",
                       "i'm", "i've", "i'd", "i'll", "we're", "we've", "you're", "you've"})


# Words that join two clauses or list several facts; a sentence holding one is split by the judge.
_CONNECTIVES = frozenset({"and", "or", "but", "nor", "while", "whereas", "although", "though",
                          "because", "unless", "which", "who", "whom", "whose", "plus", "including",
                          "followed"})
# Words that need their referent from another sentence: anywhere (subject or possessive) ...
_REFERRING = frozenset({"it", "its", "it's", "they", "them", "their", "theirs", "they're", "he",
                        "him", "his", "she", "her", "hers"})
# ... or at the start ("This includes ...", "That hangar ...", "There are ...").
_LEADING = frozenset({"this", "these", "that", "those", "such", "there"})
_INTERJECTIONS = frozenset({"yes", "no", "ok", "okay", "well", "so", "sure"})
# A claim made of these words alone (and stop words) affirms or denies nothing by itself: "Yes."
_BARE = _INTERJECTIONS | {"yeah", "yep", "nope", "right", "correct", "exactly", "indeed", "true", "false",
                          "absolutely", "definitely", "certainly", "of", "course", "not", "quite",
                          "ja", "nein", "genau", "richtig", "stimmt", "oui", "non", "si", "sí", "nee"}
_WORDS = re.compile(r"[^\W\d_]+(?:'[^\W\d_]+)?")
_NUMBER_RE = re.compile(r"(?<![\w.-])\d[\d,.\-/]*")
_NAMED_NUMBER = re.compile(r"(?:^|\s)([A-Z][\w-]*)\s$")


def _named(before: str) -> bool:
    """Whether the text before a number ends with a capitalised word that is not a stop word."""
    m = _NAMED_NUMBER.search(before)
    return m is not None and m.group(1).lower() not in STOP_WORDS


def compound(sentence: str) -> str | None:
    """Why ``sentence`` may state more than one fact ("two clauses", "a list", "several numbers"),
    or None: a connective word (and, or, but, which, ...; not "and" or "or" between two
    capitalised words, which joins names), a semicolon or colon, two commas or
    more, or two numbers or more (digits or number words other than "one"; a number after a
    capitalised word is part of a name)."""
    raw = tokens(sentence)
    words = [w.lower() for w in raw]
    # "and" / "or" between two names ("Gailly and Adler wrote gzip") joins names, not clauses
    joined = [w for i, w in enumerate(words) if w in _CONNECTIVES and not (
        w in ("and", "or") and 0 < i < len(raw) - 1 and raw[i - 1][:1].isupper() and raw[i + 1][:1].isupper())]
    if joined or ";" in sentence or ":" in sentence:
        return "two clauses"
    if sentence.count(",") - len(re.findall(r"\d,\d", sentence)) >= 2:
        return "a list"
    # "one" is as often an article ("one cabin bag of eight kilograms" states one fact), and a
    # number after a capitalised word is part of a name ("Passenger 1", "Boeing 787", "Terminal 2")
    numbers = [m for m in _NUMBER_RE.finditer(sentence) if not _named(sentence[:m.start()])]
    if len(numbers) + sum(1 for w in words if w in NUMBER_WORDS and w != "one") >= 2:
        return "several numbers"
    return None


def split_reason(sentence: str, max_words: int = OWN_CLAIM_WORDS) -> str | None:
    """Why ``sentence`` cannot be its own claim as it stands, or None when it is one plain
    statement: a question, a first- or second-person word (a hedge or an instruction), fewer than
    :data:`OWN_CLAIM_MIN_CONTENT` content words, more than ``max_words`` words, a pronoun whose
    referent is in another sentence, or several facts (:func:`compound`)."""
    if sentence.rstrip().endswith("?"):
        return "a question"
    words = [w.lower() for w in tokens(sentence)]
    if not 0 < len(words) <= max_words:
        return "too long" if words else "no words"
    if any(w in _PERSONAL for w in words):
        return "first or second person"
    if len(set(content_words(sentence))) < OWN_CLAIM_MIN_CONTENT:
        return "too few content words"
    if words[0] in _LEADING or any(w in _REFERRING for w in words):
        return "a pronoun"
    return compound(sentence)


def own_claim(text: str, max_words: int = OWN_CLAIM_WORDS) -> str | None:
    """The text itself (whitespace collapsed) when it is one short statement (see the module
    docstring) stating one fact (:func:`compound`), else None."""
    sentences = split_sentences(text)
    if len(sentences) != 1 or sentences[0].endswith("?"):
        return None
    words = tokens(text)
    if not 0 < len(words) <= max_words or any(w.lower() in _PERSONAL for w in words):
        return None
    if len(set(content_words(text))) < OWN_CLAIM_MIN_CONTENT:
        return None
    opening = next((w.lower() for w in words if w.lower() not in _INTERJECTIONS), "")
    if opening in _LEADING | _REFERRING:
        return None  # "It shows the ratio": the judge names what "it" is, from the question
    if compound(sentences[0]) is not None:
        return None
    return sentences[0]


def bare(claim: str) -> bool:
    """Whether ``claim`` is a bare answer word ("Yes.", "No, not quite.", "Correct!"): it states
    nothing on its own, so it is not a claim (judged alone, a faithful turn's "Yes" was
    unsupported and halved its score). A claim with a number is never bare."""
    if any(ch.isdigit() for ch in claim):
        return False
    words = [w.lower() for w in _WORDS.findall(claim)]
    return any(w in _BARE for w in words) and all(w in _BARE or w in STOP_WORDS for w in words)


def grounded(claim: str, text: str, question: str = "") -> bool:
    """Whether ``claim`` is made of the text's own words: every number in it is in the text, at
    least :data:`GROUNDED_SHARE` of its content words are (a word found only in the question
    counts half, since a claim names its subject where the text said "it"), and a claim with words
    besides numbers shares one of them with the text or the question (the number alone does not
    make "25 Tage" a claim of "25 days": a new-user sweep's judge translated that answer)."""
    words = content_words(claim)
    if not words:
        return True
    own = set(content_words(text))
    asked = set(content_words(question))
    if any(w[0].isdigit() and w not in own for w in words):
        return False
    named = [w for w in words if not w[0].isdigit()]
    if named and not any(w in own or w in asked for w in named):
        return False
    found = sum(1.0 if w in own else 0.5 if w in asked else 0.0 for w in words)
    return found >= GROUNDED_SHARE * len(words)


async def _recheck(sa: SampleAnalyses, source: str, values: dict[str, str], claims: list[str],
                   text: str, validate: Any) -> tuple[list[str], list[str], Any]:
    """(kept, dropped, the re-ask's answer or None). When some claims are not found in the text,
    the judge is asked once more, naming them; the claims found in the text from both replies are
    kept (in order, without repeats), the others dropped."""
    question = _asked(sa)
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


def _asked(sa: SampleAnalyses) -> str:
    """What a claim may name its subject from besides the text (a word from it counts half in
    :func:`grounded`): the question, and for a turn of a conversation the earlier messages too
    ("Add -maxdepth 1" answers a follow-up whose subject, find, was named two messages before)."""
    history = " ".join(m.content for m in (sa.sample.history or ()) if m.role in ("user", "assistant"))
    return f"{history} {sa.sample.question or ''}".strip()


def _as_sentence(clause: str) -> str:
    """A clause of the decline detector as a sentence of its own: "The documents do not say X." """
    return clause.rstrip(" .;,") + "."


def apart_from_declines(claims: tuple[str, ...]) -> tuple[str, ...]:
    """Each claim that joins a decline to content ("The documents do not say X; chage only sets
    Y") as its clauses: the decline, which faithfulness sets aside as saying what the documents do
    not contain, and the content, checked on its own (the joined claim got P 0.32, the
    true half judged with the other). Filler and referrals ("please ask HR") are left out."""
    out: list[str] = []
    for claim in claims:
        signals = detect_declines(claim)
        parts = [_as_sentence(text) for kind, text in signals.clauses if kind in ("decline", "meta", "content")]
        out.extend(parts if signals.verdict == "mixed" and len(parts) > 1 else [claim])
    return tuple(dict.fromkeys(out))


async def extract(sa: SampleAnalyses, source: str) -> ClaimList:
    if sa.settings.nonanswers:
        text = (sa.sample.response if source == "response" else sa.sample.reference_text) or ""
        if detect_declines(text).verdict == "declines":
            # a decline states no fact: no judge call (a trial's judge looped on the reference
            # "The documents do not say." and invented claims for "Sorry, I cannot help")
            return ClaimList(source, (), ())
        if source == "response":
            return await _response_claims(sa)
    got = await _extract(sa, source)
    if source == "reference" and sa.settings.nonanswers and (own := _own_language(sa, got)) is not None:
        return own
    return got


async def _response_claims(sa: SampleAnalyses) -> ClaimList:
    """The response's claims, with its declines kept apart from the judge. In a response that
    joins a decline to content ("The documents do not mention uploading keys to GitHub; ssh-keygen
    only generates keys"), each decline clause is a claim as written (faithfulness sets it aside as
    saying what the documents do not contain) and only the content clauses are given to the judge
    to extract from: a new-user trial's judge rewrote that decline into a statement about the
    subject ("ssh-keygen does not upload keys to GitHub; ..."), which no longer read as a decline
    and was judged as a fact."""
    signals = detect_declines(sa.sample.response or "")
    if signals.verdict != "mixed":
        got = await _extract(sa, "response")
        claims = apart_from_declines(got.claims)
        return got if claims == got.claims else ClaimList(got.source, claims, got.refs, got.dropped)
    declined = [_as_sentence(text) for kind, text in signals.clauses if kind == "decline"]
    content = " ".join(_as_sentence(text) for kind, text in signals.clauses if kind in ("content", "meta"))
    got = await _extract(sa, "response", content)
    joined = [*declined, *apart_from_declines(got.claims)]
    return ClaimList(got.source, tuple(dict.fromkeys(joined))[: sa.settings.max_claims], got.refs, got.dropped)


def _own_language(sa: SampleAnalyses, got: ClaimList) -> ClaimList | None:
    """The reference's own sentences as its claims when the judge wrote its claims in another
    language (a new-user trial: the 1.5B judge wrote an English reference's claims in German, and
    context recall fell to 0 against chunks holding the reference word for word); else None."""
    text = sa.sample.reference_text or ""
    lang = language(text)
    if not got.claims or sum(language(c) != lang for c in got.claims) * 2 <= len(got.claims):
        return None
    sentences = tuple(dict.fromkeys(split_sentences(text)))[: sa.settings.max_claims]
    return ClaimList(got.source, sentences, got.refs, got.claims) if sentences else None


async def _extract(sa: SampleAnalyses, source: str, text: str | None = None) -> ClaimList:
    """Claims of the sample's ``source`` text, or of ``text`` (part of it) when given."""
    judge = sa.need_judge()
    if text is None:
        text = sa.sample.response if source == "response" else sa.sample.reference_text
    assert text is not None
    if sa.settings.own_claim and (single := own_claim(text)) is not None:
        return ClaimList(source, (single,), ())
    if sa.settings.sentence_claims and (from_sentences := await _extract_sentences(sa, source, text)) is not None:
        return from_sentences
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
    dropped += [c for c in kept if bare(c)]
    kept = [c for c in kept if not bare(c)]
    if not kept and dropped and source == "response" and sa.settings.nonanswers:
        # every claim the judge wrote was dropped, asked twice: the response's own sentences are
        # its claims (in its own words by definition) rather than calling the response claimless
        # (a sentence with fewer than OWN_CLAIM_MIN_CONTENT content words and no number, "That is
        # hard to say.", states no fact and stays out: such a response is still claimless; "25
        # days" answers the question with a number and is its own claim)
        kept = [c for c in dict.fromkeys(split_sentences(text))
                if not bare(c) and (len(content_words(c)) >= OWN_CLAIM_MIN_CONTENT
                                    or any(w[0].isdigit() for w in content_words(c)))][: sa.settings.max_claims]
    return ClaimList(source, tuple(kept), refs(ans, again), tuple(dropped))


async def ask_sentence_claims(sa: SampleAnalyses, source: str, text: str, hard: list[str]) -> tuple[Any, str]:
    """One ``extract_claims_part`` call: the judge's claims for the ``hard`` sentences of
    ``text`` (the ``source`` text: response or reference), shown whole; the answer and the text
    as the judge saw it (cut to fit)."""
    judge = sa.need_judge()
    limit = sa.settings.max_claims
    question = fence("question", sa.sample.question) if sa.sample.question else ""
    block = "\n".join(hard)
    text = fit_for_judge(judge, [text], field=source, output_tokens=1024, alongside=[question, block],
                         record=sa.truncations)[0]

    def validate(d: dict[str, Any]) -> list[str]:
        claims = list_of_str(d, "claims")
        if len(claims) > limit:
            raise OutputError(f"too many claims ({len(claims)}); give at most {limit}")
        return claims

    ans = await judge.ask(
        load_prompt("extract_claims_part"),
        {"question": question, "text": fence(source, text), "sentences": fence("sentences", block),
         "raw_text": text, "raw_sentences": block},
        validate, max_tokens=1024, use_cache=sa.settings.use_cache,
    )
    return ans, text


async def _extract_sentences(sa: SampleAnalyses, source: str, text: str) -> ClaimList | None:
    """Claims from the text's sentences (see the module docstring), or None when the text is to
    be extracted whole (not English, or no plain sentence in it)."""
    if language(text) != "en":
        return None
    sentences = split_sentences(text)
    reasons = [split_reason(s) for s in sentences]
    if all(r is not None for r in reasons):
        return None
    limit = sa.settings.max_claims
    hard = [s for s, r in zip(sentences, reasons) if r is not None]
    if not hard:
        return ClaimList(source, tuple(dict.fromkeys(sentences))[:limit], ())
    ans, text = await ask_sentence_claims(sa, source, text, hard)
    asked = sa.sample.question or ""
    check = source == "response" and sa.settings.nonanswers
    made = [c for c in ans.value if not check or grounded(c, text, asked)]
    dropped = tuple(c for c in ans.value if c not in made)
    first = next(i for i, r in enumerate(reasons) if r is not None)
    ordered: list[str] = []
    for i, (s, r) in enumerate(zip(sentences, reasons)):
        if i == first:
            ordered.extend(made)
        if r is None:
            ordered.append(s)
    return ClaimList(source, tuple(dict.fromkeys(ordered))[:limit], refs(ans), dropped)
