"""The embedded judge splits a reference of two facts in one sentence into claims the reference
itself supports, and an answer identical to the reference leaves none of them out."""

from __future__ import annotations

import pytest

import ragsight
from ragsight.analyses import AnalysisSettings
from ragsight.judge import Judge

REFERENCE = "The VACUUM command rebuilds the database file, which reclaims the free pages left by deleted rows."


@pytest.mark.slow
@pytest.mark.local
def test_a_two_fact_reference_is_split_into_checked_claims_and_an_identical_answer_misses_none(
        qwen_judge: Judge) -> None:
    run = ragsight.evaluate(
        [{"id": "v", "question": "What does VACUUM do?", "response": REFERENCE, "reference": REFERENCE}],
        ["factual_correctness(mode=recall)"], judge=qwen_judge,
        options=ragsight.RunOptions(settings=AnalysisSettings(explain="none"), show_progress=False))
    score = run.scores["v"]["factual_correctness(mode=recall)"]
    ref_claims = [v for v in score.evidence.claims if v.target == "response"]
    # the sentence (two clauses) went to the judge, which wrote more than one claim for it
    assert len(ref_claims) >= 2, [v.claim for v in ref_claims]
    assert all(v.claim != REFERENCE for v in ref_claims)
    # every reference claim is found in the identical answer: recall 1.0 at the threshold
    assert all(v.supported for v in ref_claims), [(v.claim, v.probability) for v in ref_claims]
