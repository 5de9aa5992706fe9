"""Whether a source says otherwise: the claim's closest source sentence and what sets them apart.

Deterministic, no model. The *closest sentence* is the source sentence that holds the largest
share of the claim's content words (ties: the earliest). When it holds at least half of them,
the sentence speaks of what the claim speaks of, and it *says otherwise* when

- ``number``: each has a number the other lacks ("port 8080" against "port 8000");
- ``negation``: one of the two negates and the other does not ("can change" against "cannot
  change", "it is not possible to change");
- ``antonym``: the claim has a word whose opposite is in the sentence and not in the claim
  ("IMMEDIATE" against "DEFERRED", "before" against "after"; an English list, :data:`ANTONYMS`).

and, under the shipped :data:`CONFLICT_RULE`, the sentence's clause that matches the claim holds
at least 0.6 of the content words of the claim's clause (numbers and negation words aside), 0.8
for a negation on one side only: a clause with other dates about another fact, or a negation in
a clause that says something else, is not a contradiction (chosen among candidate rules on
development claims, ``bench/conflict_check.py --candidates``).

Two readers share it: ``diagnose`` tells a claim contradicted by the chunks from one they are
silent on, and the embedded judge's claim verdicts keep word overlap from lifting a claim the
closest sentence says otherwise about above the judge's own P(Yes) (:func:`._calibrated.combine`).
"""

from __future__ import annotations

import functools
import re
from collections.abc import Sequence
from dataclasses import dataclass

from ._text import content_words, fold, language, split_sentences, stem

__all__ = ["ANTONYMS", "CONFLICT_RULE", "SAYS_OTHERWISE_SHARE", "ConflictRule", "closest_sentence", "negated",
           "says_otherwise", "source_conflict"]

SAYS_OTHERWISE_SHARE = 0.5  # the closest sentence holds at least this share of the claim's words


@dataclass(frozen=True)
class ConflictRule:
    """Conditions added to :func:`says_otherwise`, each narrowing where it fires.

    ``aligned_numbers``: another number counts only when a number the sentence's clause lacks and
    one the claim's clause lacks share a neighbour (the nearest content word that is not a number,
    before or after). ``clause_share``: the sentence's clause holds at least this share of the
    content words of the claim's clause, numbers and negation words aside (0: no condition).
    ``negation_share``: the same share, needed for a one-sided negation to count (0: none)."""

    aligned_numbers: bool = False
    clause_share: float = 0.0
    negation_share: float = 0.0


# The rule the product reads: chosen among eight candidates on development claims by a rule named
# before their figures (docs/validity.md, "A narrower rule"; bench/conflict_check.py --candidates).
CONFLICT_RULE = ConflictRule(clause_share=0.6, negation_share=0.8)

# "without" is left out: "checks the integrity without decompressing" states what "check integrity,
# but don't decompress" does. "instead of" and "rather than" negate what follows them ("powers of
# 1000 not 1024" = "powers of 1000 instead of 1024").
_NEGATION = re.compile(r"\b(?:not|no|never|none|cannot|nor|neither|instead of|rather than)\b|n't\b")
# Clause boundaries: a negation, number or opposite word of another clause ("if the lock cannot be
# acquired, flock waits") says nothing about the clause that matches the claim.
_CLAUSE = re.compile(r"[,;:]\s+|\s+(?:but|if|unless|while|whereas|although|though|when)\s+", re.IGNORECASE)

# Pairs of opposites, either way round; compared on lower-case, stemmed tokens (stop words kept:
# "before", "after", "more" and "less" are stop words of the overlap signal).
_PAIRS = """
immediate deferred; immediately later; before after; increase decrease; increases decreases;
increased decreased; enable disable; enabled disabled; enables disables; minimum maximum;
min max; smallest largest; smaller larger; lower higher; lowest highest; fewer more;
first last; earliest latest; ascending descending; include exclude; includes excludes;
included excluded; add remove; adds removes; added removed; allow forbid; allowed forbidden;
allows forbids; allow prohibit; allowed prohibited; permitted forbidden; permitted prohibited;
possible impossible; true false; synchronous asynchronous; visible hidden; required optional;
mandatory optional; compress decompress; compresses decompresses; encrypt decrypt; accept reject;
accepts rejects; accepted rejected; succeed fail; succeeds fails; success failure; lock unlock;
locked unlocked; inclusive exclusive; uppercase lowercase; faster slower; fastest slowest;
older newer; oldest newest; automatically manually; automatic manual; temporary permanent
"""
ANTONYMS: frozenset[tuple[str, str]] = frozenset(
    (stem(a), stem(b)) for pair in _PAIRS.split(";") if pair.strip()
    for a, b in [pair.split()]
)
_OPPOSITE: dict[str, frozenset[str]] = {}
for _a, _b in ANTONYMS:
    _OPPOSITE[_a] = _OPPOSITE.get(_a, frozenset()) | {_b}
    _OPPOSITE[_b] = _OPPOSITE.get(_b, frozenset()) | {_a}
_WORD = re.compile(r"[a-z]+(?:-[a-z]+)*")


