"""The embedder protocol: texts in, unit-length float vectors out."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Protocol, runtime_checkable

import numpy as np

from ..errors import EmbeddingError

__all__ = ["Embedder", "checked_vectors", "cosine"]


@runtime_checkable
class Embedder(Protocol):
    """Turns texts into vectors. Implementations are async and never block the event loop
    (CPU-bound local models run in a worker thread).

    ``name`` identifies the model (e.g. ``"local:e5-small"``, ``"openai:text-embedding-3-small"``);
    it is recorded with every run. ``kind`` tells asymmetric models whether a text is a query or a
    passage (e5 prefixes them differently); symmetric models ignore it.
    """

    name: str

    async def embed(self, texts: Sequence[str], kind: str = "passage") -> np.ndarray:
        """Return an array of shape (len(texts), dim), each row L2-normalised."""
        ...

    async def aclose(self) -> None: ...


def cosine(a: np.ndarray, b: np.ndarray) -> float:
    """Cosine similarity of two vectors (not assumed normalised). 0.0 for a zero vector."""
    na = float(np.linalg.norm(a))
    nb = float(np.linalg.norm(b))
    if na == 0.0 or nb == 0.0:
        return 0.0
    return float(np.dot(a, b) / (na * nb))


def checked_vectors(vectors: object, texts: Sequence[str], name: str) -> np.ndarray:
    """``vectors`` from embedder ``name`` for ``texts``, checked before any similarity is taken
    from them: one row per text, every value finite, no all-zero row, rows unit length (they are
    normalised here when they are not). Raises EmbeddingError naming the text and the cause, so a
    broken vector makes a failed score with its reason, never a similarity of NaN, -1 or 0."""
    try:
        matrix = np.asarray(vectors)
        if matrix.dtype.kind != "f":
            matrix = matrix.astype(np.float64)
    except (TypeError, ValueError) as exc:
        raise EmbeddingError(f"embedder {name!r} returned vectors that are not numbers ({exc})") from None
    if matrix.ndim != 2 or matrix.shape[0] != len(texts):
        raise EmbeddingError(
            f"embedder {name!r} returned an array of shape {matrix.shape} for {len(texts)} texts; "
            f"expected ({len(texts)}, dim)")
    if matrix.shape[1] == 0 and len(texts):
        raise EmbeddingError(f"embedder {name!r} returned vectors of length 0")
    copied = False
    for i in range(matrix.shape[0]):
        row = matrix[i].astype(np.float64)
        what = f"text {i + 1} of {len(texts)} ({_preview(texts[i])})"
        if not np.all(np.isfinite(row)):
            bad = "NaN" if np.any(np.isnan(row)) else "infinite"
            raise EmbeddingError(f"embedder {name!r} returned a vector with {bad} values for {what}; "
                                 "no similarity can be taken from it")
        norm = float(np.linalg.norm(row))
        if norm == 0.0:
            raise EmbeddingError(f"embedder {name!r} returned an all-zero vector for {what}; "
                                 "it has no direction, so no similarity can be taken from it")
        if not np.isfinite(norm):
            raise EmbeddingError(f"embedder {name!r} returned a vector too large to normalise for {what}")
        if abs(norm - 1.0) > 1e-3:  # not unit length: normalised here (the protocol's promise)
            if not copied:
                matrix, copied = matrix.copy(), True
            matrix[i] = row / norm
    return matrix


def _preview(text: str) -> str:
    flat = " ".join(str(text).split())
    return repr(flat if len(flat) <= 40 else flat[:37] + "...")
