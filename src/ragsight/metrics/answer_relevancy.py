"""answer_relevancy: does the response respond to the question?

- A judge with yes/no probabilities (the embedded judge): P(Yes) of "does the answer tell what
  the question asks for?" (``answer_addresses_choice``), with a short reason for a No. The
  embedded judge's P runs low (correct answers 0.35-0.59), so the value is that P on the scale
  shipped for its model (a monotone Platt map fitted on development answers, so a correct answer
  passes 0.5: ``analyses._calibrated.ADDRESS_SCALE``); the judge's own P is kept in the evidence
  (``addresses.judge_p``). Another judge's P is the value as it is. The
  questions generated from the response and their cosine with the question are still computed
  and kept in the evidence (``questions``, ``mean_similarity``), but they do not make the value:
  with the e5-small embedder the cosine sits at 0.8-0.96 for any answer on the question's
  subject, so an answer on the same subject that tells something else scored like a correct one
  (the development set ``bench/relevancy_set.jsonl``, docs/validity.md).
- Any other judge: the mean cosine(question, q_i) over the N questions generated from the
  response (the definition of the specification).

A noncommittal response ("I don't know") scores 0: one the abstention metric's phrase detector
reads as a decline (English, German, French, Spanish) with no judge call, else one the judge
calls noncommittal while it writes the questions.

A turn of a conversation (a sample with a ``history``) is read in its conversation: the
questions generated from the response are compared with the user's question rewritten to stand
alone ("Does it come in red?" -> "Does the Trail come in red?") by a separate step that never sees
the response, which the evidence records (``standalone_question``; a rewrite that shares no
content word with what the user said is set aside for the question as asked:
``standalone_rejected``).
"""

from __future__ import annotations

from typing import Any

from .._score import ClaimVerdict, Evidence, Score
from ..analyses import SampleAnalyses
from ._base import Metric
from .abstention import detect_declines

__all__ = ["AnswerRelevancy"]


class AnswerRelevancy(Metric):
    name = "answer_relevancy"
    requires = ("question", "response")
    needs_judge = True
    needs_embedder = True
    groups = frozenset({"generation", "reference-free"})
    core = True

    async def compute(self, ctx: SampleAnalyses) -> Score:
        if (declined := _declined(ctx, self.key)) is not None:
            return declined
        gen = await ctx.generated_questions()
        question = gen.standalone_question or ctx.sample.question or ""
        vecs = await ctx.embed([question, *gen.questions], kind="query")
        sims = [float(vecs[0] @ vecs[i]) for i in range(1, len(vecs))]
        mean_sim = min(1.0, max(-1.0, sum(sims) / len(sims)))
        details: dict[str, Any] = {
            "questions": [{"question": q, "similarity": round(s, 6)} for q, s in zip(gen.questions, sims)],
            "mean_similarity": round(mean_sim, 6),
            "noncommittal": gen.noncommittal,
            "distinct_questions": len(gen.questions),
            "asked": ctx.n_questions,
            "embedder": getattr(ctx.embedder, "name", ""),
        }
        if gen.standalone_question is not None:
            details["standalone_question"] = gen.standalone_question
        if gen.standalone_rejected is not None:
            details["standalone_rejected"] = gen.standalone_rejected
        if gen.noncommittal:
            return Score.scored(self.key, 0.0, "the response is noncommittal", Evidence(details=details, calls=gen.refs))
        said = "similarity of 1 generated question" if len(sims) == 1 else \
            f"mean similarity of {len(sims)} generated questions"
        if not ctx.need_judge().supports_choices:
            details["value_from"] = "similarity"
            return Score.scored(self.key, mean_sim, said, Evidence(details=details, calls=gen.refs))
        verdict = await ctx.addresses(question)
        details["value_from"] = "judged verdict"
        judge_p = verdict.probability if verdict.judge_p is None else verdict.judge_p
        details["addresses"] = {"question": verdict.question, "verdict": verdict.addresses,
                                "probability": round(verdict.probability, 6), "judge_p": round(judge_p, 6),
                                "reason": verdict.reason}
        trail = (ClaimVerdict(claim=verdict.question, supported=verdict.addresses, probability=verdict.probability,
                              reason=verdict.reason, target="response", signals={"judge_yes": judge_p}),)
        ev = Evidence(claims=trail, details=details, calls=(*gen.refs, *verdict.refs))
        how = "responds to the question" if verdict.addresses else "does not respond to the question"
        why = f": {verdict.reason}" if verdict.reason and not verdict.addresses else ""
        scaled = f"P {verdict.probability:.2f}, judge P {judge_p:.2f}" if abs(verdict.probability - judge_p) > 5e-7 \
            else f"judge P {judge_p:.2f}"
        return Score.scored(self.key, verdict.probability, f"{how} ({scaled}){why}; {said} {mean_sim:.2f}", ev)


def _declined(ctx: SampleAnalyses, key: str) -> Score | None:
    """0 for a response the decline detector reads as a decline (no judge call); skipped when the
    question is out of scope (declining was right, and the abstention metric says so: there is
    nothing to be relevant to); else None."""
    if not ctx.settings.nonanswers:
        return None
    signals = detect_declines(ctx.sample.response or "")
    if signals.verdict != "declines":
        return None
    if ctx.sample.out_of_scope:
        return Score.skipped(key, f"declines an out-of-scope question ({signals.quoted()}), as it should: "
                                  "nothing to be relevant to (see abstention)")
    details = {"noncommittal": True, "decided_by": "detector", "matched": list(signals.matched)}
    return Score.scored(key, 0.0, f"the response is noncommittal: it declines ({signals.quoted()})",
                        Evidence(details=details))
