"""The IR metric classes (hit_rate, precision_at_k, recall_at_k, mrr, ndcg, map) and
retrieval_accuracy (by id, text and judge): exact values through evaluate(), outcomes, evidence."""

from __future__ import annotations

import math
from typing import Any

import pytest

import ragsight
from ragsight import Outcome
from ragsight.errors import ConfigError
from ragsight.metrics import resolve_metrics
from ragsight.metrics.ir import MAP, MRR, NDCG, HitRate, PrecisionAtK, RecallAtK, RetrievalAccuracy
from tests.scripted import RagScript

RANKED = ["d1", "d2", "d3", "d4", "d5"]
BINARY = ["d2", "d4", "d9"]  # relevant at ranks 2 and 4; d9 never retrieved
GRADED = {"d2": 2, "d4": 1, "d9": 3, "d5": 0}

L2 = math.log2
DCG_BINARY = 1 / L2(3) + 1 / L2(5)
IDCG_BINARY = 1 + 1 / L2(3) + 1 / L2(4)
DCG_GRADED = 2 / L2(3) + 1 / L2(5)
IDCG_GRADED = 3 + 2 / L2(3) + 1 / L2(4)


def run(specs: list[str], relevant: Any = BINARY, retrieved: list[str] = RANKED) -> dict[str, ragsight.Score]:
    result = ragsight.evaluate([{"id": "q", "retrieved_ids": retrieved, "relevant_ids": relevant}], specs)
    return result.scores["q"]


@pytest.mark.parametrize(
    ("spec", "want"),
    [
        ("hit_rate(k=1)", 0.0),
        ("hit_rate(k=2)", 1.0),
        ("hit_rate", 1.0),
        ("precision_at_k(k=2)", 1 / 2),
        ("precision_at_k(k=5)", 2 / 5),
        ("precision_at_k", 2 / 10),  # default k = 10 divides by 10, as trec_eval's P_10
        ("recall_at_k(k=3)", 1 / 3),
        ("recall_at_k", 2 / 3),
        ("mrr", 1 / 2),
        ("mrr(k=1)", 0.0),
        ("ndcg(k=5)", DCG_BINARY / IDCG_BINARY),
        ("map", (1 / 2 + 2 / 4) / 3),
        ("map(k=3)", (1 / 2) / 3),
    ],
)
def test_binary_values_by_hand(spec: str, want: float) -> None:
    score = run([spec])[spec]
    assert score.outcome is Outcome.SCORED
    assert score.value == pytest.approx(want)


def test_ndcg_uses_grades_when_relevant_ids_is_a_mapping() -> None:
    scores = run(["ndcg(k=5)", "hit_rate(k=1)", "recall_at_k(k=5)"], relevant=GRADED)
    assert scores["ndcg(k=5)"].value == pytest.approx(DCG_GRADED / IDCG_GRADED)  # 0.3554
    assert scores["ndcg(k=5)"].evidence.details["graded"] is True
    assert scores["hit_rate(k=1)"].value == 0.0
    assert scores["recall_at_k(k=5)"].value == pytest.approx(2 / 3)  # grade 0 (d5) is not relevant


def test_evidence_records_ranks_of_the_relevant_hits() -> None:
    score = run(["ndcg(k=5)"], relevant=GRADED)["ndcg(k=5)"]
    d = score.evidence.details
    assert d["hit_ranks"] == [2, 4]
    assert d["hits"] == [{"rank": 2, "id": "d2", "grade": 2.0}, {"rank": 4, "id": "d4", "grade": 1.0}]
    assert (d["k"], d["retrieved"], d["relevant"]) == (5, 5, 3)
    assert "ranks: 2, 4" in score.reason
    assert run(["precision_at_k(k=3)"])["precision_at_k(k=3)"].evidence.details["hit_ranks"] == [2]


def test_a_repeated_id_counts_once() -> None:
    scores = run(["precision_at_k(k=3)", "hit_rate(k=3)"], retrieved=["d2", "d2", "d2"])
    assert scores["precision_at_k(k=3)"].value == pytest.approx(1 / 3)
    assert scores["precision_at_k(k=3)"].evidence.details["hit_ranks"] == [1]


