"""How claim verdicts become counts: the expected number of supported claims, or the count at the
threshold (scores that keep their information).

A verdict with a probability (the embedded judge's P(supported)) counts ``P`` supported and
``1 - P`` not supported in the expected form; in the count form it counts 1 when ``P`` is at or
above the run's threshold. A verdict without a probability (a remote judge's yes/no) counts 1 or
0 in both forms. ``auto`` (the default) is the expected form when every verdict has a
probability, else the count: on the human-labelled development sets the expected form ranked
better (docs/validity.md, "Scores that keep their information").
"""

from __future__ import annotations

from collections.abc import Sequence

from .._score import ClaimVerdict

__all__ = ["FORMS", "check_form", "resolve_form", "supported_count"]

FORMS = ("auto", "expected", "count")


def check_form(metric: str, form: str) -> str:
    if form not in FORMS:
        raise ValueError(f"{metric} form must be one of {', '.join(FORMS)}, not '{form}'")
    return form


def resolve_form(form: str, verdicts: Sequence[ClaimVerdict]) -> str:
    """``expected`` or ``count``: ``auto`` is ``expected`` when every verdict has a probability."""
    if form != "auto":
        return form
    return "expected" if verdicts and all(v.probability is not None for v in verdicts) else "count"


def supported_count(verdicts: Sequence[ClaimVerdict], form: str) -> float:
    """The number of supported claims: sum of P(supported) (``expected``; a verdict without a
    probability counts as 1 or 0) or of the verdicts (``count``)."""
    if form == "expected":
        return float(sum(v.probability if v.probability is not None else float(v.supported) for v in verdicts))
    return float(sum(v.supported for v in verdicts))
