"""tool_selection and trajectory_quality on a conversation: the items asked, the verdicts settled
without the judge (unknown tool, repeat, loop), the tools block, the MCP server in the trail and
the embedded judge's P(Yes). Every judge answer is scripted; an unknown item fails the test."""

from __future__ import annotations

import asyncio
from collections.abc import Mapping
from typing import Any

import pytest

from ragsight import Dataset, Outcome, Score
from ragsight.analyses import AnalysisSettings, SampleAnalyses
from ragsight.conversation import ToolCall, Turn
from ragsight.judge import Judge, ScriptedProvider
from ragsight.metrics import Metric, resolve_metrics
from ragsight.metrics.agent_judge import ToolSelection, TrajectoryQuality, trajectory_steps
from ragsight.sample import Sample

TOOLS = [
    {"name": "search_docs", "description": "Search the product manual.",
     "parameters": {"type": "object", "properties": {"query": {"type": "string"}}, "required": ["query"]}},
    {"name": "get_order", "description": "Look up an order by id.", "server": "shop-mcp",
     "parameters": {"type": "object", "properties": {"order_id": {"type": "string"}}, "required": ["order_id"]}},
]
SEARCH = ToolCall("search_docs", {"query": "order 42"}, "c1")
ORDER_BAD = ToolCall("get_order", {"order_id": "A42"}, "c2")
ORDER = ToolCall("get_order", {"order_id": "42"}, "c3")
ORDER_AGAIN = ToolCall("get_order", {"order_id": "42"}, "c4")
REFUND = ToolCall("refund", {"order_id": "42"}, "c5")

HISTORY = (
    Turn("user", "Where is my order 42?"),                       # [1]
    Turn("assistant", "", tool_calls=(SEARCH,)),                  # [2]
    Turn("tool", "The manual says orders ship in 2 days.", tool_call_id="c1", name="search_docs"),  # [3]
    Turn("assistant", "", tool_calls=(ORDER_BAD,)),               # [4]
    Turn("tool", "Error: no order A42", tool_call_id="c2", name="get_order"),  # [5]
    Turn("assistant", "", tool_calls=(ORDER, REFUND)),            # [6]
    Turn("tool", "Order 42: shipped", tool_call_id="c3", name="get_order"),    # [7]
    Turn("tool", "refunded", tool_call_id="c5", name="refund"),   # [8]
    Turn("assistant", "", tool_calls=(ORDER_AGAIN,)),             # [9]
    Turn("tool", "Order 42: shipped", tool_call_id="c4", name="get_order"),    # [10]
    Turn("assistant", "Your order 42 has shipped."),             # [11]
)


def sample(history: tuple[Turn, ...] = HISTORY, tools: list[dict[str, Any]] | None = TOOLS) -> Sample:
    calls = tuple(c for t in history for c in t.tool_calls)
    return Sample(id="o", conversation_id="o", history=history, tool_calls=calls,
                  metadata={"tools": tools} if tools is not None else {})


def run(metric: Metric, s: Sample, provider: ScriptedProvider) -> Score:
    return asyncio.run(metric.score(SampleAnalyses(s, Judge(provider), None, AnalysisSettings())))


def label(item: str) -> str:
    """The call an item asks about, without what its tool does and the request (tool_selection)."""
    return item.split("; the tool:")[0].split("; the request:")[0]


def scripted(step: str, verdicts: Mapping[str, bool], seen: list[Mapping[str, Any]]) -> ScriptedProvider:
    def handle(v: Mapping[str, Any]) -> Any:
        seen.append(v)
        return {"verdicts": [{"id": i, "verdict": verdicts[label(item)], "reason": f"scripted: {label(item)}"}
                             for i, item in enumerate(v["item_list"], start=1)]}
    return ScriptedProvider({step: handle})


def test_steps_pair_each_call_with_its_result() -> None:
    _, steps = trajectory_steps(HISTORY)
    assert [(s.call.id, s.message, s.failed, s.result.content if s.result else None) for s in steps] == [
        ("c1", 2, False, "The manual says orders ship in 2 days."), ("c2", 4, True, "Error: no order A42"),
        ("c3", 6, False, "Order 42: shipped"), ("c5", 6, False, "refunded"), ("c4", 9, False, "Order 42: shipped")]


def test_tool_selection_asks_about_each_known_tool_and_settles_unknown_ones() -> None:
    seen: list[Mapping[str, Any]] = []
    verdicts = {'[2] search_docs(query="order 42")': False, '[4] get_order(order_id="A42")': True,
                '[6] get_order(order_id="42")': True, '[9] get_order(order_id="42")': True}
    got = run(ToolSelection(), sample(), scripted("tool_selection", verdicts, seen))
    assert got.outcome is Outcome.SCORED and got.value == pytest.approx(3 / 5)
    [asked] = seen
    assert [label(i) for i in asked["item_list"]] == list(verdicts)  # the refund call is settled: no such tool
    assert asked["item_list"][1] == ('[4] get_order(order_id="A42"); the tool: Look up an order by id.; '
                                     'the request: "Where is my order 42?"')
    assert "<tools>\n- search_docs: Search the product manual. Arguments: query (string, required)\n" \
           "- get_order (MCP server shop-mcp): Look up an order by id. Arguments: order_id (string, required)\n" \
           "</tools>" in asked["extra"]
    rows = got.evidence.details["verdicts"]
    assert [r["verdict"] for r in rows] == [False, True, True, False, True]
    assert rows[3]["reason"] == "no tool named 'refund' is among the 2 available"
    assert [r.get("server") for r in rows] == [None, "shop-mcp", "shop-mcp", None, "shop-mcp"]
    assert got.reason == ('3 of 5 calls chose the right tool; not [2] search_docs(query="order 42"): '
                          'scripted: [2] search_docs(query="order 42")')
    assert [c.prompt_id for c in got.evidence.calls] == ["tool_selection"]