@pytest.mark.parametrize("spec", ["hit_rate", "precision_at_k", "recall_at_k", "mrr", "ndcg", "map"])
def test_no_relevant_id_is_undetermined_never_zero(spec: str) -> None:
    result = ragsight.evaluate(
        [{"id": "zero", "retrieved_ids": RANKED, "relevant_ids": {"d1": 0, "d2": 0}},
         {"id": "none", "retrieved_ids": RANKED},
         {"id": "ok", "retrieved_ids": RANKED, "relevant_ids": ["d1"]}],
        [spec],
    )
    zero = result.scores["zero"][spec]
    assert zero.outcome is Outcome.UNDETERMINED and zero.value is None
    assert "no relevant id" in zero.reason
    none = result.scores["none"][spec]
    assert none.outcome is Outcome.SKIPPED and "relevant_ids" in none.reason
    ok = result.scores["ok"][spec].value
    assert ok is not None and ok > 0.0
    assert result.summary[spec].mean == ok  # only the scored sample is averaged
    assert result.summary[spec].counts == {"scored": 1, "undetermined": 1, "failed": 0, "skipped": 1}


def test_nothing_retrieved_in_the_list_scores_zero() -> None:
    scores = run(["hit_rate", "mrr", "map", "ndcg"], relevant=["x"])
    assert {k: s.value for k, s in scores.items()} == {"hit_rate": 0.0, "mrr": 0.0, "map": 0.0, "ndcg": 0.0}


@pytest.mark.parametrize("spec", ["hit_rate", "precision_at_k", "recall_at_k", "mrr", "ndcg", "map"])
def test_relevant_ids_and_no_retrieved_id_is_skipped_not_zero(spec: str) -> None:
    """As docs/metrics.md says: an empty or absent retrieved_ids list is skipped (out of the mean);
    a placeholder id that is not relevant counts the query as a miss."""
    result = ragsight.evaluate(
        [{"id": "empty", "retrieved_ids": [], "relevant_ids": ["d1"]},
         {"id": "absent", "relevant_ids": ["d1"]},
         {"id": "placeholder", "retrieved_ids": ["none"], "relevant_ids": ["d1"]},
         {"id": "ok", "retrieved_ids": ["d1"], "relevant_ids": ["d1"]}],
        [spec],
    )
    for sid in ("empty", "absent"):
        got = result.scores[sid][spec]
        assert got.outcome is Outcome.SKIPPED and got.value is None
        assert got.reason == "sample has no retrieved_ids"
    assert result.scores["placeholder"][spec].value == 0.0
    ok = result.scores["ok"][spec].value
    assert ok is not None and ok > 0
    assert result.summary[spec].mean == pytest.approx(ok / 2)  # placeholder 0 and ok; the skipped left out
    assert result.summary[spec].counts["skipped"] == 2


def test_default_parameters() -> None:
    assert [HitRate().k, PrecisionAtK().k, RecallAtK().k, NDCG().k] == [10, 10, 10, 10]
    assert MRR().k is None and MAP().k is None  # no cut-off, as trec_eval's recip_rank and map
    assert HitRate(k=3).params() == {"k": 3}
    assert {m.name for m in resolve_metrics("ir")} == {"hit_rate", "precision_at_k", "recall_at_k", "mrr",
                                                       "ndcg", "map"}
    assert all({"ir", "retrieval"} <= m.groups for m in resolve_metrics("ir"))
    assert not any(m.needs_judge or m.needs_embedder for m in resolve_metrics("ir"))


@pytest.mark.parametrize("spec", ["hit_rate(k=0)", "ndcg(k=2.5)", "mrr(k=-1)", "map(k=x)", "recall_at_k(k=true)"])
def test_bad_cut_off_is_a_config_error(spec: str) -> None:
    with pytest.raises(ConfigError, match="k must be an integer >= 1"):
        resolve_metrics(spec)


# ---- retrieval_accuracy -------------------------------------------------------------------


def test_retrieval_accuracy_by_id() -> None:
    specs = ["retrieval_accuracy(k=1)", "retrieval_accuracy(k=2)", "retrieval_accuracy(k=2, match=id)"]
    scores = run(specs)
    assert [scores[s].value for s in specs] == [0.0, 1.0, 1.0]
    d = scores["retrieval_accuracy(k=2)"].evidence.details
    assert (d["match"], d["k"], d["hit_ranks"]) == ("id", 2, [2])
    assert "not in the top 1" in scores["retrieval_accuracy(k=1)"].reason


