"""Synthetic test sets: read documents, generate and filter questions, run the system under test.

    corpus = load_corpus("handbook/")                       # chunks with stable ids
    result = await agenerate(corpus, "local", settings=TestsetSettings(size=10))
    run = await arun(result.rows, make_target("my_rag:answer"))

The command line offers the same: ``ragsight generate`` and ``ragsight answer``; see
``docs/testset.md``.
"""

from ._chunk import Chunk, ChunkSettings, chunk_document, overlap
from ._filter import REASONS, FilterSettings
from ._generate import GenerationResult, agenerate, reference_spans
from ._ingest import Corpus, Document, load_corpus
from ._kinds import DEFAULT_TYPES, QUESTION_TYPES
from ._out_of_scope import OUT_OF_SCOPE_REFERENCE
from ._plan import DEFAULT_STYLES, STYLES, TestsetSettings
from ._reply import TargetError, TargetReply
from ._rows import read_testset
from ._runner import RunResult, arun, make_target
from ._target_http import HttpFields, fill_template, parse_headers

__all__ = [
    "DEFAULT_STYLES",
    "DEFAULT_TYPES",
    "OUT_OF_SCOPE_REFERENCE",
    "QUESTION_TYPES",
    "REASONS",
    "STYLES",
    "Chunk",
    "ChunkSettings",
    "Corpus",
    "Document",
    "FilterSettings",
    "GenerationResult",
    "HttpFields",
    "RunResult",
    "TargetError",
    "TargetReply",
    "TestsetSettings",
    "agenerate",
    "arun",
    "chunk_document",
    "fill_template",
    "load_corpus",
    "make_target",
    "overlap",
    "parse_headers",
    "read_testset",
    "reference_spans",
]
