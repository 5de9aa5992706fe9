"""The real embedded judge on answer relevancy: an answer on the question's subject that tells
something else is judged not to respond, below the answer that does, while the cosine of its
generated question with the question stays as high as a correct answer's (the gzip manual); the
correct answer passes 0.5 on the scale shipped for the judge's model.

Slow: loads the embedded model once per session; four calls.
"""

from __future__ import annotations

import pytest

from ragsight import Outcome
from ragsight.analyses import AnalysisSettings, SampleAnalyses
from ragsight.embed import local_embedder
from ragsight.judge import Judge, RetryPolicy
from ragsight.metrics import AnswerRelevancy
from ragsight.sample import Sample

pytestmark = [pytest.mark.slow, pytest.mark.local]

QUESTION = "What compression level does gzip use by default?"
ANSWERS = {
    "on": "By default gzip uses compression level 6, which leans towards high compression at the expense of speed.",
    "off": "You can keep the original file when compressing by passing -k (--keep); gzip otherwise deletes the input file.",
}


async def test_a_same_subject_answer_to_another_question_is_judged_not_to_respond(qwen_provider: object) -> None:
    judge = Judge(qwen_provider, policy=RetryPolicy(call_timeout_s=1800.0, step_deadline_s=3600.0))  # type: ignore[arg-type]
    emb = local_embedder()
    got = {}
    for name, text in ANSWERS.items():
        sample = Sample(id=name, question=QUESTION, response=text)
        got[name] = await AnswerRelevancy().score(SampleAnalyses(sample, judge, emb, AnalysisSettings(explain="none")))
    on, off = got["on"], got["off"]
    assert on.outcome is Outcome.SCORED and off.outcome is Outcome.SCORED, (on.reason, off.reason)
    print(f"on {on.value:.3f} (cosine {on.evidence.details['mean_similarity']:.3f}), "
          f"off {off.value:.3f} (cosine {off.evidence.details['mean_similarity']:.3f})")
    assert on.value is not None and off.value is not None
    assert off.value < on.value and off.value < 0.4
    # the judge's P of a correct answer runs low (0.35-0.59); on its model's scale it passes 0.5
    assert on.value >= 0.5 and on.evidence.details["addresses"]["verdict"] is True
    assert on.evidence.details["addresses"]["judge_p"] < on.value
    # what the cosine could not see: the off-topic answer's question is still close to the question
    assert off.evidence.details["mean_similarity"] > 0.85
    assert off.evidence.details["addresses"]["verdict"] is False
