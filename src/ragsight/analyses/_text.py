"""Deterministic text utilities: sentence splitting and entity normalisation."""

from __future__ import annotations

import re
import unicodedata

__all__ = ["normalise_entity", "split_sentences"]

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
