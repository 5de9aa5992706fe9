"""citation_precision and citation_recall: markers read in every common form, claims attached to
the sentences they come from, each citation judged by the shared claim-by-chunk verdicts; values
checked against hand counts on correct, wrong, missing and malformed citations."""

from __future__ import annotations

from typing import Any

import pytest

import ragsight
from ragsight import Outcome
from ragsight.metrics._citations import attach
from tests.scripted import RagScript

CHUNKS = ["Refunds are paid within 5 days of the request.", "A checked bag costs 30 euros.",
          "Lounges open at 6 am."]
A = "Refunds are paid within 5 days"
B = "A checked bag costs 30 euros"
SUPPORT = {A: 1, B: 2}  # the one chunk that supports each claim


def world(*responses: str) -> RagScript:
    """Every response decomposes into claims A and B (in that order); A is supported by chunk 1
    only, B by chunk 2 only."""
    s = RagScript()
    for r in responses:
        s.claims[r] = [A, B]
    for claim, chunk in SUPPORT.items():
        s.verdicts[(claim, "contexts")] = True
        for k in (1, 2, 3):
            s.verdicts[(claim, f"chunk:{k}")] = k == chunk
    return s


def run(response: str, choices: bool = False, **fields: Any) -> dict[str, ragsight.Score]:
    script = world(response)
    judge = script.choice_judge() if choices else script.judge()
    sample = {"id": "c", "question": "Refunds and bags?", "contexts": CHUNKS, "response": response, **fields}
    result = ragsight.evaluate([sample], ["citation_precision", "citation_recall"], judge=judge)
    return result.scores["c"]


CASES = [
    # (response, precision, recall): counted by hand
    ("Refunds are paid within 5 days [1]. A checked bag costs 30 euros [2].", 2 / 2, 2 / 2),
    # wrong: sentence 1 cites chunk 2 (no); sentence 2 cites 2 (yes) and 3 (no)
    ("Refunds are paid within 5 days [2]. A checked bag costs 30 euros [2][3].", 1 / 3, 1 / 2),
    # missing: sentence 1 cites nothing
    ("Refunds are paid within 5 days. A checked bag costs 30 euros.[2]", 1 / 1, 1 / 2),
    # malformed: "x" unreadable, 7 out of range, doc-9 names no chunk (the sample has no ids)
    ("Refunds are paid within 5 days [1, x]. A checked bag costs 30 euros [7][doc-9].", 1 / 4, 1 / 2),
    # other forms: 【1】, a range [1-3] (1 and 3 do not support B)
    ("Refunds are paid within 5 days 【1】. A checked bag costs 30 euros [1-3].", 2 / 4, 2 / 2),
    # "[Source 1]" and "[Document 2]" name positions
    ("Refunds are paid within 5 days [Source 1]. A checked bag costs 30 euros [Document 2; source #3].",
     2 / 3, 2 / 2),
    # footnotes: [^1] defined as chunk 1, [^b] defined through a bracket
    ("Refunds are paid within 5 days[^1]. A checked bag costs 30 euros[^b].\n\n[^1]: 1\n[^b]: see [2]",
     2 / 2, 2 / 2),
]


@pytest.mark.parametrize("choices", [False, True], ids=["json-judge", "choice-judge"])
@pytest.mark.parametrize(("response", "precision", "recall"), CASES)
def test_hand_counted_values(response: str, precision: float, recall: float, choices: bool) -> None:
    scores = run(response, choices)
    assert scores["citation_precision"].value == pytest.approx(precision)
    assert scores["citation_recall"].value == pytest.approx(recall)


def test_ids_are_matched_to_retrieved_ids() -> None:
    scores = run("Refunds are paid within 5 days [doc-a]. A checked bag costs 30 euros [doc-b, doc-z].",
                 retrieved_ids=["doc-a", "doc-b", "doc-c"])
    assert scores["citation_precision"].value == pytest.approx(2 / 3)
    assert scores["citation_recall"].value == 1.0
    rows = scores["citation_precision"].evidence.details["citations"]
    assert rows[2] == {"sentence": 2, "marker": "doc-z", "chunk": None, "supports": False,
                       "problem": "no retrieved chunk has this id"}


def test_no_citation_is_undetermined_for_precision_and_zero_for_recall() -> None:
    scores = run("Refunds are paid within 5 days. A checked bag costs 30 euros.")
    p, r = scores["citation_precision"], scores["citation_recall"]
    assert p.outcome is Outcome.UNDETERMINED and p.value is None
    assert p.reason == "the response cites nothing"
    assert r.outcome is Outcome.SCORED and r.value == 0.0
    assert r.reason.startswith("the response cites nothing: 0 of 2 claims")
    assert [(c.target, c.reason) for c in r.evidence.claims] == [
        ("no citation", "no citation: sentence 1 cites nothing; chunk 1 supports it"),
        ("no citation", "no citation: sentence 2 cites nothing; chunk 2 supports it"),
    ]


