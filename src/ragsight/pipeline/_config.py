"""The settings of the reference RAG pipeline that a sweep varies."""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from ..errors import ConfigError

__all__ = ["RETRIEVAL_METHODS", "PipelineConfig"]

RETRIEVAL_METHODS = ("dense", "bm25", "hybrid", "fusion")


@dataclass(frozen=True)
class PipelineConfig:
    """One configuration of the reference pipeline.

    ``chunk_size`` / ``chunk_overlap``: in approximate tokens (4 characters each), packed by
    sentences (``ragsight.testset.chunk_document``). ``top_k``: chunks given to the generator.
    ``retrieval``: ``dense`` (embedding similarity, exact search), ``bm25`` (lexical), ``hybrid``
    (dense and BM25 merged by reciprocal rank fusion) or ``fusion`` (RAG-fusion: the question
    and ``fusion_queries`` rewrites by the generator, each searched densely, merged by reciprocal
    rank fusion). ``depth``: candidates each ranking contributes before fusion (default
    2 x top_k). ``rrf_k``: the constant of reciprocal rank fusion (60, as in Cormack et al. 2009).
    ``generator``: a judge-style spec (``local``, ``local:NAME``, ``openai:MODEL``); ``embedder``:
    an embedder spec (``local``, ``openai:MODEL``).
    """

    chunk_size: int = 256
    chunk_overlap: int = 32
    top_k: int = 5
    retrieval: str = "dense"
    fusion_queries: int = 3
    depth: int | None = None
    rrf_k: int = 60
    generator: str = "local"
    embedder: str = "local"
    max_answer_tokens: int = 200

    def __post_init__(self) -> None:
        problems = []
        for name in ("chunk_size", "top_k", "fusion_queries", "rrf_k", "max_answer_tokens"):
            v = getattr(self, name)
            if isinstance(v, bool) or not isinstance(v, int) or v < 1:
                problems.append(f"{name} must be an integer >= 1, got {v!r}")
        if isinstance(self.chunk_size, int) and self.chunk_size < 10:
            problems.append(f"chunk_size {self.chunk_size} is too small; use at least 10 tokens")
        ov = self.chunk_overlap
        if isinstance(ov, bool) or not isinstance(ov, int) or ov < 0 or (
            isinstance(self.chunk_size, int) and ov >= self.chunk_size
        ):
            problems.append(f"chunk_overlap must be an integer >= 0 and below chunk_size, got {ov!r}")
        if self.depth is not None and (isinstance(self.depth, bool) or not isinstance(self.depth, int)
                                       or self.depth < 1):
            problems.append(f"depth must be an integer >= 1 or left out, got {self.depth!r}")
        if self.retrieval not in RETRIEVAL_METHODS:
            problems.append(f"retrieval '{self.retrieval}' is not known; use {', '.join(RETRIEVAL_METHODS)}")
        for name in ("generator", "embedder"):
            if not isinstance(getattr(self, name), str) or not getattr(self, name).strip():
                problems.append(f"{name} must be a spec such as 'local' or 'openai:MODEL'")
        if problems:
            raise ConfigError("pipeline configuration: " + "; ".join(problems))

    @property
    def candidates(self) -> int:
        return self.depth or 2 * self.top_k

    @classmethod
    def fields(cls) -> tuple[str, ...]:
        return tuple(f.name for f in dataclasses.fields(cls))

    @classmethod
    def from_mapping(cls, values: Mapping[str, Any]) -> PipelineConfig:
        """A configuration from a mapping; an unknown key is an error naming the known ones."""
        known = set(cls.fields())
        unknown = [k for k in values if k not in known]
        if unknown:
            raise ConfigError(
                f"unknown pipeline setting(s) {', '.join(map(repr, unknown))}; the reference pipeline "
                f"takes {', '.join(cls.fields())}"
            )
        return cls(**dict(values))

    def to_dict(self) -> dict[str, Any]:
        return dataclasses.asdict(self)