def test_tool_selection_needs_tools_and_calls() -> None:
    provider = ScriptedProvider({})
    skipped = run(ToolSelection(), sample(tools=None), provider)
    assert skipped.outcome is Outcome.SKIPPED and skipped.reason.startswith("sample has no tools")
    quiet = (Turn("user", "Hi"), Turn("assistant", "Hello!"))
    none = run(ToolSelection(), sample(quiet), provider)
    assert none.outcome is Outcome.UNDETERMINED and none.reason == "no call was made: no tool choice to judge"


def test_trajectory_quality_settles_repeats_and_judges_steps_and_recoveries() -> None:
    seen: list[Mapping[str, Any]] = []
    verdicts = {
        'step [2] search_docs(query="order 42")': False,
        'step [4] get_order(order_id="A42")': True,
        'recovery after the failed call [4] get_order(order_id="A42"): next the agent called [6] '
        'get_order(order_id="42")': True,
        'step [6] get_order(order_id="42")': True,
        'step [6] refund(order_id="42")': False,
    }
    got = run(TrajectoryQuality(), sample(), scripted("trajectory_quality", verdicts, seen))
    [asked] = seen
    assert asked["item_list"] == list(verdicts)  # the repeat [9] is settled, not asked
    rows = got.evidence.details["verdicts"]
    assert [(r["item"], r["verdict"]) for r in rows] == [
        ('step [2] search_docs(query="order 42")', False), ('step [4] get_order(order_id="A42")', True),
        ("recovery after [4]", True), ('step [6] get_order(order_id="42")', True),
        ('step [6] refund(order_id="42")', False), ('step [9] get_order(order_id="42")', False)]
    assert rows[5]["reason"] == "repeats the call [6], whose result was already there"
    assert got.evidence.details["repeats"] == [4] and got.evidence.details["loops"] == []
    assert got.evidence.details["failed_calls"] == [1]
    assert got.value == pytest.approx(3 / 6)
    assert got.reason.startswith("3 of 6 sound (5 steps and 1 recoveries); not step [2]")


def test_a_loop_is_settled_without_the_judge_whatever_the_results() -> None:
    retry = ToolCall("get_order", {"order_id": "A42"})
    history = (Turn("user", "Order A42?"),
               *[t for _ in range(3) for t in (Turn("assistant", "", tool_calls=(retry,)),
                                               Turn("tool", '{"error": "not found"}'))],
               Turn("assistant", "Sorry, I could not find it."))
    seen: list[Mapping[str, Any]] = []

    def handle(v: Mapping[str, Any]) -> Any:
        seen.append(v)
        return {"verdicts": [{"id": i, "verdict": True, "reason": "ok"} for i in range(1, len(v["item_list"]) + 1)]}

    got = run(TrajectoryQuality(), sample(history), ScriptedProvider({"trajectory_quality": handle}))
    rows = got.evidence.details["verdicts"]
    assert [(r["kind"], r.get("settled"), r["verdict"]) for r in rows] == [
        ("step", None, True), ("recovery", None, True), ("step", None, True), ("recovery", None, True),
        ("step", "loop", False), ("recovery", None, True)]
    assert rows[4]["reason"] == "a loop: the same call for the third time"
    assert got.evidence.details["loops"] == [2]
    assert seen[0]["item_list"][-1].endswith("next the agent answered the user (its answer is in the conversation)")


def test_the_embedded_judge_gives_p_yes_per_call() -> None:
    probabilities = {'[2] search_docs(query="order 42")': 0.2, '[4] get_order(order_id="A42")': 0.9,
                     '[6] get_order(order_id="42")': 0.8, '[9] get_order(order_id="42")': 0.7}

    def why(v: Mapping[str, Any]) -> Any:
        return {"verdicts": [{"id": 1, "verdict": False, "reason": "the manual does not hold orders"}]}

    provider = ScriptedProvider({"tool_selection": why},
                                choice_handlers={"tool_selection_choice": lambda v: probabilities[label(v["item_text"])]})
    got = run(ToolSelection(), sample(), provider)
    rows = got.evidence.details["verdicts"]
    assert [r["probability"] for r in rows] == [0.2, 0.9, 0.8, None, 0.7]
    assert rows[0]["reason"] == "the manual does not hold orders"
    assert got.value == pytest.approx(3 / 5)
    choices = provider.calls_for("tool_selection_choice")
    assert len(choices) == 4 and len({c.variables["conversation"] for c in choices}) == 1


def test_the_agent_group_and_mcp_calls_read_from_deepeval() -> None:
    names = {m.name for m in resolve_metrics(["agent"], [sample()])}
    assert {"tool_selection", "trajectory_quality", "tool_argument_validity"} <= names
    row = {"name": "m", "mcp_servers": [{"server_name": "shop-mcp", "available_tools": [TOOLS[1]]}],
           "turns": [{"role": "user", "content": "Order 42?"},
                     {"role": "assistant", "content": "Shipped.", "mcp_tools_called": [
                         {"name": "get_order", "args": {"order_id": "42"},
                          "result": {"content": [{"type": "text", "text": "shipped"}], "isError": False}}]}]}
    conv = Dataset.from_records([row]).samples[-1]
    got = run(ToolSelection(), conv, scripted("tool_selection", {'[2] get_order(order_id="42")': True}, []))
    assert got.value == 1.0 and got.evidence.details["verdicts"][0]["server"] == "shop-mcp"
