"""Deterministic, sentence-aware chunking.

A document is split into sentences (:func:`ragsight.analyses.split_sentences`, which also breaks
at paragraphs and list items). Short pieces without end punctuation (headings, labels) are joined
to the sentence after them. Sentences are packed greedily into chunks of at most ``size`` units;
the next chunk starts with the last whole sentences of the previous one that fit in ``overlap``
units, so a cut never falls inside a sentence unless one sentence alone exceeds ``size`` (it is
then cut by words). Units are words, or approximate tokens (characters / 4).

Chunk ids are ``<doc id>#<n>``, n counting from 0: the same text and settings give the same ids.
Each chunk also carries its span in the document's text: ``start`` and ``end`` are character
offsets (``text[start:end]`` holds the chunk's words, with the document's own white space), so a
reference passage can be stated independently of any chunking (see :func:`overlap`).
"""

from __future__ import annotations

import math
import re
from dataclasses import dataclass

from ..analyses import split_sentences
from ..errors import ConfigError

__all__ = ["Chunk", "ChunkSettings", "chunk_document", "measure", "overlap"]


@dataclass(frozen=True)
class Chunk:
    """A piece of a document. ``start``/``end``: its character span in the document's text
    (None for chunks read as given from a ``.jsonl`` file)."""

    id: str
    doc_id: str
    index: int
    text: str
    start: int | None = None
    end: int | None = None


def overlap(a_start: int, a_end: int, b_start: int, b_end: int) -> int:
    """Characters shared by the half-open spans [a_start, a_end) and [b_start, b_end)."""
    return max(0, min(a_end, b_end) - max(a_start, b_start))


@dataclass(frozen=True)
class ChunkSettings:
    """``size`` and ``overlap`` in ``unit`` ("words" or "tokens", ~4 characters each)."""

    size: int = 180
    overlap: int = 30
    unit: str = "words"

    def __post_init__(self) -> None:
        if self.unit not in ("words", "tokens"):
            raise ConfigError(f"chunk unit '{self.unit}' is not known; use words or tokens")
        if self.size < 10:
            raise ConfigError(f"chunk size {self.size} is too small; use at least 10 {self.unit}")
        if not 0 <= self.overlap < self.size:
            raise ConfigError(f"chunk overlap must be >= 0 and below the size ({self.size})")


def measure(text: str, unit: str = "words") -> int:
    """Length of ``text`` in words, or in approximate tokens (characters / 4, at least words)."""
    words = len(text.split())
    if unit == "tokens":
        return max(words, math.ceil(len(text) / 4))
    return words


_END = re.compile(r"[.!?:;][\"')\]]*$")


def _segments(text: str) -> list[str]:
    """Sentences, with headings and other short unpunctuated lines joined to what follows."""
    out: list[str] = []
    pending = ""
    for s in split_sentences(text):
        if pending:
            s = f"{pending} {s}"
            pending = ""
        if not _END.search(s) and len(s.split()) < 12:
            pending = s
            continue
        out.append(s)
    if pending:
        out.append(pending)
    return out


def _split_long(sentence: str, size: int, unit: str) -> list[str]:
    words = sentence.split()
    pieces: list[str] = []
    current: list[str] = []
    for w in words:
        if current and measure(" ".join([*current, w]), unit) > size:
            pieces.append(" ".join(current))
            current = []
        current.append(w)
    if current:
        pieces.append(" ".join(current))
    return pieces


def chunk_document(doc_id: str, text: str, settings: ChunkSettings | None = None) -> list[Chunk]:
    """Chunks of one document, in order."""
    st = settings or ChunkSettings()
    units: list[str] = []
    for seg in _segments(text):
        if measure(seg, st.unit) > st.size:
            units.extend(_split_long(seg, st.size, st.unit))
        else:
            units.append(seg)
    chunks: list[list[str]] = []
    i = 0
    while i < len(units):
        current: list[str] = []
        start = i
        if chunks:
            # carry over the trailing sentences of the previous chunk that fit in `overlap`
            prev = chunks[-1]
            carried: list[str] = []
            for s in reversed(prev[1:] if len(prev) > 1 else []):
                if measure(" ".join([s, *carried]), st.unit) > st.overlap:
                    break
                carried.insert(0, s)
            current = carried
        while i < len(units):
            candidate = " ".join([*current, units[i]])
            if i > start and measure(candidate, st.unit) > st.size:
                break
            if i == start and current and measure(candidate, st.unit) > st.size:
                current = []  # the overlap does not leave room for the next sentence
            current.append(units[i])
            i += 1
        chunks.append(current)
    texts = [" ".join(parts) for parts in chunks]
    spans = _locate(text, texts)
    return [
        Chunk(id=f"{doc_id}#{n}", doc_id=doc_id, index=n, text=t, start=a, end=b)
        for n, (t, (a, b)) in enumerate(zip(texts, spans))
    ]


def _locate(text: str, pieces: list[str]) -> list[tuple[int, int]]:
    """The character span of each piece in ``text``. A piece is a run of the text's words joined
    by single spaces (sentences are split and packed without changing a word), and pieces come in
    order, each starting at or after the previous one's start."""
    found = [(m.start(), m.end(), m.group()) for m in re.finditer(r"\S+", text)]
    words = [w for _, _, w in found]
    out: list[tuple[int, int]] = []
    pos = 0
    for piece in pieces:
        target = piece.split()
        n = len(target)
        i = pos
        while i + n <= len(words) and words[i : i + n] != target:
            i += 1
        if n == 0 or i + n > len(words):  # cannot happen for pieces made from `text`
            raise AssertionError(f"chunk text not found in its document: {piece[:60]!r}")
        out.append((found[i][0], found[i + n - 1][1]))
        pos = i
    return out
