"""A decline is never a claim: abstention, faithfulness and diagnose read a response through the
same decline detector, so a correct decline of an out-of-scope question is "declined" for
abstention, ``undetermined`` for faithfulness (no judge call) and no failure for diagnose, in
whatever words and language the detector reads; a partial decline's decline clause is set aside
and the rest judged."""

from __future__ import annotations

from typing import Any

import pytest

import ragsight
from ragsight import Outcome, ScriptedProvider
from ragsight.diagnosis import diagnose
from tests.scripted import RagScript

CTX = ["SQLite stores a whole database in a single file.", "VACUUM rebuilds the database file."]
DECLINES = [
    "That isn't covered in the documentation I have.",
    "There's nothing about replication in the documentation I was given.",
    "Dazu finde ich in den Unterlagen nichts.",
    "La documentation ne traite pas de cette question.",
    "No encuentro nada sobre eso en la documentación.",
]


def oos(i: int, response: str) -> dict[str, Any]:
    return {"id": f"oos-{i}", "question": "How do I set up streaming replication in PostgreSQL?",
            "contexts": CTX, "response": response, "metadata": {"question_type": "out_of_scope"}}


@pytest.mark.parametrize("local", [False, True])
def test_a_decline_is_declined_undetermined_and_not_diagnosed(local: bool) -> None:
    script = RagScript()  # no claims, no verdicts, no decline prompt: any judge call would fail the test
    judge = script.choice_judge() if local else script.judge()
    run = ragsight.evaluate([oos(i, r) for i, r in enumerate(DECLINES)], ["faithfulness", "abstention"], judge=judge)
    for i, response in enumerate(DECLINES):
        faith = run.scores[f"oos-{i}"]["faithfulness"]
        assert faith.outcome is Outcome.UNDETERMINED, (response, faith.reason)
        assert faith.evidence.details["declines"] is True
        assert faith.reason.startswith("the response declines to answer")
        abst = run.scores[f"oos-{i}"]["abstention"]
        assert (abst.value, abst.evidence.details["decided_by"]) == (1.0, "detector"), response
        assert abst.reason.startswith("declined an out-of-scope question")
    assert judge.requests == []
    assert diagnose(run, topics=False).samples == ()  # nothing fails: the declines were right


def test_a_partial_decline_sets_its_decline_aside_and_judges_the_rest() -> None:
    response = "That isn't covered in the documentation I have, though VACUUM rebuilds the database file."
    script = RagScript()
    script.verdicts[("VACUUM rebuilds the database file.", "contexts")] = True
    judge = script.judge()
    run = ragsight.evaluate([{"id": "p", "question": "How do I shrink a database?", "contexts": CTX,
                              "response": response}], ["faithfulness"], judge=judge)
    score = run.scores["p"]["faithfulness"]
    assert score.outcome is Outcome.SCORED and score.value == 1.0
    assert [v.claim for v in score.evidence.claims] == ["VACUUM rebuilds the database file."]
    assert score.evidence.details["about_the_documents"] == ["That isn't covered in the documentation I have."]
    assert judge.calls_for("extract_claims") == []  # the content clause is one plain claim


def test_a_negative_answer_is_judged_as_a_claim() -> None:
    answer = "Changing the page size is not supported in WAL mode."
    script = RagScript()
    script.verdicts[(answer, "contexts")] = False
    run = ragsight.evaluate([{"id": "a", "question": "Can I change the page size in WAL mode?", "contexts": CTX,
                              "response": answer}], ["faithfulness"], judge=script.judge())
    score = run.scores["a"]["faithfulness"]
    assert score.outcome is Outcome.SCORED and score.value == 0.0
    assert [v.claim for v in score.evidence.claims] == [answer]


def test_diagnose_says_so_when_abstentions_judge_reads_a_decline_the_detector_does_not() -> None:
    response = "That is hard to say; it varies depending on how you measure it."
    script = RagScript()
    script.claims[response] = ["The result varies depending on the measure."]
    script.verdicts[("The result varies depending on the measure.", "contexts")] = False
    handlers = script.handlers()
    handlers["declines_json"] = lambda v: {"reason": "gives no answer", "declines": True}
    judge = ScriptedProvider(handlers)
    run = ragsight.evaluate([oos(0, response)], ["faithfulness", "abstention"], judge=judge)
    assert run.scores["oos-0"]["abstention"].evidence.details["decided_by"] == "judge"
    (s,) = diagnose(run, topics=False).samples
    assert s.primary == "unsupported"
    assert any(n.startswith("abstention's judge reads the response as a decline") for n in s.notes)
