"""conversation_completeness and agent_goal_accuracy with a judge that gives yes/no probabilities:
each user message is judged with only the assistant message it answers and what follows it, and
an expected outcome against the assistant's messages and the tool results only (what the user
asked for states nothing). Every judge answer is scripted."""

from __future__ import annotations

import asyncio
from collections.abc import Mapping
from typing import Any

import pytest

from ragsight import Score
from ragsight.analyses import AnalysisSettings, SampleAnalyses
from ragsight.conversation import ToolCall, Turn
from ragsight.judge import Judge, ScriptedProvider
from ragsight.metrics import AgentGoalAccuracy, ConversationCompleteness, Metric
from ragsight.metrics.conversation import request_and_after
from ragsight.sample import Sample

ASKED = (
    Turn("user", "What is gzip's default compression level?"),  # [1]
    Turn("assistant", "gzip has levels from 1 to 9."),  # [2]
    Turn("user", "Which one is the default?"),  # [3]
    Turn("assistant", "The default level is 6."),  # [4]
    Turn("user", "Thanks."),  # [5]
    Turn("assistant", "You're welcome."),  # [6]
)
P_MET = {"What is gzip's default compression level?": 0.8, "Which one is the default?": 0.9, "Thanks.": 0.3}


def item_text(v: Mapping[str, Any]) -> str:
    item = v["item_text"]
    return item[item.index(": ") + 2:]


def run(metric: Metric, sample: Sample, provider: ScriptedProvider, **settings: Any) -> Score:
    ctx = SampleAnalyses(sample, Judge(provider), None, AnalysisSettings(**settings))
    return asyncio.run(metric.score(ctx))


def reasons(step: str) -> Any:
    return lambda v: {"verdicts": [{"id": i + 1, "verdict": False, "reason": f"scripted {step}"}
                                   for i in range(len(v["item_list"]))]}


def test_each_request_is_judged_with_what_answers_it_and_what_follows() -> None:
    provider = ScriptedProvider({"conversation_completeness": reasons("completeness")},
                                choice_handlers={"conversation_completeness_choice": lambda v: P_MET[item_text(v)]})
    got = run(ConversationCompleteness(), Sample(id="c", conversation_id="c", history=ASKED), provider)
    assert got.value == pytest.approx(2 / 3)
    rows = got.evidence.details["verdicts"]
    assert [(r["message"], r["verdict"]) for r in rows] == [(1, True), (3, True), (5, False)]
    assert [r["probability"] for r in rows] == pytest.approx([0.8, 0.9, 0.3])
    asked = provider.calls_for("conversation_completeness_choice")
    shown = [r.variables["conversation"] for r in asked]
    # the first request: the whole conversation; the second: from the assistant message it answers
    assert "[1] user (turn 0): What is gzip's default" in shown[0] and "[6] assistant" in shown[0]
    assert "What is gzip's default" not in shown[1]
    assert "[1] assistant (turn 0): gzip has levels from 1 to 9." in shown[1]
    assert "[2] user (turn 1): Which one is the default?" in shown[1]
    assert "[3] assistant (turn 1): The default level is 6." in shown[1]
    assert [r.variables["item_text"] for r in asked] == ["[1] user: What is gzip's default compression level?",
                                                         "[2] user: Which one is the default?", "[2] user: Thanks."]
    # one reason, for the No, read in that request's own conversation
    [why] = provider.calls_for("conversation_completeness")
    assert why.variables["item_list"] == ["[2] user: Thanks."] and "Which one" not in why.variables["conversation"]
    assert rows[2]["reason"] == "scripted completeness"


def test_a_request_with_no_reply_is_shown_alone() -> None:
    text, item = request_and_after([Turn("user", "Hello?")], 0)
    assert item == "[1] user: Hello?" and "assistant" not in text


def test_a_remote_judge_reads_the_whole_conversation_in_one_call() -> None:
    def handle(v: Mapping[str, Any]) -> Any:
        return {"verdicts": [{"id": i + 1, "verdict": True, "reason": "met"} for i in range(len(v["item_list"]))]}

    provider = ScriptedProvider({"conversation_completeness": handle})
    got = run(ConversationCompleteness(), Sample(id="c", conversation_id="c", history=ASKED), provider)
    assert got.value == 1.0
    [call] = provider.requests
    assert len(call.variables["item_list"]) == 3 and "[6] assistant" in call.variables["conversation"]


CALL = ToolCall("refund", {"booking": "AB12"})
REFUND = (
    Turn("user", "Please refund my booking AB12, I want my money back."),
    Turn("assistant", "", tool_calls=(CALL,)),
    Turn("tool", "refund issued: 230 EUR", name="refund"),
    Turn("assistant", "Your refund of 230 EUR has been issued."),
)


def test_the_goal_is_judged_against_the_assistant_and_the_tools_only() -> None:
    seen: list[str] = []

    def choose(v: Mapping[str, Any]) -> float:
        seen.append(v["conversation"])
        return 0.85

    provider = ScriptedProvider({"agent_goal": reasons("goal")}, choice_handlers={"agent_goal_choice": choose})
    got = run(AgentGoalAccuracy(), Sample(id="g", conversation_id="g", history=REFUND,
                                          expected_outcome="The booking AB12 is refunded."), provider)
    assert got.value == 1.0 and got.evidence.details["probability"] == pytest.approx(0.85)
    [text] = seen
    assert "want my money back" not in text and "user" not in text
    assert "refund issued: 230 EUR" in text and "Your refund of 230 EUR has been issued." in text
    assert provider.calls_for("agent_goal") == []  # reached: no reason asked


