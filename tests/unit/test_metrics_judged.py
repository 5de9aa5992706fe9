"""Exact values and recorded evidence of the judge- and embedder-based metrics not covered by
test_core_metrics: factual_correctness, answer_correctness, noise_sensitivity,
context_relevance, context_entity_recall, answer_similarity and
context_precision_without_reference. Every judge answer comes from a scripted world."""

from __future__ import annotations

import asyncio
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import ragsight
from ragsight import Outcome
from ragsight.analyses import SampleAnalyses
from ragsight.errors import ConfigError
from ragsight.judge import Judge
from ragsight.metrics import FactualCorrectness
from ragsight.sample import Sample
from tests.fakes.embedder import TableEmbedder
from tests.scripted import RagScript

# ---- factual_correctness ------------------------------------------------------------------

RESP = "Response claims 0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10 and 11. No more."  # its claims are made of its own words
REF = "Reference claims 0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10 and 11. No more."  # each claim must be the reference's


def fc_world(tp: int, fp: int, fn: int, matched: int | None = None) -> RagScript:
    """Response claims: tp supported by the reference, fp not. Reference claims: fn not
    supported by the response, plus ``matched`` (default tp) that are."""
    matched = tp if matched is None else matched
    s = RagScript()
    resp = [f"response claim {i}" for i in range(tp + fp)]
    ref = [f"reference claim {i}" for i in range(matched + fn)]
    s.claims[RESP] = resp
    s.claims[REF] = ref
    for i, c in enumerate(resp):
        s.verdicts[(c, "reference")] = i < tp
    for i, c in enumerate(ref):
        s.verdicts[(c, "response")] = i < matched
        s.verdicts[(c, "reference")] = True  # the reference states its own claims (checked)
    return s


def run_fc(script: RagScript, spec: str) -> ragsight.Score:
    result = ragsight.evaluate([{"id": "s", "response": RESP, "reference": REF}], [spec], judge=script.judge())
    return result.scores["s"][spec]


@pytest.mark.parametrize(
    ("spec", "want"),
    [
        ("factual_correctness", 2 / 3),  # TP=2 FP=1 FN=1: 2 / (2 + 0.5 * 2)
        ("factual_correctness(mode=precision)", 2 / 3),
        ("factual_correctness(mode=recall)", 2 / 3),
        ("factual_correctness(mode=fbeta, beta=2)", 2 / 3),  # P = R, so every F-beta equals them
    ],
)
def test_factual_correctness_tp2_fp1_fn1(spec: str, want: float) -> None:
    score = run_fc(fc_world(2, 1, 1), spec)
    assert score.outcome is Outcome.SCORED
    assert score.value == pytest.approx(want)
    assert score.evidence.details["tp"] == 2 and score.evidence.details["fp"] == 1


@pytest.mark.parametrize(
    ("spec", "want"),
    [
        # TP=1 FP=1 FN=3: P = 1/2, R = 1/4.
        ("factual_correctness", 1 / 3),  # 1 / (1 + 0.5 * 4)
        ("factual_correctness(mode=precision)", 1 / 2),
        ("factual_correctness(mode=recall)", 1 / 4),
        ("factual_correctness(mode=fbeta, beta=2)", (5 * 1 / 8) / (4 * 1 / 2 + 1 / 4)),  # 0.2778
        ("factual_correctness(mode=fbeta, beta=0.5)", (1.25 * 1 / 8) / (0.25 * 1 / 2 + 1 / 4)),  # 0.4167
    ],
)
def test_factual_correctness_modes_differ_when_precision_and_recall_do(spec: str, want: float) -> None:
    score = run_fc(fc_world(1, 1, 3), spec)
    assert score.value == pytest.approx(want)


