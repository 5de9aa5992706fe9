"""Out-of-scope questions through the CLI, against an OpenAI-compatible judge over HTTP on
127.0.0.1: rows as ``ragsight generate`` writes them, answered by a system
that declines one and makes up an answer to the other. The summary says why context_recall and
context_precision skipped them, and abstention scores the declines from the judge's JSON."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from ragsight import cli
from ragsight.store import Store
from ragsight.testset import OUT_OF_SCOPE_REFERENCE
from tests.fakes import FakeOpenAIServer, RecordedRequest, Reply
from tests.reliability.world import JudgeWorld, prompt_id_of

CTX = ["Aurora Airways allows one cabin bag.", "It may weigh eight kilograms."]


def row(qid: str, question: str, response: str, out_of_scope: bool) -> dict[str, Any]:
    return {"id": qid, "question": question, "contexts": CTX, "response": response,
            "reference": OUT_OF_SCOPE_REFERENCE if out_of_scope else "One cabin bag of eight kilograms.",
            "reference_contexts": [] if out_of_scope else [CTX[0]],
            "metadata": {"question_type": "out_of_scope" if out_of_scope else "single_hop"}}


def handler(world: JudgeWorld, asked: list[str]) -> Any:
    def answer(request: RecordedRequest) -> Reply | None:
        body = request.json if isinstance(request.json, dict) else {}
        if request.path.endswith("/chat/completions") and prompt_id_of(body) == "declines_json":
            text = body["messages"][-1]["content"]
            asked.append(text)
            declined = "do not contain" in text.split("<response>")[-1]
            return Reply.chat(json.dumps({"reason": "says the documents lack it" if declined else "answers",
                                          "declines": declined}))
        return world(request)

    return answer


def test_out_of_scope_rows_through_the_cli(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    rows = [row("mascot", "What is the name of the Aurora Airways mascot?",
                "The documents do not contain the mascot's name.", True),
            row("founder", "Who founded Aurora Airways?", "Aurora Airways was founded by Ada Byron in 1931.", True),
            row("bags", "How many cabin bags may I bring?", "Aurora Airways allows one cabin bag.", False)]
    data = tmp_path / "generated_and_answered.jsonl"
    data.write_text("".join(json.dumps(r) + "\n" for r in rows), encoding="utf-8")
    store = tmp_path / "runs.db"
    asked: list[str] = []
    with FakeOpenAIServer(handler=handler(JudgeWorld(), asked)) as srv:
        code = cli.main(["evaluate", str(data), "--judge", "openai:m", "--embedder", "openai:e", "--base-url",
                         srv.url, "--store", str(store), "--metrics",
                         "context_recall,context_precision,abstention(method=judge)", "--quiet"])
    output = " ".join(capsys.readouterr().out.split())
    assert code == 0, output
    assert ("skipped context_recall on 2 samples: out-of-scope question: no relevant context to retrieve "
            "(see abstention)") in output
    assert "skipped context_precision on 2 samples: out-of-scope question" in output
    assert len(asked) == 3 and all("<response>" in a for a in asked)
    with Store(store) as st:
        scores = st.scores(st.runs()[0].id)
    key = "abstention(method=judge)"  # the judge decides every response (by default, clear ones need none)
    assert {sid: s[key].value for sid, s in scores.items()} == {"mascot": 1.0, "founder": 0.0, "bags": 1.0}
    assert scores["founder"][key].reason == "answered an out-of-scope question (judge: answers)"
    assert scores["bags"]["context_recall"].outcome.value == "scored"
