"""The agent metrics beyond a turn's calls: the whole trajectory against its reference calls,
the calls' arguments against the tools' schemas (:mod:`.trajectory`), the judge's reading of each
tool choice and of the trajectory's soundness (:mod:`.agent_judge`), a RAG agent's retrieval
steps judged as retrievals (:mod:`.retrieval_steps`). They register themselves
when the registry loads its optional metrics."""

from __future__ import annotations

from . import register
from .agent_judge import ToolSelection, TrajectoryQuality
from .retrieval_steps import RetrievalStepRelevance
from .trajectory import ToolArgumentValidity, TrajectoryMatch

__all__ = ["RetrievalStepRelevance", "ToolArgumentValidity", "ToolSelection", "TrajectoryMatch", "TrajectoryQuality"]

for _cls in (TrajectoryMatch, ToolArgumentValidity, ToolSelection, TrajectoryQuality, RetrievalStepRelevance):
    register(_cls)
