"""Simulated users from the outside: ``ragsight simulate`` on a scenarios JSONL file with a small
chat target (``tests.fakes.chat_target:answer``) and a judge over real HTTP on 127.0.0.1, then
``ragsight evaluate`` on its output with the conversation metrics."""

from __future__ import annotations

import json
import re
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from ragsight.cli import main
from tests.fakes import FakeOpenAIServer, RecordedRequest, Reply

SCENARIOS = [
    {"id": "leave", "scenario": "A new employee wants to know how many days of unused leave they can carry over, "
     "and by when they must use them.", "expected_outcome": "The user learns: up to 5 days, used by 31 March.",
     "persona": "polite, short questions"},
    {"id": "gym", "scenario": "An employee wants to know whether the company pays for a gym membership.",
     "expected_outcome": "The assistant says the handbook does not cover gym memberships.",
     "first_message": "Does the company pay for my gym?"},
]
MESSAGES = {"leave": ["How many days of leave can I carry over?", "And by when do I have to use them?"],
            "gym": ["Does the company pay for my gym?", "Is there any gym allowance at all?"]}


def _prompt(body: dict[str, Any]) -> tuple[str | None, str, int | None]:
    fmt = body.get("response_format") or {}
    schema = (fmt.get("json_schema") or {})
    count = None
    for prop in (schema.get("schema") or {}).get("properties", {}).values():
        if isinstance(prop, dict) and "minItems" in prop:
            count = int(prop["minItems"])
    return schema.get("name"), body["messages"][min(1, len(body["messages"]) - 1)]["content"], count


def judge(request: RecordedRequest) -> Reply | None:
    """The user's messages by script, its readings and the conversation metrics' verdicts from
    the words of the conversation."""
    if request.path.endswith("/models"):
        return None
    name, user, count = _prompt(request.json)
    conversation = re.search(r"<conversation>\n(.*?)\n</conversation>", user, re.S)
    text = conversation.group(1) if conversation else ""
    met = "5 days" in text and "31 March" in text
    if name is None:  # the preflight's ping
        return Reply.chat("ok")
    if name == "simulate_needs":
        return Reply.chat(json.dumps({"needs": ["the number of days", "the deadline"] if "carry over" in user
                                      else ["whether the company pays for a gym"]}))
    if name == "simulate_user":
        sid = re.search(r'<data name="scenario">\n(.*?)\n</data>', user, re.S)
        scenario = next(s["id"] for s in SCENARIOS if sid and s["scenario"] == sid.group(1))
        sent = len(re.findall(r"\] you \(user\):", text))
        return Reply.chat(json.dumps({"message": MESSAGES[scenario][sent]}))
    if name == "simulate_decide":
        last = text.rsplit("] assistant:", 1)[-1]
        given = [met or "5 days" in text, met][: count or 1]
        reason = "scripted: all given" if all(given) else "scripted: something missing"
        return Reply.chat(json.dumps({"reason": reason, "given": given, "declined": "does not say" in last}))
    if name in ("agent_goal", "conversation_completeness"):
        ok = met or (name == "agent_goal" and "does not say" in text)
        verdicts = [{"id": i + 1, "verdict": ok, "reason": "scripted"} for i in range(count or 1)]
        return Reply.chat(json.dumps({"verdicts": verdicts}))
    raise AssertionError(f"no scripted answer for prompt {name!r}")


@pytest.fixture()
def judge_url(monkeypatch: pytest.MonkeyPatch) -> Iterator[str]:
    monkeypatch.setenv("OPENAI_API_KEY", "sk-test-simulate")
    with FakeOpenAIServer(handler=judge) as srv:
        yield srv.url


def _simulate(tmp_path: Path, url: str, *extra: str) -> int:
    return main(["simulate", str(tmp_path / "scenarios.jsonl"), "--target", "tests.fakes.chat_target:answer",
                 "--out", str(tmp_path / "conv.jsonl"), "--judge", "openai:m", "--base-url", url,
                 "--store", str(tmp_path / "ragsight.db"), "--quiet", *extra])


def _stable(rows: list[dict[str, Any]]) -> list[Any]:
    return [(r["id"], r["turns"], r["metadata"]["ended"], r["metadata"]["ended_reason"]) for r in rows]


