"""The agent metrics beyond a turn's calls: the whole trajectory against its reference calls,
the calls' arguments against the tools' schemas (:mod:`.trajectory`). They register themselves
when the registry loads its optional metrics."""

from __future__ import annotations

from . import register
from .trajectory import ToolArgumentValidity, TrajectoryMatch

__all__ = ["ToolArgumentValidity", "TrajectoryMatch"]

for _cls in (TrajectoryMatch, ToolArgumentValidity):
    register(_cls)
