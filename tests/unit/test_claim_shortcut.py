"""A response or reference that is already one short statement is its own claim: no extraction
call."""

from __future__ import annotations

import pytest

import ragsight
from ragsight import Outcome
from ragsight.analyses import AnalysisSettings
from ragsight.analyses._claims import OWN_CLAIM_WORDS, own_claim
from tests.scripted import RagScript

CONTEXT = "The Eiffel Tower was completed in 1889 for the World's Fair in Paris."
STATEMENT = "The Eiffel Tower was completed in 1889."
WORDS = [f"word{chr(97 + i)}" for i in range(26)]  # distinct content words: worda, wordb, ...


@pytest.mark.parametrize(
    ("text", "own"),
    [
        (STATEMENT, STATEMENT),
        ("  The Eiffel Tower   was completed in 1889.\n", STATEMENT),  # whitespace collapsed
        ("The tower is 330 m tall. It was completed in 1889.", None),  # two sentences
        ("When was the Eiffel Tower completed?", None),  # a question
        ("I think the tower was completed in 1889.", None),  # first person: may be a hedge
        ("I am not sure.", None),
        ("You can visit the tower every day of the year.", None),  # second person
        ("Paris.", None),  # fewer than three content words
        ("Hello!", None),
        ("", None),
        ("It was there.", None),  # no content word
        ("The tower " + " ".join(WORDS[:OWN_CLAIM_WORDS - 1]) + ".", None),  # 26 words
    ],
)
def test_what_counts_as_one_short_statement(text: str, own: str | None) -> None:
    assert own_claim(text) == own


def test_the_word_limit_is_inclusive() -> None:
    words = WORDS[:OWN_CLAIM_WORDS]
    text = " ".join(words) + "."
    assert len(words) == OWN_CLAIM_WORDS and own_claim(text) == text
    assert own_claim(" ".join([*words, "more"]) + ".") is None


def script(supported: bool) -> RagScript:
    s = RagScript()
    s.verdicts[(STATEMENT, "contexts")] = supported
    s.verdicts[(STATEMENT, "reference")] = supported
    s.verdicts[(STATEMENT, "response")] = supported
    return s


@pytest.mark.parametrize(("supported", "value"), [(True, 1.0), (False, 0.0)])
def test_a_one_statement_response_is_verified_without_extraction(supported: bool, value: float) -> None:
    judge = script(supported).judge()
    res = ragsight.evaluate([{"id": "s", "contexts": [CONTEXT], "response": STATEMENT}], ["faithfulness"], judge=judge)
    score = res.scores["s"]["faithfulness"]
    assert score.outcome is Outcome.SCORED and score.value == value
    assert [v.claim for v in score.evidence.claims] == [STATEMENT]
    assert judge.calls_for("extract_claims") == []
    (req,) = judge.calls_for("verify_claims")
    assert req.variables["claim_list"] == [STATEMENT]
    # the trail shows no extraction step: the claims list carries no judge call
    assert len(score.evidence.calls) == 1


def test_factual_correctness_with_one_statement_on_both_sides_makes_no_extraction_call() -> None:
    judge = script(True).judge()
    res = ragsight.evaluate([{"id": "s", "response": STATEMENT, "reference": STATEMENT}],
                            ["factual_correctness"], judge=judge)
    score = res.scores["s"]["factual_correctness"]
    assert score.value == 1.0 and score.evidence.details["tp"] == 1
    assert judge.calls_for("extract_claims") == []
    assert [r.variables["target"] for r in judge.calls_for("verify_claims")] == ["reference", "response"]


def test_the_shortcut_can_be_turned_off() -> None:
    s = script(True)
    s.claims[STATEMENT] = ["The Eiffel Tower exists.", "It was completed in 1889."]
    s.verdicts[("The Eiffel Tower exists.", "contexts")] = True
    s.verdicts[("It was completed in 1889.", "contexts")] = False
    judge = s.judge()
    res = ragsight.evaluate([{"id": "s", "contexts": [CONTEXT], "response": STATEMENT}], ["faithfulness"],
                            judge=judge,
                            options=ragsight.RunOptions(settings=AnalysisSettings(own_claim=False)))
    assert res.scores["s"]["faithfulness"].value == 0.5
    assert [r.variables["raw_text"] for r in judge.calls_for("extract_claims")] == [STATEMENT]


def test_a_hedge_still_goes_to_the_judge_and_may_have_no_claim() -> None:
    s = RagScript()
    s.claims["That is hard to say."] = []  # ("I am not sure." is a decline: the detector reads it)
    judge = s.judge()
    res = ragsight.evaluate([{"id": "s", "contexts": [CONTEXT], "response": "That is hard to say."}], ["faithfulness"],
                            judge=judge)
    assert res.scores["s"]["faithfulness"].outcome is Outcome.UNDETERMINED
    assert len(judge.calls_for("extract_claims")) == 1
