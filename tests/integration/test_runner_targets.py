"""``ragsight run`` against Python callables (sync and async) and shell commands."""

from __future__ import annotations

import json
import sys
import textwrap
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from ragsight.errors import ConfigError
from ragsight.testset import arun, make_target, read_testset
from ragsight.testset._reply import get_path, reply_from

ROWS = [
    {
        "id": "a",
        "question": "What is Tern?",
        "reference": "A data pipeline.",
        "relevant_ids": ["w#1"],
    },
    {
        "id": "b",
        "question": "What is Osprey?",
        "reference": "A monitoring tool.",
        "relevant_ids": ["w#1"],
    },
]


# module-level targets, importable as tests.integration.test_runner_targets:NAME
def sync_target(question: str) -> dict[str, Any]:
    return {"answer": f"sync: {question}", "contexts": ["plain context one", "plain context two"]}


@dataclass
class Ctx:
    id: str
    text: str


@dataclass
class Reply:
    answer: str
    contexts: list[Ctx]
    model: str = "tiny-rag-model"


async def async_target(question: str) -> Reply:
    return Reply(
        f"async: {question}", [Ctx("w#1", "Tern moves data."), Ctx("w#2", "Osprey watches.")]
    )


def flaky_target(question: str) -> dict[str, Any]:
    if "Osprey" in question:
        raise RuntimeError("index not loaded")
    return {"answer": "fine", "contexts": []}


async def test_sync_callable_with_string_contexts() -> None:
    result = await arun(ROWS, make_target("tests.integration.test_runner_targets:sync_target"))
    a, _ = result.rows
    assert a["response"] == "sync: What is Tern?"
    assert a["contexts"] == ["plain context one", "plain context two"]
    assert "retrieved_ids" not in a  # strings carry no ids
    assert a["metadata"]["target"] == "tests.integration.test_runner_targets:sync_target"
    assert a["reference"] == "A data pipeline." and a["relevant_ids"] == ["w#1"]


async def test_async_callable_returning_an_object() -> None:
    result = await arun(ROWS, make_target("tests.integration.test_runner_targets:async_target"))
    a, b = result.rows
    assert b["response"] == "async: What is Osprey?"
    assert a["retrieved_ids"] == ["w#1", "w#2"] and a["contexts"] == [
        "Tern moves data.",
        "Osprey watches.",
    ]
    assert a["metadata"]["generator_model"] == "tiny-rag-model"


async def test_a_raising_callable_fails_its_row_only() -> None:
    result = await arun(ROWS, make_target(flaky_target), retries=3)
    ok, failed = result.rows
    assert ok["response"] == "fine" and ok["contexts"] == []
    assert failed["metadata"]["error"].endswith("raised RuntimeError: index not loaded")
    assert failed["metadata"]["attempts"] == 1  # a bug in the target is not retried
    assert "response" not in failed


async def test_a_slow_callable_times_out() -> None:
    import asyncio

    async def slow(question: str) -> dict[str, Any]:
        await asyncio.sleep(5)
        return {"answer": "late"}

    result = await arun(ROWS[:1], make_target(slow), timeout=0.2, retries=0)
    assert "no answer within 0.2 s" in result.rows[0]["metadata"]["error"]


def test_bad_callable_specs() -> None:
    with pytest.raises(ConfigError, match="cannot import module"):
        make_target("no_such_module_xyz:answer")
    with pytest.raises(ConfigError, match="has no 'nothing'"):
        make_target("tests.integration.test_runner_targets:nothing")
    with pytest.raises(ConfigError, match="module:function"):
        make_target("just-a-word")


def _script(tmp_path: Path, body: str) -> str:
    path = tmp_path / "rag.py"
    path.write_text(textwrap.dedent(body), "utf-8")
    return f"cmd:{sys.executable} {path}"


async def test_command_target_reads_stdin_and_prints_json(tmp_path: Path) -> None:
    spec = _script(
        tmp_path,
        """
        import json, sys
        q = json.load(sys.stdin)["question"]
        print("loading index...")  # log lines before the answer are allowed
        print(json.dumps({"answer": "cmd: " + q, "contexts": [{"id": "w#1", "text": "Tern moves data."}]}))
    """,
    )
    result = await arun(ROWS, make_target(spec), concurrency=2)
    assert [r["response"] for r in result.rows] == ["cmd: What is Tern?", "cmd: What is Osprey?"]
    assert result.rows[0]["retrieved_ids"] == ["w#1"]


@pytest.mark.parametrize(
    ("body", "expected"),
    [
        (
            "import sys; sys.stderr.write('boom: no model'); sys.exit(3)",
            "exited with status 3: boom: no model",
        ),
        ("print('not json')", "printed no JSON"),
        ("import json; print(json.dumps({'text': 'x'}))", "no answer at 'answer'"),
    ],
)
async def test_command_failures_are_recorded(tmp_path: Path, body: str, expected: str) -> None:
    result = await arun(ROWS[:1], make_target(_script(tmp_path, body)), retries=2)
    (row,) = result.rows
    assert expected in row["metadata"]["error"]
    assert row["metadata"]["attempts"] == 1 and "response" not in row


async def test_a_hanging_command_is_killed_at_the_timeout(tmp_path: Path) -> None:
    spec = _script(tmp_path, "import time; time.sleep(30)")
    result = await arun(ROWS[:1], make_target(spec, timeout=0.5), timeout=0.5, retries=0)
    assert "no answer within 0.5 s" in result.rows[0]["metadata"]["error"]


def test_cli_run_with_a_callable(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    from ragsight import cli

    ts = tmp_path / "ts.jsonl"
    ts.write_text("\n".join(json.dumps(r) for r in ROWS) + "\n", "utf-8")
    out = tmp_path / "eval.jsonl"
    assert (
        cli.main(
            [
                "run",
                str(ts),
                "--target",
                "tests.integration.test_runner_targets:flaky_target",
                "--out",
                str(out),
                "--quiet",
            ]
        )
        == 0
    )
    rows = read_testset(out)
    assert [r.get("response") for r in rows] == ["fine", None]
    printed = capsys.readouterr().out
    assert "1 answered, 1 failed" in printed and "index not loaded" in printed


def test_dotted_paths() -> None:
    data = {"data": {"items": [{"t": "x"}, {"t": "y"}]}}
    assert get_path(data, "data.items.1.t") == "y"
    assert reply_from({"response": "alias ok"}).answer == "alias ok"
    with pytest.raises(Exception, match="no answer"):
        reply_from({"data": {}}, answer_field="data.answer")
