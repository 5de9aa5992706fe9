"""Exact values and recorded evidence of the core metrics, with a scripted judge."""

from __future__ import annotations

import pytest

import ragsight
from ragsight import Outcome, Sample
from tests.fakes.embedder import TableEmbedder
from tests.scripted import RagScript

PY_CONTEXT = "Python was invented by Guido van Rossum and published in 1991."
PY_RESPONSE = ("Guido van Rossum invented Python in 1991. "
               "It is the most widely used programming language in the world.")
PY_CLAIMS = [
    "Guido van Rossum invented Python.",
    "Guido van Rossum published Python in 1991.",
    "Python is the most widely used programming language in the world.",
]


def python_script() -> RagScript:
    s = RagScript()
    s.claims[PY_RESPONSE] = PY_CLAIMS
    s.verdicts[(PY_CLAIMS[0], "contexts")] = True
    s.verdicts[(PY_CLAIMS[1], "contexts")] = True
    s.verdicts[(PY_CLAIMS[2], "contexts")] = False
    return s


def test_faithfulness_seed_example_two_of_three() -> None:
    """Seed 004: two of three claims supported by the context."""
    script = python_script()
    result = ragsight.evaluate(
        [{"id": "py", "question": "Who invented Python?", "contexts": [PY_CONTEXT], "response": PY_RESPONSE}],
        ["faithfulness"], judge=script.judge(),
    )
    score = result.scores["py"]["faithfulness"]
    assert score.outcome is Outcome.SCORED
    assert score.value == pytest.approx(2 / 3)
    assert [c.claim for c in score.evidence.claims] == PY_CLAIMS
    assert [c.supported for c in score.evidence.claims] == [True, True, False]
    assert all(c.reason.startswith("scripted verdict") for c in score.evidence.claims)
    ids = {ref.prompt_id for ref in score.evidence.calls}
    assert ids == {"extract_claims", "verify_claims"}
    assert result.summary["faithfulness"].mean == pytest.approx(2 / 3)
    assert result.summary["faithfulness"].counts == {"scored": 1, "undetermined": 0, "failed": 0, "skipped": 0}


def test_context_precision_seed_example_1_0_1_0_1() -> None:
    """Seed 004: relevance [1, 0, 1, 0, 1] gives (1/1 + 2/3 + 3/5) / 3."""
    script = RagScript(chunk_relevance={"What is X?": [True, False, True, False, True]})
    sample = {"id": "cp", "question": "What is X?", "contexts": [f"chunk {i}" for i in range(5)],
              "reference": "X is Y."}
    result = ragsight.evaluate([sample], ["context_precision"], judge=script.judge())
    score = result.scores["cp"]["context_precision"]
    assert score.value == pytest.approx((1 + 2 / 3 + 3 / 5) / 3)
    assert [c["relevant"] for c in score.evidence.details["chunks"]] == [True, False, True, False, True]
    assert score.evidence.details["against"] == "reference"


def test_context_precision_no_relevant_chunk_is_zero() -> None:
    script = RagScript(chunk_relevance={"Q?": [False, False]})
    result = ragsight.evaluate([{"id": "z", "question": "Q?", "contexts": ["a", "b"], "reference": "R."}],
                               ["context_precision"], judge=script.judge())
    assert result.scores["z"]["context_precision"].value == 0.0


def test_context_recall_seed_example_three_of_four() -> None:
    # four plain sentences: four claims, with no extraction call
    claims = ["The first fact holds true.", "The second fact holds true.", "The third fact holds true.",
              "The fourth fact holds true."]
    ref = " ".join(claims)
    script = RagScript()
    for c, ok in zip(claims, [True, True, True, False]):
        script.verdicts[(c, "contexts")] = ok
    result = ragsight.evaluate([{"id": "r", "contexts": ["ctx"], "reference": ref}], ["context_recall"],
                               judge=script.judge())
    score = result.scores["r"]["context_recall"]
    assert score.value == pytest.approx(0.75)
    assert [c.supported for c in score.evidence.claims] == [True, True, True, False]


def test_no_claims_is_undetermined_not_zero() -> None:
    script = RagScript(claims={"Hello!": []})
    result = ragsight.evaluate([{"id": "h", "contexts": ["c"], "response": "Hello!"}], ["faithfulness"],
                               judge=script.judge())
    score = result.scores["h"]["faithfulness"]
    assert score.outcome is Outcome.UNDETERMINED
    assert score.value is None
    assert result.summary["faithfulness"].mean is None
    assert result.summary["faithfulness"].counts["undetermined"] == 1


def test_missing_field_is_skipped_with_reason() -> None:
    script = python_script()
    data = [
        {"id": "a", "question": "Who invented Python?", "contexts": [PY_CONTEXT], "response": PY_RESPONSE},
        {"id": "b", "question": "Who invented Python?", "response": PY_RESPONSE},
    ]
    result = ragsight.evaluate(data, ["faithfulness"], judge=script.judge())
    skipped = result.scores["b"]["faithfulness"]
    assert skipped.outcome is Outcome.SKIPPED
    assert "contexts" in skipped.reason
    summary = result.summary["faithfulness"]
    assert summary.counts["skipped"] == 1 and summary.counts["scored"] == 1
    assert summary.mean == pytest.approx(2 / 3)  # the skipped sample is not averaged in as 0


