"""Deterministic signals of whether a claim is backed by a source text (no model involved).

Every function here is pure and deterministic: the same claim and source always give the same
numbers. They serve two purposes:

- evidence: each claim verdict records them (``ClaimVerdict.signals``), so a reader can see
  *why* a verdict went the way it did ("3 of 11 content words and the year 1987 are not in the
  context");
- inputs to the shipped combination model (:mod:`._calibrated`), which turns the judge's
  probability and these signals into one calibrated P(supported).

Words are compared after a light normalisation (lower case, accents removed, a crude suffix
stripper so that "founded" matches "founding" and "cities" matches "city"); stop words are
ignored. The rules are those of the source's language (``_text.language``: English, German,
French, Spanish, Portuguese, Italian, Dutch, Chinese, Japanese), and the claim is read by the
same rules, so a short claim is never read as another language than its source. Numbers are compared as numbers ("1,200" = "1200", "two" = "2", "1990s" = "1990").
Named entities are approximated by capitalised words that do not start a sentence, and by all
numbers; no tagger is needed.

The signals (all in [0, 1] unless noted):

``overlap``
    share of the claim's distinct content words that occur in the source.
``overlap_best``
    the same share, counting only the best-matching sentences of the source (greedy cover, at
    most :data:`BEST_K`): high when a few sentences together state the claim.
``bigram_overlap``
    share of the claim's adjacent content-word pairs that occur adjacent in the source
    (stop words removed on both sides); 1.0 when the claim has no such pair.
``numbers``
    share of the claim's numbers (including years and dates) found in the source; 1.0 when the
    claim has none (``n_numbers`` says how many there were).
``digits``
    the same share for the numbers the claim writes in digits only ("4096", not "two"); 1.0
    when it writes none (``n_digits``). Below 1.0 it caps the combined P(supported) at the
    judge's own (:func:`._calibrated.combine`).
``entities``
    share of the claim's capitalised words (proper-noun-like, not sentence-initial) found in the
    source; 1.0 when the claim has none (``n_entities``).
``missing``
    number of claim content words not found in the source (a count, not a share).
``n_content``
    number of distinct content words in the claim (a count).
``says_otherwise``
    1.0 when the source sentence closest to the claim (holding at least half of its content
    words) has another number, negates where the claim does not (or the reverse), or has the
    opposite of one of its words, in a clause holding most of the claim's words (:mod:`._conflict`),
    else 0.0; the kind is recorded as
    ``says_otherwise_number``, ``says_otherwise_negation`` or ``says_otherwise_antonym`` (1.0).
    At 1.0 it caps the combined P(supported) at the judge's own (:func:`._calibrated.combine`).
"""

from __future__ import annotations

import functools
import itertools
import re
from collections.abc import Sequence
from dataclasses import dataclass

from ._conflict import source_conflict
from ._text import (
    NUMBER_RE,
    NUMBER_WORDS,
    STOP_WORDS,
    content_words,
    fold,
    language,
    number_form,
    number_words,
    split_sentences,
    stem,
    stem_in,
    stop_words,
    tokens,
)

__all__ = [
    "BEST_K",
    "SHORT_ANSWER_WORDS",
    "STOP_WORDS",
    "alias_signals",
    "answer_tokens",
    "best_sentences",
    "compute_signals",
    "content_words",
    "describe_signals",
    "digit_numbers",
    "entity_words",
    "is_short_reference",
    "numbers_in",
    "select_sentences",
    "stem",
    "tokens",
    "unfence",
    "without_citations",
]

BEST_K = 3  # sentences at most in the best-matching selection
# Citation markers ("[3]", "[1, 4]", "[2-5]", "[^1]", "【2†source】"): pointers, not facts. Left in,
# "[4]" was a number of the claim that its source did not contain (a claim citing its source was
# read as stating a number the source lacks) and a content word the source lacked.
_CITATION_RE = re.compile(r"\[\^?\d{1,3}(?:\s*[,;\-\u2013]\s*\^?\d{1,3})*\]|\u3010[^\u3010\u3011\n]{1,80}\u3011")


