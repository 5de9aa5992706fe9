"""Chunk pairs for the two-chunk question kinds (``multi_context``, ``comparative``).

Two chunks from different documents (or non-adjacent chunks of one document) are paired when they
share named-entity-like tokens: capitalised words that the corpus does not also use in lower case,
and numbers; pairs are ranked by the summed inverse document frequency of the shared tokens (no
embedder needed).
"""

from __future__ import annotations

import math
import re
from collections import Counter
from collections.abc import Sequence

from ._chunk import Chunk
from ._ingest import Corpus

__all__ = ["Pair", "entity_pairs"]

Pair = tuple[float, str, str, tuple[str, ...]]  # (score, chunk id, chunk id, shared tokens)

_CAP_RUN = re.compile(r"\b[A-Z][\w&-]*(?:\s+[A-Z][\w&-]*)*")
_NUM = re.compile(r"[£€$]?\d+(?:[.,:]\d+)*%?")
NUMBER_WEIGHT = 0.5  # a shared number links two chunks less surely than a shared name
MAX_POSTINGS = 200  # a token in more chunks than this links too much to be worth the pairs


def _entities_by_chunk(chunks: Sequence[Chunk]) -> list[set[str]]:
    """Named-entity-like tokens of each chunk: runs of capitalised words, without the leading
    words that the corpus also uses in lower case (so sentence-initial words drop out: "Under
    Ivar Lunde" gives "Ivar Lunde", "The" alone gives nothing), and numbers with two or more
    digits or a currency sign ("10:00", "£500", "2011")."""
    lower_counts: Counter[str] = Counter()
    for c in chunks:
        lower_counts.update(re.findall(r"\b[a-z][\w&-]*", c.text))
    out: list[set[str]] = []
    for c in chunks:
        ents: set[str] = set()
        for run in _CAP_RUN.findall(c.text):
            words = run.split()
            while words and (lower_counts[words[0].lower()] or len(words[0]) < 2):
                words.pop(0)  # "The", "Under": capitalised only because a sentence starts
            if words:
                ents.add(" ".join(words))
        ents |= {
            n.rstrip(".,:")
            for n in _NUM.findall(c.text)
            if len(re.sub(r"\D", "", n)) >= 2 or n[:1] in "£€$"
        }
        out.append(ents)
    return out


def _is_number(token: str) -> bool:
    return token[:1].isdigit() or token[:1] in "£€$"


def entity_pairs(
    corpus: Corpus, max_df: float = 0.4
) -> list[tuple[float, str, str, tuple[str, ...]]]:
    """Pairs of chunks that share entity-like tokens: (score, chunk id, chunk id, shared), best
    first. Chunks of different documents only; when the corpus has one document, chunks at least
    two apart. Tokens in more than ``max_df`` of the chunks (and in more than two) are too common
    to link anything."""
    chunks = list(corpus.chunks)
    ents = _entities_by_chunk(chunks)
    df: Counter[str] = Counter()
    for e in ents:
        df.update(e)
    n = len(chunks)
    limit = max(2.0, max_df * n)  # in a small corpus, a token shared by two chunks still links
    idf = {
        t: math.log(n / d) * (NUMBER_WEIGHT if _is_number(t) else 1.0)
        for t, d in df.items()
        if 2 <= d <= limit and d < n
    }
    one_doc = len({c.doc_id for c in chunks}) == 1
    # inverted index: only pairs that share a token are looked at (a corpus of thousands of
    # chunks has millions of pairs, few of them linked)
    postings: dict[str, list[int]] = {}
    for i, e in enumerate(ents):
        for t in e:
            if t in idf:
                postings.setdefault(t, []).append(i)
    shared_by: dict[tuple[int, int], list[str]] = {}
    for t, docs in postings.items():
        if len(docs) > MAX_POSTINGS:
            continue
        for x in range(len(docs)):
            for y in range(x + 1, len(docs)):
                i, j = docs[x], docs[y]
                a, b = chunks[i], chunks[j]
                if a.doc_id == b.doc_id and not (one_doc and abs(a.index - b.index) >= 2):
                    continue
                shared_by.setdefault((i, j), []).append(t)
    pairs = []
    for (i, j), shared in shared_by.items():
        score = sum(idf[t] for t in shared)
        ordered = tuple(sorted(shared, key=lambda t: (-idf[t], t)))
        pairs.append((round(score, 6), chunks[i].id, chunks[j].id, ordered))
    pairs.sort(key=lambda p: (-p[0], p[1], p[2]))
    return pairs
