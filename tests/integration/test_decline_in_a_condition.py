"""A statement whose condition holds decline words is a statement, from the outside: the trial's
hallucination "chage exits with status 3 when the shadow password file cannot be found" (the
manual says 15) was read as a decline ("cannot be found"), so faithfulness called it
`undetermined` (no factual claim), answer_relevancy 0 and abstention "declined": the invented
exit status was never checked. ``ragsight evaluate`` against a judge on 127.0.0.1."""

from __future__ import annotations

import json
import sqlite3
from collections.abc import Iterator
from pathlib import Path

import pytest

from ragsight.cli import main
from tests.fakes import FakeOpenAIServer
from tests.reliability.world import JudgeWorld

CONTEXT = ("The chage command exits with the following values: 0 success, 1 permission denied, "
           "2 invalid command syntax, 15 can't find the shadow password file.")
ROWS = [
    {"id": "statement", "question": "What exit value does chage return when it cannot find the shadow password file?",
     "contexts": [CONTEXT], "response": "chage exits with status 3 when the shadow password file cannot be found."},
    {"id": "decline", "question": "When does the office open?", "contexts": [CONTEXT],
     "response": "I cannot say when the office opens."},
]


@pytest.fixture()
def server(monkeypatch: pytest.MonkeyPatch) -> Iterator[FakeOpenAIServer]:
    monkeypatch.setenv("OPENAI_API_KEY", "sk-test-condition")
    with FakeOpenAIServer(handler=JudgeWorld()) as srv:
        yield srv


def test_a_statement_with_cannot_be_found_in_its_condition_is_judged_not_declined(
    server: FakeOpenAIServer, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    data, store = tmp_path / "data.jsonl", tmp_path / "runs.db"
    data.write_text("".join(json.dumps(r) + "\n" for r in ROWS), encoding="utf-8")
    code = main(["evaluate", str(data), "--metrics", "faithfulness,answer_relevancy", "--judge", "openai:judge-model",
                 "--base-url", server.url, "--store", str(store), "--quiet"])
    capsys.readouterr()
    assert code == 0
    with sqlite3.connect(store) as db:
        got = {(s, m): (o, r) for s, m, o, r in db.execute("SELECT sample_id, metric, outcome, reason FROM scores")}
    outcome, reason = got[("statement", "faithfulness")]
    assert outcome == "scored", reason  # its claim is checked against the manual
    assert "declines" not in got[("statement", "answer_relevancy")][1]
    # a real decline whose object is a "when" clause still is one
    assert got[("decline", "faithfulness")][0] == "undetermined"
    assert "cannot say" in got[("decline", "answer_relevancy")][1]
