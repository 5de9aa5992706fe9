"""``ragsight evaluate --metrics conversation`` with the embedded judge: the metrics it refuses
(conversation_completeness, agent_goal_accuracy) are left out, said at the start and in the
summary, and kept with the stored run, while the rest of the group runs; named on their own they
still stop the run before any call. The embedded judge is a scripted one posing as it (its
provider calls itself ``local:...``), so the run is the command's own from the arguments on."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from ragsight.cli import main
from ragsight.judge import ScriptedProvider, _spec

CHAT = {"id": "refund", "conversation_id": "refund", "expected_outcome": "The booking AB12 is refunded.",
        "history": [{"role": "user", "content": "Please refund booking AB12."},
                    {"role": "assistant", "content": "I will look into it."},
                    {"role": "user", "content": "My name is Ana, by the way."},
                    {"role": "assistant", "content": "Thanks, Ana. The refund of AB12 is under review."}]}


@pytest.fixture()
def posing(monkeypatch: pytest.MonkeyPatch) -> ScriptedProvider:
    provider = ScriptedProvider(choice_handlers={"knowledge_retention_choice": lambda v: 0.9,
                                                 "conversation_completeness_choice": lambda v: 0.9,
                                                 "agent_goal_choice": lambda v: 0.9})
    provider.name = "local:qwen2.5-coder-1.5b"  # what the embedded judge's provider calls itself

    def made(name: Any = None) -> ScriptedProvider:
        return provider

    monkeypatch.setattr(_spec, "LocalProvider", made)
    return provider


def test_a_group_runs_without_the_refused_metrics_and_says_so(
    posing: ScriptedProvider, tmp_path: Path, capsys: pytest.CaptureFixture[str],
) -> None:
    data = tmp_path / "chats.jsonl"
    data.write_text(json.dumps(CHAT) + "\n")
    store = str(tmp_path / "runs.db")
    code = main(["evaluate", str(data), "--metrics", "conversation", "--store", store, "--explain", "none"])
    got = capsys.readouterr()
    assert code == 0, got.err
    # at the start, before the run: what is left out and why, once per metric
    said = " ".join(got.err.split())
    assert ("warning: left out: agent_goal_accuracy (refused for the embedded judge (local:qwen2.5-coder-1.5b): "
            "on chats written to check it, it judged goals never met") in said
    assert "conversation_completeness (refused for the embedded judge (local:qwen2.5-coder-1.5b)" in said
    assert "the other metrics run" in said
    # the summary: the group's other metric is scored, the two refused are named, not silently missing
    printed = " ".join(got.out.split())
    assert "knowledge_retention" in printed
    assert "LEFT OUT of the overall: agent_goal_accuracy: refused for the embedded judge" in printed
    assert "LEFT OUT of the overall: conversation_completeness: refused for the embedded judge" in printed
    assert {c.prompt_id for c in posing.requests} == {"knowledge_retention_choice"}
    # the stored run says the same when shown again
    run_id = next(line.split()[1] for line in got.out.splitlines() if line.startswith("Run "))
    assert main(["show", run_id, "--store", store]) == 0
    shown = " ".join(capsys.readouterr().out.split())
    assert "LEFT OUT of the overall: agent_goal_accuracy: refused for the embedded judge" in shown
    assert "LEFT OUT of the overall: conversation_completeness: refused" in shown


def test_named_on_its_own_a_refused_metric_stops_the_run_before_any_call(
    posing: ScriptedProvider, tmp_path: Path, capsys: pytest.CaptureFixture[str],
) -> None:
    data = tmp_path / "chats.jsonl"
    data.write_text(json.dumps(CHAT) + "\n")
    store = tmp_path / "runs.db"
    code = main(["evaluate", str(data), "--metrics", "knowledge_retention,agent_goal_accuracy", "--store", str(store)])
    err = " ".join(capsys.readouterr().err.split())
    assert code == 2
    assert "agent_goal_accuracy is refused for the embedded judge (local:qwen2.5-coder-1.5b)" in err
    assert "Leave it out of the metrics to run the rest" in err
    assert posing.requests == [] and not store.exists()


def test_the_dry_run_leaves_out_what_the_run_would(
    posing: ScriptedProvider, tmp_path: Path, capsys: pytest.CaptureFixture[str],
) -> None:
    data = tmp_path / "chats.jsonl"
    data.write_text(json.dumps(CHAT) + "\n")
    code = main(["evaluate", str(data), "--metrics", "conversation", "--dry-run", "--store", str(tmp_path / "r.db")])
    got = capsys.readouterr()
    assert code == 0, got.err
    assert "warning: left out: agent_goal_accuracy (refused for the embedded judge" in " ".join(got.err.split())
    printed = " ".join(got.out.split())
    assert "knowledge_retention" in printed
    assert "agent_goal_accuracy" not in printed and "conversation_completeness" not in printed
    assert posing.requests == []  # an estimate calls nothing
