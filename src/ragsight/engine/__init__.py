"""The async evaluation engine."""

from ._engine import Progress, SampleOutcome, run_samples, score_sample

__all__ = ["Progress", "SampleOutcome", "run_samples", "score_sample"]