def test_a_goal_not_stated_is_not_reached_and_says_why() -> None:
    provider = ScriptedProvider({"agent_goal": reasons("goal")}, choice_handlers={"agent_goal_choice": lambda v: 0.2})
    got = run(AgentGoalAccuracy(), Sample(id="g", conversation_id="g", history=(*REFUND[:1], Turn("assistant", "I will look into it.")),
                                          expected_outcome="The booking AB12 is refunded."), provider)
    assert got.value == 0.0 and got.reason == "the expected outcome was not reached: scripted goal"
    [why] = provider.calls_for("agent_goal")
    assert "want my money back" not in why.variables["conversation"]


def test_the_embedded_judge_is_refused_at_preflight_with_the_reason() -> None:
    import ragsight
    from ragsight.errors import ConfigError

    provider = ScriptedProvider(choice_handlers={"conversation_completeness_choice": lambda v: 0.9,
                                                 "agent_goal_choice": lambda v: 0.9})
    provider.name = "local:scripted"  # what the embedded judge's provider is called
    row = {"id": "c", "conversation_id": "c", "expected_outcome": "The booking AB12 is refunded.",
           "history": [{"role": t.role, "content": t.content} for t in ASKED]}
    for metric in ("conversation_completeness", "agent_goal_accuracy"):
        with pytest.raises(ConfigError, match=f"^{metric} is refused for the embedded judge "
                                              r"\(local:scripted\): on chats written to check it"):
            ragsight.evaluate([row], [metric], judge=provider)
    assert provider.requests == []  # refused before any call
    # knowledge retention is not refused
    provider.choice_handlers["knowledge_retention_choice"] = lambda v: 0.9
    got = ragsight.evaluate([row], ["knowledge_retention"], judge=provider).scores["c"]["knowledge_retention"]
    assert got.value == 1.0


def local_posing(**handlers: Any) -> ScriptedProvider:
    provider = ScriptedProvider(choice_handlers={"conversation_completeness_choice": lambda v: 0.9,
                                                 "agent_goal_choice": lambda v: 0.9,
                                                 "knowledge_retention_choice": lambda v: 0.9, **handlers})
    provider.name = "local:scripted"  # what the embedded judge's provider is called
    return provider


CHAT = {"id": "c", "conversation_id": "c", "expected_outcome": "The booking AB12 is refunded.",
        "history": [{"role": t.role, "content": t.content} for t in ASKED]}


@pytest.mark.parametrize("group", ["all", "conversation"])
def test_a_group_leaves_the_refused_metrics_out_says_so_and_records_it(group: str, tmp_path: Any) -> None:
    import ragsight
    from ragsight.result import load_result

    provider = local_posing()
    with pytest.warns(UserWarning, match=r"left out: agent_goal_accuracy \(refused for the embedded judge "
                                         r"\(local:scripted\): on chats written to check it.*\); conversation_completeness "
                                         r"\(refused for the embedded judge.*; the other metrics run"):
        result = ragsight.evaluate([CHAT], group, judge=provider, store=str(tmp_path / "r.db"))
    assert "knowledge_retention" in result.summary and result.scores["c"]["knowledge_retention"].value == 1.0
    assert "conversation_completeness" not in result.summary and "agent_goal_accuracy" not in result.summary
    steps = {c.prompt_id for c in provider.requests}
    assert "conversation_completeness_choice" not in steps and "agent_goal_choice" not in steps
    left = result.overall_detail.left_out
    assert set(left) >= {"conversation_completeness", "agent_goal_accuracy"}
    assert left["agent_goal_accuracy"].startswith("refused for the embedded judge (local:scripted): on chats")
    assert result.overall is not None  # the rest has an overall, which names what it leaves out
    # the stored run keeps it: a run read back says the same
    back = load_result(ragsight.Store(str(tmp_path / "r.db")), result.run_id)
    assert back.config["left_out"] == result.config["left_out"]
    assert set(back.overall_detail.left_out) >= {"conversation_completeness", "agent_goal_accuracy"}


def test_named_beside_a_group_a_refused_metric_still_stops_the_run() -> None:
    import ragsight
    from ragsight.errors import ConfigError

    provider = local_posing()
    with pytest.raises(ConfigError, match=r"^agent_goal_accuracy is refused for the embedded judge .*Leave it out "
                                          r"of the metrics to run the rest"):
        ragsight.evaluate([CHAT], ["conversation", "agent_goal_accuracy"], judge=provider)
    assert provider.requests == []


def test_a_group_with_nothing_left_to_run_stops_with_the_reasons() -> None:
    from ragsight.errors import ConfigError
    from ragsight.run._preflight import split_refused

    judge = Judge(local_posing())
    with pytest.raises(ConfigError, match=r"^no metric to run: left out: agent_goal_accuracy \(refused for the "
                                          r"embedded judge"):
        split_refused([AgentGoalAccuracy()], judge, named=set())
    kept, left = split_refused([AgentGoalAccuracy(), ConversationCompleteness()], Judge(ScriptedProvider()), named=set())
    assert [m.key for m in kept] == ["agent_goal_accuracy", "conversation_completeness"] and left == {}


def test_another_judge_runs_every_metric_of_the_group() -> None:
    import ragsight

    provider = local_posing()
    provider.name = "openai-logprobs:scripted"  # a judge served elsewhere is not refused
    result = ragsight.evaluate([CHAT], "conversation", judge=provider)
    assert {"conversation_completeness", "agent_goal_accuracy"} <= set(result.summary)
    assert "left_out" not in result.config and not result.overall_detail.left_out
