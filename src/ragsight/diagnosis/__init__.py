"""Why a RAG system fails, from the evidence a run already holds: each failing sample's primary
cause (retrieval, unsupported, noise, incomplete, decline, tool, judge) with the claims, chunks or
calls that show it, the count of each cause with a bootstrap CI, the topics of the failing
questions, and what two runs' causes became (docs/diagnose.md)."""

from ._change import (
    MIN_PAIRED_SHARE,
    PASSING,
    CauseChange,
    DiagnosisChange,
    SampleChange,
    diagnose_change,
)
from ._diagnosis import adiagnose, diagnose, parse_thresholds, thresholds_for
from ._model import (
    CAUSES,
    DEFAULT_THRESHOLD,
    DIAGNOSIS_FORMAT,
    HINTS,
    MEANINGS,
    NEEDS,
    PRIORITY,
    THRESHOLDS,
    UNDIAGNOSED,
    CauseCount,
    Diagnosis,
    EvidenceItem,
    FailingMetric,
    Finding,
    SampleDiagnosis,
    Threshold,
    Topic,
    TopicGroup,
    UnmeasuredCause,
    UnpairedRunsError,
)
from ._samples import EXPLAINED_BY, best_sentence, diagnose_sample
from ._text import KIND_WORDS, change_lines, diagnosis_lines, threshold_text
from ._topics import WORDS, cluster, name_topics, word_vectors

__all__ = [
    "CAUSES",
    "DEFAULT_THRESHOLD",
    "DIAGNOSIS_FORMAT",
    "EXPLAINED_BY",
    "HINTS",
    "KIND_WORDS",
    "MEANINGS",
    "MIN_PAIRED_SHARE",
    "NEEDS",
    "PASSING",
    "PRIORITY",
    "THRESHOLDS",
    "UNDIAGNOSED",
    "WORDS",
    "CauseChange",
    "CauseCount",
    "Diagnosis",
    "DiagnosisChange",
    "EvidenceItem",
    "FailingMetric",
    "Finding",
    "SampleChange",
    "SampleDiagnosis",
    "Threshold",
    "Topic",
    "TopicGroup",
    "UnmeasuredCause",
    "UnpairedRunsError",
    "adiagnose",
    "best_sentence",
    "change_lines",
    "cluster",
    "diagnose",
    "diagnose_change",
    "diagnose_sample",
    "diagnosis_lines",
    "name_topics",
    "parse_thresholds",
    "threshold_text",
    "thresholds_for",
    "word_vectors",
]
