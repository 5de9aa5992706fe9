"""A conversation's levels and aggregates: which samples and metrics are of a turn and which of a
whole conversation, and per conversation the mean of each turn-level metric over its turns."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from .._score import Evidence, Outcome, Score

__all__ = ["conversation_aggregates", "metric_level", "sample_level"]


def metric_level(metric: Any) -> str:
    """``turn`` (a single-turn sample, or one assistant turn) or ``conversation``."""
    return str(getattr(metric, "level", "turn"))


def sample_level(sample: Any) -> str:
    """``conversation`` for a conversation's own sample (``conversation_id`` set, ``turn``
    None), else ``turn``."""
    return "conversation" if getattr(sample, "conversation_id", None) is not None and \
        getattr(sample, "turn", None) is None else "turn"


def _aggregate(metric: str, turns: Sequence[tuple[int, Score]]) -> Score:
    counts = {o.value: 0 for o in Outcome}
    for _, s in turns:
        counts[s.outcome.value] += 1
    values = {t: s.value for t, s in turns if s.outcome is Outcome.SCORED and s.value is not None}
    shown = ", ".join(f"{n} {o}" for o, n in counts.items() if n)
    details = {"aggregate": "mean over the conversation's scored turns", "counts": counts,
               "turns": {str(t): v for t, v in values.items()}}
    if values:
        mean = sum(values.values()) / len(values)
        return Score(metric, Outcome.SCORED, mean, f"mean of {len(values)} scored turn(s) of {len(turns)} ({shown})",
                     Evidence(details=details))
    first = next((s.reason for _, s in turns if s.reason), "")
    for outcome in (Outcome.FAILED, Outcome.UNDETERMINED, Outcome.SKIPPED):
        if counts[outcome.value]:
            why = f"no turn scored ({shown})" + (f": {first}" if first else "")
            return Score(metric, outcome, None, why, Evidence(details=details))
    return Score(metric, Outcome.SKIPPED, None, "the conversation has no assistant turn", Evidence(details=details))


def conversation_aggregates(
    samples: Sequence[Any], scores: Mapping[str, Mapping[str, Score]], metrics: Sequence[str],
) -> dict[str, dict[str, Score]]:
    """Per conversation, per turn-level metric: the mean over its scored turns, as a Score
    whose outcome is ``scored`` when one turn or more scored, else the outcome of its turns
    (``failed`` before ``undetermined`` before ``skipped``), the four counts in its evidence.
    Conversations in the order of their first sample; a metric no turn was given is left out."""
    turns: dict[str, dict[str, list[tuple[int, Score]]]] = {}
    for s in samples:
        cid = getattr(s, "conversation_id", None)
        if cid is None:
            continue
        per = turns.setdefault(cid, {})
        if s.turn is None:
            continue
        got = scores.get(s.id, {})
        for m in metrics:
            if m in got:
                per.setdefault(m, []).append((s.turn, got[m]))
    return {cid: {m: _aggregate(m, per[m]) for m in metrics if m in per} for cid, per in turns.items()}
