"""Embedders: the protocol and providers (OpenAI-compatible, local)."""

from __future__ import annotations

from typing import Any

from ..errors import ConfigError
from ._protocol import Embedder, cosine

__all__ = ["Embedder", "cosine", "local_embedder"]

DEFAULT_LOCAL = "e5-small"


def local_embedder(name: str | None = None) -> Any:
    """The offline embedder by name: ``e5-small`` (default; numpy only) or ``minilm``."""
    from . import _local

    choice = name or DEFAULT_LOCAL
    if choice in ("e5-small", "e5"):
        return _local.E5SmallEmbedder()
    if choice in ("minilm", "all-minilm-l6-v2"):
        return _local.MiniLMEmbedder()
    raise ConfigError(f"unknown local embedder '{choice}'; use e5-small or minilm")
