"""`ragsight diagnose` from the outside: `ragsight evaluate` on a small JSONL (a judge on
127.0.0.1 that supports a claim when the text holds all its words), then `ragsight diagnose` on
the store, read from stdout and --json; then two runs compared."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from ragsight.cli import main
from tests.fakes import FakeOpenAIServer
from tests.reliability.world import JudgeWorld

BIKES = "The library lends bicycles to members."
DESIGN = "Ada Moss designed the Larkspur library."
ROWS = [
    {"id": "miss", "question": "Who designed the Larkspur library?", "contexts": [BIKES], "response": DESIGN,
     "reference": DESIGN},
    {"id": "made-up", "question": "What does the Larkspur library lend?", "contexts": [BIKES],
     "response": "The library lends kayaks to tourists.", "reference": BIKES},
    {"id": "fine", "question": "What does the library lend to members?", "contexts": [BIKES], "response": BIKES,
     "reference": BIKES},
]


@pytest.fixture()
def judge_url(monkeypatch: pytest.MonkeyPatch) -> Iterator[str]:
    monkeypatch.setenv("OPENAI_API_KEY", "sk-test-diagnose")
    with FakeOpenAIServer(handler=JudgeWorld()) as srv:
        yield srv.url


def run(capsys: pytest.CaptureFixture[str], *argv: str) -> tuple[int, str, str]:
    code = main(list(argv))
    cap = capsys.readouterr()
    return code, cap.out, cap.err


def evaluate(capsys: pytest.CaptureFixture[str], tmp_path: Path, url: str, rows: list[dict[str, Any]],
             name: str) -> None:
    data = tmp_path / f"{name}.jsonl"
    data.write_text("".join(json.dumps(r) + "\n" for r in rows))
    code, out, err = run(capsys, "evaluate", str(data), "--metrics", "faithfulness,context_recall,context_precision",
                         "--judge", "openai:test-model", "--base-url", url, "--store", str(tmp_path / "runs.db"),
                         "--quiet")
    assert code == 0, out + err


def test_diagnose_a_stored_run_as_text_and_json(judge_url: str, tmp_path: Path,
                                                capsys: pytest.CaptureFixture[str]) -> None:
    evaluate(capsys, tmp_path, judge_url, ROWS, "data")
    store = str(tmp_path / "runs.db")
    code, out, _ = run(capsys, "diagnose", "last", "--store", store, "--embedder", "words")
    assert code == 0
    lines = out.splitlines()
    assert lines[0].endswith("2 of 3 samples fail (a metric below 0.5: faithfulness, context_recall, "
                             "context_precision; or failed, or no value).")
    assert "retrieval (1 sample): the retriever did not bring what the answer needs" in lines
    assert f'    reference claim in no retrieved chunk: "{DESIGN}" [context_recall]' in lines
    assert "unsupported (1 sample): the response states what no chunk supports" in lines
    assert '    "The library lends kayaks to tourists." - no chunk states it [faithfulness]' in lines
    assert any(line.startswith("  noise: run noise_sensitivity") for line in lines)  # named, not guessed

    code, out, _ = run(capsys, "diagnose", "last", "--store", store, "--embedder", "words", "--json")
    assert code == 0
    d = json.loads(out)
    assert d["format"] == 1 and (d["samples"], d["failing"]) == (3, 2)
    assert {s["id"]: s["primary"] for s in d["by_sample"]} == {"miss": "retrieval", "made-up": "unsupported"}
    assert [c["cause"] for c in d["causes"]] == ["retrieval", "unsupported"]
    assert d["topics"]["method"].startswith("words")
    miss = next(s for s in d["by_sample"] if s["id"] == "miss")
    assert [(e["kind"], e["text"]) for e in miss["findings"][0]["evidence"]] == [("missed", DESIGN),
                                                                                ("no_relevant_chunk", "1")]

    # thresholds of 0: a score of 0 is not below it, so nothing fails
    code, out, _ = run(capsys, "diagnose", "last", "--store", store, "--threshold", "faithfulness=0",
                       "--threshold", "context_recall=0", "--threshold", "context_precision=0")
    assert code == 0 and out.splitlines()[0].endswith(": none of 3 samples fails (fails when below 0: faithfulness, "
                                                      "context_recall, context_precision).")
    code, _, err = run(capsys, "diagnose", "last", "--store", store, "--threshold", "faithfulnes=0.8")
    assert code == 2 and "did you mean 'faithfulness'" in err


def test_diagnose_two_runs_says_what_the_change_fixed(judge_url: str, tmp_path: Path,
                                                      capsys: pytest.CaptureFixture[str]) -> None:
    evaluate(capsys, tmp_path, judge_url, ROWS, "before")
    store = str(tmp_path / "runs.db")
    code, out, _ = run(capsys, "diagnose", "last", "--store", store, "--json", "--embedder", "words")
    before = json.loads(out)["run_id"]
    fixed = [{**r, "contexts": [BIKES, DESIGN]} if r["id"] == "miss" else r for r in ROWS]
    evaluate(capsys, tmp_path, judge_url, fixed, "after")
    code, out, _ = run(capsys, "diagnose", before, "last", "--store", store)
    assert code == 0
    lines = out.splitlines()
    assert lines[1].startswith("Pairing: 3 of 3 samples paired")
    row = next(line for line in lines if line.startswith("retrieval "))
    assert row.split()[:5] == ["retrieval", "1", "0", "1", "0"]
    assert any(line.startswith("  miss: retrieval -> passing") for line in lines)
    code, out, _ = run(capsys, "diagnose", before, "last", "--store", store, "--json")
    change = json.loads(out)
    assert change["pairing"]["paired"] == 3 and len(change["diagnoses"]) == 2
    assert {c["cause"]: (c["before"], c["after"], c["fixed"]) for c in change["causes"]}["retrieval"] == (1, 0, 1)