def test_factual_correctness_evidence_lists_both_directions() -> None:
    score = run_fc(fc_world(2, 1, 1), "factual_correctness")
    d = score.evidence.details
    assert (d["tp"], d["fp"], d["fn"], d["mode"], d["beta"]) == (2, 1, 1, "f1", 1.0)
    targets = [c.target for c in score.evidence.claims]
    assert targets == ["reference"] * 3 + ["response"] * 3
    assert [c.supported for c in score.evidence.claims] == [True, True, False, True, True, False]
    assert score.reason == "TP=2 FP=1 FN=1"
    assert {r.prompt_id for r in score.evidence.calls} == {"extract_claims", "extract_claims_part", "verify_claims"}


def test_factual_correctness_precision_mode_never_reads_reference_claims() -> None:
    script = fc_world(2, 1, 1)
    judge = script.judge()
    result = ragsight.evaluate([{"id": "s", "response": RESP, "reference": REF}],
                               ["factual_correctness(mode=precision)"], judge=judge)
    assert result.scores["s"]["factual_correctness(mode=precision)"].value == pytest.approx(2 / 3)
    assert [r.variables["raw_text"] for r in judge.calls_for("extract_claims")] == [RESP]


@pytest.mark.parametrize(
    "spec",
    ["factual_correctness", "factual_correctness(mode=precision)", "factual_correctness(mode=recall)"],
)
def test_factual_correctness_no_claims_is_undetermined(spec: str) -> None:
    score = run_fc(fc_world(0, 0, 0), spec)
    assert score.outcome is Outcome.UNDETERMINED
    assert score.value is None


def test_factual_correctness_response_without_claims_against_a_factual_reference_is_zero() -> None:
    # TP = FP = 0, FN = 2: F1 = 0 / (0 + 0.5 * 2) = 0 (not undetermined: the reference has facts).
    score = run_fc(fc_world(0, 0, 2), "factual_correctness")
    assert score.outcome is Outcome.SCORED and score.value == 0.0


def test_factual_correctness_rejects_unknown_mode() -> None:
    with pytest.raises(ConfigError, match="mode must be one of"):
        ragsight.evaluate([{"id": "s", "response": RESP, "reference": REF}],
                          ["factual_correctness(mode=accuracy)"], judge=fc_world(1, 0, 0).judge())


async def _fc_value(tp: int, fp: int, fn: int) -> float | None:
    script = fc_world(tp, fp, fn)
    ctx = SampleAnalyses(Sample(id="p", response=RESP, reference=REF), Judge(script.judge()), None)
    return (await FactualCorrectness().score(ctx)).value


@settings(max_examples=60, deadline=None)
@given(st.integers(0, 6), st.integers(0, 6), st.integers(0, 6))
def test_factual_correctness_f1_is_tp_over_tp_plus_half_errors(tp: int, fp: int, fn: int) -> None:
    value = asyncio.run(_fc_value(tp, fp, fn))
    if tp + fp + fn == 0:
        assert value is None
    else:
        assert value == pytest.approx(tp / (tp + 0.5 * (fp + fn)))


# ---- answer_correctness -------------------------------------------------------------------


def ac_embedder() -> TableEmbedder:
    return TableEmbedder({RESP: [1, 0], REF: [0.6, 0.8], "Hello.": [1, 0], "Hi.": [0, 1]})


@pytest.mark.parametrize(
    ("spec", "want"),
    [
        ("answer_correctness", 0.75 * 2 / 3 + 0.25 * 0.6),  # 0.65
        ("answer_correctness(weights=0.5/0.5)", 0.5 * 2 / 3 + 0.5 * 0.6),
        ("answer_correctness(weights=3/1)", 0.65),  # weights are normalised to sum 1
        ("answer_correctness(weights=1/0)", 2 / 3),
    ],
)
def test_answer_correctness_weights(spec: str, want: float) -> None:
    result = ragsight.evaluate([{"id": "s", "response": RESP, "reference": REF}], [spec],
                               judge=fc_world(2, 1, 1).judge(), embedder=ac_embedder())
    score = result.scores["s"][spec]
    assert score.value == pytest.approx(want)
    d = score.evidence.details
    assert d["factual_correctness"] == pytest.approx(2 / 3)
    assert sum(d["weights"]) == pytest.approx(1.0)


