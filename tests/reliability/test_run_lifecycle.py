"""A run's life across processes: one writer while it lives, the judge and embedder that began
it, what it paid across kills, and SIGTERM. Real CLI processes against a fake judge on 127.0.0.1.

- The run lock's heartbeat used to be refreshed only when a sample was saved: with samples
  slower than the lease, a second ``--resume`` took the lock from a live process, both exited 0
  and judge-call rows were duplicated. Now a background thread refreshes it while the run lives.
  The lease is shortened here (``RAGSIGHT_LOCK_LEASE_S``; the constant too, so that the test
  means the same on a version without that knob).
- ``--resume`` with another judge or embedder silently mixed two models in one run; it is refused.
- After kill -9 and resume, the run's statistics counted only the last process (101 calls stored,
  250 sent); each process now writes what it paid with its heartbeat.
- SIGTERM ended the process with 143, no hint, and the run left ``running``; it now ends as
  Ctrl-C does: the run ``interrupted``, resumable, and the command to resume it printed.
"""

from __future__ import annotations

import json
import os
import re
import signal
import sqlite3
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

import ragsight
from ragsight import cli
from tests.fakes import FakeOpenAIServer, RecordedRequest, Reply
from tests.reliability.conftest import ENV_TO_CLEAR
from tests.reliability.world import JudgeWorld, make_samples, prompt_id_of

LEASE_S = 1.0
# Runs the CLI with a short run-lock lease: through the environment, and by the constant for a
# version of ragsight that does not read it (in the module that holds it: store._locks, or
# store._sqlite before the store was split).
RUNNER = ("import sys, ragsight.store._sqlite as s; "
          "sys.modules.get('ragsight.store._locks', s).LOCK_STALE_S = {lease}; "
          "from ragsight.cli import main; sys.exit(main(sys.argv[1:]))")


def cli_cmd(*args: str) -> list[str]:
    return [sys.executable, "-c", RUNNER.format(lease=LEASE_S), *args]


def cli_env() -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if k not in ENV_TO_CLEAR}
    env["PYTHONUNBUFFERED"] = "1"
    env["RAGSIGHT_LOCK_LEASE_S"] = str(LEASE_S)
    return env


def write_jsonl(path: Path, rows: list[dict[str, Any]]) -> Path:
    path.write_text("".join(json.dumps(r) + "\n" for r in rows), encoding="utf-8")
    return path


def db(path: Path, sql: str, args: tuple[Any, ...] = ()) -> list[tuple[Any, ...]]:
    if not path.exists():
        return []
    conn = sqlite3.connect(path, timeout=30)
    try:
        return conn.execute(sql, args).fetchall()
    except sqlite3.OperationalError:
        return []
    finally:
        conn.close()


def evaluate_args(data: Path | None, store: Path, url: str, *extra: str) -> list[str]:
    head = ["evaluate", str(data)] if data is not None else ["evaluate"]
    return [*head, "--judge", "openai:m", "--base-url", url, "--store", str(store), "--quiet",
            "--metrics", "faithfulness", "--timeout", "30", *extra]


class TimedWorld:
    """The judge world with a latency on judge steps (not the preflight ping), recording when
    each judge request was answered."""

    def __init__(self, latency: float, hold: str | None = None) -> None:
        self.world = JudgeWorld()
        self.latency = latency
        self.answered: list[float] = []
        self.lock = threading.Lock()
        # "hold": verify_claims requests whose prompt names this word wait until release is set;
        # the other requests of that sample are answered (held_claims_answered: when)
        self.hold = hold
        self.release = threading.Event()
        self.held_claims_answered: list[float] = []

    def __call__(self, req: RecordedRequest) -> Reply | None:
        body = req.json if isinstance(req.json, dict) else {}
        if req.path.endswith("/chat/completions") and prompt_id_of(body) is not None:
            text = " ".join(m.get("content", "") for m in body.get("messages", []))
            held = self.hold is not None and self.hold in text
            if held and prompt_id_of(body) == "verify_claims":
                self.release.wait(60)
            time.sleep(self.latency)
            if held and prompt_id_of(body) != "verify_claims":
                with self.lock:
                    self.held_claims_answered.append(time.monotonic() + 0.01)
            reply = self.world(req)
            with self.lock:
                self.answered.append(time.monotonic())
            return reply
        return self.world(req)


@pytest.fixture
def slow_server() -> Iterator[tuple[FakeOpenAIServer, TimedWorld]]:
    world = TimedWorld(latency=1.5)
    with FakeOpenAIServer(handler=world) as srv:
        yield srv, world


