"""Short answers against aliases through a remote judge over real HTTP (127.0.0.1), with a
share of the judge's outputs broken: every sample ends scored or failed, counted, and no
broken output changes a grade."""

from __future__ import annotations

import pytest

import ragsight
from ragsight import Outcome
from tests.fakes.openai_server import FakeOpenAIServer
from tests.reliability.world import JudgeWorld

QUESTIONS = [
    ("Which city hosts the Eiffel Tower?", ["Paris", "Paris, France"]),
    ("Who wrote Hamlet?", ["William Shakespeare", "Shakespeare"]),
    ("What is the largest planet?", ["Jupiter"]),
]


def rows() -> list[dict[str, object]]:
    out = []
    for i, (q, aliases) in enumerate(QUESTIONS):
        out.append({"id": f"right-{i}", "question": q, "response": f"It is {aliases[-1]}.", "reference": aliases})
        out.append({"id": f"wrong-{i}", "question": q, "response": "It is Mars.", "reference": aliases})
    return out


@pytest.mark.parametrize("fault_rate", [0.0, 0.3])
def test_short_answers_over_http(fault_rate: float) -> None:
    world = JudgeWorld(fault_rate=fault_rate, seed=7, faults=("malformed", "prose", "truncated_stop", "500"))
    with FakeOpenAIServer(handler=world) as srv:
        res = ragsight.evaluate(rows(), ["factual_correctness"],
                                judge=ragsight.JudgeSpec("openai:m", base_url=srv.url),
                                options=ragsight.RunOptions(cache=False))
    assert world.answered["verify_claim_answer_json"] >= 6
    assert (sum(world.injected.values()) > 0) == (fault_rate > 0)  # the faults did happen
    for sid, scores in res.scores.items():
        score = scores["factual_correctness"]
        if score.outcome is Outcome.FAILED:
            assert fault_rate > 0 and score.reason
            continue
        assert score.outcome is Outcome.SCORED
        assert score.evidence.details["short_answer"] is True
        assert score.value == (1.0 if sid.startswith("right") else 0.0), sid
        assert "alias_contained" in score.evidence.claims[0].signals
    summary = res.summary["factual_correctness"]
    assert summary.counts["scored"] + summary.counts["failed"] == 6
    if fault_rate == 0.0:
        assert summary.counts["scored"] == 6
