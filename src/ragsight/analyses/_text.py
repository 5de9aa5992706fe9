"""Deterministic text utilities, the one kit every part of ragsight uses to compare words: accent
folding, the stop words, a small symmetric stemmer, content words and numbers; sentence splitting
and entity normalisation. The verdict signals, the test-set filters and the report's evidence
highlighting all count "the same word" by these rules."""

from __future__ import annotations

import functools
import re
import unicodedata

__all__ = [
    "NUMBER_RE",
    "NUMBER_WORDS",
    "STOP_WORDS",
    "content_words",
    "fold",
    "normalise_entity",
    "number_form",
    "split_sentences",
    "stem",
    "tokens",
]

_STOP_TEXT = """
a about above after again against all also am an and any are as at be because been before being
below between both but by can could did do does doing down during each few for from further had
has have having he her here hers herself him himself his how i if in into is it its itself just
me more most my myself no nor not of off on once only or other our ours ourselves out over own
same she should so some such than that the their theirs them themselves then there these they
this those through to too under until up very was we were what when where which while who whom
why will with would you your yours yourself yourselves s t don now may might must shall upon
within without via per among amongst whose yet however although though since thus hence
onto around across along toward towards one's it's he's she's they're we're i'm
"""
STOP_WORDS = frozenset(_STOP_TEXT.split())

NUMBER_WORDS = {
    "zero": "0", "one": "1", "two": "2", "three": "3", "four": "4", "five": "5", "six": "6",
    "seven": "7", "eight": "8", "nine": "9", "ten": "10", "eleven": "11", "twelve": "12",
    "thirteen": "13", "fourteen": "14", "fifteen": "15", "sixteen": "16", "seventeen": "17",
    "eighteen": "18", "nineteen": "19", "twenty": "20", "thirty": "30", "forty": "40",
    "fifty": "50", "sixty": "60", "seventy": "70", "eighty": "80", "ninety": "90",
    "hundred": "100", "thousand": "1000", "million": "1000000", "billion": "1000000000",
    "dozen": "12",
}

_TOKEN_RE = re.compile(r"\d+(?:[.,]\d+)*|[^\W\d_]+(?:'[^\W\d_]+)?", re.UNICODE)
NUMBER_RE = re.compile(r"(?<![\w.])\d+(?:,\d{3})*(?:\.\d+)?")


def fold(text: str) -> str:
    """Strip accents and unify apostrophes and dashes; keep case."""
    if text.isascii():
        return text  # nothing to strip or unify (the common case, and 20 times faster)
    s = unicodedata.normalize("NFKD", text)
    s = "".join(ch for ch in s if not unicodedata.combining(ch))
    return s.replace("\u2019", "'").replace("\u2018", "'").replace("\u2013", "-").replace("\u2014", "-")


def number_form(raw: str) -> str:
    """'1,200' -> '1200', '3.50' -> '3.5', '007' -> '7'."""
    s = raw.replace(",", "")
    if "." in s:
        whole, frac = s.split(".", 1)
        frac = frac.rstrip("0")
        whole = whole.lstrip("0") or "0"
        return f"{whole}.{frac}" if frac else whole
    return s.lstrip("0") or "0"


@functools.lru_cache(maxsize=65536)
def stem(word: str) -> str:
    """A crude, symmetric suffix stripper (lower-case input): enough to match inflections."""
    w = word
    if w.endswith("'s"):
        w = w[:-2]
    if len(w) > 4 and w.endswith("ies"):
        return w[:-3] + "y"
    if len(w) > 5 and w.endswith("ing"):
        w = w[:-3]
    elif len(w) > 4 and (w.endswith("ed") or (w.endswith("es") and w[-3] in "sxz")):
        w = w[:-2]
    elif len(w) > 3 and w.endswith("s") and not w.endswith("ss") and not w.endswith("us"):
        w = w[:-1]
    if len(w) > 4 and w.endswith("e"):
        w = w[:-1]
    return w


def tokens(text: str) -> list[str]:
    """Word and number tokens, accents stripped, case kept."""
    return _TOKEN_RE.findall(fold(text))


def _norm_token(tok: str) -> str | None:
    """The comparable form of one token, or None for a stop word."""
    if tok[0].isdigit():
        return number_form(tok)
    low = tok.lower()
    if low in NUMBER_WORDS:
        return NUMBER_WORDS[low]
    if low in STOP_WORDS or len(low) < 2:
        return None
    return stem(low)


def content_words(text: str) -> list[str]:
    """Normalised content words (and numbers) in order, stop words removed."""
    return list(_content_words(text))


@functools.lru_cache(maxsize=8192)
def _content_words(text: str) -> tuple[str, ...]:
    # Cached: the verdict signals ask for the words of the same contexts and sentences once per
    # claim, which made a sample's CPU cost grow with claims x context length.
    out = []
    for tok in tokens(text):
        n = _norm_token(tok)
        if n is not None:
            out.append(n)
    return tuple(out)



# Abbreviations after which a period does not end a sentence.
_ABBREV = {
    "mr", "mrs", "ms", "dr", "prof", "sr", "jr", "st", "vs", "etc", "e.g", "i.e", "fig",
    "inc", "ltd", "co", "corp", "jan", "feb", "mar", "apr", "jun", "jul", "aug", "sep", "sept",
    "oct", "nov", "dec", "approx", "dept", "est", "min", "max", "u.s", "u.k",
}
_BOUNDARY = re.compile(r"([.!?]+[\"')\]]*)(\s+)(?=[\"'(\[]?[A-Z0-9])")


def split_sentences(text: str) -> list[str]:
    """Split text into sentences, deterministically.

    Rules: a sentence ends at '.', '!' or '?' (with closing quotes or brackets) followed by
    white space and an upper-case letter or digit, unless the word before the period is a known
    abbreviation or a single letter (an initial); line breaks that separate paragraphs or list
    items also end a sentence. Empty pieces are dropped.
    """
    out: list[str] = []
    for block in re.split(r"\n\s*\n|\n(?=\s*(?:[-*•]|\d+[.)])\s)", text):
        block = " ".join(block.split())
        if not block:
            continue
        start = 0
        for m in _BOUNDARY.finditer(block):
            end = m.end(1)
            before = block[start:m.start(1)].split()
            last = before[-1].lower().rstrip(".") if before else ""
            after = block[m.end():m.end() + 1]
            number_abbrev = last in ("no", "nr") and after.isdigit()  # "No. 5"
            if m.group(1).startswith(".") and (
                last in _ABBREV or number_abbrev or (len(last) == 1 and last.isalpha())
            ):
                continue
            piece = block[start:end].strip()
            if piece:
                out.append(piece)
            start = m.end()
        tail = block[start:].strip()
        if tail:
            out.append(tail)
    return out


_ARTICLES = re.compile(r"^(the|a|an)\s+")


def normalise_entity(entity: str) -> str:
    """Lower-case, strip accents, punctuation and leading articles; collapse white space.
    'The Eiffel Tower' and 'eiffel tower' match; '1,000' and '1000' match."""
    s = unicodedata.normalize("NFKD", entity)
    s = "".join(ch for ch in s if not unicodedata.combining(ch)).lower().strip()
    s = re.sub(r"(?<=\d),(?=\d{3}\b)", "", s)
    s = re.sub(r"[^\w\s%$€£.]", " ", s)
    s = re.sub(r"(?<!\d)\.|\.(?!\d)", " ", s)
    s = " ".join(s.split())
    s = _ARTICLES.sub("", s)
    return s
