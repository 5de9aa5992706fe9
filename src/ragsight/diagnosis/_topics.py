"""Topics of the failing questions: the questions' embeddings grouped, each group named by its
most distinctive words.

- Vectors: the run's embedder when it runs here (``local:...``), else the offline one
  (``local:e5-small``); or any embedder given; or, with ``"words"`` (or when no local embedder
  is installed), TF-IDF vectors of the questions' content words, so the grouping never needs a
  network or a model.
- Groups: average-linkage agglomerative clustering on cosine distance (scipy), cut into
  ``k = ceil(sqrt(n / 2))`` groups (at most :data:`MAX_TOPICS`) for ``n`` questions. Linkage
  costs time and memory in the square of ``n``, so past :data:`LINKAGE_LIMIT` questions it
  groups that many, drawn at random with a fixed seed, and every other question joins the
  group whose centre is nearest (cosine): time and memory linear in ``n`` beyond the limit. The
  TF-IDF vectors are sparse. No random draw: the same vectors give the same groups. Groups are
  numbered by size, then by their first question in the run's order.
- Names: class-based TF-IDF (c-TF-IDF, as BERTopic names its topics): a word's frequency in the
  group's questions over the group's word count, times ``log(1 + A / f)`` with ``A`` the mean
  number of words per group and ``f`` the word's frequency over all groups; the
  :data:`TOPIC_WORDS` best, ties alphabetical. Words are compared by stem and shown in their
  most frequent written form; stop words and numbers are left out.
"""

from __future__ import annotations

import math
import random
from collections import Counter
from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np
from scipy import sparse
from scipy.cluster.hierarchy import fcluster, linkage

from ..analyses import STOP_WORDS, fold, stem, tokens
from ..embed import Embedder, checked_vectors, make_embedder
from ..errors import ConfigError, MissingExtraError

__all__ = ["LINKAGE_LIMIT", "MAX_TOPICS", "TOPIC_WORDS", "WORDS", "centre", "cluster", "embed_questions",
           "embedder_endpoint", "name_topics", "nearest", "topic_count", "word_matrix", "word_vectors"]

LINKAGE_LIMIT = 400
"""The most questions grouped by linkage itself; the others join the nearest group's centre."""
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


def word_matrix(texts: Sequence[str]) -> sparse.csr_matrix:
    """Unit TF-IDF vectors of the texts' content words (stems), as a sparse matrix (one row a
    text, memory in the number of words); a text with none gets a dimension of its own."""
    docs = [[s for s, _ in _words(t)] for t in texts]
    vocab = sorted({w for d in docs for w in d})
    index = {w: i for i, w in enumerate(vocab)}
    df = Counter(w for d in docs for w in set(d))
    n = len(texts)
    rows: list[int] = []
    cols: list[int] = []
    vals: list[float] = []
    for r, d in enumerate(docs):
        cell = {index[w]: c * (math.log((1 + n) / (1 + df[w])) + 1.0) for w, c in Counter(d).items()}
        if not cell:
            cell = {len(vocab) + r: 1.0}
        norm = math.sqrt(sum(v * v for v in cell.values())) or 1.0
        for col, v in sorted(cell.items()):
            rows.append(r)
            cols.append(col)
            vals.append(v / norm)
    return sparse.csr_matrix((vals, (rows, cols)), shape=(n, len(vocab) + n), dtype=np.float64)


def word_vectors(texts: Sequence[str]) -> np.ndarray:
    """:func:`word_matrix` as a dense array (for a few texts; a large set is better sparse)."""
    out: np.ndarray = word_matrix(texts).toarray()
    return out


def centre(vectors: Any, rows: Sequence[int]) -> np.ndarray:
    """The mean of the given rows of a dense or sparse matrix, as a dense vector."""
    return np.asarray(vectors[list(rows)].mean(axis=0)).ravel()


def nearest(members: Sequence[int], vectors: Any, middle: np.ndarray) -> int:
    """The member whose row is closest to ``middle`` (cosine; ties: the earliest), for a dense or
    a sparse matrix of unit rows."""
    norm = float(np.linalg.norm(middle))
    c = middle / norm if norm else middle
    sims = np.asarray(vectors[list(members)] @ c).ravel()
    best = float(sims.max())
    return next(i for i, s in zip(members, sims) if s >= best - 1e-12)


