"""abstention: does the system decline when, and only when, the documents cannot answer?

A question is out of scope when the sample says so (``Sample.out_of_scope``: metadata
``question_type`` is ``out_of_scope``, as ``ragsight generate`` writes it, or ``answerable`` is
false, or ``out_of_scope`` is true; a row's top-level ``answerable`` field lands in metadata). The
metric decides whether the response *declines* (offers no answer, and says it cannot answer, the
information is not in its documents, or it does not know) or *answers* (offers an answer to the
question or a part of it, however hedged, right or wrong, negative or made up). The value is 1
when that choice is right for the question, else 0:

- out-of-scope question: declined -> 1 (correct decline), answered -> 0 (a made-up answer);
- in-scope question: answered -> 1, declined -> 0 (a wrong decline).

``abstention(scope=out_of_scope)`` scores out-of-scope questions only (its mean is the rate of
correct declines) and ``abstention(scope=in_scope)`` in-scope ones only (its mean is 1 minus the
rate of wrong declines); the other samples end ``skipped``, with the reason.

How it decides (``method=combined``, the default; measured in ``bench/abstention_check.py``):
first a deterministic phrase detector (:func:`detect_declines`, English only) reads the response
clause by clause. When it finds decline phrases and nothing else but remarks about the documents
and referrals, the response declined, and no judge is asked. Otherwise (no decline phrase, a
decline phrase beside other content such as "The documents do not say, but usually 20 days", a
response not in English) the judge decides: the absence of a phrase is no evidence of an answer.
The embedded judge answers one yes/no from log-probabilities, "does the response give an
answer?" (prompt ``declines``, v2), declined when P(No) >= 0.5; a remote judge answers JSON
(``declines_json``): {"reason", "declines"}. ``method=judge`` asks the judge for every response.
Every signal is recorded in the evidence: the detector's verdict, the patterns it matched and its
clauses, the judge's P or reason when asked, and which of them decided.
"""

from __future__ import annotations

from typing import Any

from .._score import Evidence, Score
from ..analyses import DeclineSignals, SampleAnalyses, detect_declines, refs
from ..calls import fit_for_judge
from ..dataset import Sample
from ..errors import OutputError
from ..prompts import fence, load_prompt
from ._base import Metric

__all__ = ["Abstention", "DeclineSignals", "detect_declines"]

SCOPES = ("all", "out_of_scope", "in_scope")
METHODS = ("combined", "judge")
DECLINE_THRESHOLD = 0.5  # the embedded judge's P(declines) at or above which a response declines

class Abstention(Metric):
    name = "abstention"
    requires = ("question", "response")
    needs_judge = True
    groups = frozenset({"generation"})

    def __init__(self, key: str | None = None, scope: str = "all", method: str = "combined") -> None:
        if scope not in SCOPES:
            raise ValueError(f"abstention scope must be one of {', '.join(SCOPES)}, not {scope!r}")
        if method not in METHODS:
            raise ValueError(f"abstention method must be one of {', '.join(METHODS)}, not {method!r}")
        super().__init__(key)
        self.scope = scope
        self.method = method

    def params(self) -> dict[str, Any]:
        return {"scope": self.scope, "method": self.method}

    def missing(self, sample: Sample) -> str | None:
        if self.scope == "out_of_scope" and not sample.out_of_scope:
            return "in-scope question (this abstention scores out-of-scope questions only)"
        if self.scope == "in_scope" and sample.out_of_scope:
            return "out-of-scope question (this abstention scores in-scope questions only)"
        return super().missing(sample)

    async def compute(self, ctx: SampleAnalyses) -> Score:
        s = ctx.sample
        assert s.question is not None and s.response is not None
        signals = detect_declines(s.response)
        details: dict[str, Any] = {
            "out_of_scope": s.out_of_scope, "scope": self.scope, "method": self.method,
            "detector": signals.verdict, "matched": list(signals.matched), "quoted": list(signals.quotes),
            "clauses": [[kind, text] for kind, text in signals.clauses], "p_declines": None, "reason": None,
        }
        calls: Any = ()
        if self.method == "combined" and signals.verdict == "declines":
            declined, decided_by = True, "detector"
            why = f"decline phrases: {signals.quoted()}"
        else:
            ans, declined, p, reason = await self._ask_judge(ctx)
            calls = refs(ans)
            decided_by = "judge"
            details.update(p_declines=p, reason=reason)
            why = f"judge: P(declines)={p:.2f}" if p is not None else f"judge: {reason}" if reason else "judge"
        oos = s.out_of_scope
        correct = declined == oos
        what = ("declined an out-of-scope question" if declined and oos else
                "answered an out-of-scope question" if oos else
                "declined an in-scope question" if declined else "answered an in-scope question")
        details.update(declined=declined, correct=correct, decided_by=decided_by)
        return Score.scored(self.key, 1.0 if correct else 0.0, f"{what} ({why})",
                            Evidence(details=details, calls=calls))

    async def _ask_judge(self, ctx: SampleAnalyses) -> tuple[Any, bool, float | None, str | None]:
        """(answer, declined, P(declines) from the embedded judge, reason from a remote one)."""
        judge = ctx.need_judge()
        s = ctx.sample
        assert s.question is not None and s.response is not None
        question = fence("question", s.question)
        response = fit_for_judge(judge, [s.response], field="response", output_tokens=64,
                                 alongside=[question], record=ctx.truncations)[0]
        values = {"question": question, "response": fence("response", response)}
        if judge.supports_choices:
            async with ctx.batch:
                ans: Any = await judge.choose(load_prompt("declines"), values, use_cache=ctx.settings.use_cache)
            p = 1.0 - float(ans.value["Yes"])  # the prompt asks whether the response gives an answer
            return ans, p >= DECLINE_THRESHOLD, p, None

        def validate(d: dict[str, Any]) -> tuple[bool, str]:
            v = d.get("declines")
            if not isinstance(v, bool):
                raise OutputError('"declines" must be true or false')
            why = d.get("reason")
            return v, why.strip() if isinstance(why, str) else ""

        ans = await judge.ask(load_prompt("declines_json"), values, validate, max_tokens=96,
                              use_cache=ctx.settings.use_cache)
        declined, reason = ans.value
        return ans, declined, None, reason or None
