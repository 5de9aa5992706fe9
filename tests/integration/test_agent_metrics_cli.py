"""Agent metrics from the outside: a ragas ``MultiTurnSample`` file with tool calls and reference
tool calls, and ragsight's own turn form with per-turn reference calls, evaluated with
``ragsight evaluate FILE --metrics ... --out`` as docs/metrics.md shows; no judge is needed."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from ragsight.cli import _common, main

pytest.importorskip("ragsight.dataset._conversations", reason="conversation loading (ragas, DeepEval, OpenAI shapes)")

# ragas: EvaluationDataset(samples=[MultiTurnSample(...)]).to_jsonl() writes one model_dump() a line
RAGAS = {
    "user_input": [
        {"content": "Find me a flight from Paris to Rome on 2 May.", "type": "human"},
        {"content": "", "type": "ai", "tool_calls": [
            {"name": "search_flights", "args": {"origin": "Paris", "destination": "Rome", "date": "2025-05-03"}}]},
        {"content": "AZ 331, Paris to Rome, 3 May, 120 euros.", "type": "tool"},
        {"content": "AZ 331 on 3 May costs 120 euros. Shall I book it?", "type": "ai"},
        {"content": "Yes, book it.", "type": "human"},
        {"content": "", "type": "ai", "tool_calls": [{"name": "book", "args": {"flight": "AZ 331"}}]},
        {"content": "Booked AZ 331.", "type": "tool"},
        {"content": "Done: AZ 331 is booked.", "type": "ai"}],
    "reference": "A flight from Paris to Rome on 2 May is booked.",
    "reference_tool_calls": [
        {"name": "search_flights", "args": {"origin": "Paris", "destination": "Rome", "date": "2025-05-02"}},
        {"name": "book", "args": {"flight": "AZ 331"}}],
}


@pytest.fixture(autouse=True)
def _wide(monkeypatch: pytest.MonkeyPatch) -> None:
    # the summary's rows are read whole: laid out at 120 columns (what a pipe or a log gets), whatever
    # width the test process inherited ($COLUMNS differs between pytest's own process and its workers)
    monkeypatch.setattr(_common.out, "width", 120)


def evaluate(tmp_path: Path, rows: list[dict[str, Any]], metrics: str,
             capsys: pytest.CaptureFixture[str]) -> tuple[int, str, list[dict[str, Any]]]:
    data = tmp_path / "agent.jsonl"
    data.write_text("".join(json.dumps(r) + "\n" for r in rows))
    out = tmp_path / "out.jsonl"
    code = main(["evaluate", str(data), "--metrics", metrics, "--store", str(tmp_path / "runs.db"),
                 "--out", str(out)])
    return code, capsys.readouterr().out, [json.loads(line) for line in out.read_text().splitlines()]


def test_a_ragas_agent_trace_scores_its_calls_against_the_reference(
    tmp_path: Path, capsys: pytest.CaptureFixture[str],
) -> None:
    code, stdout, out = evaluate(tmp_path, [RAGAS],
                                 "conversation_tool_call_accuracy,conversation_tool_call_f1", capsys)
    assert code == 0, stdout
    conv = out[-1]
    assert conv["turn"] is None
    acc = conv["scores"]["conversation_tool_call_accuracy"]
    # search_flights: 2 of 3 arguments match (date differs); book: exact -> (2/3 + 1) / 2
    assert acc["value"] == pytest.approx(5 / 6)
    assert "in date" in acc["reason"]
    assert conv["scores"]["conversation_tool_call_f1"]["value"] == pytest.approx(0.5)  # 1 of 2 and 2
    rows = [line for line in stdout.splitlines() if line.startswith("conversation_tool_call_")]
    assert [line.split()[:2] for line in rows] == [["conversation_tool_call_accuracy", "0.833"],
                                                   ["conversation_tool_call_f1", "0.500"]]


def test_per_turn_reference_calls_score_each_turn(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    row = {"conversation_id": "trip", "turns": [
        {"role": "user", "content": "Weather in Paris?"},
        {"role": "assistant", "content": "Sunny.", "tool_calls": [{"name": "weather", "args": {"city": "Paris"}}],
         "reference_tool_calls": [{"name": "weather", "args": {"city": "Paris"}}]},
        {"role": "user", "content": "And in Rome, in Celsius?"},
        {"role": "assistant", "content": "Warm.",
         "tool_calls": [{"name": "weather", "args": {"city": "Rome", "unit": "F"}}],
         "reference_tool_calls": [{"name": "weather", "args": {"city": " Rome", "unit": "C"}}]}]}
    code, stdout, out = evaluate(tmp_path, [row], "tool_call_accuracy,tool_call_f1", capsys)
    assert code == 0, stdout
    turns = {r["turn"]: r["scores"] for r in out if r["turn"] is not None}
    assert turns[0]["tool_call_accuracy"]["value"] == 1.0
    assert turns[1]["tool_call_accuracy"]["value"] == 0.5  # city matches (" Rome" normalised), unit not
    assert turns[1]["tool_call_f1"]["value"] == 0.0


def test_the_ragas_names_on_a_ragas_file_stop_before_any_work_naming_the_conversation_form(
    tmp_path: Path, capsys: pytest.CaptureFixture[str],
) -> None:
    # ragas keeps reference_tool_calls on the MultiTurnSample; its users ask for the ragas name
    data = tmp_path / "agent.jsonl"
    data.write_text(json.dumps(RAGAS) + "\n")
    code = main(["evaluate", str(data), "--metrics", "tool_call_accuracy", "--store", str(tmp_path / "runs.db")])
    err = capsys.readouterr().err
    assert code == 2, err
    assert "conversation_tool_call_accuracy" in err and "nothing was run" in err
    assert "has no reference_tool_calls" not in err  # not the false reason of a skip
    assert not (tmp_path / "runs.db").exists()  # stopped before a run was created
