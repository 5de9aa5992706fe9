"""Where a claim's support sits in the contexts: a deterministic lookup, not the judge.

The context sentence (``split_sentences``) that holds the largest share of the claim's words
(the analyses' content words: accents folded, stop words out, stemmed), ties to the earliest;
shown when it holds at least ``MIN_COVER`` of them. :class:`Marks` collects those sentences per
sample and renders each context with them in ``<mark>``.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass

from .._score import ClaimVerdict
from ..analyses import content_words, split_sentences
from ._markup import e

__all__ = ["MIN_COVER", "Marks", "SentenceMatch", "best_matching_sentence", "sentence_spans"]

MIN_COVER = 0.5
"""A context sentence is shown as a claim's support when it holds this share of the claim's words."""



@dataclass(frozen=True)
class SentenceMatch:
    """The context sentence that best covers a claim's words.

    ``context``: index of the context (0-based); ``sentence``: index of the sentence in it;
    ``start``/``end``: the sentence's character span in the context (``None`` if it could not
    be located in the original text); ``cover``: the share of the claim's words it contains.
    """

    context: int
    sentence: int
    text: str
    start: int | None
    end: int | None
    cover: float


def _words(text: str) -> set[str]:
    # the analyses' text kit: the same stop words and stems as the verdict signals
    return set(content_words(text))


def sentence_spans(context: str) -> list[tuple[str, int | None, int | None]]:
    """The context's sentences with their spans in the original text (whitespace may differ:
    ``split_sentences`` normalises it)."""
    out: list[tuple[str, int | None, int | None]] = []
    pos = 0
    for sent in split_sentences(context):
        pattern = r"\s+".join(re.escape(tok) for tok in sent.split())
        m = re.compile(pattern).search(context, pos)
        if m is None:
            out.append((sent, None, None))
        else:
            out.append((sent, m.start(), m.end()))
            pos = m.end()
    return out


def best_matching_sentence(
    claim: str, contexts: Sequence[str], only: int | None = None, min_cover: float = MIN_COVER
) -> SentenceMatch | None:
    """The context sentence holding the largest share of the claim's words (deterministic).

    Words are the analyses' content words (accents folded, stop words out, stemmed). Ties go to the
    sentence with the larger share of its own words in the claim, then to the earliest. ``only``
    restricts the search to one context (a verdict against ``chunk:N``). ``None`` when no
    sentence holds ``min_cover`` of the claim's words.
    """
    cw = _words(claim)
    if not cw:
        return None
    best: tuple[float, float] | None = None
    found: SentenceMatch | None = None
    for ci, ctx in enumerate(contexts):
        if only is not None and ci != only:
            continue
        for si, (sent, start, end) in enumerate(sentence_spans(ctx)):
            sw = _words(sent)
            if not sw:
                continue
            common = len(cw & sw)
            key = (common / len(cw), common / len(sw))
            if best is None or key > best:
                best = key
                found = SentenceMatch(ci, si, sent, start, end, key[0])
    if found is None or found.cover < min_cover:
        return None
    return found


def _chunk_index(target: str) -> int | None:
    if target.startswith("chunk:"):
        try:
            return int(target.split(":", 1)[1]) - 1
        except ValueError:
            return None
    return None


class Marks:
    """Supporting sentences of one sample's claims, numbered for links."""

    def __init__(self, prefix: str, contexts: Sequence[str]) -> None:
        self.prefix = prefix
        self.contexts = list(contexts)
        self.ids: dict[tuple[int, int], str] = {}
        self.labels: dict[str, list[str]] = {}
        self.spans: dict[int, list[tuple[int, int, str]]] = {}

    def add(self, cv: ClaimVerdict, label: str) -> tuple[SentenceMatch, str] | None:
        """Find the claim's supporting sentence (supported claims against the contexts or
        one chunk only); returns it with the id of its mark."""
        if not cv.supported or not self.contexts:
            return None
        only = None
        if cv.target != "contexts":
            only = _chunk_index(cv.target)
            if only is None or not 0 <= only < len(self.contexts):
                return None
        m = best_matching_sentence(cv.claim, self.contexts, only)
        if m is None:
            return None
        key = (m.context, m.sentence)
        if key not in self.ids:
            mid = f"{self.prefix}-m{len(self.ids) + 1}"
            self.ids[key] = mid
            self.labels[mid] = []
            if m.start is not None and m.end is not None:
                self.spans.setdefault(m.context, []).append((m.start, m.end, mid))
        mid = self.ids[key]
        if label not in self.labels[mid]:
            self.labels[mid].append(label)
        return m, mid

    def render(self, index: int) -> str:
        """The context's text, escaped, with its supporting sentences in ``<mark>``."""
        text = self.contexts[index]
        out: list[str] = []
        pos = 0
        for start, end, mid in sorted(self.spans.get(index, [])):
            out.append(e(text[pos:start]))
            out.append(
                f'<mark id="{mid}" title="supports {e(", ".join(self.labels[mid]))}">'
                f"{e(text[start:end])}</mark>"
            )
            pos = end
        out.append(e(text[pos:]))
        return "".join(out)
