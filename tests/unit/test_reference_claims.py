"""The reference's claims are its facts: plain sentences are their own claims (no call), the judge
splits only the others, and every claim it writes is checked against the reference itself (made
of its words, then supported by it); a claim that fails is dropped and listed, a sentence with no
surviving claim counts as written, and context recall counts each fact."""

from __future__ import annotations

import pytest

import ragsight
from ragsight import Outcome
from ragsight.analyses import AnalysisSettings
from tests.scripted import RagScript

CONTEXT = ("gzip is a compression program written by Jean-loup Gailly and Mark Adler. "
           "It uses the DEFLATE algorithm, which combines LZ77 and Huffman coding.")
PLAIN_1 = "The gzip program compresses files."
PLAIN_2 = "Jean-loup Gailly wrote gzip with Mark Adler."
COMPOUND = "gzip uses LZ77 and was written by Jean-loup Gailly."
HALVES = ["gzip uses LZ77.", "gzip was written by Jean-loup Gailly."]
INVENTED = "gzip is faster than bzip2."  # not the reference's words
RECOMBINED = "Jean-loup Gailly uses LZ77."  # the reference's words, a fact it does not state


def script() -> RagScript:
    s = RagScript()
    s.parts[COMPOUND] = [*HALVES, INVENTED, RECOMBINED]
    for claim, ok in [(HALVES[0], True), (HALVES[1], True), (RECOMBINED, False)]:
        s.verdicts[(claim, "reference")] = ok
    for claim, ok in [(PLAIN_1, True), (PLAIN_2, False), (HALVES[0], True), (HALVES[1], False)]:
        s.verdicts[(claim, "contexts")] = ok
    return s


def row(reference: str, response: str | None = None) -> dict[str, str | list[str]]:
    r: dict[str, str | list[str]] = {"id": "r", "question": "Who wrote gzip, and what does it use?",
                                     "contexts": [CONTEXT], "reference": reference}
    if response is not None:
        r["response"] = response
    return r


@pytest.mark.parametrize("local", [False, True])
def test_a_compound_sentence_is_split_and_no_claim_it_does_not_state_is_kept(local: bool) -> None:
    s = script()
    judge = s.choice_judge() if local else s.judge()
    run = ragsight.evaluate([row(COMPOUND)], ["context_recall"], judge=judge)
    score = run.scores["r"]["context_recall"]
    assert [v.claim for v in score.evidence.claims] == HALVES
    assert score.value == 0.5  # each fact counted: one in the contexts, one not
    assert score.evidence.details["dropped_claims"] == [INVENTED, RECOMBINED]
    checked = {c["claim"]: c["supported"] for c in score.evidence.details["reference_check"]}
    assert checked == {HALVES[0]: True, HALVES[1]: True, RECOMBINED: False}  # the invented one had no call
    (part,) = judge.calls_for("extract_claims_part")
    assert part.variables["raw_sentences"] == COMPOUND
    assert judge.calls_for("extract_claims") == []
    ids = [c.prompt_id for c in score.evidence.calls]
    assert "extract_claims_part" in ids and ("verify_claim" if local else "verify_claims") in ids
    # the check asks the embedded judge for no reason (the claim it drops is never explained)
    assert not any(RECOMBINED in str(c.variables.get("claim")) for c in judge.calls_for("explain_verdict"))


def test_plain_sentences_are_the_claims_with_no_call() -> None:
    judge = script().judge()
    run = ragsight.evaluate([row(f"{PLAIN_1} {PLAIN_2}")], ["context_recall"], judge=judge)
    score = run.scores["r"]["context_recall"]
    assert [v.claim for v in score.evidence.claims] == [PLAIN_1, PLAIN_2]
    assert score.value == 0.5
    assert judge.calls_for("extract_claims") == [] and judge.calls_for("extract_claims_part") == []
    assert "dropped_claims" not in score.evidence.details


def test_only_the_compound_sentence_is_split_and_its_claims_take_its_place() -> None:
    judge = script().judge()
    run = ragsight.evaluate([row(f"{COMPOUND} {PLAIN_1}")], ["context_recall"], judge=judge)
    assert [v.claim for v in run.scores["r"]["context_recall"].evidence.claims] == [*HALVES, PLAIN_1]
    (part,) = judge.calls_for("extract_claims_part")
    assert part.variables["raw_sentences"] == COMPOUND
    assert part.variables["raw_text"] == f"{COMPOUND} {PLAIN_1}"  # the whole reference, for "it"


def test_a_sentence_whose_claims_all_fail_counts_as_written() -> None:
    s = script()
    s.parts[COMPOUND] = [INVENTED, RECOMBINED]
    s.verdicts[(COMPOUND, "contexts")] = True
    run = ragsight.evaluate([row(COMPOUND)], ["context_recall"], judge=s.judge())
    score = run.scores["r"]["context_recall"]
    assert [v.claim for v in score.evidence.claims] == [COMPOUND]
    assert score.value == 1.0
    assert score.evidence.details["dropped_claims"] == [INVENTED, RECOMBINED]


def test_an_answer_identical_to_the_reference_gets_recall_and_factual_correctness_1() -> None:
    s = script()
    s.claims[COMPOUND] = HALVES  # the response's claims, extracted whole
    for claim in HALVES:
        s.verdicts[(claim, "response")] = True
    run = ragsight.evaluate([row(COMPOUND, COMPOUND)], ["factual_correctness", "factual_correctness(mode=recall)"],
                            judge=s.judge())
    assert run.scores["r"]["factual_correctness"].value == 1.0
    assert run.scores["r"]["factual_correctness(mode=recall)"].value == 1.0


def test_a_decline_as_reference_has_no_claims_and_no_call() -> None:
    judge = script().judge()
    run = ragsight.evaluate([row("The documentation does not say.")], ["context_recall"], judge=judge)
    assert run.scores["r"]["context_recall"].outcome is Outcome.UNDETERMINED
    assert judge.requests == []


def test_turned_off_the_reference_is_extracted_whole_and_unchecked() -> None:
    s = script()
    s.claims[COMPOUND] = [*HALVES, RECOMBINED]
    s.verdicts[(RECOMBINED, "contexts")] = False
    judge = s.judge()
    run = ragsight.evaluate([row(COMPOUND)], ["context_recall"], judge=judge,
                            options=ragsight.RunOptions(settings=AnalysisSettings(reference_facts=False)))
    assert [v.claim for v in run.scores["r"]["context_recall"].evidence.claims] == [*HALVES, RECOMBINED]
    assert len(judge.calls_for("extract_claims")) == 1 and judge.calls_for("extract_claims_part") == []