def test_simulate_then_evaluate_with_the_conversation_metrics(
    judge_url: str, tmp_path: Path, capsys: pytest.CaptureFixture[str],
) -> None:
    lines = [json.dumps(s) for s in SCENARIOS] + ['{"id": "broken", "expected_outcome": "x"}']
    (tmp_path / "scenarios.jsonl").write_text("\n".join(lines) + "\n", "utf-8")

    code = _simulate(tmp_path, judge_url)
    captured = capsys.readouterr()
    # the bad row is named and left out; the others are simulated; the run exits 1 for the bad row
    assert code == 1
    assert ("left out: scenarios.jsonl, line 3, scenario 'broken', field 'scenario': missing; describe who the "
            "user is and what they want.") in captured.err
    assert "wrote 2 conversation(s) to" in captured.out and "goal_met 1, gave_up 1" in captured.out
    assert "next: ragsight evaluate" in captured.out
    assert not (tmp_path / "conv.partial.jsonl").exists()
    rows = [json.loads(line) for line in (tmp_path / "conv.jsonl").read_text("utf-8").splitlines()]
    leave, gym = rows
    assert [t["content"] for t in leave["turns"] if t["role"] == "user"] == MESSAGES["leave"]
    assert leave["turns"][3]["retrieved_ids"] == ["leave#deadline"]
    assert (leave["metadata"]["ended"], leave["metadata"]["ended_reason"]) == ("goal_met", "scripted: all given")
    assert leave["metadata"]["simulation"]["needs"] == ["the number of days", "the deadline"]
    assert leave["metadata"]["simulation"]["persona"] == "polite, short questions"
    assert gym["metadata"]["ended"] == "gave_up" and len(gym["turns"]) == 4

    # the same command again: the same conversations, every judge step from the cache
    assert _simulate(tmp_path, judge_url) == 1
    again = capsys.readouterr().out
    assert "judge: 0 calls" in again
    assert _stable([json.loads(x) for x in (tmp_path / "conv.jsonl").read_text("utf-8").splitlines()]) == \
        _stable(rows)

    code = main(["evaluate", str(tmp_path / "conv.jsonl"), "--metrics",
                 "conversation_completeness,agent_goal_accuracy", "--judge", "openai:m", "--base-url", judge_url,
                 "--store", str(tmp_path / "ragsight.db"), "--out", str(tmp_path / "results.jsonl"), "--quiet"])
    stdout = capsys.readouterr().out
    assert code == 0, stdout
    results = [json.loads(x) for x in (tmp_path / "results.jsonl").read_text("utf-8").splitlines()]
    convs = {r["conversation_id"]: r for r in results if r["turn"] is None}
    assert set(convs) == {"leave", "gym"}
    assert convs["leave"]["scores"]["agent_goal_accuracy"]["value"] == 1.0
    assert convs["leave"]["scores"]["conversation_completeness"]["value"] == 1.0
    assert convs["gym"]["scores"]["agent_goal_accuracy"]["value"] == 1.0  # it declined, as expected
    assert convs["gym"]["scores"]["conversation_completeness"]["value"] == 0.0
    assert convs["gym"]["expected_outcome"] == SCENARIOS[1]["expected_outcome"]
    assert convs["leave"]["metadata"]["ended"] == "goal_met"


def test_a_target_that_fails_every_conversation_exits_1(
    judge_url: str, tmp_path: Path, capsys: pytest.CaptureFixture[str],
) -> None:
    (tmp_path / "scenarios.jsonl").write_text("\n".join(json.dumps(s) for s in SCENARIOS) + "\n", "utf-8")
    code = main(["simulate", str(tmp_path / "scenarios.jsonl"), "--target", "tests.fakes.chat_target:broken",
                 "--out", str(tmp_path / "conv.jsonl"), "--judge", "openai:m", "--base-url", judge_url,
                 "--store", str(tmp_path / "ragsight.db"), "--quiet"])
    captured = capsys.readouterr()
    assert code == 1
    assert "target_failed 2" in captured.out
    assert "raised RuntimeError: index not loaded" in captured.out
    assert "error: no conversation got past a failure (2 of 2)" in captured.err