def test_answer_correctness_records_similarity_and_claims() -> None:
    result = ragsight.evaluate([{"id": "s", "response": RESP, "reference": REF}], ["answer_correctness"],
                               judge=fc_world(2, 1, 1).judge(), embedder=ac_embedder())
    score = result.scores["s"]["answer_correctness"]
    d = score.evidence.details
    assert d["similarity"] == pytest.approx(0.6)
    assert d["weights"] == [0.75, 0.25]
    assert (d["tp"], d["fp"], d["fn"]) == (2, 1, 1)
    assert len(score.evidence.claims) == 6


def test_answer_correctness_rejects_negative_weights() -> None:
    with pytest.raises(ConfigError, match="weights"):
        ragsight.evaluate([{"id": "s", "response": RESP, "reference": REF}],
                          ["answer_correctness(weights=-1/2)"], judge=fc_world(1, 0, 0).judge(),
                          embedder=ac_embedder())


def test_answer_correctness_without_claims_on_either_side_is_undetermined() -> None:
    script = RagScript(claims={"Hello.": [], "Hi.": []})
    result = ragsight.evaluate([{"id": "s", "response": "Hello.", "reference": "Hi."}], ["answer_correctness"],
                               judge=script.judge(), embedder=ac_embedder())
    assert result.scores["s"]["answer_correctness"].outcome is Outcome.UNDETERMINED


# ---- noise_sensitivity --------------------------------------------------------------------

NS_Q = "How tall is the tower?"
NS_REF = "The tower is 300 m tall. It opened in 1889."
NS_RESP = "The tower is 300 m tall. It opened in 1890. It is blue. It has 5 lifts."
NS_CHUNKS = ["The tower, 300 m tall, opened in 1889; the 1890 fair used it.", "Paint: blue.", "Lifts: 5."]
G1, G2 = "The tower is 300 m tall.", "The tower opened in 1889."
A, B, C, D = ("The tower is 300 m tall (response).", "The tower opened in 1890.", "The tower is blue.",
              "The tower has 5 lifts.")


def ns_world() -> RagScript:
    """Chunk 1 supports both reference claims (relevant); chunks 2 and 3 support none.
    A is correct; B is incorrect yet supported by the relevant chunk 1; C is incorrect and
    supported by the irrelevant chunk 2; D is incorrect and supported by chunks 1 and 3."""
    s = RagScript()
    s.claims[NS_REF] = [G1, G2]
    s.parts["It opened in 1889."] = [G2]  # the reference's pronoun sentence, split with the whole text in view
    s.verdicts[(G2, "reference")] = True
    s.claims[NS_RESP] = [A, B, C, D]
    for g in (G1, G2):
        s.verdicts[(g, "contexts")] = True
        s.verdicts[(g, "chunk:1")] = True
    for claim, correct, chunks in ((A, True, [1]), (B, False, [1]), (C, False, [2]), (D, False, [1, 3])):
        s.verdicts[(claim, "reference")] = correct
        s.verdicts[(claim, "contexts")] = True
        for k in chunks:
            s.verdicts[(claim, f"chunk:{k}")] = True
    return s


NS_SAMPLE = {"id": "n", "question": NS_Q, "contexts": NS_CHUNKS, "response": NS_RESP, "reference": NS_REF}


@pytest.mark.parametrize("choices", [False, True], ids=["json-judge", "choice-judge"])
def test_noise_sensitivity_relevant_and_irrelevant(choices: bool) -> None:
    script = ns_world()
    judge = script.choice_judge() if choices else script.judge()
    specs = ["noise_sensitivity", "noise_sensitivity(mode=irrelevant)"]
    result = ragsight.evaluate([NS_SAMPLE], specs, judge=judge)
    rel = result.scores["n"]["noise_sensitivity"]
    irr = result.scores["n"]["noise_sensitivity(mode=irrelevant)"]
    assert rel.value == pytest.approx(2 / 4)  # B and D: incorrect, supported by relevant chunk 1
    assert irr.value == pytest.approx(2 / 4)  # C (chunk 2) and D (chunk 3)
    assert rel.evidence.details["relevant_chunks"] == [1]
    rows = {r["claim"]: r for r in rel.evidence.details["claims"]}
    assert rows[B] == {"claim": B, "correct": False, "supporting_chunks": [1], "counted": True}
    assert rows[A]["counted"] is False  # correct claims never count
    assert [r["counted"] for r in irr.evidence.details["claims"]] == [False, False, True, True]
    assert result.summary["noise_sensitivity"].lower_is_better is True


