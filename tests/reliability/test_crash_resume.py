"""Crash safety: runs killed with SIGKILL at random points and resumed with ``--resume`` end with
the results of an uninterrupted run, with no duplicate or lost rows, an intact SQLite file, and
no finished judge work asked again; and two processes writing one store at once.

The runs are real CLI processes (``python -m ragsight.cli evaluate ...``) against a fake
OpenAI-compatible server in this process, whose small latency makes kills land mid-run.
"""

from __future__ import annotations

import json
import multiprocessing
import os
import random
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
from ragsight import Outcome
from ragsight.judge import JudgeRequest, Message, step_key
from ragsight.prompts import load_prompt
from ragsight.store import Store
from tests.fakes import FakeOpenAIServer, RecordedRequest
from tests.reliability.conftest import ENV_TO_CLEAR
from tests.reliability.world import JudgeWorld, make_samples, prompt_id_of

pytestmark = pytest.mark.slow

METRICS = ["faithfulness", "answer_relevancy", "context_precision", "context_recall"]
N_SAMPLES = 60  # enough work that ten kills land before the run can finish (40 was not, once)
N_KILLS = 10


def cli_env() -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if k not in ENV_TO_CLEAR}
    env["PYTHONUNBUFFERED"] = "1"
    return env


def evaluate_cmd(store: Path, url: str, data: Path | None = None, resume: str | None = None) -> list[str]:
    cmd = [sys.executable, "-m", "ragsight.cli", "evaluate"]
    if resume is not None:
        cmd += ["--resume", resume]
    else:
        assert data is not None
        cmd += [str(data), "--metrics", ",".join(METRICS), "--judge", "openai:m",
                "--embedder", "openai:e"]
    return [*cmd, "--base-url", url, "--store", str(store), "--quiet", "--concurrency", "4", "--timeout", "20"]


def write_jsonl(path: Path, rows: list[dict[str, Any]]) -> Path:
    path.write_text("".join(json.dumps(r) + "\n" for r in rows), encoding="utf-8")
    return path


def key_of(req: RecordedRequest, base_url: str) -> str | None:
    """The judge step (cache key) a chat request belongs to, rebuilt from its body as the Judge
    builds it: so the server's log can be checked against the cache."""
    body = req.json if isinstance(req.json, dict) else {}
    pid = prompt_id_of(body)
    if pid is None:
        return None  # preflight
    prompt = load_prompt(pid)
    request = JudgeRequest(
        prompt_id=pid, prompt_version=prompt.version,
        messages=tuple(Message(m["role"], m["content"]) for m in body["messages"]),
        schema=body["response_format"]["json_schema"]["schema"],
        max_tokens=body["max_tokens"], temperature=body["temperature"], seed=body.get("seed"),
    )
    identity = {"provider": f"openai:{body['model']}", "model": body["model"], "base_url": base_url}
    return step_key(body["model"], request, prompt.hash, "json", identity=identity)


def db_query(path: Path, sql: str, args: tuple[Any, ...] = ()) -> list[tuple[Any, ...]]:
    if not path.exists():
        return []
    conn = sqlite3.connect(path, timeout=30)
    try:
        return conn.execute(sql, args).fetchall()
    except sqlite3.OperationalError:  # no tables yet
        return []
    finally:
        conn.close()


def cache_keys(path: Path) -> set[str]:
    return {r[0] for r in db_query(path, "SELECT key FROM cache")}


def finished_count(path: Path) -> int:
    rows = db_query(path, "SELECT COUNT(*) FROM samples WHERE finished=1")
    return int(rows[0][0]) if rows else 0


def results_of(store: Path, run_id: str) -> dict[str, dict[str, tuple[str, float | None, tuple[str, ...]]]]:
    with Store(store) as st:
        scores = st.scores(run_id)
    return {sid: {m: (s.outcome.value, s.value, tuple(c.claim for c in s.evidence.claims))
                  for m, s in per.items()} for sid, per in scores.items()}


@pytest.fixture
def server() -> Iterator[tuple[FakeOpenAIServer, JudgeWorld]]:
    world = JudgeWorld(latency=0.03)
    with FakeOpenAIServer(handler=world) as srv:
        yield srv, world


