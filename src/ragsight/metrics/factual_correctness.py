"""factual_correctness: claim-level precision / recall / F-beta of the response against the reference.

TP = response claims supported by the reference, FP = response claims not supported by it,
FN = reference claims not supported by the response.

Short-form references ("Paris", or a list of accepted aliases; see
``SampleAnalyses.short_answer``) are not split into claims: the response is graded as one claim
against every alias, with the question. With P = P(correct) the counts are TP = P, FP = FN = 1 - P,
so every mode gives P: the expected value of the spec's F-beta when the response is correct
with probability P (1 or 0 for a judge that gives only a verdict).
"""

from __future__ import annotations

import math
from typing import Any

from .._score import Evidence, Score
from ..analyses import SampleAnalyses
from ._base import Metric

__all__ = ["FactualCorrectness", "f_beta"]

MODES = ("precision", "recall", "f1", "fbeta")


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

    def __init__(self, key: str | None = None, mode: str = "f1", beta: float = 1.0) -> None:
        super().__init__(key)
        if mode not in MODES:
            raise ValueError(f"factual_correctness mode must be one of {', '.join(MODES)}, not '{mode}'")
        if not isinstance(beta, (int, float)) or isinstance(beta, bool) or not math.isfinite(beta) or beta <= 0:
            raise ValueError(f"factual_correctness beta must be a finite number > 0, not {beta!r}")
        if mode == "f1" and beta != 1.0:
            raise ValueError("factual_correctness: mode=f1 has beta 1; use mode=fbeta to set beta")
        self.mode = mode
        self.beta = 1.0 if mode == "f1" else float(beta)

    def params(self) -> dict[str, Any]:
        return {"mode": self.mode, "beta": self.beta}

    async def counts(self, ctx: SampleAnalyses) -> tuple[float, float, float, Evidence]:
        need_fn = self.mode != "precision"
        short = await ctx.short_answer()
        if short is not None:
            p = short.p_correct
            details = {"tp": p, "fp": 1.0 - p, "fn": 1.0 - p if need_fn else None, "mode": self.mode,
                       "beta": self.beta, "short_answer": True, "p_correct": p}
            return p, 1.0 - p, (1.0 - p if need_fn else 0.0), Evidence(
                claims=(short.verdict,), details=details, calls=short.refs)
        resp_claims = await ctx.response_claims()
        vs_ref = await ctx.response_vs_reference()
        claims = list(vs_ref.verdicts)
        refs = resp_claims.refs + vs_ref.refs
        tp = sum(v.supported for v in vs_ref.verdicts)
        fp = len(vs_ref.verdicts) - tp
        fn = 0
        if need_fn:
            ref_claims = await ctx.reference_claims()
            vs_resp = await ctx.reference_vs_response()
            fn = sum(not v.supported for v in vs_resp.verdicts)
            claims += list(vs_resp.verdicts)
            refs += ref_claims.refs + vs_resp.refs
        ev = Evidence(claims=tuple(claims), details={"tp": tp, "fp": fp, "fn": fn if need_fn else None,
                                                     "mode": self.mode, "beta": self.beta}, calls=refs)
        return tp, fp, fn, ev

    async def compute(self, ctx: SampleAnalyses) -> Score:
        tp, fp, fn, ev = await self.counts(ctx)
        if ev.details.get("short_answer"):
            return Score.scored(self.key, tp, f"short answer graded as a whole: P(correct) = {tp:.3f}", ev)
        if self.mode == "precision":
            if tp + fp == 0:
                return Score.undetermined(self.key, "the response makes no factual claims", ev)
            return Score.scored(self.key, tp / (tp + fp), f"TP={tp} FP={fp}", ev)
        if self.mode == "recall":
            if tp + fn == 0:
                return Score.undetermined(self.key, "the reference makes no factual claims", ev)
            return Score.scored(self.key, tp / (tp + fn), f"TP={tp} FN={fn}", ev)
        value = f_beta(tp, fp, fn, self.beta)
        if value is None:
            return Score.undetermined(self.key, "neither the response nor the reference makes a factual claim", ev)
        return Score.scored(self.key, value, f"TP={tp} FP={fp} FN={fn}", ev)
