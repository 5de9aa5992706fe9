"""Topics of the failing questions: the questions' embeddings grouped, each group named by its
most distinctive words.

- Vectors: the run's embedder when it runs here (``local:...``), else the offline one
  (``local:e5-small``); or any embedder given; or, with ``"words"`` (or when no local embedder
  is installed), TF-IDF vectors of the questions' content words, so the grouping never needs a
  network or a model.
- Groups: average-linkage agglomerative clustering on cosine distance (scipy), cut into
  ``k = ceil(sqrt(n / 2))`` groups (at most :data:`MAX_TOPICS`) for ``n`` questions. No random
  draw: the same vectors give the same groups. Groups are numbered by size, then by their first
  question in the run's order.
- Names: class-based TF-IDF (c-TF-IDF, as BERTopic names its topics): a word's frequency in the
  group's questions over the group's word count, times ``log(1 + A / f)`` with ``A`` the mean
  number of words per group and ``f`` the word's frequency over all groups; the
  :data:`TOPIC_WORDS` best, ties alphabetical. Words are compared by stem and shown in their
  most frequent written form; stop words and numbers are left out.
"""

from __future__ import annotations

import math
from collections import Counter
from collections.abc import Sequence
from typing import Any

import numpy as np
from scipy.cluster.hierarchy import fcluster, linkage

from ..analyses import STOP_WORDS, fold, stem, tokens
from ..embed import Embedder, checked_vectors, make_embedder
from ..errors import MissingExtraError

__all__ = ["MAX_TOPICS", "TOPIC_WORDS", "WORDS", "cluster", "embed_questions", "name_topics", "topic_count",
           "word_vectors"]

MAX_TOPICS = 8
TOPIC_WORDS = 3
WORDS = "words"
"""The embedder spec that groups questions by their words (TF-IDF), with no model."""


def topic_count(n: int) -> int:
    """How many groups ``n`` questions are cut into: ceil(sqrt(n / 2)), 1 to :data:`MAX_TOPICS`."""
    if n <= 2:
        return 1
    return max(1, min(MAX_TOPICS, math.ceil(math.sqrt(n / 2))))


def _words(text: str) -> list[tuple[str, str]]:
    """(stem, written form) of the text's content words, lower case, stop words and numbers out."""
    out = []
    for tok in tokens(fold(text)):
        low = tok.lower()
        if len(low) < 3 or not low.isalpha() or low in STOP_WORDS:
            continue
        out.append((stem(low), low))
    return out


def word_vectors(texts: Sequence[str]) -> np.ndarray:
    """Unit TF-IDF vectors of the texts' content words (stems); a text with none gets a
    dimension of its own."""
    docs = [[s for s, _ in _words(t)] for t in texts]
    vocab = sorted({w for d in docs for w in d})
    index = {w: i for i, w in enumerate(vocab)}
    df = Counter(w for d in docs for w in set(d))
    n = len(texts)
    m = np.zeros((n, len(vocab) + n), dtype=np.float64)
    for r, d in enumerate(docs):
        for w, c in Counter(d).items():
            m[r, index[w]] = c * (math.log((1 + n) / (1 + df[w])) + 1.0)
        if not d:
            m[r, len(vocab) + r] = 1.0
    norms = np.linalg.norm(m, axis=1, keepdims=True)
    norms[norms == 0.0] = 1.0
    out: np.ndarray = m / norms
    return out


async def embed_questions(texts: Sequence[str], embedder: Any, run_embedder: str | None
                          ) -> tuple[np.ndarray, str]:
    """(one unit vector per text, the method in words). ``embedder``: None (the run's local
    embedder, else the offline one; TF-IDF words when none is installed), :data:`WORDS`, a spec
    or an :class:`Embedder`."""
    if embedder == WORDS:
        return word_vectors(texts), "words (TF-IDF of the questions' words)"
    chosen = embedder
    if chosen is None:
        chosen = run_embedder if isinstance(run_embedder, str) and run_embedder.startswith("local") else "local"
    made = not isinstance(chosen, Embedder)
    emb = make_embedder(chosen) if made else chosen
    try:
        vectors = await emb.embed(list(texts), kind="query")
    except MissingExtraError:  # a local embedder's package, found missing when it loads
        if embedder is not None:
            raise
        return word_vectors(texts), "words (TF-IDF of the questions' words; no local embedder is installed)"
    finally:
        if made:
            await emb.aclose()
    name = str(getattr(emb, "name", type(emb).__name__))
    return checked_vectors(vectors, texts, name), f"embeddings ({name})"


def cluster(vectors: np.ndarray, k: int) -> list[int]:
    """Group labels (0, 1, ...) of the rows: average linkage on cosine distance cut into ``k``
    groups, numbered by size (largest first), then by their first row."""
    n = vectors.shape[0]
    if n == 0:
        return []
    if k <= 1 or n <= 2:
        raw = [1] * n
    else:
        z = linkage(np.asarray(vectors, dtype=np.float64), method="average", metric="cosine")
        raw = [int(x) for x in fcluster(np.clip(z, 0.0, None), t=k, criterion="maxclust")]
    sizes = Counter(raw)
    first: dict[int, int] = {}
    for i, label in enumerate(raw):
        first.setdefault(label, i)
    order = sorted(sizes, key=lambda label: (-sizes[label], first[label]))
    renumber = {label: i for i, label in enumerate(order)}
    return [renumber[label] for label in raw]


def name_topics(texts: Sequence[str], labels: Sequence[int], n_words: int = TOPIC_WORDS) -> list[tuple[str, ...]]:
    """The most distinctive words of each group (c-TF-IDF; see the module docstring)."""
    k = max(labels) + 1 if labels else 0
    counts: list[Counter[str]] = [Counter() for _ in range(k)]
    forms: dict[str, Counter[str]] = {}
    for text, label in zip(texts, labels):
        for s, written in _words(text):
            counts[label][s] += 1
            forms.setdefault(s, Counter())[written] += 1
    total = Counter[str]()
    for c in counts:
        total.update(c)
    avg = sum(total.values()) / k if k else 0.0
    out = []
    for c in counts:
        size = sum(c.values())
        scored = sorted(((c[w] / size) * math.log(1.0 + avg / total[w]), w) for w in c) if size else []
        best = sorted(scored, key=lambda t: (-t[0], t[1]))[:n_words]
        out.append(tuple(forms[w].most_common(1)[0][0] for _, w in best))
    return out