def without_citations(text: str) -> str:
    """The text with its citation markers removed (what the signals read)."""
    return _CITATION_RE.sub("", text) if ("[" in text or "\u3010" in text) else text
_CJK_NUMBER_RE = re.compile(r"(?<![\d.,])\d+(?:,\d{3})*(?:\.\d+)?")


def numbers_in(text: str, lang: str | None = None) -> set[str]:
    """Numbers in the text, normalised: digits ('1,200', '1990s' -> '1990') and number words
    (of ``lang``; None: the text's language)."""
    folded = fold(text)
    lang = lang or language(text)
    words = number_words(lang)
    # in Chinese and Japanese a number stands against the characters around it (23公斤)
    pattern = _CJK_NUMBER_RE if lang in ("zh", "ja") else NUMBER_RE
    out = {number_form(m.group(0)) for m in pattern.finditer(folded)}
    for tok in tokens(folded):
        low = tok.lower()
        if low in words:
            out.add(words[low])
    return out


def digit_numbers(text: str, lang: str | None = None) -> set[str]:
    """The numbers the text writes in digits, normalised as by :func:`numbers_in` (number words
    left out: "one" is as often a pronoun as a number)."""
    lang = lang or language(text)
    pattern = _CJK_NUMBER_RE if lang in ("zh", "ja") else NUMBER_RE
    return {number_form(m.group(0)) for m in pattern.finditer(fold(text))}


def entity_words(text: str, lang: str | None = None) -> set[str]:
    """Capitalised words that do not start a sentence (proper-noun-like), normalised by the
    rules of ``lang`` (None: the text's language)."""
    lang = lang or language(text)
    stops, numbers = stop_words(lang), number_words(lang)
    out: set[str] = set()
    for sentence in split_sentences(fold(text)) or [fold(text)]:
        toks = tokens(sentence)
        for i, tok in enumerate(toks):
            if i == 0 or not tok[0].isupper():
                continue
            low = tok.lower()
            if low in stops or low in numbers or len(low) < 2:
                continue
            out.add(stem_in(low, lang))
    return out


def _bigrams(words: Sequence[str]) -> set[tuple[str, str]]:
    return set(itertools.pairwise(words))


def _share(wanted: set[str] | set[tuple[str, str]],
           have: set[str] | set[tuple[str, str]] | frozenset[str] | frozenset[tuple[str, str]]) -> float:
    if not wanted:
        return 1.0
    return len(wanted & have) / len(wanted)  # type: ignore[operator,unused-ignore]


def _sentences(sources: Sequence[str]) -> list[str]:
    return list(_profile(tuple(sources)).sentences)


@dataclass(frozen=True)
class _SourceProfile:
    """What the signals read from a source, computed once per source and shared by its claims
    (a sample's claims are all checked against the same contexts)."""

    sentences: tuple[str, ...]
    sentence_words: tuple[frozenset[str], ...]
    words: frozenset[str]
    bigrams: frozenset[tuple[str, str]]
    numbers: frozenset[str]
    lower: frozenset[str]
    lang: str = "en"


@functools.lru_cache(maxsize=512)
def _profile(sources: tuple[str, ...]) -> _SourceProfile:
    sents: list[str] = []
    for text in sources:
        sents.extend(split_sentences(text))
    joined = "\n\n".join(sources)
    lang = language(joined)
    bigrams: set[tuple[str, str]] = set()
    for text in sources:
        bigrams |= _bigrams(content_words(text, lang))
    return _SourceProfile(
        sentences=tuple(sents),
        sentence_words=tuple(frozenset(content_words(x, lang)) for x in sents),
        words=frozenset(content_words(joined, lang)),
        bigrams=frozenset(bigrams),
        numbers=frozenset(numbers_in(joined, lang)),
        lower=frozenset(stem_in(t.lower(), lang) for t in tokens(joined)),
        lang=lang,
    )


