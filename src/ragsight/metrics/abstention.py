"""abstention: does the system decline when, and only when, the documents cannot answer?

A question is out of scope when the sample says so (``Sample.out_of_scope``: metadata
``question_type`` is ``out_of_scope``, as ``ragsight generate`` writes it, or ``answerable`` is
false, or ``out_of_scope`` is true; a row's top-level ``answerable`` field lands in metadata). The
judge decides whether the response *declines* (says it cannot answer, the information is not in
its documents, it does not know) rather than answering. The value is 1 when that choice is right
for the question, else 0:

- out-of-scope question: declined -> 1 (correct decline), answered -> 0 (a made-up answer);
- in-scope question: answered -> 1, declined -> 0 (a wrong decline).

``abstention(scope=out_of_scope)`` scores out-of-scope questions only (its mean is the rate of
correct declines) and ``abstention(scope=in_scope)`` in-scope ones only (its mean is 1 minus the
rate of wrong declines); the other samples end ``skipped``, with the reason. Whether the answer
given is right is for the other metrics.

The embedded judge answers one yes/no from log-probabilities (``declines``): declined when
P(Yes) >= ``AnalysisSettings.support_threshold``; P is recorded. A remote judge answers JSON
(``declines_json``): {"reason", "declines"}.
"""

from __future__ import annotations

from typing import Any

from .._budget import fit_for_judge
from .._score import Evidence, Score
from ..analyses import SampleAnalyses, refs
from ..errors import OutputError
from ..prompts import fence, load_prompt
from ..sample import Sample
from ._base import Metric

__all__ = ["Abstention"]

SCOPES = ("all", "out_of_scope", "in_scope")


class Abstention(Metric):
    name = "abstention"
    requires = ("question", "response")
    needs_judge = True
    groups = frozenset({"generation"})

    def __init__(self, key: str | None = None, scope: str = "all") -> None:
        if scope not in SCOPES:
            raise ValueError(f"abstention scope must be one of {', '.join(SCOPES)}, not {scope!r}")
        super().__init__(key)
        self.scope = scope

    def params(self) -> dict[str, Any]:
        return {"scope": self.scope}

    def missing(self, sample: Sample) -> str | None:
        if self.scope == "out_of_scope" and not sample.out_of_scope:
            return "in-scope question (this abstention scores out-of-scope questions only)"
        if self.scope == "in_scope" and sample.out_of_scope:
            return "out-of-scope question (this abstention scores in-scope questions only)"
        return super().missing(sample)

    async def compute(self, ctx: SampleAnalyses) -> Score:
        judge = ctx.need_judge()
        s = ctx.sample
        assert s.question is not None and s.response is not None
        question = fence("question", s.question)
        response = fit_for_judge(judge, [s.response], field="response", output_tokens=64,
                                 alongside=[question], record=ctx.truncations)[0]
        values = {"question": question, "response": fence("response", response)}
        p: float | None = None
        reason: str | None = None
        if judge.supports_choices:
            async with ctx.batch:
                ans: Any = await judge.choose(load_prompt("declines"), values, use_cache=ctx.settings.use_cache)
            p = float(ans.value["Yes"])
            declined = p >= ctx.settings.support_threshold
        else:
            def validate(d: dict[str, Any]) -> tuple[bool, str]:
                v = d.get("declines")
                if not isinstance(v, bool):
                    raise OutputError('"declines" must be true or false')
                why = d.get("reason")
                return v, why.strip() if isinstance(why, str) else ""

            ans = await judge.ask(load_prompt("declines_json"), values, validate, max_tokens=96,
                                  use_cache=ctx.settings.use_cache)
            declined, reason = ans.value
        oos = s.out_of_scope
        correct = declined == oos
        what = ("declined an out-of-scope question" if declined and oos else
                "answered an out-of-scope question" if oos else
                "declined an in-scope question" if declined else "answered an in-scope question")
        ev = Evidence(details={"out_of_scope": oos, "declined": declined, "p_declines": p, "reason": reason,
                               "correct": correct, "scope": self.scope},
                      calls=refs(ans))
        why = f"{what}{'' if p is None else f' (P(declines)={p:.2f})'}{f': {reason}' if reason else ''}"
        return Score.scored(self.key, 1.0 if correct else 0.0, why, ev)