def test_sigkill_at_random_points_then_resume_equals_uninterrupted(
    server: tuple[FakeOpenAIServer, JudgeWorld], tmp_path: Path
) -> None:
    srv, _ = server
    samples = make_samples(N_SAMPLES, seed=4)
    data = write_jsonl(tmp_path / "data.jsonl", samples)

    # the uninterrupted run
    base = ragsight.evaluate(str(data), METRICS, embedder="openai:e", store=tmp_path / "base.db",
                             judge=ragsight.JudgeSpec("openai:m", base_url=srv.url),
                             options=ragsight.RunOptions(concurrency=4))
    expected = results_of(tmp_path / "base.db", base.run_id)
    n_steps = len(cache_keys(tmp_path / "base.db"))

    store = tmp_path / "crash.db"
    rng = random.Random(2024)
    kills: list[dict[str, Any]] = []
    processes = 0
    t_start = time.monotonic()
    while True:
        run_exists = bool(db_query(store, "SELECT id FROM runs"))
        cmd = evaluate_cmd(store, srv.url, data=data, resume="last" if run_exists else None)
        cached_before = cache_keys(store)
        done_before = finished_count(store)
        n_req_before = len(srv.requests)
        proc = subprocess.Popen(cmd, env=cli_env(), stdout=subprocess.PIPE, stderr=subprocess.PIPE)
        processes += 1
        killed = False
        if len(kills) < N_KILLS:
            # half the kills at a random time after start (start-up, creating the run, mid-run),
            # half at a random moment just after a sample was committed
            if len(kills) % 2 == 0:
                # (or once 3 more samples are saved: on a fast machine a second and a half is
                # a third of the run, and the run must outlast ten kills)
                deadline = time.monotonic() + rng.uniform(0.3, 1.5)
                while (time.monotonic() < deadline and proc.poll() is None
                       and finished_count(store) < done_before + 3):
                    time.sleep(0.01)
            else:
                target = done_before + rng.randint(1, 2)
                limit = time.monotonic() + 30
                while proc.poll() is None and finished_count(store) < target and time.monotonic() < limit:
                    time.sleep(0.02)
                time.sleep(rng.uniform(0.0, 0.15))
            if proc.poll() is None:
                proc.send_signal(signal.SIGKILL)
                killed = True
        _out, err = proc.communicate(timeout=120)
        new_requests = srv.requests[n_req_before:]
        keys = [k for k in (key_of(r, srv.url) for r in new_requests) if k is not None]
        # finished judge work is never asked again: no request of this process was for a step
        # already in the cache when it started
        assert not set(keys) & cached_before, "a cached judge step was asked again after resume"
        if killed and proc.returncode == 0:
            # the process finished between poll() and the signal (a fast machine): the run is
            # complete, and this is the uninterrupted last process
            killed = False
        if killed:
            assert proc.returncode == -signal.SIGKILL
            kills.append({"finished_at_kill": finished_count(store), "requests": len(keys)})
            continue
        assert proc.returncode == 0, err.decode()
        assert b"Traceback" not in err
        # the process that finished asked exactly for the steps not yet cached
        assert len(keys) == len(set(keys)) == len(cache_keys(store) - cached_before)
        break
    elapsed = time.monotonic() - t_start

    # every planned kill landed, unless the last process outran its signal (then one fewer)
    assert len(kills) >= N_KILLS - 1, kills
    mid_run = [k for k in kills if 0 < k["finished_at_kill"] < N_SAMPLES]
    assert len(mid_run) >= N_KILLS // 2, f"too few kills landed mid-run: {kills}"
    run_id = db_query(store, "SELECT id FROM runs")[0][0]
    assert len(db_query(store, "SELECT id FROM runs")) == 1
    assert db_query(store, "SELECT status FROM runs")[0][0] == "completed"
    # identical results: every sample, every metric, outcome, value and claims
    assert results_of(store, run_id) == expected
    # no duplicate, no lost rows
    assert db_query(store, "SELECT COUNT(*) FROM scores")[0][0] == N_SAMPLES * len(METRICS)
    assert db_query(store, "SELECT COUNT(*) FROM samples WHERE finished=1")[0][0] == N_SAMPLES
    assert db_query(store, "SELECT COUNT(*) FROM samples")[0][0] == N_SAMPLES
    dup = db_query(store, "SELECT sample_id, step, attempt, COUNT(*) FROM judge_calls"
                          " GROUP BY sample_id, step, attempt HAVING COUNT(*) > 1")
    assert dup == []
    assert db_query(store, "PRAGMA integrity_check") == [("ok",)]
    # the same judge work as the uninterrupted run, no more
    assert len(cache_keys(store)) == n_steps
    asked = sum(k["requests"] for k in kills) + len(keys)
    print(f"\n[crash-resume] {len(kills)} kills ({len(mid_run)} after some samples were saved), "
          f"{processes} processes, {N_SAMPLES}x{len(METRICS)} scores identical to the uninterrupted run, "
          f"{n_steps} judge steps, {asked} step requests in all ({asked - n_steps} repeated: in flight "
          f"at a kill), 0 cached steps asked again, integrity ok, {elapsed:.1f} s")
    assert elapsed < 120


def _open_store(path: str, barrier: Any, queue: Any) -> None:
    barrier.wait()
    try:
        with Store(path) as st:
            queue.put(("ok", st.schema_version))
    except Exception as exc:  # reported to the parent
        queue.put(("error", f"{type(exc).__name__}: {exc}"))


