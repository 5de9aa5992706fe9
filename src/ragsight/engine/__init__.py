"""The async evaluation engine."""

from ._display import ProgressDisplay, display_mode, progress_text
from ._engine import (
    Progress,
    SampleOutcome,
    describe_metrics,
    metrics_for,
    run_samples,
    score_sample,
    settings_for,
)
from ._ray import WorkerLostError, default_batch_size, import_ray, run_samples_ray

__all__ = [
    "Progress",
    "ProgressDisplay",
    "SampleOutcome",
    "WorkerLostError",
    "default_batch_size",
    "describe_metrics",
    "display_mode",
    "import_ray",
    "metrics_for",
    "progress_text",
    "run_samples",
    "run_samples_ray",
    "score_sample",
    "settings_for",
]
