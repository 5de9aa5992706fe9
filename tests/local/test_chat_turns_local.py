"""The real embedded judge on follow-up turns of chats about the find and curl manuals (the
manuals' own sentences as contexts): the assistant's earlier words are not evidence for what it
says next, a follow-up answered off-topic scores low on answer relevancy, and the question
rewritten to stand alone stays in English.

Slow: loads the embedded model once per session; a few dozen calls.
"""

from __future__ import annotations

import pytest

from ragsight import Outcome
from ragsight.analyses import AnalysisSettings, SampleAnalyses
from ragsight.analyses._text import language
from ragsight.conversation import Turn
from ragsight.embed import local_embedder
from ragsight.judge import Judge, RetryPolicy
from ragsight.metrics import AnswerRelevancy, Faithfulness
from ragsight.sample import Sample

pytestmark = [pytest.mark.slow, pytest.mark.local]

# GNU findutils, find(1), on -prune and -delete
PRUNE = ("-prune: True; if the file is a directory, do not descend into it. If -depth is given, then "
         "-prune has no effect. Because -delete implies -depth, you cannot usefully use -prune and "
         "-delete together.")
FIND_CHAT = (
    Turn("user", "How do I skip a directory named build when I search with find?"),
    Turn("assistant", "Use -prune: find . -path ./build -prune -o -print. And -prune works well "
                      "together with -delete, so you can skip build while deleting.", contexts=(PRUNE,)),
)
# curl(1), on -L and -s
CURL = ("-L, --location: If the server reports that the requested page has moved to a different "
        "location, this option makes curl redo the request on the new place.",
        "-s, --silent: Silent or quiet mode. Do not show progress meter or error messages.")
CURL_CHAT = (
    Turn("user", "How do I make curl follow redirects?"),
    Turn("assistant", "Add -L (or --location): curl then redoes the request at the new location.",
         contexts=(CURL[0],)),
)
FOLLOW_UP = "And how do I stop it printing the progress meter?"


def judge(provider: object) -> Judge:
    # a shared, loaded machine may take minutes per call: these tests check readings, not speed
    return Judge(provider, policy=RetryPolicy(call_timeout_s=1800.0, step_deadline_s=3600.0))  # type: ignore[arg-type]


async def test_the_assistants_earlier_words_do_not_support_what_it_says_next(qwen_provider: object) -> None:
    turn = Sample(id="find:1", question="So I can use -prune together with -delete?",
                  response="Yes, -prune works well together with -delete.", contexts=(PRUNE,),
                  conversation_id="find", turn=1, history=FIND_CHAT)
    settings = AnalysisSettings(verify_response_vs_contexts=True, explain="none")
    got = await Faithfulness().score(SampleAnalyses(turn, judge(qwen_provider), None, settings))
    assert got.outcome is Outcome.SCORED, got.reason
    assert got.value is not None and got.value < 0.5, got.evidence.claims
    for v in got.evidence.claims:  # no verdict rests on an assistant message
        assert "(assistant," not in (v.reason or ""), v


@pytest.mark.parametrize("response", ["Add -s (or --silent): curl then shows no progress meter."])
async def test_a_follow_up_answered_off_topic_scores_below_the_same_follow_up_answered(
    qwen_provider: object, response: str,
) -> None:
    emb = local_embedder()
    settings = AnalysisSettings(explain="none")
    scores = {}
    for name, text in (("on", response), ("off", "Use tar -xf archive.tar to extract the files of an archive.")):
        turn = Sample(id=f"curl:{name}", question=FOLLOW_UP, response=text, contexts=(CURL[1],),
                      conversation_id="curl", turn=1, history=CURL_CHAT)
        scores[name] = await AnswerRelevancy().score(SampleAnalyses(turn, judge(qwen_provider), emb, settings))
    on, off = scores["on"], scores["off"]
    assert on.outcome is Outcome.SCORED and off.outcome is Outcome.SCORED, (on.reason, off.reason)
    standalone = on.evidence.details["standalone_question"]
    print(f"answer_relevancy on {on.value:.3f} off {off.value:.3f}; standalone {standalone!r}")
    assert language(standalone) == "en", standalone
    assert "curl" in standalone.lower() or standalone == FOLLOW_UP, standalone
    assert on.value is not None and off.value is not None
    # the off-topic answer's questions are its own (tar), not an echo of the follow-up (when one
    # call wrote both, every follow-up scored 0.965-1.000); the offline embedder's scale is
    # compressed (unrelated questions ~0.8), so the fall is small but must be there
    off_questions = [q["question"] for q in off.evidence.details["questions"]]
    assert not any("curl" in q.lower() or "progress" in q.lower() for q in off_questions), off_questions
    assert off.value < on.value, (on.value, off.value)
