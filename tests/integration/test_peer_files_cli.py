"""The peers' own files from the outside: ``ragsight evaluate FILE`` on what ragas, DeepEval and
Hugging Face ``datasets`` wrote (``tests/fixtures/peers``), as docs/data.md documents it: the
same scores as the tool's JSON form, a warning where the reading is a guess, and ``--dry-run``
counting the conversations, not one question per row."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from ragsight.cli import main

PEERS = Path(__file__).resolve().parents[1] / "fixtures" / "peers"
TOOLS = "conversation_tool_call_accuracy,conversation_tool_call_f1"


def evaluate(tmp_path: Path, name: str, metrics: str, capsys: pytest.CaptureFixture[str],
             ) -> tuple[int, str, list[dict[str, Any]]]:
    out = tmp_path / f"{name}.out.jsonl"
    code = main(["evaluate", str(PEERS / name), "--metrics", metrics, "--store", str(tmp_path / "runs.db"),
                 "--out", str(out), "--quiet"])
    err = capsys.readouterr().err
    return code, err, [json.loads(line) for line in out.read_text().splitlines()]


def values(rows: list[dict[str, Any]], metrics: str) -> dict[str, dict[str, float | None]]:
    return {r["id"]: {m: r["scores"][m]["value"] for m in metrics.split(",") if m in r["scores"]}
            for r in rows if r["turn"] is None}


@pytest.mark.parametrize(("name", "warning"), [
    ("ragas_multiturn.csv", "messages and tool calls written as Python text"),
    ("ragas_multiturn_objects.csv", "messages and tool calls written as Python text"),
    ("ragas_multiturn_hf.parquet", "tool-call arguments whose value is null were read as not given"),
])
def test_ragas_files_score_as_ragas_jsonl(name: str, warning: str, tmp_path: Path,
                                          capsys: pytest.CaptureFixture[str]) -> None:
    code, err, reference = evaluate(tmp_path, "ragas_multiturn.jsonl", TOOLS, capsys)
    assert code == 0 and "warning" not in err, err
    code, err, got = evaluate(tmp_path, name, TOOLS, capsys)
    assert code == 0, err
    assert f"warning: {warning}" in err
    assert err.count(warning) == 1  # once, not once per row
    assert values(got, TOOLS) == values(reference, TOOLS)
    assert [v["conversation_tool_call_accuracy"] for v in values(got, TOOLS).values()] == [
        1.0, pytest.approx(2 / 3)]


def test_deepeval_tools_called_are_scored_by_the_tool_metrics(tmp_path: Path,
                                                               capsys: pytest.CaptureFixture[str]) -> None:
    code, err, got = evaluate(tmp_path, "deepeval_tools.csv",
                              "tool_call_accuracy,tool_call_f1,tool_call_accuracy(like=deepeval)", capsys)
    assert code == 0, err
    assert "warning: DeepEval test cases with tools_called / expected_tools are read as conversations" in err
    turns = {r["question"]: r["scores"] for r in got if r["turn"] == 0}
    assert turns["What's the weather in Paris?"]["tool_call_f1"]["value"] == 1.0
    book = turns["Book the 08:10 flight to Tromsdal."]
    assert book["tool_call_f1"]["value"] == pytest.approx(2 / 3)
    # an extra call before the expected one: 0 in order for ragsight, free for DeepEval's definition
    assert book["tool_call_accuracy"]["value"] == 0.0
    assert book["tool_call_accuracy(like=deepeval)"]["value"] == 1.0


@pytest.mark.parametrize(("name", "samples", "warning"), [
    ("ragas_multiturn.csv", 5, "warning: messages and tool calls written as Python text"),  # 3 turns, 2 conversations
    ("deepeval_conversations.csv", 3, None),  # 2 turns, 1 conversation (its turns were JSON text)
])
def test_the_dry_run_counts_the_conversations_of_a_csv(name: str, samples: int, warning: str | None, tmp_path: Path,
                                                       capsys: pytest.CaptureFixture[str],
                                                       monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("OPENAI_API_KEY", "sk-test-peers")
    code = main(["evaluate", str(PEERS / name), "--metrics", "faithfulness", "--judge",
                 "openai:gpt-4o-mini", "--base-url", "http://127.0.0.1:9/v1", "--store", str(tmp_path / "r.db"),
                 "--dry-run"])
    cap = capsys.readouterr()
    assert code == 0, cap.err
    assert f"{samples} samples, 1 metric" in cap.out  # not one question per row
    if warning:
        assert warning in cap.err  # flagged, as a run flags it
    else:
        assert "warning" not in cap.err.lower()
