"""answer_relevancy = mean cosine(question, q_i) over N questions generated from the response.

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

from .._score import Evidence, Score
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
        details = {
            "questions": [{"question": q, "similarity": round(s, 6)} for q, s in zip(gen.questions, sims)],
            "noncommittal": gen.noncommittal,
            "distinct_questions": len(gen.questions),
            "asked": ctx.n_questions,
            "embedder": getattr(ctx.embedder, "name", ""),
        }
        if gen.standalone_question is not None:
            details["standalone_question"] = gen.standalone_question
        if gen.standalone_rejected is not None:
            details["standalone_rejected"] = gen.standalone_rejected
        ev = Evidence(details=details, calls=gen.refs)
        if gen.noncommittal:
            return Score.scored(self.key, 0.0, "the response is noncommittal", ev)
        value = sum(sims) / len(sims)
        value = min(1.0, max(-1.0, value))
        said = "similarity of 1 generated question" if len(sims) == 1 else \
            f"mean similarity of {len(sims)} generated questions"
        return Score.scored(self.key, value, said, ev)


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