def test_noise_sensitivity_without_a_relevant_chunk_is_zero_in_relevant_mode() -> None:
    script = ns_world()
    for g in (G1, G2):
        script.verdicts[(g, "chunk:1")] = False
    result = ragsight.evaluate([NS_SAMPLE], ["noise_sensitivity", "noise_sensitivity(mode=irrelevant)"],
                               judge=script.judge())
    assert result.scores["n"]["noise_sensitivity"].value == 0.0
    assert result.scores["n"]["noise_sensitivity"].evidence.details["relevant_chunks"] == []
    # every chunk is irrelevant now: B, C and D are all counted
    assert result.scores["n"]["noise_sensitivity(mode=irrelevant)"].value == pytest.approx(3 / 4)


def test_noise_sensitivity_response_without_claims_is_undetermined() -> None:
    script = ns_world()
    script.claims["I am not sure."] = []
    result = ragsight.evaluate([{**NS_SAMPLE, "response": "I am not sure."}], ["noise_sensitivity"],
                               judge=script.judge())
    assert result.scores["n"]["noise_sensitivity"].outcome is Outcome.UNDETERMINED


# ---- context_relevance --------------------------------------------------------------------


def test_context_relevance_splits_sentences_and_reports_each_chunk() -> None:
    chunks = [
        "Paris is the capital of France. Dr. Smith lives in Paris. The Seine flows through it.",
        "Berlin is in Germany.\n\nIt has 3.7 million inhabitants.",
        "   ",
    ]
    script = RagScript(sentence_relevance=lambda sent: "Paris" in sent or "capital" in sent)
    judge = script.judge()
    result = ragsight.evaluate([{"id": "c", "question": "What is the capital of France?", "contexts": chunks}],
                               ["context_relevance"], judge=judge)
    score = result.scores["c"]["context_relevance"]
    assert score.value == pytest.approx(2 / 5)
    assert [s["text"] for s in score.evidence.details["sentences"]] == [
        "Paris is the capital of France.", "Dr. Smith lives in Paris.", "The Seine flows through it.",
        "Berlin is in Germany.", "It has 3.7 million inhabitants.",
    ]
    per_chunk = score.evidence.details["per_chunk"]
    assert [(c["chunk"], c["sentences"], c["relevant"]) for c in per_chunk] == [(1, 3, 2), (2, 2, 0), (3, 0, 0)]
    assert per_chunk[0]["value"] == pytest.approx(2 / 3)
    assert per_chunk[1]["value"] == 0.0
    assert per_chunk[2]["value"] is None  # no sentences: no value, not 0
    assert len(judge.calls_for("label_sentences")) == 1


def test_context_relevance_without_sentences_is_undetermined() -> None:
    script = RagScript(sentence_relevance=lambda sent: True)
    result = ragsight.evaluate([{"id": "c", "question": "Q?", "contexts": [" ", "\n"]}], ["context_relevance"],
                               judge=script.judge())
    assert result.scores["c"]["context_relevance"].outcome is Outcome.UNDETERMINED


# ---- context_entity_recall ----------------------------------------------------------------


