"""Two ``ragsight sweep`` processes started on one sweep file and one store. Each
configuration is claimed in the store while one sweep answers and evaluates it; the other sweep
runs the unclaimed ones meanwhile, then reuses what the first finished. Nothing is paid twice (the
target is called once per configuration and question), both end with exit 0, no constraint error,
and every configuration is one completed run. A sweep killed with kill -9 leaves a claim its
successor takes over at once (its process is gone). (Before: both answered every configuration,
and one died on the store's constraint after paying.)"""

from __future__ import annotations

import json
import os
import select
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from ragsight.store import Store
from tests.fakes import FakeOpenAIServer
from tests.reliability.conftest import ENV_TO_CLEAR

SRC = Path(__file__).resolve().parents[2] / "src"
QUESTIONS = [("q1", "How many cabin bags may I bring?"), ("q2", "When does check-in close?"),
             ("q3", "Can I bring a pet?")]


def world(tmp_path: Path, pause: float) -> Path:
    """A sweep of three configurations over a slow module target that logs each call; calls of
    the first configuration wait until the file ``release`` exists."""
    (tmp_path / "ts.jsonl").write_text("".join(
        json.dumps({"id": i, "question": q, "reference": "One bag."}) + "\n" for i, q in QUESTIONS), "utf-8")
    (tmp_path / "slow_rag.py").write_text(
        "import os, time\n"
        "def answer(question, top_k):\n"
        "    with open('calls.log', 'a') as f:\n"
        "        f.write(f'{os.getpid()} {top_k} {question}\\n')\n"
        "    t0 = time.monotonic()\n"
        "    while top_k == 1 and not os.path.exists('release') and time.monotonic() - t0 < 240:\n"
        "        time.sleep(0.05)  # the first configuration is held until the test lets it go\n"
        f"    time.sleep({pause})\n"
        "    return {'answer': 'One bag.', 'contexts': ['One bag is allowed.']}\n", "utf-8")
    spec = tmp_path / "s.toml"
    spec.write_text('name = "claims"\ntestset = "ts.jsonl"\nmetrics = ["exact_match"]\nconcurrency = 1\n\n'
                    '[pipeline]\ntarget = "slow_rag:answer"\n\n[grid]\ntop_k = [1, 2, 3]\n', "utf-8")
    return spec


def sweep(tmp_path: Path, extra: dict[str, str] | None = None) -> subprocess.Popen[str]:
    env = {k: v for k, v in os.environ.items() if k not in ENV_TO_CLEAR}
    env.update(extra or {})
    env["PYTHONPATH"] = os.pathsep.join([str(tmp_path), str(SRC), env.get("PYTHONPATH", "")])
    env["PYTHONUNBUFFERED"] = "1"
    return subprocess.Popen([sys.executable, "-m", "ragsight.cli", "sweep", "s.toml", "--store", "s.db"],
                            cwd=tmp_path, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)


def _peek(proc: subprocess.Popen[str]) -> str:
    """What ``proc`` printed on stderr so far (its notices come before any output)."""
    assert proc.stderr is not None
    ready, _, _ = select.select([proc.stderr], [], [], 0)
    return os.read(proc.stderr.fileno(), 65536).decode("utf-8", "replace") if ready else ""


def calls(tmp_path: Path) -> list[tuple[str, str, str]]:
    log = tmp_path / "calls.log"
    lines = log.read_text().splitlines() if log.exists() else []
    return [tuple(line.split(" ", 2)) for line in lines]  # type: ignore[misc]


def wait_for_calls(tmp_path: Path, n: int, timeout: float = 60.0) -> None:
    deadline = time.monotonic() + timeout
    while len(calls(tmp_path)) < n:
        assert time.monotonic() < deadline, "the first sweep never called its target"
        time.sleep(0.05)


