"""A run: evaluate() and aevaluate() (load, preflight, create or resume, hand samples to the
engine), the dry run's estimate and repeated runs.
"""

from __future__ import annotations

from ._estimate import aestimate
from ._evaluate import RunInterrupted, aevaluate, check_store_path, evaluate, new_run_id, run_sync
from ._repeats import RepeatReport, evaluate_repeats
from ._spend import PacedSpendLimit

__all__ = [
    "PacedSpendLimit",
    "RepeatReport",
    "RunInterrupted",
    "aestimate",
    "aevaluate",
    "check_store_path",
    "evaluate",
    "evaluate_repeats",
    "new_run_id",
    "run_sync",
]
