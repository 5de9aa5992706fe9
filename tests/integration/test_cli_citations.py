"""Citation metrics from the outside: answers with citation markers in the shapes DeepEval and
LangChain users write (``actual_output`` + ``retrieval_context``; contexts as documents with
ids), through ``ragsight evaluate`` and ``ragsight show`` as the docs show them, over HTTP
against a judge on 127.0.0.1."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path

import pytest

from ragsight.cli import main
from tests.fakes import FakeOpenAIServer
from tests.reliability.world import JudgeWorld

CHUNKS = ["Refunds are paid within five days of the request.", "Checked bags cost thirty euros each.",
          "Lounges open at six in the morning."]
Q = "How long do refunds take, and what does a bag cost?"
ROWS = [
    # DeepEval's shape: right, swapped, missing and out-of-range citations
    {"input": Q, "actual_output": "Refunds are paid within five days [1]. Checked bags cost thirty euros [2].",
     "retrieval_context": CHUNKS},
    {"input": Q, "actual_output": "Refunds are paid within five days [2]. Checked bags cost thirty euros [1].",
     "retrieval_context": CHUNKS},
    {"input": Q, "actual_output": "Refunds are paid within five days. Checked bags cost thirty euros.",
     "retrieval_context": CHUNKS},
    {"input": Q, "actual_output": "Refunds are paid within five days [1]. Checked bags cost thirty euros [5].",
     "retrieval_context": CHUNKS},
    # LangChain documents with ids, cited by id
    {"id": "lc", "question": Q, "answer": "Refunds are paid within five days [d1]. Checked bags cost "
     "thirty euros [d3].", "contexts": [{"id": f"d{k}", "page_content": c} for k, c in enumerate(CHUNKS, 1)]},
]


@pytest.fixture()
def judge_url(monkeypatch: pytest.MonkeyPatch) -> Iterator[str]:
    monkeypatch.setenv("OPENAI_API_KEY", "sk-test-cite")
    monkeypatch.setenv("COLUMNS", "80")
    with FakeOpenAIServer(handler=JudgeWorld()) as srv:
        yield srv.url


def test_cited_answers_through_evaluate_and_show(judge_url: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                                 capsys: pytest.CaptureFixture[str]) -> None:
    monkeypatch.chdir(tmp_path)
    Path("cited.jsonl").write_text("".join(json.dumps(r) + "\n" for r in ROWS))
    store = "r.db"
    code = main(["evaluate", "cited.jsonl", "--metrics", "citation_precision,citation_recall",
                 "--judge", "openai:m", "--base-url", judge_url, "--store", store, "--quiet"])
    out = capsys.readouterr().out
    assert code == 0
    table = out.split("Run ")[0]  # the summary table (the hint lines after it print commands whole)
    assert max(len(line.rstrip()) for line in table.splitlines()) <= 80, out
    lines = {ln.split()[0]: ln.split() for ln in out.splitlines() if ln.startswith("citation_")}
    # precision: 1, 0, (no citation: undetermined), 1/2, 1/2 -> mean 0.5 over 4 scored, 1 undetermined
    assert lines["citation_precision"][1] == "0.500"
    assert lines["citation_precision"][-4:] == ["4", "1", "0", "0"]
    # recall: 1, 0, 0, 1/2, 1/2 -> 0.4 over 5
    assert lines["citation_recall"][1] == "0.400"
    assert lines["citation_recall"][-4:] == ["5", "0", "0", "0"]

    assert main(["show", "last", "--store", store, "--sample", "lc", "--metric", "citation_precision"]) == 0
    shown = capsys.readouterr().out
    assert "reason: 1 of 2 citations support their claim" in shown
    assert "✓ supported [chunk:1] Refunds are paid within five days [d1]." in shown
    assert "✗ not supported [chunk:3] Checked bags cost thirty euros [d3]." in shown
    assert "cited [d3]; chunk 2 supports it" in shown
