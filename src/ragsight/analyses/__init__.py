"""Shared per-sample analyses: claims, claim verdicts, chunk relevance, questions, entities."""

from ._context import (
    AnalysisSettings,
    ChunkJudgement,
    ClaimList,
    EntityList,
    GeneratedQuestions,
    SampleContext,
    SentenceLabels,
    ShortAnswer,
    VerdictList,
    contexts_block,
)
from ._signals import describe_signals
from ._text import normalise_entity, split_sentences

__all__ = [
    "AnalysisSettings",
    "ChunkJudgement",
    "ClaimList",
    "EntityList",
    "GeneratedQuestions",
    "SampleContext",
    "SentenceLabels",
    "ShortAnswer",
    "VerdictList",
    "contexts_block",
    "describe_signals",
    "normalise_entity",
    "split_sentences",
]
