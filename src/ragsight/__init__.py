"""ragsight: evaluate retrieval-augmented generation, with the evidence behind every score."""

from ._score import ClaimVerdict, Evidence, Outcome, Score
from ._version import __version__
from .analyses import AnalysisSettings
from .dataset import Dataset, Sample
from .diagnosis import diagnose
from .judge import Judge, RetryPolicy, ScriptedProvider
from .metrics import metric_names
from .result import EvaluationResult, MetricSummary
from .run import aevaluate, evaluate
from .store import Store

__all__ = [
    "AnalysisSettings",
    "ClaimVerdict",
    "Dataset",
    "EvaluationResult",
    "Evidence",
    "Judge",
    "MetricSummary",
    "Outcome",
    "RetryPolicy",
    "Sample",
    "Score",
    "ScriptedProvider",
    "Store",
    "__version__",
    "aevaluate",
    "diagnose",
    "evaluate",
    "metric_names",
]


def __getattr__(name: str) -> object:
    if name == "ScriptedJudge":  # renamed ScriptedProvider; kept for one release
        from . import judge

        return getattr(judge, name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
