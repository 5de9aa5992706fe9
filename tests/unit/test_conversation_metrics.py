"""knowledge_retention, conversation_completeness, role_adherence and agent_goal_accuracy on a
conversation-level sample: exact values, the per-turn trail, and the four outcomes. Every judge
answer is scripted; a handler fails the test when it is asked about a message it does not know."""

from __future__ import annotations

import asyncio
from collections.abc import Mapping
from typing import Any

import pytest

from ragsight import Outcome, Score
from ragsight.analyses import AnalysisSettings, SampleAnalyses
from ragsight.conversation import ToolCall, Turn
from ragsight.engine import score_sample
from ragsight.judge import Judge, ScriptedProvider
from ragsight.metrics import (
    AgentGoalAccuracy,
    ConversationCompleteness,
    KnowledgeRetention,
    Metric,
    RoleAdherence,
    resolve_metrics,
)
from ragsight.sample import Sample

DINNER = (
    Turn("user", "I am vegetarian. Suggest a dinner place in Rome."),  # [1] turn 0
    Turn("assistant", "Try Il Margutta, a vegetarian restaurant."),  # [2] turn 0
    Turn("user", "And for lunch tomorrow?"),  # [3] turn 1
    Turn("assistant", "Try the steakhouse Manzo, famous for its beef."),  # [4] turn 1
    Turn("user", "Thanks. What will the weather be?"),  # [5] turn 2
    Turn("assistant", "Enjoy your meal!"),  # [6] turn 2
)
# (prompt step, message number) -> (verdict, reason)
VERDICTS = {
    ("knowledge_retention", 2): (True, "keeps the vegetarian diet"),
    ("knowledge_retention", 4): (False, "a steakhouse ignores that the user is vegetarian"),
    ("knowledge_retention", 6): (True, "nothing to keep"),
    ("conversation_completeness", 1): (True, "a place was suggested"),
    ("conversation_completeness", 3): (True, "a lunch place was suggested"),
    ("conversation_completeness", 5): (False, "the weather question was not answered"),
    ("role_adherence", 2): (True, "a restaurant suggestion"),
    ("role_adherence", 4): (True, "a restaurant suggestion"),
    ("role_adherence", 6): (True, "polite close"),
}
PROBABILITIES = {2: 0.9, 4: 0.2, 6: 0.7}  # the embedded judge's P(Yes) for knowledge retention


def number(item: str) -> int:
    assert item.startswith("["), item
    return int(item[1:item.index("]")])


def json_handler(step: str) -> Any:
    def handle(v: Mapping[str, Any]) -> Any:
        out = []
        for i, item in enumerate(v["item_list"], start=1):
            ok, reason = VERDICTS[(step, number(item))]
            out.append({"id": i, "verdict": ok, "reason": reason})
        return {"verdicts": out}
    return handle


STEPS = ("knowledge_retention", "conversation_completeness", "role_adherence")


def remote() -> ScriptedProvider:
    return ScriptedProvider({s: json_handler(s) for s in STEPS})


def conversation(history: tuple[Turn, ...] = DINNER, **fields: Any) -> Sample:
    return Sample(id="dinner", conversation_id="dinner", history=history, **fields)


def run(metric: Metric, sample: Sample, provider: ScriptedProvider, **settings: Any) -> Score:
    ctx = SampleAnalyses(sample, Judge(provider), None, AnalysisSettings(**settings))
    return asyncio.run(metric.score(ctx))


def test_knowledge_retention_counts_the_replies_that_keep_what_the_user_said() -> None:
    got = run(KnowledgeRetention(), conversation(), remote())
    assert got.outcome is Outcome.SCORED and got.value == pytest.approx(2 / 3)
    assert got.reason == ("2 of 3 assistant messages keep what the user established; not message [4] "
                          "(turn 1): a steakhouse ignores that the user is vegetarian")
    rows = got.evidence.details["verdicts"]
    assert [(r["message"], r["turn"], r["verdict"]) for r in rows] == [(2, 0, True), (4, 1, False), (6, 2, True)]
    assert [v.target for v in got.evidence.claims] == ["turn 0", "turn 1", "turn 2"]
    assert got.evidence.claims[1].claim == "[4] assistant: Try the steakhouse Manzo, famous for its beef."
    assert [c.prompt_id for c in got.evidence.calls] == ["knowledge_retention"]


def test_conversation_completeness_judges_each_user_message() -> None:
    got = run(ConversationCompleteness(), conversation(), remote())
    assert got.value == pytest.approx(2 / 3)
    rows = got.evidence.details["verdicts"]
    assert [(r["message"], r["turn"], r["verdict"]) for r in rows] == [(1, 0, True), (3, 1, True), (5, 2, False)]
    assert rows[2]["reason"] == "the weather question was not answered"


def test_role_adherence_reads_the_role_and_is_skipped_without_one() -> None:
    provider = remote()
    got = run(RoleAdherence(), conversation(system_role="A restaurant guide for Rome."), provider)
    assert got.value == 1.0 and got.reason == "3 of 3 assistant messages stay in the given role"
    [call] = provider.requests
    assert '<role>\nA restaurant guide for Rome.\n</role>' in call.messages[1].content
    skipped = run(RoleAdherence(), conversation(), remote())
    assert skipped.outcome is Outcome.SKIPPED and skipped.reason == "sample has no system_role"


