"""answer_relevancy with a judge that gives yes/no probabilities: the value is P(the response
responds to the question) (on the scale shipped for the embedded judge's model), the generated
questions and their cosines stay in the evidence, a No gets a reason; a judge without
probabilities keeps the mean cosine."""

from __future__ import annotations

import itertools

import pytest

import ragsight
from ragsight.analyses import AnalysisSettings
from tests.fakes.embedder import TableEmbedder
from tests.scripted import RagScript

Q = "What compression level does gzip use by default?"
ON = "By default gzip uses level 6."
OFF = "You can keep the original file with gzip -k."
GEN_ON = ["Which compression level does gzip use by default?"]
GEN_OFF = ["How do I keep the original file with gzip?"]
# the cosine cannot tell them apart: the off-topic answer's question is as close as the other's
TABLE = {Q: [1, 0, 0], GEN_ON[0]: [0.9, 0.43589, 0], GEN_OFF[0]: [0.9, 0, 0.43589]}


def script() -> RagScript:
    return RagScript(questions={ON: (GEN_ON, False), OFF: (GEN_OFF, False)},
                     addresses={(Q, ON): 0.93, (Q, OFF): 0.08})


ONE = ragsight.RunOptions(settings=AnalysisSettings(n_questions=1))  # one question, as the embedded judge asks


def rows() -> list[dict[str, str]]:
    return [{"id": "on", "question": Q, "response": ON}, {"id": "off", "question": Q, "response": OFF}]


def test_the_judged_verdict_is_the_value_and_the_cosines_stay_in_the_evidence() -> None:
    s = script()
    judge = s.choice_judge()
    result = ragsight.evaluate(rows(), ["answer_relevancy"], judge=judge, embedder=TableEmbedder(TABLE), options=ONE)
    on, off = result.scores["on"]["answer_relevancy"], result.scores["off"]["answer_relevancy"]
    assert on.value == pytest.approx(0.93) and off.value == pytest.approx(0.08)
    for score, gen in ((on, GEN_ON), (off, GEN_OFF)):
        d = score.evidence.details
        assert d["value_from"] == "judged verdict"
        assert [q["question"] for q in d["questions"]] == gen
        assert d["mean_similarity"] == pytest.approx(0.9, abs=1e-4)
    assert off.evidence.details["addresses"] == {"question": Q, "verdict": False, "probability": 0.08,
                                                 "judge_p": 0.08, "reason": "scripted: not to respond"}
    assert off.reason.startswith("does not respond to the question (judge P 0.08): scripted: not to respond")
    assert on.reason.startswith("responds to the question (judge P 0.93)")
    assert [c.supported for c in off.evidence.claims] == [False] and off.evidence.claims[0].probability == 0.08
    assert {r.prompt_id for r in off.evidence.calls} >= {"generate_questions", "answer_addresses_choice",
                                                         "answer_addresses"}
    # a reason only for the No: one reason call, about the off-topic answer
    asked = judge.calls_for("answer_addresses")
    assert [r.variables["response_text"] for r in asked] == [OFF]


def test_the_question_is_fenced_before_the_response_in_the_verdict_prompt() -> None:
    s = script()
    judge = s.choice_judge()
    ragsight.evaluate(rows()[:1], ["answer_relevancy"], judge=judge, embedder=TableEmbedder(TABLE), options=ONE)
    [req] = judge.calls_for("answer_addresses_choice")
    user = req.messages[-1].content
    assert user.index("<question>") < user.index("<response>") < user.index("Answer Yes or No")


def test_explain_none_asks_no_reason() -> None:
    s = script()
    judge = s.choice_judge()
    result = ragsight.evaluate(rows(), ["answer_relevancy"], judge=judge, embedder=TableEmbedder(TABLE),
                               options=ragsight.RunOptions(settings=AnalysisSettings(explain="none", n_questions=1)))
    assert result.scores["off"]["answer_relevancy"].value == pytest.approx(0.08)
    assert judge.calls_for("answer_addresses") == []


def test_a_judge_without_probabilities_keeps_the_mean_cosine() -> None:
    result = ragsight.evaluate(rows(), ["answer_relevancy"], judge=script().judge(), embedder=TableEmbedder(TABLE),
                               options=ONE)
    for sid in ("on", "off"):
        score = result.scores[sid]["answer_relevancy"]
        assert score.value == pytest.approx(0.9, abs=1e-4)
        assert score.evidence.details["value_from"] == "similarity" and "addresses" not in score.evidence.details


def test_the_embedded_judges_p_is_read_on_its_scale_and_kept_in_the_evidence() -> None:
    """The embedded judge's P runs low: a correct answer at P 0.45 read "does not respond" at 0.5.
    Its model's shipped map (monotone) puts it above 0.5 and an off-topic one at 0.30 below; the
    judge's own P stays in the evidence; calibrated=False keeps the bare P."""
    from ragsight.analyses._calibrated import ADDRESS_SCALE, scale_addresses

    s = RagScript(questions={ON: (GEN_ON, False), OFF: (GEN_OFF, False)}, addresses={(Q, ON): 0.45, (Q, OFF): 0.30})
    judge = s.choice_judge()
    judge.model = "qwen2.5-coder-1.5b"  # posing as the embedded judge's model
    assert judge.model in ADDRESS_SCALE
    result = ragsight.evaluate(rows(), ["answer_relevancy"], judge=judge, embedder=TableEmbedder(TABLE), options=ONE)
    on, off = result.scores["on"]["answer_relevancy"], result.scores["off"]["answer_relevancy"]
    assert on.value is not None and off.value is not None
    assert on.value > 0.5 > off.value
    assert on.value == pytest.approx(scale_addresses(0.45)) and off.value == pytest.approx(scale_addresses(0.30))
    assert on.evidence.details["addresses"]["judge_p"] == 0.45 and on.evidence.details["addresses"]["verdict"] is True
    assert off.evidence.details["addresses"]["judge_p"] == 0.30 and off.evidence.details["addresses"]["verdict"] is False
    assert on.evidence.claims[0].signals["judge_yes"] == 0.45 and on.evidence.claims[0].probability == on.value
    assert on.reason.startswith(f"responds to the question (P {on.value:.2f}, judge P 0.45)")
    assert [r.variables["response_text"] for r in judge.calls_for("answer_addresses")] == [OFF]  # reason for the No only
    bare = ragsight.evaluate(rows(), ["answer_relevancy"], judge=judge, embedder=TableEmbedder(TABLE),
                             options=ragsight.RunOptions(settings=AnalysisSettings(n_questions=1, calibrated=False)))
    assert bare.scores["on"]["answer_relevancy"].value == pytest.approx(0.45)
    assert bare.scores["on"]["answer_relevancy"].evidence.details["addresses"]["verdict"] is False


def test_the_scale_is_monotone_and_keeps_other_models_p() -> None:
    from ragsight.analyses._calibrated import scale_addresses

    grid = [i / 100 for i in range(101)]
    mapped = [scale_addresses(p) for p in grid]
    assert all(b > a for a, b in itertools.pairwise(mapped))  # ranks answers as P does: AUROC unchanged
    assert scale_addresses(0.59) > 0.9 and scale_addresses(0.38) < 0.5 < scale_addresses(0.39)
    assert [scale_addresses(p, model="another-model") for p in (0.0, 0.3, 0.7, 1.0)] == [0.0, 0.3, 0.7, 1.0]
