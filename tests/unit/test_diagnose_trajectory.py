"""ragsight.diagnose names the trajectory causes of a failing agent conversation (a missing step,
invalid arguments, a wrong tool, a loop, an unsound recovery) under the tool cause, from the
trails of trajectory_match, tool_argument_validity, tool_selection and trajectory_quality."""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import Any

import ragsight
from ragsight.diagnosis import diagnose, diagnosis_lines
from ragsight.judge import ScriptedProvider

SCHEMA = {"type": "object", "properties": {"order_id": {"type": "string"}}, "required": ["order_id"]}


def call(cid: str, name: str, args: dict[str, Any]) -> dict[str, Any]:
    return {"id": cid, "type": "function", "function": {"name": name, "arguments": json.dumps(args)}}


ROW = {
    "id": "order",
    "tools": [{"type": "function", "function": {"name": "get_order", "parameters": SCHEMA}},
              {"type": "function", "function": {"name": "refund", "parameters": SCHEMA}}],
    "messages": [
        {"role": "user", "content": "Where is my order 42?"},
        {"role": "assistant", "content": None, "tool_calls": [call("1", "get_order", {"order_id": 42})]},
        {"role": "tool", "tool_call_id": "1", "content": "Error: order_id must be text"},
        {"role": "assistant", "content": None, "tool_calls": [call("2", "get_order", {"order_id": 42})]},
        {"role": "tool", "tool_call_id": "2", "content": "Error: order_id must be text"},
        {"role": "assistant", "content": None, "tool_calls": [call("3", "get_order", {"order_id": 42})]},
        {"role": "tool", "tool_call_id": "3", "content": "Error: order_id must be text"},
        {"role": "assistant", "content": "Your order has shipped."},
    ],
    "reference_tool_calls": [{"name": "get_order", "args": {"order_id": "42"}}],
}


def judge() -> ScriptedProvider:
    def quality(v: Mapping[str, Any]) -> Any:
        return {"verdicts": [{"id": i, "verdict": not item.startswith("recovery"),
                              "reason": "the same failing call again" if item.startswith("recovery") else "ok"}
                             for i, item in enumerate(v["item_list"], start=1)]}
    return ScriptedProvider({"trajectory_quality": quality})


def test_the_trajectory_causes_are_named_with_their_calls() -> None:
    result = ragsight.evaluate([ROW], ["trajectory_match", "tool_argument_validity", "trajectory_quality"],
                               judge=judge(), store=":memory:", options=ragsight.RunOptions(show_progress=False))
    d = diagnose(result, topics=False)
    s = d.sample("order")
    assert s is not None and s.primary == "tool"
    [finding] = [f for f in s.findings if f.cause == "tool"]
    got = [(i.kind, i.text, i.metric) for i in finding.evidence]
    assert ("missing_step", 'expected call get_order(order_id="42") was not made', "trajectory_match") in got
    assert ("invalid_arguments", "call get_order(order_id=42): $.order_id: 42 is not of type 'string'",
            "tool_argument_validity") in got
    assert ("loop", "step [6] get_order(order_id=42): a loop: the same call for the third time",
            "trajectory_quality") in got
    assert ("bad_recovery", "recovery after [2]: the same failing call again", "trajectory_quality") in got
    assert {"extra"} <= {k for k, _, _ in got}
    assert finding.strong
    text = "\n".join(diagnosis_lines(d))
    assert "expected steps not taken" in text or "expected call" in text
