"""Which embedder a run uses: :class:`EmbedderSpec` (a name or an Embedder, with its server)."""

from __future__ import annotations

from dataclasses import dataclass

from ._protocol import Embedder

__all__ = ["EmbedderSpec"]


@dataclass(frozen=True)
class EmbedderSpec:
    """The embedder of a run and where it is served, given whole as ``embedder=`` to
    :func:`ragsight.evaluate` (which also takes the bare name or an Embedder).

    ``model``: ``"openai:MODEL"``, ``"local"`` (the offline one), ``"local:e5-small"``,
    ``"local:minilm"``, or an Embedder; None chooses (the offline one when installed, else the
    judge server's embeddings; for a resume: the run's own). ``base_url``: the embeddings server
    (``--embedder-base-url``); by default the judge's.

    Example::

        emb = ragsight.EmbedderSpec("openai:nomic-embed-text", base_url="http://localhost:11434/v1")
        result = ragsight.evaluate("data.jsonl", judge="openai:gpt-4o-mini", embedder=emb)
    """

    model: str | Embedder | None = None
    base_url: str | None = None

    @classmethod
    def of(cls, embedder: EmbedderSpec | str | Embedder | None) -> EmbedderSpec:
        """``embedder`` as a spec: a spec as it is, anything else as its ``model``."""
        return embedder if isinstance(embedder, EmbedderSpec) else cls(embedder)
