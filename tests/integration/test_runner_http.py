"""``ragsight run`` against a real HTTP endpoint on 127.0.0.1: field mapping, headers from the
environment, slow, failing, malformed and hanging replies, retries, concurrency, and output that
``ragsight evaluate`` loads."""

from __future__ import annotations

import json
import threading
import time
import warnings
from pathlib import Path
from typing import Any

import pytest

import ragsight
from ragsight import Outcome
from ragsight.errors import ConfigError
from ragsight.testset import HttpFields, arun, make_target
from ragsight.testset._target_http import parse_headers
from tests.fakes.openai_server import FakeOpenAIServer, RecordedRequest, Reply

TOKEN = "tok-9f8e7d6c5b4a-secret"

ROWS = [
    {
        "id": "q1",
        "question": "How many days of leave?",
        "reference": "25 days.",
        "reference_contexts": ["Staff get 25 days."],
        "relevant_ids": ["leave.md#0"],
        "metadata": {"question_type": "single_hop", "style": "well_formed"},
    },
    {
        "id": "q2",
        "question": "Who approves expenses?",
        "reference": "The team lead.",
        "reference_contexts": ["Team leads approve claims."],
        "relevant_ids": ["expenses.md#1"],
        "metadata": {"question_type": "single_hop", "style": "keywords"},
    },
]

FIELDS = HttpFields(
    request="input.query",
    answer="data.answer",
    contexts="data.chunks",
    context_text="body",
    context_id="ref",
)


def good(req: RecordedRequest) -> Reply:
    q = req.json["input"]["query"]
    ids = ["leave.md#0", "travel.md#2"] if "leave" in q else ["expenses.md#1"]
    return Reply.json(
        {
            "data": {
                "answer": f"answer to {q}",
                "chunks": [{"ref": i, "body": f"text of {i}"} for i in ids],
            }
        }
    )


async def run(srv: FakeOpenAIServer, rows: list[dict[str, Any]] = ROWS, **kw: Any) -> Any:
    headers = kw.pop("headers", None)
    target = make_target(
        srv.root + "/rag", fields=FIELDS, headers=headers, timeout=kw.pop("timeout", 5.0)
    )
    kw.setdefault("backoff", 0.01)
    return await arun(rows, target, **kw)


async def test_answers_contexts_ids_latency_and_header_from_env() -> None:
    headers = parse_headers(["Authorization=env:RAG_TOKEN", "X-Team=evals"], {"RAG_TOKEN": TOKEN})
    with FakeOpenAIServer(handler=good) as srv:
        result = await run(srv, headers=headers)
        reqs = srv.requests
    assert [r.json for r in reqs if r.json["input"]["query"] == ROWS[0]["question"]]
    assert all(r.headers["authorization"] == TOKEN and r.headers["x-team"] == "evals" for r in reqs)
    a, b = result.rows
    assert a["response"] == "answer to How many days of leave?"
    assert a["contexts"] == ["text of leave.md#0", "text of travel.md#2"]
    assert a["retrieved_ids"] == ["leave.md#0", "travel.md#2"]
    assert b["retrieved_ids"] == ["expenses.md#1"]
    for row, src in zip(result.rows, ROWS):
        for key in ("id", "question", "reference", "reference_contexts", "relevant_ids"):
            assert row[key] == src[key]
        meta = row["metadata"]
        assert meta["question_type"] == src["metadata"]["question_type"]  # test-set metadata kept
        assert meta["error"] is None and meta["attempts"] == 1 and meta["latency_s"] > 0
        assert meta["target"].endswith("/rag")
    assert result.failed == 0


async def test_slow_replies_are_waited_for_and_timed() -> None:
    def slow(req: RecordedRequest) -> Reply:
        time.sleep(0.3)
        return good(req)

    with FakeOpenAIServer(handler=slow) as srv:
        result = await run(srv, timeout=5.0)
    assert all(r["metadata"]["latency_s"] >= 0.3 for r in result.rows)
    assert all(r["response"] for r in result.rows)


async def test_a_500_is_retried_then_succeeds() -> None:
    with FakeOpenAIServer(handler=good) as srv:
        srv.enqueue(Reply.error(500, "busy"))
        result = await run(srv, rows=ROWS[:1], retries=2)
    (row,) = result.rows
    assert row["response"] and row["metadata"]["attempts"] == 2 and row["metadata"]["error"] is None


async def test_a_failing_call_is_recorded_and_the_run_goes_on() -> None:
    def handler(req: RecordedRequest) -> Reply:
        if "leave" in req.json["input"]["query"]:
            return Reply.error(500, "database down")
        return good(req)

    with FakeOpenAIServer(handler=handler) as srv:
        result = await run(srv, retries=2)
        leave_calls = [r for r in srv.requests if "leave" in r.json["input"]["query"]]
    assert len(leave_calls) == 3  # first try and two retries
    failed, ok = result.rows
    assert "response" not in failed and "contexts" not in failed
    assert (
        "HTTP 500" in failed["metadata"]["error"] and "database down" in failed["metadata"]["error"]
    )
    assert failed["metadata"]["attempts"] == 3
    assert ok["response"] and ok["metadata"]["error"] is None
    assert result.failed == 1


