"""How claim verdicts become counts: the claims judged supported (each at its threshold), or the
expected number of supported claims.

A verdict with a probability (the embedded judge's P(supported)) counts 1 when ``P`` is at or
above the run's threshold in the count form, and ``P`` supported and ``1 - P`` not supported in
the expected form. A verdict without a probability (a remote judge's yes/no) counts 1 or 0 in
both forms. ``auto`` (the default) is the count form for every judge: a sample's value is the
share of its claims judged supported, as ragas, DeepEval and RAGChecker define it, and the
expected value and every P stay in the evidence (:func:`expected_details`). The expected form
(the mean P(supported) for faithfulness) was the embedded judge's default before: a fully
supported answer read 0.58-0.79 with it. The share was chosen by a rule fixed before the figures
(balanced accuracy at the sample's threshold on the WiCE, ExpertQA and MTRAG development sets;
docs/validity.md, "A sample's value").
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from .._score import ClaimVerdict

__all__ = ["FORMS", "check_form", "expected_details", "resolve_form", "supported_count"]

FORMS = ("auto", "expected", "count")


def check_form(metric: str, form: str) -> str:
    if form not in FORMS:
        raise ValueError(f"{metric} form must be one of {', '.join(FORMS)}, not '{form}'")
    return form


def resolve_form(form: str, verdicts: Sequence[ClaimVerdict]) -> str:
    """``expected`` or ``count``: ``auto`` is ``count``. ``expected`` over verdicts without a
    probability counts them 1 or 0, as ``count`` does."""
    return "count" if form == "auto" else form


def supported_count(verdicts: Sequence[ClaimVerdict], form: str) -> float:
    """The number of supported claims: sum of P(supported) (``expected``; a verdict without a
    probability counts as 1 or 0) or of the verdicts (``count``)."""
    if form == "expected":
        return float(sum(v.probability if v.probability is not None else float(v.supported) for v in verdicts))
    return float(sum(v.supported for v in verdicts))


def expected_details(verdicts: Sequence[ClaimVerdict]) -> dict[str, Any]:
    """For the evidence of a count: the expected number of supported claims and the mean
    P(supported), when every verdict has a probability; else nothing."""
    if not verdicts or any(v.probability is None for v in verdicts):
        return {}
    expected = supported_count(verdicts, "expected")
    return {"expected_supported": expected, "mean_p": expected / len(verdicts)}
