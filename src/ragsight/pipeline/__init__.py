"""A reference RAG pipeline to tune before you build your own, and the system behind
``ragsight sweep --example``: documents chunked by tokens (size, overlap), exact dense search
(faiss), BM25 (bm25s), hybrid and RAG-fusion by reciprocal rank fusion, and generation with the
embedded model or any judge-style provider. Every stage is cached by content; every answer
carries its chunks' ids and document spans. Needs ``pip install 'ragsight[sweep]'``.

    pipeline = RagPipeline("handbook/", store=Store("runs.db"))
    reply = await pipeline.answer("How many days of leave?", {"chunk_size": 128, "top_k": 3})
"""

from ._config import RETRIEVAL_METHODS, PipelineConfig
from ._index import BM25Index, DenseIndex, reciprocal_rank_fusion
from ._pipeline import (
    GenerationError,
    RagAnswer,
    RagPipeline,
    RetrievedChunk,
    StageCache,
    pipeline_prompt,
    spans_of,
)

__all__ = [
    "RETRIEVAL_METHODS",
    "BM25Index",
    "DenseIndex",
    "GenerationError",
    "PipelineConfig",
    "RagAnswer",
    "RagPipeline",
    "RetrievedChunk",
    "StageCache",
    "pipeline_prompt",
    "reciprocal_rank_fusion",
    "spans_of",
]
