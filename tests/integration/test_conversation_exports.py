"""A conversation run written as CSV and Parquet, from the outside: ``ragsight evaluate FILE
--out results.csv`` and ``ragsight export RUN --format csv|parquet``. Each turn's row carries
what a reader needs to read it alone (its history and tool calls as JSON text, the scenario,
the expected outcome, the system role), the same as the JSONL rows, and the file loads back as
the same turns and conversations (evaluated again: the same scores, every call from the cache)."""

from __future__ import annotations

import csv
import json
from pathlib import Path

import pytest

from ragsight.cli import main
from tests.integration.test_conversations_cli import DEEPEVAL, RAGAS, _evaluate, judge_url  # noqa: F401

pd = pytest.importorskip("pandas")
pytest.importorskip("pyarrow")

TURN_TEXT = ("scenario", "expected_outcome", "system_role")
TURN_JSON = ("history", "tool_calls", "reference_tool_calls")


def _again(tmp_path: Path, url: str, data: Path, capsys: pytest.CaptureFixture[str]) -> list[dict[str, object]]:
    out = tmp_path / f"{data.stem}-again.jsonl"
    assert main(["evaluate", str(data), "--metrics", "faithfulness,answer_relevancy", "--judge", "openai:m",
                 "--base-url", url, "--embedder", "openai:emb", "--store", str(tmp_path / "runs.db"),
                 "--out", str(out), "--quiet"]) == 0
    assert "judge: 0 calls" in capsys.readouterr().out
    return [json.loads(line) for line in out.read_text().splitlines()]


def test_csv_rows_carry_each_turns_history_and_load_back_as_the_same_conversations(
        judge_url: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:  # noqa: F811
    code, _, jsonl = _evaluate(tmp_path, judge_url, RAGAS + DEEPEVAL, capsys, "conv")
    assert code == 0
    exported = tmp_path / "export.csv"
    assert main(["export", "last", "--format", "csv", "--out", str(exported),
                 "--store", str(tmp_path / "runs.db")]) == 0
    with exported.open(newline="") as f:
        reader = csv.DictReader(f)
        header = list(reader.fieldnames or [])
        rows = list(reader)
    # id, where the row sits, the inputs, then what reads the turn alone, then the scores
    assert header[:4] == ["run_id", "id", "conversation_id", "turn"]
    assert header[header.index("metadata") + 1:header.index("faithfulness")] == [*TURN_JSON, *TURN_TEXT]
    assert len(rows) == len(jsonl) == 6
    for row, rec in zip(rows, jsonl):
        assert row["id"] == rec["id"]
        for key in TURN_JSON:
            assert (json.loads(row[key]) if row[key] else None) == rec[key], (row["id"], key)
        for key in TURN_TEXT:
            assert (row[key] or None) == rec[key], (row["id"], key)
    # the second turn of the DeepEval conversation reads alone: what the user asked before
    refunds_1 = next(r for r in rows if (r["conversation_id"], r["turn"]) == ("refunds", "1"))
    assert [m["content"] for m in json.loads(refunds_1["history"])][:2] == [
        "What if these shoes don't fit?", "We offer a 30-day full refund."]
    assert refunds_1["question"] == "Even on sale items?"
    assert refunds_1["system_role"] == "a shop assistant"
    # the ragas agent turn's tool call is in its row
    assert json.loads(rows[0]["tool_calls"]) == [{"name": "search", "args": {"query": "bikes"}}]
    # the conversation's own row holds all its messages: the file evaluates again as it was
    back = _again(tmp_path, judge_url, exported, capsys)
    assert [(r["id"], r["conversation_id"], r["turn"]) for r in back] == [
        (r["id"], r["conversation_id"], r["turn"]) for r in jsonl]
    assert [r["history"] for r in back] == [r["history"] for r in jsonl]
    assert [r["scores"] for r in back] == [r["scores"] for r in jsonl]


def test_out_file_named_csv_or_parquet_is_written_in_that_format(
        judge_url: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:  # noqa: F811
    code, _, jsonl = _evaluate(tmp_path, judge_url, RAGAS + DEEPEVAL, capsys, "conv")
    assert code == 0
    data = tmp_path / "conv.jsonl"
    for name in ("results.csv", "results.parquet"):
        out = tmp_path / name
        assert main(["evaluate", str(data), "--metrics", "faithfulness,answer_relevancy", "--judge", "openai:m",
                     "--base-url", judge_url, "--embedder", "openai:emb", "--store", str(tmp_path / "runs.db"),
                     "--out", str(out), "--quiet"]) == 0
        assert f"Per-sample results: {out}" in capsys.readouterr().out
        df = pd.read_csv(out, keep_default_na=False) if name.endswith(".csv") else pd.read_parquet(out)
        assert list(df["id"]) == [r["id"] for r in jsonl]
        turn = df[(df["conversation_id"] == "refunds") & (df["question"] == "Even on sale items?")].iloc[0]
        assert json.loads(turn["history"])[1]["contexts"] == ["All customers are eligible for a 30 day full refund."]
        assert turn["scenario"] == "A customer asks about refunds."
        assert list(df["faithfulness__outcome"][:2]) == [r["scores"]["faithfulness"]["outcome"] for r in jsonl[:2]]
        # the Parquet file loads back as the same turns, like the CSV one
        if name.endswith(".parquet"):
            back = _again(tmp_path, judge_url, out, capsys)
            assert [(r["id"], r["turn"], r["history"]) for r in back] == [
                (r["id"], r["turn"], r["history"]) for r in jsonl]
