"""A run: evaluate() and aevaluate() (load, preflight, create or resume, hand samples to the
engine), the options that say how a run is carried out, the dry run's estimate, repeated runs,
and the event loop and signal handling that run the async core from synchronous code.
"""

from __future__ import annotations

from ._estimate import aestimate
from ._evaluate import aevaluate, evaluate, new_run_id
from ._options import RunOptions
from ._preflight import check_store_path
from ._process import RunInterrupted, run_sync
from ._repeats import RepeatReport, RepeatsBudgetExceeded, evaluate_repeats
from ._spend import PacedSpendLimit

__all__ = [
    "PacedSpendLimit",
    "RepeatReport",
    "RepeatsBudgetExceeded",
    "RunInterrupted",
    "RunOptions",
    "aestimate",
    "aevaluate",
    "check_store_path",
    "evaluate",
    "evaluate_repeats",
    "new_run_id",
    "run_sync",
]
