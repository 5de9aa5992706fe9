"""factual_correctness: claim-level precision / recall / F-beta of the response against the reference.

TP = response claims supported by the reference, FP = response claims not supported by it,
FN = reference claims not supported by the response.

Short-form references ("Paris", or a list of accepted aliases; see
``SampleAnalyses.short_answer``) are not split into claims: the response is graded as one claim
against every alias, with the question. With P = P(correct) the counts are TP = P, FP = FN = 1 - P,
so every mode gives P: the expected value of the spec's F-beta when the response is correct
with probability P (1 or 0 for a judge that gives only a verdict).

``form``: ``auto`` (default) and ``count`` count the claims judged supported, each verdict at its
threshold (the expected counts are in the evidence, ``expected_counts``, when every verdict has a
probability); ``expected`` uses expected counts (TP = the sum of P(supported) of the response
claims against the reference, FP = the sum of 1 - P, FN = the sum of 1 - P of the reference
claims against the response), so precision is the mean P(supported) and F-beta is the F-beta of
the expected counts.
"""

from __future__ import annotations

import math
from typing import Any

from .._score import Evidence, Score
from ..analyses import SampleAnalyses, started_together
from ..dataset import Sample
from ._base import OUT_OF_SCOPE_ANSWER_SKIP, Metric
from ._support import check_form, resolve_form, supported_count

__all__ = ["FactualCorrectness", "f_beta"]

MODES = ("precision", "recall", "f1", "fbeta")
MIN_BETA, MAX_BETA = 1e-3, 1e3


def f_beta(tp: float, fp: float, fn: float, beta: float = 1.0) -> float | None:
    """F-beta from counts; None when undefined (no claims on either side)."""
    if tp + fp + fn == 0:
        return None
    p = tp / (tp + fp) if tp + fp else 0.0
    r = tp / (tp + fn) if tp + fn else 0.0
    if p == 0.0 and r == 0.0:
        return 0.0
    b2 = beta * beta
    return (1 + b2) * p * r / (b2 * p + r)


class FactualCorrectness(Metric):
    name = "factual_correctness"
    requires = ("response", "reference")
    needs_judge = True
    groups = frozenset({"generation"})

    def __init__(self, key: str | None = None, mode: str = "f1", beta: float = 1.0, form: str = "auto") -> None:
        super().__init__(key)
        if mode not in MODES:
            raise ValueError(f"factual_correctness mode must be one of {', '.join(MODES)}, not '{mode}'")
        if not isinstance(beta, (int, float)) or isinstance(beta, bool) or not math.isfinite(beta) or beta <= 0:
            raise ValueError(f"factual_correctness beta must be a finite number > 0, not {beta!r}")
        if not MIN_BETA <= beta <= MAX_BETA:  # beta squared must stay a number: 1e308 made every F-beta NaN
            raise ValueError(f"factual_correctness beta must be between {MIN_BETA:g} and {MAX_BETA:g}, not {beta:g} "
                             "(beyond them F-beta is recall or precision: use mode=recall or mode=precision)")
        if mode == "f1" and beta != 1.0:
            raise ValueError("factual_correctness: mode=f1 has beta 1; use mode=fbeta to set beta")
        self.mode = mode
        self.beta = 1.0 if mode == "f1" else float(beta)
        self.form = check_form(self.name, form)

    def missing(self, sample: Sample) -> str | None:
        if sample.out_of_scope:
            return OUT_OF_SCOPE_ANSWER_SKIP
        return super().missing(sample)

    def params(self) -> dict[str, Any]:
        return {"mode": self.mode, "beta": self.beta, "form": self.form}

    async def counts(self, ctx: SampleAnalyses) -> tuple[float, float, float, Evidence]:
        need_fn = self.mode != "precision"
        short = await ctx.short_answer()
        if short is not None:
            p = short.p_correct
            short_details = {"tp": p, "fp": 1.0 - p, "fn": 1.0 - p if need_fn else None, "mode": self.mode,
                             "beta": self.beta, "short_answer": True, "p_correct": p}
            return p, 1.0 - p, (1.0 - p if need_fn else 0.0), Evidence(
                claims=(short.verdict,), details=short_details, calls=short.refs)
        await started_together(ctx.response_vs_reference(), *((ctx.reference_vs_response(),) if need_fn else ()))
        resp_claims = await ctx.response_claims()
        vs_ref = await ctx.response_vs_reference()
        claims = list(vs_ref.verdicts)
        refs = resp_claims.refs + vs_ref.refs
        vs_resp_verdicts: tuple[Any, ...] = ()
        if need_fn:
            ref_claims = await ctx.reference_claims()
            vs_resp = await ctx.reference_vs_response()
            vs_resp_verdicts = vs_resp.verdicts
            claims += list(vs_resp.verdicts)
            refs += ref_claims.refs + vs_resp.refs
        form = resolve_form(self.form, claims)
        tp = supported_count(vs_ref.verdicts, form)
        fp = len(vs_ref.verdicts) - tp
        fn = len(vs_resp_verdicts) - supported_count(vs_resp_verdicts, form) if need_fn else 0.0
        whole = form == "count"  # whole numbers in the trail, as before
        details: dict[str, Any] = {"tp": int(tp) if whole else tp, "fp": int(fp) if whole else fp,
                                   "fn": (int(fn) if whole else fn) if need_fn else None,
                                   "mode": self.mode, "beta": self.beta, "form": form}
        if form == "expected":  # the counts at the threshold too, for the reader
            n_ok = sum(v.supported for v in vs_ref.verdicts)
            details["counts_at_threshold"] = {
                "tp": n_ok, "fp": len(vs_ref.verdicts) - n_ok,
                "fn": sum(not v.supported for v in vs_resp_verdicts) if need_fn else None}
        elif claims and all(v.probability is not None for v in claims):  # the expected counts, for the reader
            e_tp = supported_count(vs_ref.verdicts, "expected")
            details["expected_counts"] = {
                "tp": e_tp, "fp": len(vs_ref.verdicts) - e_tp,
                "fn": len(vs_resp_verdicts) - supported_count(vs_resp_verdicts, "expected") if need_fn else None}
        ev = Evidence(claims=tuple(claims), details=details, calls=refs)
        return tp, fp, fn, ev

    async def compute(self, ctx: SampleAnalyses) -> Score:
        tp, fp, fn, ev = await self.counts(ctx)
        if ev.details.get("short_answer"):
            return Score.scored(self.key, tp, f"short answer graded as a whole: P(correct) = {tp:.3f}", ev)
        expected = ev.details.get("form") == "expected"

        def show(**counts: float) -> str:
            if expected:
                return "expected " + " ".join(f"{k}={v:.2f}" for k, v in counts.items()) + " (from P(supported))"
            return " ".join(f"{k}={int(v)}" for k, v in counts.items())

        if self.mode == "precision":
            if tp + fp == 0:
                return Score.undetermined(self.key, "the response makes no factual claims", ev)
            return Score.scored(self.key, tp / (tp + fp), show(TP=tp, FP=fp), ev)
        if self.mode == "recall":
            if tp + fn == 0:
                return Score.undetermined(self.key, "the reference makes no factual claims", ev)
            return Score.scored(self.key, tp / (tp + fn), show(TP=tp, FN=fn), ev)
        value = f_beta(tp, fp, fn, self.beta)
        if value is None:
            return Score.undetermined(self.key, "neither the response nor the reference makes a factual claim", ev)
        return Score.scored(self.key, value, show(TP=tp, FP=fp, FN=fn), ev)
