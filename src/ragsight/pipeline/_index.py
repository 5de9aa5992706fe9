"""Search indexes of the reference pipeline: exact dense search (faiss) and BM25 (bm25s), and
reciprocal rank fusion.

The dense index was chosen by measurement (``bench/bench_vector_index.py``, docs/sweep.md): at
the scale of a sweep (hundreds to a few thousand chunks) exact inner-product search with faiss's
``IndexFlatIP`` answers one query in about 0.15 ms at 3,000-6,000 chunks on this 2-core machine,
with no build time and perfect recall, while the HNSW indexes (hnswlib, usearch, faiss HNSW) took
0.4-1.3 s to build and lost 11-46% of the true top 10 at those sizes. Both libraries are imported
on first use and need ``pip install 'ragsight[sweep]'``.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from ..errors import MissingExtraError

__all__ = ["BM25Index", "DenseIndex", "reciprocal_rank_fusion"]


def _faiss() -> object:
    try:
        import faiss
    except ImportError as exc:
        raise MissingExtraError("the reference pipeline's vector index", "sweep", "faiss") from exc
    return faiss


class DenseIndex:
    """Exact top-k by inner product (cosine for the unit vectors every embedder returns)."""

    def __init__(self, vectors: np.ndarray) -> None:
        faiss = _faiss()
        matrix = np.ascontiguousarray(np.asarray(vectors, dtype=np.float32))
        if matrix.ndim != 2 or not len(matrix):
            raise ValueError("DenseIndex needs a non-empty 2-D array of vectors")
        self.size = len(matrix)
        self._index = faiss.IndexFlatIP(matrix.shape[1])  # type: ignore[attr-defined]
        self._index.add(matrix)

    def search(self, query: np.ndarray, k: int) -> list[tuple[int, float]]:
        """(position, score) of the top ``k``, best first; ties by position."""
        q = np.ascontiguousarray(np.asarray(query, dtype=np.float32).reshape(1, -1))
        scores, ids = self._index.search(q, min(k, self.size))
        hits = [(int(i), float(s)) for i, s in zip(ids[0], scores[0]) if i >= 0]
        return sorted(hits, key=lambda h: (-round(h[1], 6), h[0]))


class BM25Index:
    """BM25 (Lucene's variant, k1 = 1.5, b = 0.75) over the chunks, English stop words removed.
    Chunks with a score of 0 (no query term) are not returned."""

    def __init__(self, texts: Sequence[str]) -> None:
        try:
            import bm25s
        except ImportError as exc:
            raise MissingExtraError("BM25 retrieval", "sweep", "bm25s") from exc
        self._bm25s = bm25s
        self.size = len(texts)
        tokens = bm25s.tokenize(list(texts), stopwords="en", return_ids=False, show_progress=False)
        self._index = bm25s.BM25()
        self._index.index(tokens, show_progress=False)

    def search(self, query: str, k: int) -> list[tuple[int, float]]:
        bm = self._bm25s
        tokens = bm.tokenize([query], stopwords="en", return_ids=False, show_progress=False)
        if not tokens or not tokens[0]:
            return []
        ids, scores = self._index.retrieve(tokens, k=min(k, self.size), show_progress=False, n_threads=1)
        hits = [(int(i), float(s)) for i, s in zip(ids[0], scores[0]) if s > 0]
        return sorted(hits, key=lambda h: (-round(h[1], 6), h[0]))


def reciprocal_rank_fusion(rankings: Sequence[Sequence[str]], k: int = 60) -> list[tuple[str, float]]:
    """Reciprocal rank fusion (Cormack, Clarke and Buettcher, 2009): an item's score is the sum,
    over the rankings it appears in, of 1 / (k + rank), rank counting from 1. Best first; ties go
    to the item with the better best rank, then to the earlier ranking and position."""
    scores: dict[str, float] = {}
    best: dict[str, tuple[int, int, int]] = {}
    for li, ranking in enumerate(rankings):
        seen: set[str] = set()
        for rank, item in enumerate(ranking, start=1):
            if item in seen:
                continue  # a ranking names an item once
            seen.add(item)
            scores[item] = scores.get(item, 0.0) + 1.0 / (k + rank)
            key = (rank, li, rank)
            if item not in best or key < best[item]:
                best[item] = key
    # scores equal in exact arithmetic may differ in the last bit with the order of the sums
    return sorted(scores.items(), key=lambda kv: (-round(kv[1], 12), best[kv[0]]))
