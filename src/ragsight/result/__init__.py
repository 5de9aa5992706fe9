"""The result of an evaluation: per-metric summaries, per-sample scores, and a stored run's reload.

The result object and its exports are in ``_result``, the summaries and the overall score in
``_summary``, a large run's samples and scores read from the store in ``_stored``, and the judge
spend per metric in ``_cost``.
"""

from ._cost import UNATTRIBUTED, metric_tokens, run_cost
from ._result import (
    LAZY_FROM,
    EvaluationResult,
    languages_note,
    load_result,
    passing_with_unsupported,
    truncation_note,
    unsupported_note,
)
from ._stored import StoredRun, StoredSamples, StoredScores
from ._summary import (
    MetricSummary,
    Overall,
    overall_entry,
    overall_of,
    summarize_outcomes,
    summarize_scores,
)

__all__ = [
    "LAZY_FROM",
    "UNATTRIBUTED",
    "EvaluationResult",
    "MetricSummary",
    "Overall",
    "StoredRun",
    "StoredSamples",
    "StoredScores",
    "languages_note",
    "load_result",
    "metric_tokens",
    "overall_entry",
    "overall_of",
    "passing_with_unsupported",
    "run_cost",
    "summarize_outcomes",
    "summarize_scores",
    "truncation_note",
    "unsupported_note",
]
