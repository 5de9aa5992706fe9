"""answer_correctness = w1 * factual_correctness(f1) + w2 * answer_similarity (default 0.75, 0.25).

``form`` is factual_correctness's (``auto``: the claims judged supported, each at its threshold;
``expected``: expected counts from P(supported)).
"""

from __future__ import annotations

import asyncio
import math
from typing import Any

from .._score import Evidence, Score
from ..analyses import SampleAnalyses
from ..dataset import Sample
from ._base import OUT_OF_SCOPE_ANSWER_SKIP, Metric
from .answer_similarity import similarity_to_reference
from .factual_correctness import FactualCorrectness, f_beta

__all__ = ["AnswerCorrectness"]


class AnswerCorrectness(Metric):
    name = "answer_correctness"
    requires = ("response", "reference")
    needs_judge = True
    needs_embedder = True
    groups = frozenset({"generation"})

    def __init__(self, key: str | None = None, weights: tuple[float, float] = (0.75, 0.25),
                 form: str = "auto") -> None:
        super().__init__(key)
        try:
            w1, w2 = (float(w) for w in weights)
        except (TypeError, ValueError):
            raise ValueError(f"answer_correctness weights must be two numbers like 0.75/0.25, not {weights!r}") from None
        if not (math.isfinite(w1) and math.isfinite(w2)) or w1 < 0 or w2 < 0 or w1 + w2 == 0:
            raise ValueError(f"answer_correctness weights must be finite, >= 0 and not both 0, not {w1:g}/{w2:g}")
        # scaled by the larger first: 1e308/1e308 is 0.5/0.5 (their sum overflowed, and both
        # weights became 0: every score 0.000, silently)
        top = max(w1, w2)
        w1, w2 = w1 / top, w2 / top
        self.weights = (w1 / (w1 + w2), w2 / (w1 + w2))
        self._fc = FactualCorrectness(mode="f1", form=form)
        self.form = form

    def missing(self, sample: Sample) -> str | None:
        if sample.out_of_scope:
            return OUT_OF_SCOPE_ANSWER_SKIP
        return super().missing(sample)

    def params(self) -> dict[str, Any]:
        return {"weights": list(self.weights), "form": self.form}

    async def compute(self, ctx: SampleAnalyses) -> Score:
        w1, w2 = self.weights
        # the similarity's embedding goes on while the claims are judged
        sim_task = asyncio.ensure_future(similarity_to_reference(ctx)) if w2 > 0 else None
        try:
            tp, fp, fn, ev = await self._fc.counts(ctx)
        except BaseException:
            if sim_task is not None:
                sim_task.cancel()
                await asyncio.gather(sim_task, return_exceptions=True)
            raise
        fc = f_beta(tp, fp, fn)
        sim, sim_details = (await sim_task) if sim_task is not None else (0.0, {})
        details = {**ev.details, "factual_correctness": fc, "similarity": sim, "weights": [w1, w2], **sim_details}
        evidence = Evidence(claims=ev.claims, details=details, calls=ev.calls)
        if fc is None:
            return Score.undetermined(
                self.key, "neither the response nor the reference makes a factual claim", evidence)
        value = w1 * fc + w2 * max(0.0, sim)
        return Score.scored(self.key, value, f"{w1:.2f} x F1 {fc:.3f} + {w2:.2f} x similarity {sim:.3f}", evidence)
