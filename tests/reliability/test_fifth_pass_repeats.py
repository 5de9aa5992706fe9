"""``evaluate --repeats N`` dropped --max-cost, --price, --threshold, --timeout, --api-version and
--judge-concurrency without a word: with a $0.0005 cap three repeats made 243 calls. Every option
of a run now applies to each repeat, and --max-cost to the whole command (each repeat gets what
the repeats before it left); an option repeats cannot honour (--out, --resume) is refused. Over
real HTTP, against the fake OpenAI server on 127.0.0.1."""

from __future__ import annotations

import json
import re
import sqlite3
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from ragsight import cli
from tests.fakes import FakeOpenAIServer, RecordedRequest, Reply
from tests.integration.test_cost import BilledWorld
from tests.reliability.world import JudgeWorld, make_samples

METRICS = "faithfulness,context_recall"


def judge_calls(srv: FakeOpenAIServer) -> int:
    n = 0
    for r in srv.requests:
        if r.path.endswith("/chat/completions") and isinstance(r.json, dict):
            text = " ".join(m.get("content", "") for m in r.json.get("messages", []))
            n += text.strip() != "ping"
    return n


@pytest.fixture()
def server(monkeypatch: pytest.MonkeyPatch) -> Iterator[FakeOpenAIServer]:
    monkeypatch.setenv("OPENAI_API_KEY", "sk-test-repeats")
    with FakeOpenAIServer(handler=BilledWorld()) as srv:  # usage counted from what was sent and said
        yield srv


@pytest.fixture()
def data(tmp_path: Path) -> Path:
    path = tmp_path / "data.jsonl"
    path.write_text("".join(json.dumps(r) + "\n" for r in make_samples(8)), "utf-8")
    return path


def run(capsys: pytest.CaptureFixture[str], *argv: str) -> tuple[int, str]:
    code = cli.main(list(argv))
    cap = capsys.readouterr()
    printed = cap.out + cap.err
    assert "Traceback" not in printed, printed
    return code, " ".join(printed.split())


def stored(store: Path) -> list[tuple[str, dict[str, Any], dict[str, Any]]]:
    with sqlite3.connect(store) as db:
        return [(status, json.loads(config), json.loads(stats))
                for status, config, stats in db.execute("SELECT status, config, stats FROM runs ORDER BY created_at")]


def test_max_cost_caps_all_the_repeats_together(
    server: FakeOpenAIServer, data: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    # at this price a run costs about 10 cents and a call at its worst (a full reply) up to 4
    base = ["--metrics", METRICS, "--judge", "openai:pricey", "--base-url", server.url, "--price",
            "pricey=10/10", "--concurrency", "1", "--embedder", "openai:emb", "--quiet"]
    # what one run costs, measured
    code, printed = run(capsys, "evaluate", str(data), *base, "--store", str(tmp_path / "one.db"), "--no-cache")
    assert code == 0, printed
    ((_, _, stats),) = stored(tmp_path / "one.db")
    one_run, calls_of_one = stats["cost"]["usd"], judge_calls(server)
    assert one_run > 0
    server.settle()
    before = judge_calls(server)
    cap = 1.5 * one_run  # room for one run and a half, not three
    code, printed = run(capsys, "evaluate", str(data), *base, "--store", str(tmp_path / "rep.db"), "--repeats", "3",
                        "--max-cost", f"{cap:.6f}")
    assert code == 3, printed
    assert "stopped before exceeding --max-cost" in printed and "for all 3 repeated runs" in printed
    assert re.search(r"1 of 3 runs finished", printed), printed
    server.settle()
    made = judge_calls(server) - before
    assert calls_of_one < made < 2 * calls_of_one, (calls_of_one, made)
    runs = stored(tmp_path / "rep.db")
    spent = sum(s["cost"]["usd"] for _, _, s in runs if s.get("cost"))
    assert spent <= cap
    assert [status for status, _, _ in runs] == ["completed", "interrupted"]
    assert runs[1][2]["stopped_by"]["max_cost"] < cap  # the second run was given what the first left


def test_every_option_reaches_every_repeat(
    server: FakeOpenAIServer, data: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    store = tmp_path / "rep.db"
    code, printed = run(capsys, "evaluate", str(data), "--metrics", METRICS, "--judge", "openai:m", "--base-url",
                        server.url, "--store", str(store), "--repeats", "2", "--threshold", "0.7",
                        "--judge-concurrency", "3", "--price", "m=0.5/1.5", "--api-version", "2024-10-21",
                        "--explain", "none", "--quiet")
    assert code == 0, printed
    runs = stored(store)
    assert len(runs) == 2
    for _, config, _ in runs:
        assert config["settings"]["support_threshold"] == 0.7
        assert config["settings"]["explain"] == "none"
        assert config["judge_concurrency"]["ceiling"] == 3
        assert config["api_version"] == "2024-10-21"
        assert config["price"]["input"] == 0.5 and config["price"]["output"] == 1.5


def test_the_timeout_reaches_every_repeat(tmp_path: Path, data: Path, monkeypatch: pytest.MonkeyPatch,
                                          capsys: pytest.CaptureFixture[str]) -> None:
    monkeypatch.setenv("OPENAI_API_KEY", "sk-test-repeats")
    world = JudgeWorld()

    def silent(request: RecordedRequest) -> Reply | None:
        text = json.dumps(request.json or {})
        return world(request) if '"ping"' in text or not request.path.endswith("/chat/completions") else Reply.hang()

    with FakeOpenAIServer(handler=silent) as srv:
        t0 = time.monotonic()
        code, printed = run(capsys, "evaluate", str(data), "--metrics", "faithfulness", "--judge", "openai:m",
                            "--base-url", srv.url, "--store", str(tmp_path / "t.db"), "--repeats", "2",
                            "--timeout", "0.5", "--max-retries", "0", "--quiet")
        took = time.monotonic() - t0
    # the default 120 s a call would keep this test waiting for minutes
    assert took < 60, took
    runs = stored(tmp_path / "t.db")
    assert len(runs) == 2 and code in (0, 1), printed


@pytest.mark.parametrize(("extra", "words"), [
    (["--out", "r.jsonl"], "--out cannot be combined with --repeats"),
    (["--resume", "last"], "--resume cannot be combined with --repeats"),
    (["--fail-under", "faithfulness=0.5"], "gate one run"),
])
def test_an_option_repeats_cannot_honour_is_refused(
    extra: list[str], words: str, server: FakeOpenAIServer, data: Path, tmp_path: Path,
    capsys: pytest.CaptureFixture[str]
) -> None:
    code, printed = run(capsys, "evaluate", str(data), "--metrics", METRICS, "--judge", "openai:m", "--base-url",
                        server.url, "--store", str(tmp_path / "x.db"), "--repeats", "2", *extra)
    assert code == 2 and printed.startswith("error: ") and words in printed, printed
    server.settle()
    assert judge_calls(server) == 0


def test_temperature_without_repeats_is_refused(data: Path, tmp_path: Path,
                                                capsys: pytest.CaptureFixture[str]) -> None:
    code, printed = run(capsys, "evaluate", str(data), "--metrics", "rouge_l", "--store", str(tmp_path / "x.db"),
                        "--temperature", "0.7")
    assert code == 2 and "--temperature sets the judge's sampling temperature of --repeats" in printed