def test_retrieval_accuracy_by_text_normalises_whitespace_only() -> None:
    data = [
        {"id": "a", "contexts": ["Alpha text.", "Beta  text.", "Gamma."], "reference_contexts": ["Beta\ntext."]},
        {"id": "b", "contexts": ["Alpha text.", "beta text."], "reference_contexts": ["Beta text."]},
        {"id": "c", "contexts": ["Alpha text."]},
    ]
    specs = ["retrieval_accuracy(k=1, match=text)", "retrieval_accuracy(k=2, match=text)"]
    result = ragsight.evaluate(data, specs)
    a = result.scores["a"]
    assert [a[s].value for s in specs] == [0.0, 1.0]
    assert a[specs[1]].evidence.details["hit_ranks"] == [2]
    assert result.scores["b"][specs[1]].value == 0.0  # case must agree
    skipped = result.scores["c"][specs[0]]
    assert skipped.outcome is Outcome.SKIPPED and "reference_contexts" in skipped.reason


REF = "The fleet has 64 aircraft. The average age is 7.8 years."
G1, G2 = "The fleet has 64 aircraft.", "The average age is 7.8 years."  # plain sentences: their own claims


def accuracy_world() -> RagScript:
    s = RagScript()
    s.verdicts[(G1, "contexts:top1")] = True
    s.verdicts[(G2, "contexts:top1")] = False
    s.verdicts[(G1, "contexts")] = True
    s.verdicts[(G2, "contexts")] = True
    return s


def test_retrieval_accuracy_by_judge_needs_every_reference_claim_in_the_top_k() -> None:
    script = accuracy_world()
    judge = script.judge()
    specs = ["retrieval_accuracy(k=1, match=judge)", "retrieval_accuracy(k=2, match=judge)",
             "retrieval_accuracy(k=5, match=judge)"]
    result = ragsight.evaluate([{"id": "j", "contexts": ["64 aircraft.", "Average age 7.8."], "reference": REF}],
                               specs, judge=judge)
    scores = result.scores["j"]
    assert [scores[s].value for s in specs] == [0.0, 1.0, 1.0]
    top1 = scores[specs[0]]
    assert [(c.claim, c.supported, c.target) for c in top1.evidence.claims] == [
        (G1, True, "contexts:top1"), (G2, False, "contexts:top1")]
    assert top1.evidence.details == {"match": "judge", "k": 1, "chunks_checked": 1, "supported": 1, "claims": 2}
    assert "1 of 2 reference claims not supported" in top1.reason
    # k = 2 and k = 5 both check the whole list: one verification, shared
    assert len(judge.calls_for("verify_claims")) == 2
    assert judge.calls_for("extract_claims") == [] and judge.calls_for("extract_claims_part") == []
    assert {r.prompt_id for r in scores[specs[1]].evidence.calls} == {"verify_claims"}


def test_retrieval_accuracy_by_judge_reference_without_claims_is_undetermined() -> None:
    script = RagScript(claims={"Yes.": []})
    result = ragsight.evaluate([{"id": "j", "contexts": ["c"], "reference": "Yes."}],
                               ["retrieval_accuracy(match=judge)"], judge=script.judge())
    assert result.scores["j"]["retrieval_accuracy(match=judge)"].outcome is Outcome.UNDETERMINED


def test_retrieval_accuracy_variants_state_their_needs() -> None:
    by_id, by_text, by_judge = (RetrievalAccuracy(match=m) for m in ("id", "text", "judge"))
    assert all(isinstance(m, RetrievalAccuracy) and m.name == "retrieval_accuracy"
               for m in (by_id, by_text, by_judge))
    assert (by_id.needs_judge, by_text.needs_judge, by_judge.needs_judge) == (False, False, True)
    assert by_id.requires == ("retrieved_ids", "relevant_ids")
    assert by_text.requires == ("contexts", "reference_contexts")
    assert by_judge.requires == ("contexts", "reference")
    assert by_judge.params() == {"k": 10, "match": "judge"}
    with pytest.raises(ConfigError, match="match must be one of id, text, judge"):
        resolve_metrics("retrieval_accuracy(match=fuzzy)")


def test_retrieval_accuracy_by_judge_over_all_chunks_shares_context_recalls_verdicts() -> None:
    script = accuracy_world()
    judge = script.judge()
    result = ragsight.evaluate([{"id": "j", "contexts": ["64 aircraft.", "Average age 7.8."], "reference": REF}],
                               ["context_recall", "retrieval_accuracy(k=2, match=judge)"], judge=judge)
    assert result.scores["j"]["context_recall"].value == 1.0
    assert result.scores["j"]["retrieval_accuracy(k=2, match=judge)"].value == 1.0
    assert len(judge.calls_for("verify_claims")) == 1  # the same question, asked once
