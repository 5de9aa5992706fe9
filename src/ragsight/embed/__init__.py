"""Embedders: the protocol, the providers (OpenAI-compatible, local) and the spec that names a
run's embedder (:class:`EmbedderSpec`)."""

from __future__ import annotations

from typing import Any

from ..errors import ConfigError
from ._protocol import Embedder, checked_vectors, cosine
from ._spec import EmbedderSpec

__all__ = ["Embedder", "EmbedderSpec", "checked_vectors", "cosine", "local_embedder", "make_embedder"]

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


def make_embedder(spec: Any = None, *, base_url: str | None = None, notice: Any = None) -> Any:
    """An embedder from a spec: ``"openai:MODEL"``, ``"local"`` (the default offline embedder),
    ``"local:e5-small"``, ``"local:minilm"``, or an Embedder instance."""
    if spec is not None and not isinstance(spec, str):
        if isinstance(spec, Embedder):
            return spec
        raise ConfigError(f"cannot use {type(spec).__name__} as an embedder")
    text = (spec or "local").strip()
    kind, _, rest = text.partition(":")
    if kind == "openai":
        if not rest:
            raise ConfigError("--embedder openai needs a model: openai:MODEL, e.g. openai:text-embedding-3-small")
        from ._openai import OpenAIEmbedder

        return OpenAIEmbedder(rest, base_url=base_url)
    if kind == "local":
        return local_embedder(rest or None)
    raise ConfigError(f"unknown embedder '{text}'. Use openai:MODEL, local, local:e5-small or local:minilm.")
