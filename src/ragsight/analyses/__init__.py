"""Shared per-sample analyses: claims, claim verdicts, chunk relevance, questions, entities."""

from ._context import (
    AnalysisSettings,
    ChunkJudgement,
    ClaimList,
    EntityList,
    GeneratedQuestions,
    SampleContext,
    SentenceLabels,
    VerdictList,
)
from ._text import normalise_entity, split_sentences

__all__ = [
    "AnalysisSettings",
    "ChunkJudgement",
    "ClaimList",
    "EntityList",
    "GeneratedQuestions",
    "SampleContext",
    "SentenceLabels",
    "VerdictList",
    "normalise_entity",
    "split_sentences",
]