def test_the_embedded_judge_path_gives_probabilities_and_asks_reasons_for_the_no_verdicts() -> None:
    handlers = {"knowledge_retention": json_handler("knowledge_retention")}
    choice = {"knowledge_retention_choice": lambda v: PROBABILITIES[number(v["item_text"])]}
    provider = ScriptedProvider(handlers, choice_handlers=choice)
    got = run(KnowledgeRetention(), conversation(), provider)
    assert got.value == pytest.approx(2 / 3)
    rows = got.evidence.details["verdicts"]
    assert [r["probability"] for r in rows] == pytest.approx([0.9, 0.2, 0.7])
    assert [r["reason"] for r in rows] == ["", "a steakhouse ignores that the user is vegetarian", ""]
    # one reason asked, for the one No, with the JSON prompt and that item only
    [why] = provider.calls_for("knowledge_retention")
    assert [number(i) for i in why.variables["item_list"]] == [4]
    sources = [r.variables["conversation"] for r in provider.calls_for("knowledge_retention_choice")]
    assert len(sources) == 3 and len(set(sources)) == 1  # the conversation is the shared prefix
    quiet = run(KnowledgeRetention(), conversation(), ScriptedProvider(handlers, choice_handlers=choice),
                explain="none")
    assert [r["reason"] for r in quiet.evidence.details["verdicts"]] == ["", "", ""]


FLIGHT = ToolCall("book_flight", {"origin": "Paris", "destination": "Rome", "date": "2025-05-02"})
WRONG = ToolCall("book_flight", {"origin": "Paris", "destination": "Rome", "date": "2025-05-03"})
TRIP = (
    Turn("user", "Book me a flight from Paris to Rome on 2 May."),
    Turn("assistant", "", tool_calls=(WRONG,)),
    Turn("tool", "Booked AZ 331, Paris to Rome, 3 May.", name="book_flight"),
    Turn("assistant", "Your flight AZ 331 to Rome is booked."),
)
OUTCOME = "A flight from Paris to Rome on 2 May is booked."


def goal_judge(reached: bool) -> ScriptedProvider:
    def handle(v: Mapping[str, Any]) -> Any:
        assert v["item_list"] == [OUTCOME]
        assert '[2] assistant (turn 0): [calls: book_flight(origin="Paris", destination="Rome", ' \
               'date="2025-05-03")]' in v["conversation"]
        assert "[3] tool book_flight (turn " in v["conversation"]
        return {"verdicts": [{"id": 1, "verdict": reached, "reason": "booked for 3 May, not 2 May"}]}
    return ScriptedProvider({"agent_goal": handle})


def test_agent_goal_accuracy_names_the_mismatching_call() -> None:
    trip = conversation(TRIP, expected_outcome=OUTCOME, tool_calls=(WRONG,), reference_tool_calls=(FLIGHT,))
    got = run(AgentGoalAccuracy(), trip, goal_judge(False))
    assert got.outcome is Outcome.SCORED and got.value == 0.0
    assert got.reason == ('the expected outcome was not reached: call book_flight(origin="Paris", '
                          'destination="Rome", date="2025-05-03") differs from the expected book_flight('
                          'origin="Paris", destination="Rome", date="2025-05-02") in date')
    [wrong] = got.evidence.details["mismatched_calls"]
    assert wrong["arguments"] == ["date"]
    assert got.evidence.details["reason"] == "booked for 3 May, not 2 May"
    reached = run(AgentGoalAccuracy(), trip, goal_judge(True))
    assert reached.value == 1.0 and reached.reason == "the expected outcome was reached"
    no_ref = run(AgentGoalAccuracy(), conversation(TRIP, expected_outcome=OUTCOME), goal_judge(False))
    assert no_ref.reason == "the expected outcome was not reached: booked for 3 May, not 2 May"
    assert "mismatched_calls" not in no_ref.evidence.details


def test_four_outcomes_and_no_nan() -> None:
    settings = AnalysisSettings()
    metrics = [KnowledgeRetention(), ConversationCompleteness(), RoleAdherence(), AgentGoalAccuracy()]
    only_user = conversation((Turn("user", "Hello?"),), system_role="A guide.", expected_outcome=OUTCOME)

    def bad(v: Mapping[str, Any]) -> Any:
        return {"verdicts": []}  # never the expected count: retried, then the step fails

    provider = ScriptedProvider({"knowledge_retention": bad, "conversation_completeness": bad,
                                 "role_adherence": bad, "agent_goal": bad})
    scores = asyncio.run(score_sample(only_user, metrics, Judge(provider), None, settings))
    outcomes = {s.metric: s.outcome for s in scores}
    assert outcomes == {"knowledge_retention": Outcome.UNDETERMINED,  # no assistant message
                        "conversation_completeness": Outcome.FAILED,  # the judge never answered right
                        "role_adherence": Outcome.UNDETERMINED, "agent_goal_accuracy": Outcome.FAILED}
    assert all(s.value is None for s in scores)
    turn = Sample(id="dinner:0", question="q", response="r", conversation_id="dinner", turn=0, history=())
    # the engine runs a conversation metric on the conversation's own sample only (not counted on a turn)
    assert asyncio.run(score_sample(turn, metrics, Judge(remote()), None, settings)) == ()
    # and a turn given to one directly is skipped, with the reason
    skipped = run(KnowledgeRetention(), turn, remote())
    assert skipped.outcome is Outcome.SKIPPED and "not a conversation" in skipped.reason


def test_the_conversation_group_selects_them_for_conversation_samples() -> None:
    names = {m.name for m in resolve_metrics(["conversation"], [conversation(system_role="A guide.")])}
    assert names == {"knowledge_retention", "conversation_completeness", "role_adherence"}
    assert all(m.level == "conversation" for m in resolve_metrics(["conversation"]))