def select_sentences(claim: str, sources: Sequence[str], k: int = BEST_K) -> list[int]:
    """Indices (into the sentences of ``sources``, in order) of the sentences that best cover
    the claim's content words: greedy set cover, at most ``k`` sentences, each adding at least
    one new word; ties go to the earlier sentence. Returned in text order."""
    prof = _profile(tuple(sources))
    return _select(set(content_words(claim, prof.lang)), prof.sentence_words, k)


def _select(wanted: set[str], words: Sequence[frozenset[str]], k: int) -> list[int]:
    chosen: list[int] = []
    covered: set[str] = set()
    for _ in range(k):
        best, gain = -1, 0
        for i, ws in enumerate(words):
            if i in chosen:
                continue
            g = len((ws & wanted) - covered)
            if g > gain:
                best, gain = i, g
        if best < 0:
            break
        chosen.append(best)
        covered |= words[best] & wanted
    return sorted(chosen)


def best_sentences(claim: str, sources: Sequence[str], k: int = BEST_K) -> list[str]:
    """The sentences chosen by :func:`select_sentences`, in text order."""
    sents = _sentences(sources)
    return [sents[i] for i in select_sentences(claim, sources, k)]


def compute_signals(claim: str, source: str | Sequence[str], question: str = "") -> dict[str, float]:
    """All deterministic signals of ``claim`` against ``source`` (one text or a list of
    chunks), as a dict of floats (see the module docstring). ``question``: the user's question,
    whose numbers count as found for ``digits`` (a number the claim takes from the question is
    not invented: a trial's "split -n l/3" for "split a file into 3 files")."""
    texts = tuple(without_citations(x) for x in ((source,) if isinstance(source, str) else source))
    prof = _profile(texts)
    claim = without_citations(claim)
    claim_words = content_words(claim, prof.lang)
    wanted = set(claim_words)
    have = prof.words
    found = wanted & have

    best_have: set[str] = set()
    for i in _select(wanted, prof.sentence_words, BEST_K):
        best_have |= prof.sentence_words[i]

    claim_numbers = numbers_in(claim, prof.lang)
    claim_digits = digit_numbers(claim, prof.lang)
    claim_entities = entity_words(claim, prof.lang)

    otherwise, _, _ = source_conflict(claim, texts)
    out = {
        "overlap": _share(wanted, have),
        "overlap_best": _share(wanted, best_have),
        "bigram_overlap": _share(_bigrams(claim_words), prof.bigrams),
        "numbers": _share(claim_numbers, prof.numbers),
        "n_numbers": float(len(claim_numbers)),
        "digits": _share(claim_digits, prof.numbers | digit_numbers(question) if question else prof.numbers),
        "n_digits": float(len(claim_digits)),
        "entities": _share(claim_entities, prof.lower),
        "n_entities": float(len(claim_entities)),
        "missing": float(len(wanted - found)),
        "n_content": float(len(wanted)),
        "says_otherwise": 1.0 if otherwise else 0.0,
    }
    if otherwise:
        out["says_otherwise_" + otherwise] = 1.0
    return out


# ---- answers against reference aliases (short-answer correctness) ----------------------------

_PUNCT_RE = re.compile(r"[^\w\s]|_", re.UNICODE)
_ARTICLE_RE = re.compile(r"\b(a|an|the)\b")


def answer_tokens(text: str) -> list[str]:
    """SQuAD-style answer normalisation (accents folded, lower case, punctuation and articles
    removed), split into tokens; number words become digits."""
    s = _PUNCT_RE.sub(" ", fold(text).lower())
    s = _ARTICLE_RE.sub(" ", s)
    return [NUMBER_WORDS.get(t, t) for t in s.split()]


def _contains(haystack: Sequence[str], needle: Sequence[str]) -> bool:
    n = len(needle)
    if n == 0:
        return False
    return any(list(haystack[i:i + n]) == list(needle) for i in range(len(haystack) - n + 1))


