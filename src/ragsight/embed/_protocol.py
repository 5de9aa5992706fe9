"""The embedder protocol: texts in, unit-length float vectors out."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Protocol, runtime_checkable

import numpy as np

__all__ = ["Embedder", "cosine"]


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