@pytest.mark.parametrize("attempt", range(3))  # a race: one try in ten lost it before the retry
def test_processes_opening_a_new_store_at_once_migrate_it_once(tmp_path: Path, attempt: int) -> None:
    ctx = multiprocessing.get_context("spawn")
    path = str(tmp_path / "fresh.db")
    n = 6
    barrier = ctx.Barrier(n)
    queue = ctx.Queue()
    procs = [ctx.Process(target=_open_store, args=(path, barrier, queue)) for _ in range(n)]
    for p in procs:
        p.start()
    results = [queue.get(timeout=60) for _ in procs]
    for p in procs:
        p.join(timeout=30)
    assert all(r[0] == "ok" for r in results), results
    assert db_query(Path(path), "PRAGMA integrity_check") == [("ok",)]


def test_two_runs_writing_one_store_at_once(server: tuple[FakeOpenAIServer, JudgeWorld], tmp_path: Path) -> None:
    srv, _ = server
    store = tmp_path / "shared.db"
    a = write_jsonl(tmp_path / "a.jsonl", make_samples(10, seed=1))
    b = write_jsonl(tmp_path / "b.jsonl", make_samples(8, seed=2))
    procs = [subprocess.Popen(evaluate_cmd(store, srv.url, data=d), env=cli_env(),
                              stdout=subprocess.PIPE, stderr=subprocess.PIPE) for d in (a, b)]
    outs = [p.communicate(timeout=120) for p in procs]
    for p, (_, err) in zip(procs, outs):
        assert p.returncode == 0, err.decode()
        assert b"Traceback" not in err
    runs = db_query(store, "SELECT id, status FROM runs")
    assert len(runs) == 2 and all(status == "completed" for _, status in runs)
    counts = sorted(db_query(store, "SELECT run_id, COUNT(*) FROM scores GROUP BY run_id"), key=lambda r: r[1])
    assert [c for _, c in counts] == [8 * len(METRICS), 10 * len(METRICS)]
    assert db_query(store, "PRAGMA integrity_check") == [("ok",)]


def test_second_writer_of_the_same_run_is_refused(tmp_path: Path) -> None:
    store = tmp_path / "locked.db"
    data = write_jsonl(tmp_path / "data.jsonl", make_samples(12, seed=3))
    world = JudgeWorld(latency=0.03)
    gate = threading.Event()  # closed: judge steps wait (the preflight ping does not)
    gate.set()

    def handler(req: RecordedRequest) -> Any:
        body = req.json if isinstance(req.json, dict) else {}
        if prompt_id_of(body) is not None:
            gate.wait(30)
        return world(req)

    with FakeOpenAIServer(handler=handler) as srv:
        # a run that was interrupted after a few samples
        first = subprocess.Popen(evaluate_cmd(store, srv.url, data=data), env=cli_env(),
                                 stdout=subprocess.PIPE, stderr=subprocess.PIPE)
        limit = time.monotonic() + 60
        while finished_count(store) < 2 and first.poll() is None and time.monotonic() < limit:
            time.sleep(0.02)
        first.send_signal(signal.SIGKILL)
        first.communicate(timeout=30)
        run_id = db_query(store, "SELECT id FROM runs")[0][0]
        # A resumes it and holds the run lock; its judge calls wait until B has tried
        gate.clear()
        a = subprocess.Popen(evaluate_cmd(store, srv.url, resume=run_id), env=cli_env(),
                             stdout=subprocess.PIPE, stderr=subprocess.PIPE)
        limit = time.monotonic() + 60
        while time.monotonic() < limit and a.poll() is None:
            owner = db_query(store, "SELECT lock_owner FROM runs WHERE id=?", (run_id,))
            if owner and owner[0][0] and owner[0][0].endswith(f":{a.pid}"):
                break
            time.sleep(0.02)
        assert a.poll() is None, "A ended before B could try"
        # B tries the same run while A writes it
        try:
            b = subprocess.run(evaluate_cmd(store, srv.url, resume=run_id), env=cli_env(),
                               capture_output=True, timeout=60)
        finally:
            gate.set()
        _a_out, a_err = a.communicate(timeout=120)
    b_err = b.stderr.decode()
    assert b.returncode == 2, b_err
    assert "Traceback" not in b_err
    assert f"run {run_id} is being written by another process" in b_err
    assert "wait for it to finish" in b_err
    assert a.returncode == 0, a_err.decode()
    assert db_query(store, "SELECT status FROM runs WHERE id=?", (run_id,)) == [("completed",)]
    assert db_query(store, "SELECT COUNT(*) FROM scores")[0][0] == 12 * len(METRICS)
    assert db_query(store, "PRAGMA integrity_check") == [("ok",)]
    with Store(store) as st:
        assert all(s.outcome is Outcome.SCORED for per in st.scores(run_id).values() for s in per.values())