def alias_signals(response: str, aliases: Sequence[str]) -> dict[str, float]:
    """Signals of a (short) response against the accepted reference answers.

    ``alias_contained``: 1.0 when some alias, normalised, occurs in the normalised response as a
    whole-token sequence (the "string containment" baseline), else 0.0.
    ``alias_recall``: the largest share of one alias's tokens present in the response.
    """
    resp = answer_tokens(response)
    have = set(resp)
    contained = 0.0
    recall = 0.0
    for alias in aliases:
        toks = answer_tokens(alias)
        if not toks:
            continue
        if _contains(resp, toks):
            contained = 1.0
        recall = max(recall, sum(t in have for t in toks) / len(toks))
    return {"alias_contained": contained, "alias_recall": recall}


_FENCE_RE = re.compile(r"^<([a-z_]+)(?:\s[^>]*)?>\n(.*?)\n</\1>$", re.DOTALL | re.MULTILINE)


def unfence(source: str) -> list[str]:
    """The texts inside the fenced blocks of a rendered source (``<context n="1">...</context>``
    blocks as made by :func:`ragsight.prompts.fence`), in order; the text itself when it holds
    no fenced block. Lets the signals see the texts without the tags."""
    texts = [m.group(2) for m in _FENCE_RE.finditer(source)]
    return texts if texts else [source]


SHORT_ANSWER_WORDS = 10  # a reference of at most this many words (its shortest alias) is short-form
SENTENCE_WORDS = 5  # ... unless it is a sentence of this many words or more, ending in . ! or ?


def is_short_reference(references: Sequence[str], max_words: int = SHORT_ANSWER_WORDS) -> bool:
    """Whether a reference is short-form ("Paris", a list of aliases): its shortest acceptable
    answer has at most ``max_words`` words. Such answers are graded as a whole, with the question
    and every alias, instead of being split into claims."""
    given = [r for r in references if r.strip()]
    if not given:
        return False
    shortest = min(given, key=lambda r: len(answer_tokens(r)))
    if len(answer_tokens(shortest)) > max_words:
        return False
    # a sentence ("-F is the same as --follow=name --retry.") states facts: its claims are checked
    # one by one, so an answer that adds an invented fact to it loses precision (a new-user trial:
    # graded as a whole, such an answer got 0.96). No EVOUNA-TQ alias is a sentence by this rule.
    return not (shortest.rstrip()[-1:] in (".", "!", "?") and len(answer_tokens(shortest)) >= SENTENCE_WORDS)


def describe_signals(signals: dict[str, float]) -> str:
    """A one-line reading of a verdict's recorded signals, for ``ragsight show`` and the report;
    '' when there are none."""
    parts = []
    if "judge_yes" in signals:
        parts.append(f"judge P(Yes) {signals['judge_yes']:.2f}")
    if "judge_prior" in signals:
        parts.append(f"prior (no text) {signals['judge_prior']:.2f}")
    if "overlap" in signals:
        words = f"words found {signals['overlap']:.0%}"
        if "overlap_best" in signals:
            words += f" ({signals['overlap_best']:.0%} in the best sentences"
            words += f", {int(signals['missing'])} missing)" if "missing" in signals else ")"
        parts.append(words)
    if signals.get("n_numbers"):
        parts.append(f"numbers found {signals['numbers']:.0%}")
    if signals.get("n_entities"):
        parts.append(f"names found {signals['entities']:.0%}")
    if "alias_contained" in signals:
        parts.append("an alias occurs" if signals["alias_contained"] else "no alias occurs")
        parts.append(f"alias words found {signals.get('alias_recall', 0.0):.0%}")
    out = ", ".join(parts)
    if signals.get("capped_by_number"):
        out += "; a number written in digits is not in the text: P at most the judge's"
    if signals.get("capped_by_conflict"):
        how = next((k for k in ("number", "negation", "antonym") if signals.get("says_otherwise_" + k)), "")
        what = {"number": "another number", "negation": "a negation the other lacks",
                "antonym": "an opposite word"}.get(how, "a difference")
        out += f"; the closest sentence says otherwise ({what}): P at most the judge's"
    if "p_combined" in signals:
        out += f" -> P {signals['p_combined']:.2f}"
    elif "p_signals" in signals:
        out += f" (signals alone: P {signals['p_signals']:.2f})"
    return out
