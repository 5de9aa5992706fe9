"""The result of one metric on one sample, and the evidence behind it."""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from enum import Enum
from typing import Any

__all__ = ["ClaimVerdict", "Evidence", "JudgeCallRef", "Outcome", "Score"]


class Outcome(str, Enum):
    """How a (sample, metric) pair ended. Exactly one per pair; aggregates count all four."""

    SCORED = "scored"
    UNDETERMINED = "undetermined"
    FAILED = "failed"
    SKIPPED = "skipped"


@dataclass(frozen=True)
class ClaimVerdict:
    """A claim checked against a text."""

    claim: str
    supported: bool
    probability: float | None = None  # P(supported) when the judge gives one
    reason: str = ""
    target: str = ""  # what it was checked against: "contexts", "chunk:2", "reference", "response"
    signals: dict[str, float] = field(default_factory=dict)

    def to_dict(self) -> dict[str, Any]:
        return {
            "claim": self.claim,
            "supported": self.supported,
            "probability": self.probability,
            "reason": self.reason,
            "target": self.target,
            "signals": dict(self.signals),
        }

    @classmethod
    def from_dict(cls, d: dict[str, Any]) -> ClaimVerdict:
        return cls(
            claim=d["claim"],
            supported=bool(d["supported"]),
            probability=d.get("probability"),
            reason=d.get("reason", ""),
            target=d.get("target", ""),
            signals=dict(d.get("signals") or {}),
        )


@dataclass(frozen=True)
class JudgeCallRef:
    """A pointer from a score to a judge call recorded in the store (by its cache key)."""

    key: str
    prompt_id: str
    prompt_version: str
    cached: bool = False

    def to_dict(self) -> dict[str, Any]:
        return {
            "key": self.key,
            "prompt_id": self.prompt_id,
            "prompt_version": self.prompt_version,
            "cached": self.cached,
        }


@dataclass(frozen=True)
class Evidence:
    """What a score was computed from. Every judge-based score carries one.

    ``details`` holds metric-specific structured data (e.g. per-chunk relevance, generated
    questions with their similarities, entity lists) as plain JSON values.
    """

    claims: tuple[ClaimVerdict, ...] = ()
    details: dict[str, Any] = field(default_factory=dict)
    calls: tuple[JudgeCallRef, ...] = ()

    def to_dict(self) -> dict[str, Any]:
        return {
            "claims": [c.to_dict() for c in self.claims],
            "details": self.details,
            "calls": [c.to_dict() for c in self.calls],
        }

    @classmethod
    def from_dict(cls, d: dict[str, Any]) -> Evidence:
        return cls(
            claims=tuple(ClaimVerdict.from_dict(c) for c in d.get("claims", [])),
            details=dict(d.get("details") or {}),
            calls=tuple(JudgeCallRef(**c) for c in d.get("calls", [])),
        )


@dataclass(frozen=True)
class Score:
    """One metric's result on one sample.

    ``value`` is a float in the metric's range when ``outcome`` is SCORED, else None.
    Never NaN: the constructor refuses one.
    """

    metric: str
    outcome: Outcome
    value: float | None = None
    reason: str = ""
    evidence: Evidence = field(default_factory=Evidence)

    def __post_init__(self) -> None:
        if self.outcome is Outcome.SCORED:
            if self.value is None or not math.isfinite(self.value):
                raise ValueError(f"{self.metric}: a scored result needs a finite value")
        elif self.value is not None:
            raise ValueError(f"{self.metric}: only a scored result has a value")

    @classmethod
    def scored(cls, metric: str, value: float, reason: str = "", evidence: Evidence | None = None) -> Score:
        return cls(metric, Outcome.SCORED, float(value), reason, evidence or Evidence())

    @classmethod
    def undetermined(cls, metric: str, reason: str, evidence: Evidence | None = None) -> Score:
        return cls(metric, Outcome.UNDETERMINED, None, reason, evidence or Evidence())

    @classmethod
    def failed(cls, metric: str, reason: str, evidence: Evidence | None = None) -> Score:
        return cls(metric, Outcome.FAILED, None, reason, evidence or Evidence())

    @classmethod
    def skipped(cls, metric: str, reason: str) -> Score:
        return cls(metric, Outcome.SKIPPED, None, reason, Evidence())

    def to_dict(self) -> dict[str, Any]:
        return {"value": self.value, "outcome": self.outcome.value, "reason": self.reason}