def test_trail_shows_each_claim_its_citations_and_their_verdicts() -> None:
    scores = run("Refunds are paid within 5 days [1][3]. A checked bag costs 30 euros [9].")
    ev = scores["citation_recall"].evidence
    assert ev.details["claims"] == [
        {"claim": A, "sentence": 1, "supported_by_a_citation": True, "supporting_chunks": [1],
         "citations": [{"marker": "1", "chunk": 1, "supports": True},
                       {"marker": "3", "chunk": 3, "supports": False}]},
        {"claim": B, "sentence": 2, "supported_by_a_citation": False, "supporting_chunks": [2],
         "citations": [{"marker": "9", "chunk": None, "supports": False,
                        "problem": "out of range: the sample has 3 chunks"}]},
    ]
    assert [s["markers"] for s in ev.details["sentences"]] == [["[1]", "[3]"], ["[9]"]]
    # the trail: one verdict per (claim, citation), each against the chunk it cites
    assert [(c.claim, c.target, c.supported, c.reason) for c in ev.claims] == [
        (A, "chunk:1", True, "cited [1]; chunk 1 supports it"),
        (A, "chunk:3", False, "cited [3]; chunk 1 supports it"),
        (B, "citation [9]", False, "cited [9], which names no chunk (out of range: the sample has 3 chunks)"),
    ]
    assert {c.prompt_id for c in ev.calls} == {"extract_claims", "verify_claims"}
    assert scores["citation_precision"].reason == "1 of 3 citations support their claim (1 name no chunk)"


def test_a_citation_counts_once_for_the_claims_of_its_sentence() -> None:
    """Two claims from one sentence citing [1][2]: each citation supports one of them."""
    scores = run("Thanks for asking. Refunds are paid within 5 days and a checked bag costs 30 euros [1][2].")
    assert scores["citation_precision"].value == 1.0
    assert scores["citation_recall"].value == 1.0


def test_remote_judge_reuses_the_one_verdict_step_of_faithfulness() -> None:
    response = "Refunds are paid within 5 days [1]. A checked bag costs 30 euros [3]."
    script = world(response)
    judge = script.judge()
    sample = {"id": "c", "contexts": CHUNKS, "response": response}
    result = ragsight.evaluate([sample], ["faithfulness", "citation_precision", "citation_recall"], judge=judge)
    assert len(judge.calls_for("extract_claims")) == 1
    assert len(judge.calls_for("verify_claims")) == 1  # all claims and chunks in one step
    assert result.scores["c"]["faithfulness"].value == 1.0
    assert result.scores["c"]["citation_precision"].value == 0.5


def test_embedded_judge_asks_the_claim_by_chunk_grid_once() -> None:
    response = "Refunds are paid within 5 days [1]. A checked bag costs 30 euros [3]."
    judge = world(response).choice_judge()
    ragsight.evaluate([{"id": "c", "contexts": CHUNKS, "response": response}],
                      ["citation_precision", "citation_recall"], judge=judge)
    targets = [r.variables["target"] for r in judge.calls_for("verify_claim")]
    grid = [t for t in targets if t.startswith("chunk:")]
    assert sorted(grid) == sorted(f"chunk:{k}" for k in (1, 2, 3) for _ in (A, B))  # 2 claims x 3 chunks


def test_sample_without_contexts_is_skipped() -> None:
    judge = world().judge()
    result = ragsight.evaluate([{"id": "c", "response": "Refunds are paid within 5 days [1]."}],
                               ["citation_precision", "citation_recall"], judge=judge)
    assert result.scores["c"]["citation_precision"].outcome is Outcome.SKIPPED
    assert judge.requests == []


@pytest.mark.parametrize(("text", "want"), [
    ("Fact one [1]. Fact two.[2] Fact three", [["[1]"], ["[2]"], []]),
    ("Use [sic] here [see below]. Then [x](http://a.b) [2].", [[], ["[2]"]]),
    ("- Bags: one free [1]\n- Seats: paid 【2†source】", [["[1]"], ["【2†source】"]]),
])
def test_markers_belong_to_the_sentence_they_end(text: str, want: list[list[str]]) -> None:
    table = attach(text, [], 3)
    assert [list(s.markers) for s in table.sentences] == want


def test_sentence_text_drops_the_markers_and_footnote_section() -> None:
    table = attach("Bags cost 30 euros [2].\n\n[^1]: 3", ["Bags cost 30 euros"], 3)
    assert [s.text for s in table.sentences] == ["Bags cost 30 euros."]
    assert table.claim_sentence == (0,)