def embedder_endpoint(spec: Any, base_url: str | None, config: Mapping[str, Any], run_id: str) -> str | None:
    """The server a remote embedder spec (``openai:MODEL``) is asked at: ``base_url`` when given,
    else the server the run stored for that same embedder; with neither, a ConfigError, so the
    failing questions are never sent, with the key, somewhere the run did not send them (the
    provider's public endpoint when the run used a local server). A local embedder, the words or
    an Embedder object bring their own."""
    if not isinstance(spec, str) or spec.strip() == WORDS or spec.strip().partition(":")[0] == "local":
        return base_url
    if base_url:
        return base_url
    name = spec.strip()
    stored = config.get("embedder_base_url") or config.get("base_url")
    if stored and name == config.get("embedder_spec"):
        return str(stored)
    why = ("it is not the run's embedder" if name != config.get("embedder_spec")
           else f"run {run_id} stored no server: it used the provider's default endpoint or one set in the environment")
    raise ConfigError(f"diagnose would send the failing questions (and your key) to {name}, and {why}; give the "
                      "server with --embedder-base-url URL (for the provider's own endpoint, its URL), or group "
                      "them here with --embedder words or --embedder local")


async def embed_questions(texts: Sequence[str], embedder: Any, run_embedder: str | None,
                          base_url: str | None = None) -> tuple[Any, str]:
    """(one unit vector per text, the method in words). ``embedder``: None (the run's local
    embedder, else the offline one; TF-IDF words when none is installed), :data:`WORDS`, a spec
    or an :class:`Embedder`; ``base_url``: a remote spec's server (see :func:`embedder_endpoint`)."""
    if embedder == WORDS:
        return word_matrix(texts), "words (TF-IDF of the questions' words)"
    chosen = embedder
    if chosen is None:
        chosen = run_embedder if isinstance(run_embedder, str) and run_embedder.startswith("local") else "local"
    made = not isinstance(chosen, Embedder)
    emb = make_embedder(chosen, base_url=base_url) if made else chosen
    try:
        vectors = await emb.embed(list(texts), kind="query")
    except MissingExtraError:  # a local embedder's package, found missing when it loads
        if embedder is not None:
            raise
        return word_matrix(texts), "words (TF-IDF of the questions' words; no local embedder is installed)"
    finally:
        if made:
            await emb.aclose()
    name = str(getattr(emb, "name", type(emb).__name__))
    return checked_vectors(vectors, texts, name), f"embeddings ({name})"


def _linked(vectors: np.ndarray, k: int) -> list[int]:
    z = linkage(np.asarray(vectors, dtype=np.float64), method="average", metric="cosine")
    return [int(x) for x in fcluster(np.clip(z, 0.0, None), t=k, criterion="maxclust")]


def cluster(vectors: Any, k: int, limit: int = LINKAGE_LIMIT) -> list[int]:
    """Group labels (0, 1, ...) of the rows of a dense or sparse matrix: average linkage on
    cosine distance cut into ``k`` groups, numbered by size (largest first), then by their first
    row. Past ``limit`` rows, linkage groups ``limit`` of them (a draw seeded by the number of
    rows) and each other row joins the group of the nearest centre (see the module docstring)."""
    n = vectors.shape[0]
    if n == 0:
        return []
    if k <= 1 or n <= 2:
        raw = [1] * n
    elif n <= limit:
        raw = _linked(vectors.toarray() if sparse.issparse(vectors) else vectors, k)
    else:
        # a fixed draw (seeded by n: the same questions, the same draw), not every (n/limit)-th
        # question, which a periodic order of the failing questions would alias
        picked = sorted(random.Random(n).sample(range(n), limit))
        part = vectors[picked]
        linked = _linked(part.toarray() if sparse.issparse(part) else part, k)
        groups = sorted(set(linked))
        centres = np.stack([centre(part, [j for j, g in enumerate(linked) if g == label]) for label in groups])
        norms = np.linalg.norm(centres, axis=1, keepdims=True)
        centres = centres / np.where(norms == 0.0, 1.0, norms)
        raw = [0] * n
        for lo in range(0, n, 4096):  # a block at a time: memory bounded whatever n is
            sims = np.asarray(vectors[lo:lo + 4096] @ centres.T)
            for r, row in enumerate(sims):
                raw[lo + r] = groups[int(np.argmax(row))]  # ties: the earlier group
        for j, i in enumerate(picked):
            raw[i] = linked[j]  # a question linkage grouped stays in its group
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