def test_two_sweeps_on_one_store_share_the_configurations_and_pay_each_once(tmp_path: Path) -> None:
    world(tmp_path, pause=0.2)
    first = sweep(tmp_path)
    wait_for_calls(tmp_path, 1)  # the first sweep holds its first configuration
    second = sweep(tmp_path)
    deadline = time.monotonic() + 200
    while len({pid for pid, _, _ in calls(tmp_path)}) < 2:  # the second sweep is at work too
        assert time.monotonic() < deadline and second.poll() is None, second.communicate()
        time.sleep(0.05)
    (tmp_path / "release").write_text("go")
    out1, err1 = first.communicate(timeout=400)
    out2, err2 = second.communicate(timeout=400)
    printed = " ".join((out1 + err1 + out2 + err2).split())
    assert first.returncode == 0 and second.returncode == 0, printed
    assert "Traceback" not in printed and "constraint" not in printed.lower()
    made = calls(tmp_path)
    per = sorted((top_k, q) for _, top_k, q in made)
    assert len(per) == len(set(per)) == 9, f"a configuration was paid twice: {per}"
    assert len({pid for pid, _, _ in made}) == 2, "the second sweep did none of the work"
    assert "is being run by another sweep" in " ".join(err2.split())
    with Store(tmp_path / "s.db") as st:
        runs = st.runs()
    assert sorted(r.status for r in runs) == ["completed"] * 3
    # each prints the whole sweep's report (the other's configurations reused)
    for out in (out1, out2):
        assert "Sweep 'claims': 3 configurations" in out, out


@pytest.mark.skipif(not hasattr(signal, "SIGKILL"), reason="kill -9 is POSIX")
def test_a_claim_of_a_killed_sweep_is_taken_over_at_once(tmp_path: Path) -> None:
    world(tmp_path, pause=0.2)
    first = sweep(tmp_path)
    wait_for_calls(tmp_path, 1)
    first.send_signal(signal.SIGKILL)
    first.communicate(timeout=30)
    (tmp_path / "release").write_text("go")
    t0 = time.monotonic()
    second = sweep(tmp_path)
    out, err = second.communicate(timeout=400)
    assert second.returncode == 0, out + err
    # not the 120 s lease: the holder's process is gone
    assert time.monotonic() - t0 < 60
    assert "being run by another sweep" not in err
    with Store(tmp_path / "s.db") as st:
        assert sorted(r.status for r in st.runs()) == ["completed"] * 3


def test_a_test_set_being_generated_by_another_sweep_is_waited_for_not_paid_again(tmp_path: Path) -> None:
    """The test set of ``[generate]`` is claimed in the store while one sweep generates it; here
    this test holds that claim (as a generating sweep does, through the store's claim API) while
    a real ``ragsight sweep`` process starts: it waits, then reads the file the holder wrote, and
    its generator (a fake server on 127.0.0.1) is never asked."""
    world(tmp_path, pause=0.0)
    (tmp_path / "release").write_text("go")
    rows = (tmp_path / "ts.jsonl").read_text("utf-8")
    (tmp_path / "ts.jsonl").unlink()
    (tmp_path / "docs.md").write_text("Each passenger may bring one cabin bag.\n", "utf-8")
    spec = tmp_path / "s.toml"
    spec.write_text(spec.read_text("utf-8").replace(
        'testset = "ts.jsonl"\n',
        'testset = "ts.jsonl"\ndocuments = ["docs.md"]\n'
        'generate = { size = 3, generator = "openai:gen-model" }\n'), "utf-8")
    with FakeOpenAIServer() as srv, Store(tmp_path / "s.db") as holder:
        assert holder.claim("sweep-testset/" + str((tmp_path / "ts.jsonl").resolve())) is None
        env_extra = {"OPENAI_BASE_URL": srv.url, "OPENAI_API_KEY": "sk-test"}
        second = sweep(tmp_path, env_extra)
        deadline = time.monotonic() + 200
        err_seen = ""
        while "is being generated by another sweep" not in err_seen:
            assert time.monotonic() < deadline and second.poll() is None, second.communicate()
            time.sleep(0.2)
            err_seen += _peek(second)
        (tmp_path / "ts.jsonl").write_text(rows, "utf-8")  # the holder's generated test set
        holder.release("sweep-testset/" + str((tmp_path / "ts.jsonl").resolve()))
        out, err = second.communicate(timeout=400)
        assert srv.requests == [], "the waiting sweep generated a test set of its own"
    assert second.returncode == 0, err_seen + out + err
    assert len(calls(tmp_path)) == 9