def negated(text: str) -> bool:
    """Whether an English text negates (not, no, never, cannot, n't, ...)."""
    return bool(_NEGATION.search(text.lower().replace("\u2019", "'")))


def _numbers(text: str) -> set[str]:
    return {w for w in content_words(text) if w[:1].isdigit()}


def _stems(text: str) -> frozenset[str]:
    return frozenset(stem(w) for w in _WORD.findall(fold(text).lower()))


def _antonym(claim: str, sentence: str) -> bool:
    """The claim has a word whose opposite the sentence has, the claim not, and the sentence
    does not have the claim's word (English)."""
    c, s = _stems(claim), _stems(sentence)
    return any(w not in s and (_OPPOSITE[w] & s) - c for w in c if w in _OPPOSITE)


def _best_clause(text: str, words: set[str]) -> str:
    """The clause of ``text`` holding most of ``words`` (ties: the earliest)."""
    clauses = [c for c in _CLAUSE.split(text) if c.strip()] or [text]
    return max(clauses, key=lambda c: (len(words & set(content_words(c))), -clauses.index(c)))


def _plain_words(text: str) -> list[str]:
    """Content words of ``text`` in order, numbers and negation words aside."""
    return [w for w in content_words(text) if not w[:1].isdigit() and not negated(w)]


def _clause_share(own: str, part: str) -> float:
    """Share of the claim clause's plain words (:func:`_plain_words`) that the sentence's clause holds."""
    mine = set(_plain_words(own))
    return len(mine & set(_plain_words(part))) / len(mine) if mine else 0.0


def _neighbours(text: str, numbers: set[str]) -> set[str]:
    """The nearest content words that are not numbers, before and after each of ``numbers`` in ``text``."""
    words = content_words(text)
    out: set[str] = set()
    for i, w in enumerate(words):
        if w not in numbers:
            continue
        before = next((v for v in reversed(words[:i]) if not v[:1].isdigit()), None)
        after = next((v for v in words[i + 1:] if not v[:1].isdigit()), None)
        out |= {v for v in (before, after) if v}
    return out


def says_otherwise(claim: str, sentence: str, rule: ConflictRule | None = None) -> str:
    """How ``sentence`` says otherwise than ``claim`` ("number", "negation", "antonym"), or ""
    (they may still disagree in ways no rule here sees). The sentence is assumed to speak of what
    the claim speaks of (:func:`closest_sentence`). Compared clause with clause: the sentence's
    clause holding most of the claim's words, and the claim's clause holding most of that
    clause's words. ``rule``: the added conditions (:class:`ConflictRule`; default
    :data:`CONFLICT_RULE`)."""
    rule = CONFLICT_RULE if rule is None else rule
    part = _best_clause(sentence, set(content_words(claim)))
    own = _best_clause(claim, set(content_words(part)))
    share = _clause_share(own, part) if rule.clause_share or rule.negation_share else 1.0
    if share < rule.clause_share:
        return ""
    cn, sn = _numbers(own), _numbers(part)
    if cn - sn and sn - cn and (not rule.aligned_numbers
                                or _neighbours(own, cn - sn) & _neighbours(part, sn - cn)):
        return "number"
    if negated(own) != negated(part) and share >= rule.negation_share:
        return "negation"
    if _antonym(own, part):
        return "antonym"
    return ""


@functools.lru_cache(maxsize=256)
def _sentence_words(chunks: tuple[str, ...]) -> tuple[str, tuple[tuple[int, str, frozenset[str]], ...]]:
    """(the chunks' language, (chunk rank, sentence, its content words) for every sentence):
    read once per set of chunks, shared by a sample's claims."""
    lang = language(" ".join(chunks)[:2000]) if chunks else "en"
    rows = tuple((k, s, frozenset(content_words(s, lang)))
                 for k, chunk in enumerate(chunks, start=1) for s in split_sentences(chunk))
    return lang, rows


def closest_sentence(claim: str, chunks: Sequence[str], only: int | None = None) -> tuple[float, int | None, str]:
    """(share of the claim's content words it holds, chunk rank, sentence) of the chunk sentence
    holding the largest share of the claim's words (ties: the earliest); ``only``: that chunk."""
    lang, rows = _sentence_words(tuple(chunks))
    words = set(content_words(claim, lang))
    best: tuple[float, int | None, str] = (0.0, None, "")
    if not words:
        return best
    for k, sentence, have in rows:
        if only is not None and k != only:
            continue
        share = len(words & have) / len(words)
        if share > best[0]:
            best = (share, k, sentence)
    return best


def source_conflict(claim: str, chunks: Sequence[str],
                    rule: ConflictRule | None = None) -> tuple[str, int | None, str]:
    """(how the closest sentence says otherwise, its chunk rank, the sentence) when it holds at
    least :data:`SAYS_OTHERWISE_SHARE` of the claim's words and :func:`says_otherwise` finds a
    difference under ``rule``; else ("", None, "")."""
    share, rank, sentence = closest_sentence(claim, chunks)
    if share < SAYS_OTHERWISE_SHARE:
        return "", None, ""
    kind = says_otherwise(claim, sentence, rule)
    return (kind, rank, sentence) if kind else ("", None, "")