def test_context_entity_recall_matches_after_normalisation() -> None:
    ref = "The Eiffel Tower in Paris was finished in 1889 by Gustave Eiffel's company."
    chunks = ["The tower stands in Paris.", "It was completed in 1,889."]
    script = RagScript(entities={
        ref: ["The Eiffel Tower", "Paris", "1889", "Gustave Eiffel"],
        "\n\n".join(chunks): ["eiffel tower", "PARIS", "1,889"],
    })
    result = ragsight.evaluate([{"id": "e", "contexts": chunks, "reference": ref}], ["context_entity_recall"],
                               judge=script.judge())
    score = result.scores["e"]["context_entity_recall"]
    assert score.value == pytest.approx(3 / 4)
    d = score.evidence.details
    assert d["found"] == ["1889", "eiffel tower", "paris"]
    assert d["missing"] == ["gustave eiffel"]
    assert d["reference_entities"] == ["The Eiffel Tower", "Paris", "1889", "Gustave Eiffel"]


def test_context_entity_recall_reference_without_entities_is_undetermined() -> None:
    script = RagScript(entities={"Yes.": [], "c": ["Paris"]})
    result = ragsight.evaluate([{"id": "e", "contexts": ["c"], "reference": "Yes."}], ["context_entity_recall"],
                               judge=script.judge())
    assert result.scores["e"]["context_entity_recall"].outcome is Outcome.UNDETERMINED


# ---- answer_similarity --------------------------------------------------------------------


def test_answer_similarity_takes_the_best_alias() -> None:
    emb = TableEmbedder({"It is Paris.": [1, 0, 0], "Paris": [0, 1, 0], "the French capital": [0.8, 0.6, 0]})
    result = ragsight.evaluate(
        [{"id": "a", "response": "It is Paris.", "reference": ["Paris", "the French capital"]}],
        ["answer_similarity"], embedder=emb,
    )
    score = result.scores["a"]["answer_similarity"]
    assert score.value == pytest.approx(0.8)
    assert score.evidence.details["similarities"] == pytest.approx([0.0, 0.8])
    assert score.evidence.details["best_reference"] == 1
    assert score.evidence.details["embedder"] == "test:table"


def test_answer_similarity_needs_no_judge() -> None:
    emb = TableEmbedder({"x": [1, 0], "y": [0, 1]})
    result = ragsight.evaluate([{"id": "a", "response": "x", "reference": "y"}], ["answer_similarity"], embedder=emb)
    assert result.scores["a"]["answer_similarity"].value == pytest.approx(0.0)
    assert result.judge_stats == {}


# ---- context_precision_without_reference --------------------------------------------------


def test_context_precision_without_reference_judges_against_the_response() -> None:
    script = RagScript(chunk_relevance={"Who wrote Dune?": [False, True, True]})
    judge = script.judge()
    sample: dict[str, Any] = {"id": "p", "question": "Who wrote Dune?", "contexts": ["a", "b", "c"],
                              "response": "Frank Herbert wrote Dune."}
    result = ragsight.evaluate([sample], ["context_precision_without_reference"], judge=judge)
    score = result.scores["p"]["context_precision_without_reference"]
    assert score.value == pytest.approx((1 / 2 + 2 / 3) / 2)
    assert score.evidence.details["against"] == "response"
    assert [c["rank"] for c in score.evidence.details["chunks"] if c["relevant"]] == [2, 3]
    (call,) = judge.calls_for("chunk_relevance")
    assert call.variables["against"] == "response"
    assert "<response>\nFrank Herbert wrote Dune.\n</response>" in call.messages[1].content


def test_context_precision_without_reference_is_skipped_without_a_response() -> None:
    script = RagScript(chunk_relevance={"Q?": [True]})
    result = ragsight.evaluate([{"id": "p", "question": "Q?", "contexts": ["a"], "reference": "R."}],
                               ["context_precision_without_reference"], judge=script.judge())
    score = result.scores["p"]["context_precision_without_reference"]
    assert score.outcome is Outcome.SKIPPED and "response" in score.reason


def test_context_relevance_sentence_ending_in_no_is_split() -> None:
    from ragsight.analyses import split_sentences

    assert split_sentences("The answer is no. We checked twice.") == ["The answer is no.", "We checked twice."]
