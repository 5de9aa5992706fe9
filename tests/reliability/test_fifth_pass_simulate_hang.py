"""``ragsight simulate`` with a synchronous target that never returns hung for ever: the time-out
ended the wait, but the worker thread it ran in was joined when the event loop closed and when
the process exited. Such a call is now abandoned at its time-out: the conversation is marked
target_failed, the other conversations go on, --out is written and the command exits. Run as a
separate process (a hang of the old code must not hang the test session), against the judge over
real HTTP on 127.0.0.1."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.fakes import FakeOpenAIServer
from tests.integration.test_simulate_cli import SCENARIOS, judge

SRC = Path(__file__).resolve().parents[2] / "src"

TARGET = '''
import threading
from tests.fakes.chat_target import answer as good

def answer(question, history):
    if "gym" in question.lower():
        threading.Event().wait()  # never returns
    return good(question, history)
'''


@pytest.fixture()
def judge_url() -> Iterator[str]:
    with FakeOpenAIServer(handler=judge) as srv:
        yield srv.url


def test_a_sync_target_that_never_returns_ends_at_the_timeout(judge_url: str, tmp_path: Path) -> None:
    (tmp_path / "scenarios.jsonl").write_text("".join(json.dumps(s) + "\n" for s in SCENARIOS), "utf-8")
    (tmp_path / "stuck_target.py").write_text(TARGET, "utf-8")
    root = str(Path(__file__).resolve().parents[2])
    env = {**os.environ, "OPENAI_API_KEY": "sk-test-hang",
           "PYTHONPATH": os.pathsep.join([str(SRC), root, str(tmp_path)])}
    t0 = time.monotonic()
    proc = subprocess.run(
        [sys.executable, "-m", "ragsight.cli", "simulate", "scenarios.jsonl", "--target", "stuck_target:answer",
         "--out", "conv.jsonl", "--judge", "openai:m", "--base-url", judge_url, "--store", "s.db",
         "--timeout", "1", "--retries", "1", "--max-turns", "2", "--quiet"],
        cwd=tmp_path, env=env, capture_output=True, text=True, timeout=120)
    took = time.monotonic() - t0
    assert "Traceback" not in proc.stderr, proc.stderr
    assert proc.returncode == 0, proc.stdout + proc.stderr  # one conversation got through
    assert took < 60, took
    rows = {r["id"]: r for r in map(json.loads, (tmp_path / "conv.jsonl").read_text("utf-8").splitlines())}
    assert rows["gym"]["metadata"]["ended"] == "target_failed"
    assert "no answer within 1 s" in rows["gym"]["metadata"]["ended_reason"]
    assert rows["leave"]["metadata"]["ended"] != "target_failed"
    assert not (tmp_path / "conv.partial.jsonl").exists()


def test_a_file_of_finished_conversations_cut_inside_a_character_is_continued(judge_url: str, tmp_path: Path,
                                                                             monkeypatch: pytest.MonkeyPatch,
                                                                             capsys: pytest.CaptureFixture[str]) -> None:
    from ragsight.cli import main

    monkeypatch.setenv("OPENAI_API_KEY", "sk-test-cut")
    monkeypatch.chdir(tmp_path)
    (tmp_path / "scenarios.jsonl").write_text("".join(json.dumps(s) + "\n" for s in SCENARIOS), "utf-8")
    # a crash mid-write left half of a "ü" at the end of the file
    (tmp_path / "conv.partial.jsonl").write_bytes(b'{"fingerprint": "x", "row": {"id": "gr' + "ü".encode()[:1])
    code = main(["simulate", "scenarios.jsonl", "--target", "tests.fakes.chat_target:answer", "--out", "conv.jsonl",
                 "--judge", "openai:m", "--base-url", judge_url, "--store", "s.db", "--max-turns", "2"])
    cap = capsys.readouterr()
    assert "Traceback" not in cap.out + cap.err
    assert code == 0, cap.out + cap.err
    assert len((tmp_path / "conv.jsonl").read_text("utf-8").splitlines()) == 2
