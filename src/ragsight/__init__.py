"""ragsight: evaluate retrieval-augmented generation, with the evidence behind every score."""

from ._score import ClaimVerdict, Evidence, Outcome, Score
from ._version import __version__
from .analyses import AnalysisSettings
from .dataset import Dataset, Sample
from .diagnosis import diagnose
from .embed import EmbedderSpec
from .judge import Judge, JudgeSpec, RetryPolicy, ScriptedProvider
from .metrics import metric_names
from .result import EvaluationResult, MetricSummary
from .run import RunOptions, aevaluate, evaluate
from .store import Store

__all__ = [
    "AnalysisSettings",
    "ClaimVerdict",
    "Dataset",
    "EmbedderSpec",
    "EvaluationResult",
    "Evidence",
    "Judge",
    "JudgeSpec",
    "MetricSummary",
    "Outcome",
    "RetryPolicy",
    "RunOptions",
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