def test_claims_are_extracted_once_and_shared_across_metrics() -> None:
    """faithfulness and context_recall ask for verdicts against the contexts in one call."""
    ref = "Guido van Rossum created Python."
    script = python_script()
    script.claims[ref] = ["Guido van Rossum created Python."]
    script.verdicts[("Guido van Rossum created Python.", "contexts")] = True
    judge = script.judge()
    result = ragsight.evaluate(
        [{"id": "py", "question": "Who invented Python?", "contexts": [PY_CONTEXT], "response": PY_RESPONSE,
          "reference": ref}],
        ["faithfulness", "context_recall"], judge=judge,
    )
    assert result.scores["py"]["faithfulness"].value == pytest.approx(2 / 3)
    assert result.scores["py"]["context_recall"].value == 1.0
    # the response once; the reference is one short statement, its own claim (no call)
    assert [r.variables["raw_text"] for r in judge.calls_for("extract_claims")] == [PY_RESPONSE]
    assert len(judge.calls_for("verify_claims")) == 1  # all four claims in one call
    assert judge.calls_for("verify_claims")[0].schema["properties"]["verdicts"]["minItems"] == 4


def test_answer_relevancy_mean_similarity_and_noncommittal() -> None:
    q = "Who invented Python?"
    gen = ["Who created Python?", "Who made Python?", "When was Python published?"]
    table = {q: [1, 0, 0], gen[0]: [1, 0, 0], gen[1]: [0.6, 0.8, 0], gen[2]: [0, 1, 0]}
    script = RagScript(questions={PY_RESPONSE: (gen, False), "I don't know.": (gen, True)})
    emb = TableEmbedder(table)
    data = [{"id": "a", "question": q, "response": PY_RESPONSE},
            {"id": "b", "question": q, "response": "I don't know."}]
    result = ragsight.evaluate(data, ["answer_relevancy"], judge=script.judge(), embedder=emb)
    a = result.scores["a"]["answer_relevancy"]
    assert a.value == pytest.approx((1 + 0.6 + 0) / 3)
    assert [d["question"] for d in a.evidence.details["questions"]] == gen
    b = result.scores["b"]["answer_relevancy"]
    assert b.value == 0.0 and b.evidence.details["noncommittal"] is True


def test_embedded_style_judge_gives_probabilities_per_claim() -> None:
    script = python_script()
    script.probabilities[(PY_CLAIMS[0], "contexts")] = 0.97
    result = ragsight.evaluate(
        [{"id": "py", "question": "Who invented Python?", "contexts": [PY_CONTEXT], "response": PY_RESPONSE}],
        ["faithfulness"], judge=script.choice_judge(),
    )
    score = result.scores["py"]["faithfulness"]
    # the share of claims judged supported, 2 of 3 at P >= 0.5; the expected share in the trail
    assert score.value == pytest.approx(2 / 3)
    assert score.evidence.details == {"form": "count", "supported": 2, "claims": 3,
                                      "expected_supported": pytest.approx(1.97),
                                      "mean_p": pytest.approx((0.97 + 0.9 + 0.1) / 3)}
    assert [c.probability for c in score.evidence.claims] == [0.97, 0.9, 0.1]
    # reasons only for the unsupported claim
    assert [bool(c.reason) for c in score.evidence.claims] == [False, False, True]
    mean = ragsight.evaluate(
        [{"id": "py", "question": "Who invented Python?", "contexts": [PY_CONTEXT], "response": PY_RESPONSE}],
        ["faithfulness(form=expected)"], judge=script.choice_judge(),
    ).scores["py"]["faithfulness(form=expected)"]
    assert mean.value == pytest.approx((0.97 + 0.9 + 0.1) / 3) and mean.evidence.details["form"] == "expected"
    assert score.reason == "2 of 3 claims supported by the contexts; mean P(supported) 0.66"


def test_sample_type_is_frozen() -> None:
    s = Sample(id="x", question="q")
    with pytest.raises(AttributeError):
        s.question = "other"  # type: ignore[misc]


def test_answer_relevancy_drops_repeated_questions_and_records_it() -> None:
    q = "Who invented Python?"
    gen = ["Who created Python?", "Who created Python?", "Who made Python?"]
    table = {q: [1, 0, 0], gen[0]: [1, 0, 0], gen[2]: [0.6, 0.8, 0]}
    script = RagScript(questions={PY_RESPONSE: (gen, False)})
    result = ragsight.evaluate([{"id": "a", "question": q, "response": PY_RESPONSE}], ["answer_relevancy"],
                               judge=script.judge(), embedder=TableEmbedder(table))
    score = result.scores["a"]["answer_relevancy"]
    assert score.value == pytest.approx((1 + 0.6) / 2)
    assert score.evidence.details["distinct_questions"] == 2 and score.evidence.details["asked"] == 3
