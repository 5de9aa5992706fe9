"""The agent metrics beyond a turn's calls: the whole trajectory against its reference calls,
the calls' arguments against the tools' schemas (:mod:`.trajectory`), the judge's reading of each
tool choice and of the trajectory's soundness (:mod:`.agent_judge`). They register themselves
when the registry loads its optional metrics."""

from __future__ import annotations

from . import register
from .agent_judge import ToolSelection, TrajectoryQuality
from .trajectory import ToolArgumentValidity, TrajectoryMatch

__all__ = ["ToolArgumentValidity", "ToolSelection", "TrajectoryMatch", "TrajectoryQuality"]

for _cls in (TrajectoryMatch, ToolArgumentValidity, ToolSelection, TrajectoryQuality):
    register(_cls)
