"""Statistics behind the report, one module per question: one run's summaries
(``_summaries``), two runs compared on the same samples (``_paired``), agreement with human
labels (``_agreement``), and a mean corrected by human labels (``_corrected``, prediction-powered
inference).

Pure functions over plain sequences of numbers (numpy and scipy only). Every function is
deterministic given its ``seed``. None of them returns NaN: a quantity the input leaves
undefined (the standard deviation of one value, the correlation of a constant vector, a
probability conditioned on an empty set) is ``None``. Inputs must already be finite (compute
statistics over *scored* outcomes only); NaN or infinity in an input raises ``ValueError``, as do
mismatched lengths and labels that are not binary.

Definitions follow docs METRICS.md, "Aggregates and comparisons" and "Agreement with human
labels"; the concordance table and the group comparison follow the telecom RAGAS study
(Roychowdhury et al.): P(correct | m1 > t1, m2 > t2), P(wrong | m1 < t3, m2 < t4), and
"mean (s.d.)" per group with a one-sided Welch t-test.
"""

from __future__ import annotations

from ._agreement import (
    ConcordanceRow,
    ConcordanceTable,
    ConditionalRate,
    Correlations,
    GroupComparison,
    GroupStats,
    ThresholdMetrics,
    auroc,
    best_threshold,
    concordance_table,
    correlations,
    expected_calibration_error,
    group_comparison,
    threshold_metrics,
)
from ._corrected import MIN_LABELS, CorrectedEstimate, corrected_estimate, ppi_mean
from ._paired import (
    MIN_PAIRED_SHARE,
    LevelPairing,
    PairedDifference,
    Pairing,
    count_units,
    describe_counts,
    paired_difference,
    pairs_to_detect,
    too_few_paired,
)
from ._summaries import RunSpread, Summary, harmonic_mean, overall_score, run_spread, summarize

__all__ = [
    "MIN_LABELS",
    "MIN_PAIRED_SHARE",
    "ConcordanceRow",
    "ConcordanceTable",
    "ConditionalRate",
    "CorrectedEstimate",
    "Correlations",
    "GroupComparison",
    "GroupStats",
    "LevelPairing",
    "PairedDifference",
    "Pairing",
    "RunSpread",
    "Summary",
    "ThresholdMetrics",
    "auroc",
    "best_threshold",
    "concordance_table",
    "corrected_estimate",
    "correlations",
    "count_units",
    "describe_counts",
    "expected_calibration_error",
    "group_comparison",
    "harmonic_mean",
    "overall_score",
    "paired_difference",
    "pairs_to_detect",
    "ppi_mean",
    "run_spread",
    "summarize",
    "threshold_metrics",
    "too_few_paired",
]
