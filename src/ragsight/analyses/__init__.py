"""Shared per-sample analyses: claims, claim verdicts, chunk relevance, questions, entities.

One module per analysis (``_claims``, ``_verdicts``, ``_short_answer``, ``_chunks``,
``_questions``, ``_entities``, ``_sentences``), each with its JSON path (remote judges) and its
per-item path (the embedded judge) side by side; :class:`SampleAnalyses` memoises them per sample.
"""

from ._conflict import (
    CONFLICT_RULE,
    SAYS_OTHERWISE_SHARE,
    ConflictRule,
    closest_sentence,
    says_otherwise,
    source_conflict,
)
from ._conversation import judge_items, refers, transcript, user_statements
from ._declines import DeclineSignals, detect_declines
from ._sample import SampleAnalyses
from ._signals import describe_signals
from ._text import (
    LANGUAGES,
    STOP_WORDS,
    content_words,
    fold,
    language,
    normalise_entity,
    number_form,
    split_sentences,
    stem,
    tokens,
)
from ._types import (
    AnalysisSettings,
    ChunkJudgement,
    ClaimList,
    EntityList,
    GeneratedQuestions,
    Need,
    SentenceLabels,
    ShortAnswer,
    VerdictList,
    contexts_block,
    numbered,
    refs,
    started_together,
)

# The old name, kept for one release: "context" already means the retrieved chunks.
SampleContext = SampleAnalyses

__all__ = [
    "CONFLICT_RULE",
    "LANGUAGES",
    "SAYS_OTHERWISE_SHARE",
    "STOP_WORDS",
    "AnalysisSettings",
    "ChunkJudgement",
    "ClaimList",
    "ConflictRule",
    "DeclineSignals",
    "EntityList",
    "GeneratedQuestions",
    "Need",
    "SampleAnalyses",
    "SampleContext",
    "SentenceLabels",
    "ShortAnswer",
    "VerdictList",
    "closest_sentence",
    "content_words",
    "contexts_block",
    "describe_signals",
    "detect_declines",
    "fold",
    "judge_items",
    "language",
    "normalise_entity",
    "number_form",
    "numbered",
    "refers",
    "refs",
    "says_otherwise",
    "source_conflict",
    "split_sentences",
    "started_together",
    "stem",
    "tokens",
    "transcript",
    "user_statements",
]