@pytest.mark.slow
def test_a_second_resume_cannot_take_the_lock_from_a_live_slow_run(
    slow_server: tuple[FakeOpenAIServer, TimedWorld], tmp_path: Path
) -> None:
    """Samples take 3 s and more (two judge steps of 1.5 s, the first held until B has tried),
    the lease is 1 s: B tries to resume A's run twice the lease after A created it, before A
    saved anything. (Unheld, A's whole run took 9 s, and on a loaded machine B's start-up alone
    could outlast it: B then found the run completed and exited 0.)"""
    srv, world = slow_server
    tried = threading.Event()

    def held(req: RecordedRequest) -> Reply | None:
        body = req.json if isinstance(req.json, dict) else {}
        if req.path.endswith("/chat/completions") and prompt_id_of(body) is not None:
            tried.wait(120)
        return world(req)

    srv.handler = held
    store = tmp_path / "runs.db"
    data = write_jsonl(tmp_path / "d.jsonl", make_samples(3))
    a = subprocess.Popen(cli_cmd(*evaluate_args(data, store, srv.url, "--concurrency", "1")), env=cli_env(),
                         stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    limit = time.monotonic() + 60
    while not db(store, "SELECT id FROM runs") and a.poll() is None and time.monotonic() < limit:
        time.sleep(0.02)
    time.sleep(2 * LEASE_S)
    assert a.poll() is None, "A ended before B could try"
    assert db(store, "SELECT COUNT(*) FROM samples WHERE finished=1") == [(0,)]
    try:
        b = subprocess.run(cli_cmd(*evaluate_args(None, store, srv.url, "--resume", "last")), env=cli_env(),
                           capture_output=True, timeout=120)
    finally:
        tried.set()
    _, a_err = a.communicate(timeout=120)
    b_err = b.stderr.decode()
    assert b.returncode == 2, b_err
    assert "is being written by another process" in b_err and "Traceback" not in b_err
    assert a.returncode == 0, a_err.decode()
    assert db(store, "SELECT status FROM runs") == [("completed",)]
    assert db(store, "SELECT COUNT(*) FROM scores") == [(3,)]
    assert db(store, "SELECT sample_id, step, attempt, COUNT(*) FROM judge_calls"
                     " GROUP BY sample_id, step, attempt HAVING COUNT(*) > 1") == []
    assert db(store, "PRAGMA integrity_check") == [("ok",)]


@pytest.mark.slow
def test_statistics_after_kill_and_resume_count_what_was_paid(tmp_path: Path) -> None:
    """A is killed with SIGKILL mid-run, B resumes to the end. One sample (Dunmore's) cannot
    finish in A: the judge holds its verdict step until A is dead, so its chunk-relevance call is
    paid and its sample lost. The run's calls count every judge request answered more than a
    heartbeat before the kill (that call included), and no more requests than the server
    received."""
    timed = TimedWorld(latency=0.2, hold="Dunmore")
    store = tmp_path / "runs.db"
    data = write_jsonl(tmp_path / "d.jsonl", make_samples(16, seed=5))
    with FakeOpenAIServer(handler=timed) as srv:
        a = subprocess.Popen(cli_cmd(*evaluate_args(data, store, srv.url, "--concurrency", "4", "--metrics",
                                                    "faithfulness,context_precision")),
                             env=cli_env(), stdout=subprocess.PIPE, stderr=subprocess.PIPE)
        limit = time.monotonic() + 60
        while (a.poll() is None and time.monotonic() < limit
               and (db(store, "SELECT COUNT(*) FROM samples WHERE finished=1") < [(3,)]
                    or not timed.held_claims_answered)):
            time.sleep(0.02)
        time.sleep(2.0)
        assert a.poll() is None, "A finished before it could be killed"
        a.send_signal(signal.SIGKILL)
        killed_at = time.monotonic()
        a.communicate(timeout=30)
        timed.release.set()
        time.sleep(0.5)  # the held request is answered (to a dead client) before B starts
        with timed.lock:
            before_kill = [t for t in timed.answered if t <= killed_at]
            lost_claims = list(timed.held_claims_answered)
        saved_by_a = db(store, "SELECT COUNT(*) FROM judge_calls WHERE cached=0")[0][0]
        assert db(store, "SELECT finished FROM samples WHERE sample_id='s003'") == [(0,)]
        b_start = time.monotonic()
        b = subprocess.run(cli_cmd(*evaluate_args(None, store, srv.url, "--resume", "last")), env=cli_env(),
                           capture_output=True, timeout=120)
        assert b.returncode == 0, b.stderr.decode()
        with timed.lock:
            total = len(timed.answered)
            after_kill = len([t for t in timed.answered if t > b_start])
    stats = json.loads(db(store, "SELECT stats FROM runs")[0][0])
    surely_counted = len([t for t in before_kill if t < killed_at - 1.5])  # a beat (1 s) and a margin
    assert lost_claims and lost_claims[0] < killed_at - 1.5, (lost_claims, killed_at)
    assert len(before_kill) > saved_by_a
    assert surely_counted + after_kill <= stats["calls"] <= total, (stats["calls"], surely_counted, after_kill, total)


@pytest.mark.slow
def test_sigterm_leaves_the_run_interrupted_and_resumable(tmp_path: Path) -> None:
    timed = TimedWorld(latency=0.3)
    store = tmp_path / "runs.db"
    data = write_jsonl(tmp_path / "d.jsonl", make_samples(8, seed=6))
    with FakeOpenAIServer(handler=timed) as srv:
        a = subprocess.Popen(cli_cmd(*evaluate_args(data, store, srv.url, "--concurrency", "2")), env=cli_env(),
                             stdout=subprocess.PIPE, stderr=subprocess.PIPE)
        limit = time.monotonic() + 60
        while (a.poll() is None and time.monotonic() < limit
               and db(store, "SELECT COUNT(*) FROM samples WHERE finished=1") < [(2,)]):
            time.sleep(0.02)
        assert a.poll() is None, "A finished before SIGTERM"
        a.send_signal(signal.SIGTERM)
        _, err = a.communicate(timeout=60)
        text = " ".join(err.decode().split())
        run_id = db(store, "SELECT id FROM runs")[0][0]
        assert a.returncode == 143, text
        assert re.search(r"terminated \(SIGTERM\): \d+ of 8 samples are saved in \S+\. Continue with:", text), text
        assert f"ragsight evaluate --resume {run_id} --store {store}" in text
        assert "Traceback" not in text
        assert db(store, "SELECT status, lock_owner FROM runs") == [("interrupted", None)]
        done = db(store, "SELECT COUNT(*) FROM samples WHERE finished=1")[0][0]
        assert 2 <= done < 8
        b = subprocess.run(cli_cmd(*evaluate_args(None, store, srv.url, "--resume", run_id)), env=cli_env(),
                           capture_output=True, timeout=120)
    assert b.returncode == 0, b.stderr.decode()
    assert db(store, "SELECT status FROM runs") == [("completed",)]
    assert db(store, "SELECT COUNT(*) FROM scores") == [(8,)]


def test_resume_with_another_judge_or_embedder_is_refused(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    store = tmp_path / "runs.db"
    with FakeOpenAIServer(handler=JudgeWorld()) as srv:
        run = ragsight.evaluate(make_samples(2), ["faithfulness", "answer_relevancy"], embedder="openai:e",
                                store=store, judge=ragsight.JudgeSpec("openai:m", base_url=srv.url))
        before = len(srv.requests)
        for flags, expect in (
            (["--judge", "openai:m2"], f"run {run.run_id} was made with judge 'openai:m'; resuming it with judge "
                                       "'openai:m2' would mix two judges in one run. Resume without --judge"),
            (["--embedder", "openai:e2"], "was made with embedder 'openai:e'; resuming it with embedder "
                                          "'openai:e2' would mix two embedders in one run."),
            (["--judge", "openai:m2", "--embedder", "openai:e2"],
             "was made with judge 'openai:m' and embedder 'openai:e'; resuming it with judge 'openai:m2' and "
             "embedder 'openai:e2' would mix two models in one run. Resume without --judge or --embedder"),
        ):
            code = cli.main(["evaluate", "--resume", run.run_id, "--base-url", srv.url, "--store", str(store),
                             "--quiet", *flags])
            captured = capsys.readouterr()
            output = " ".join((captured.out + captured.err).split())
            assert code == 2, output
            assert output.startswith("error: ") and expect in output, output
        assert len(srv.requests) == before, "a refused resume called the judge"
        # the run's own judge and embedder, named or not, resume it
        for flags in ([], ["--judge", "openai:m", "--embedder", "openai:e"]):
            assert cli.main(["evaluate", "--resume", run.run_id, "--base-url", srv.url, "--store", str(store),
                             "--quiet", *flags]) == 0
            capsys.readouterr()
