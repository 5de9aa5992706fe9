"""A turn's claims: a bare "Yes" is not a claim, a claim may name its subject from the earlier
messages, and a faithful follow-up whose every judge claim was dropped keeps its own sentences
rather than being called claimless. Every judge answer is scripted."""

from __future__ import annotations

import asyncio
from typing import Any

import pytest

from ragsight import Outcome
from ragsight.analyses import AnalysisSettings, SampleAnalyses
from ragsight.analyses._claims import bare
from ragsight.conversation import Turn
from ragsight.judge import Judge
from ragsight.metrics import Faithfulness
from ragsight.sample import Sample
from tests.scripted import RagScript

SETTINGS = AnalysisSettings(verify_response_vs_contexts=True, calibrated=False, explain="none")
HISTORY = (Turn("user", "How do I list the files under src that end in .py with find?"),
           Turn("assistant", "Run find src -name '*.py'."))
CONTEXTS = ("-maxdepth levels: descend at most levels (a non-negative integer) levels of directories "
            "below the starting-points.",)


@pytest.mark.parametrize(("claim", "expected"), [
    ("Yes.", True), ("No, not quite.", True), ("Correct!", True), ("Ja.", True), ("Yes, it is.", True),
    ("Yes, -prune works with -delete.", False), ("No 5.", False), ("It comes in red.", False), ("A", False),
])
def test_a_bare_answer_word_is_not_a_claim(claim: str, expected: bool) -> None:
    assert bare(claim) is expected


def score(sample: Sample, s: RagScript) -> Any:
    ctx = SampleAnalyses(sample, Judge(s.judge()), None, SETTINGS)
    return asyncio.run(Faithfulness().score(ctx))


def turn(response: str, question: str = "Only the top level?") -> Sample:
    return Sample(id="c:1", question=question, response=response, contexts=CONTEXTS, conversation_id="c",
                  turn=1, history=HISTORY)


def test_a_bare_yes_is_dropped_and_listed_not_judged() -> None:
    response = "Yes. Adding -maxdepth 1 makes find descend at most one level."
    s = RagScript()
    claim = "Adding -maxdepth 1 makes find descend at most one level."
    s.claims[response] = ["Yes.", claim]
    s.verdicts[(claim, "contexts")] = True
    got = score(turn(response), s)
    assert got.outcome is Outcome.SCORED and got.value == 1.0
    assert [v.claim for v in got.evidence.claims] == [claim]


def test_a_follow_up_whose_claims_were_all_dropped_keeps_its_own_sentences() -> None:
    # the judge writes claims in words the response never used, twice: not "no factual claims"
    response = "Add -maxdepth 1, so that find descends at most one level below src."
    s = RagScript()
    s.claims[response] = ["The utility limits recursion depth to a single tier."]
    s.recheck[response] = ["Recursion is bounded to one tier by the utility."]
    s.verdicts[(response, "contexts")] = True
    got = score(turn(response), s)
    assert got.outcome is Outcome.SCORED, got.reason
    assert [v.claim for v in got.evidence.claims] == [response]
    assert got.value == 1.0


def test_a_claim_may_name_its_subject_from_an_earlier_message() -> None:
    # "find" and "src" are not in this turn's question; the history names them
    response = "Add -maxdepth 1, and it stops after one level."
    claim = "find src -name '*.py' -maxdepth 1 lists the .py files in src only."
    s = RagScript()
    s.claims[response] = [claim]
    s.verdicts[(claim, "contexts")] = True
    got = score(turn(response), s)
    assert [v.claim for v in got.evidence.claims] == [claim]
