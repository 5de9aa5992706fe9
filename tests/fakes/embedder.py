"""Deterministic embedders for tests."""

from __future__ import annotations

import hashlib
from collections.abc import Mapping, Sequence

import numpy as np


class TableEmbedder:
    """Vectors looked up in a table (exact similarities in tests); unknown texts get a
    hash-seeded random unit vector."""

    name = "test:table"

    def __init__(self, table: Mapping[str, Sequence[float]] | None = None, dim: int = 8) -> None:
        self.table = {k: np.asarray(v, dtype=np.float64) for k, v in (table or {}).items()}
        self.dim = dim if not self.table else len(next(iter(self.table.values())))
        self.calls: list[list[str]] = []

    async def embed(self, texts: Sequence[str], kind: str = "passage") -> np.ndarray:
        self.calls.append(list(texts))
        rows = []
        for t in texts:
            v = self.table.get(t)
            if v is None:
                seed = int.from_bytes(hashlib.sha256(t.encode()).digest()[:8], "little")
                v = np.random.default_rng(seed).standard_normal(self.dim)
            rows.append(v / np.linalg.norm(v))
        return np.vstack(rows)

    async def aclose(self) -> None:
        return None