@pytest.mark.parametrize(
    ("reply", "expected"),
    [
        (Reply.raw("<html>Bad gateway page</html>", status=200), "not JSON"),
        (Reply.json({"data": {"text": "no answer key"}}), "no answer at 'data.answer'"),
        (Reply.json({"data": {"answer": 42}}), "not text"),
        (Reply.json({"data": {"answer": "ok", "chunks": "one string"}}), "not a list"),
        (
            Reply.json({"data": {"answer": "ok", "chunks": [{"ref": 1}]}}),
            "no text string at 'body'",
        ),
        (Reply.error(400, "bad request"), "HTTP 400"),
    ],
)
async def test_malformed_or_refused_replies_fail_without_retry(reply: Reply, expected: str) -> None:
    with FakeOpenAIServer() as srv:
        srv.enqueue(reply)
        result = await run(srv, rows=ROWS[:1], retries=3)
    (row,) = result.rows
    assert expected in row["metadata"]["error"]
    assert row["metadata"]["attempts"] == 1
    assert "response" not in row


async def test_a_hanging_endpoint_times_out() -> None:
    with FakeOpenAIServer() as srv:
        srv.enqueue(Reply.hang(), Reply.hang())
        t0 = time.monotonic()
        result = await run(srv, rows=ROWS[:1], timeout=0.4, retries=1)
        took = time.monotonic() - t0
    (row,) = result.rows
    assert "no answer within 0.4 s" in row["metadata"]["error"]
    assert row["metadata"]["attempts"] == 2
    assert took < 5


async def test_the_token_never_appears_in_errors() -> None:
    headers = parse_headers(["Authorization=env:RAG_TOKEN"], {"RAG_TOKEN": TOKEN})
    with FakeOpenAIServer() as srv:
        srv.enqueue(
            Reply.error(401, f"token {TOKEN} is not valid"),
            Reply.raw(f"you sent {TOKEN}", status=200),
        )
        result = await run(srv, headers=headers, retries=0, concurrency=1)
    errors = [r["metadata"]["error"] for r in result.rows]
    assert all(e and TOKEN not in e for e in errors)
    assert "***" in errors[0]
    assert TOKEN not in json.dumps(result.rows)


def test_a_missing_env_variable_names_it_but_no_value() -> None:
    with pytest.raises(ConfigError, match="NOT_SET_ANYWHERE is not set"):
        parse_headers(["Authorization=env:NOT_SET_ANYWHERE"], {})
    with pytest.raises(ConfigError, match="NAME=VALUE"):
        parse_headers(["no-equals-sign"], {})


async def test_concurrency_limit_is_respected() -> None:
    lock = threading.Lock()
    state = {"now": 0, "max": 0}

    def handler(req: RecordedRequest) -> Reply:
        with lock:
            state["now"] += 1
            state["max"] = max(state["max"], state["now"])
        time.sleep(0.15)
        with lock:
            state["now"] -= 1
        return good(req)

    rows = [dict(ROWS[0], id=f"q{i}") for i in range(8)]
    with FakeOpenAIServer(handler=handler) as srv:
        result = await run(srv, rows=rows, concurrency=2)
    assert state["max"] == 2
    assert [r["id"] for r in result.rows] == [f"q{i}" for i in range(8)]  # input order kept


async def test_output_loads_in_evaluate_and_failed_rows_are_skipped(tmp_path: Path) -> None:
    from ragsight.cli._testset import write_jsonl

    def handler(req: RecordedRequest) -> Reply:
        if "expenses" in req.json["input"]["query"]:
            return Reply.error(503, "down")
        return good(req)

    with FakeOpenAIServer(handler=handler) as srv:
        result = await run(srv, retries=0)
    path = tmp_path / "eval.jsonl"
    write_jsonl(result.rows, path)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        evaluation = await ragsight.aevaluate(str(path), ["hit_rate", "token_f1"])
    ok, failed = ROWS[0]["id"], ROWS[1]["id"]
    assert evaluation.scores[ok]["hit_rate"].value == 1.0
    assert evaluation.scores[ok]["token_f1"].outcome is Outcome.SCORED
    for metric in ("hit_rate", "token_f1"):
        assert evaluation.scores[failed][metric].outcome is Outcome.SKIPPED


async def test_cli_run_over_http(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    import asyncio

    from ragsight import cli

    ts = tmp_path / "ts.jsonl"
    ts.write_text("\n".join(json.dumps(r) for r in ROWS) + "\n", "utf-8")
    out = tmp_path / "eval.jsonl"
    monkeypatch.setenv("RAG_TOKEN", TOKEN)
    with FakeOpenAIServer(handler=good) as srv:
        code = await asyncio.to_thread(
            cli.main,
            [
                "run",
                str(ts),
                "--target",
                srv.root + "/rag",
                "--out",
                str(out),
                "--request-field",
                "input.query",
                "--answer-field",
                "data.answer",
                "--contexts-field",
                "data.chunks",
                "--context-text-field",
                "body",
                "--context-id-field",
                "ref",
                "--header",
                "Authorization=env:RAG_TOKEN",
                "--quiet",
            ],
        )
        assert srv.requests[0].headers["authorization"] == TOKEN
    assert code == 0
    rows = [json.loads(line) for line in out.read_text("utf-8").splitlines()]
    assert [r["response"] for r in rows] == [
        "answer to How many days of leave?",
        "answer to Who approves expenses?",
    ]
    printed = capsys.readouterr()
    assert "2 answered, 0 failed" in printed.out
    assert TOKEN not in printed.out + printed.err
