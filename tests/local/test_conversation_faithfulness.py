"""The real embedded judge on a three-turn conversation: the second answer is faithful only
through the first turn (its contexts never name the bike), the third invents a price.

Slow: loads the embedded model once per session and runs a few dozen yes/no calls.
"""

from __future__ import annotations

import pytest

from ragsight import Outcome, Score
from ragsight.analyses import AnalysisSettings, SampleAnalyses
from ragsight.conversation import Turn
from ragsight.judge import Judge, RetryPolicy
from ragsight.metrics import Faithfulness
from ragsight.sample import Sample

pytestmark = [pytest.mark.slow, pytest.mark.local]

TURNS = [
    ("Tell me about the Trail bike.",
     ("The Trail is a mountain bike with 29-inch wheels and an aluminium frame.",),
     "The Trail is a mountain bike with 29-inch wheels."),
    ("Does it come in red?",
     ("This bike is sold in three colours: red, black and forest green.",),
     "Yes, the Trail comes in red."),
    ("How much does it cost?",
     ("The Trail costs 1,899 euros. Delivery takes five working days.",),
     "The Trail costs 1,499 euros and comes with free lifetime servicing."),
]


def samples() -> list[Sample]:
    out: list[Sample] = []
    history: list[Turn] = []
    for k, (question, contexts, response) in enumerate(TURNS):
        out.append(Sample(id=f"bikes:{k}", question=question, response=response, contexts=contexts,
                          conversation_id="bikes", turn=k, history=tuple(history)))
        history += [Turn("user", question), Turn("assistant", response, contexts=contexts)]
    return out


async def test_turn_three_scores_below_the_turn_resolved_through_turn_one(qwen_provider: object) -> None:
    # a shared, loaded machine may take minutes per call: this test checks verdicts, not speed
    qwen_judge = Judge(qwen_provider, policy=RetryPolicy(call_timeout_s=1800.0, step_deadline_s=3600.0))  # type: ignore[arg-type]
    settings = AnalysisSettings(verify_response_vs_contexts=True, explain="none")
    scores: list[Score] = []
    for s in samples():
        scores.append(await Faithfulness().score(SampleAnalyses(s, qwen_judge, None, settings)))
    assert all(sc.outcome is Outcome.SCORED for sc in scores), [sc.reason for sc in scores]
    v0, v1, v2 = (sc.value for sc in scores)
    assert v0 is not None and v1 is not None and v2 is not None
    print(f"faithfulness by turn: {v0:.3f} {v1:.3f} {v2:.3f}; resolved {scores[1].evidence.details['resolved']}")
    assert v2 < v0 and v2 < v1, (v0, v1, v2)
    assert v1 >= 0.5, scores[1].evidence.claims
    # the second answer: which bike "it" is comes from the first turn
    resolved = scores[1].evidence.details["resolved"]
    assert resolved and {r["turn"] for r in resolved} == {0}, resolved
    assert any(v.target == "contexts+conversation" for v in scores[1].evidence.claims)
