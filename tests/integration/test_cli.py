"""The command-line contract, end to end over real HTTP against a judge on 127.0.0.1."""

from __future__ import annotations

import csv
import json
from collections.abc import Iterator
from pathlib import Path

import pytest

from ragsight.cli import main
from tests.fakes import FakeOpenAIServer
from tests.reliability.world import JudgeWorld, make_samples


@pytest.fixture()
def judge_url(monkeypatch: pytest.MonkeyPatch) -> Iterator[str]:
    monkeypatch.setenv("OPENAI_API_KEY", "sk-test-cli")
    with FakeOpenAIServer(handler=JudgeWorld()) as srv:
        yield srv.url


@pytest.fixture()
def data(tmp_path: Path) -> Path:
    rows = make_samples(3)
    rows[2].pop("reference")
    path = tmp_path / "data.jsonl"
    path.write_text("".join(json.dumps(r) + "\n" for r in rows))
    return path


def run(capsys: pytest.CaptureFixture[str], *argv: str) -> tuple[int, str, str]:
    code = main(list(argv))
    cap = capsys.readouterr()
    return code, cap.out, cap.err


def test_evaluate_contract_out_file_and_summary(
    judge_url: str, data: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    store = tmp_path / "runs.db"
    out = tmp_path / "results.jsonl"
    code, stdout, _ = run(capsys, "evaluate", str(data), "--metrics", "faithfulness,context_recall",
                          "--judge", "openai:test-model", "--base-url", judge_url,
                          "--embedder", "openai:emb", "--store", str(store), "--out", str(out), "--quiet")
    assert code == 0
    assert "faithfulness" in stdout and "context_recall" in stdout
    rows = [json.loads(line) for line in out.read_text().splitlines()]
    assert [r["id"] for r in rows] == ["s000", "s001", "s002"]  # input order
    run_id = rows[0]["run_id"]
    assert run_id in stdout
    for r in rows:
        assert set(r) == {"id", "run_id", "scores", "evidence", "question", "contexts", "response", "reference",
                          "reference_contexts", "retrieved_ids", "relevant_ids", "metadata"}  # the inputs too
        assert list(r["evidence"]) == list(r["scores"])  # each score's trail, as 'ragsight export' writes it
        assert list(r["scores"]) == ["faithfulness", "context_recall"]
        for s in r["scores"].values():
            assert set(s) == {"value", "outcome", "reason"}
            assert s["outcome"] in {"scored", "undetermined", "failed", "skipped"}
            assert (s["value"] is None) == (s["outcome"] != "scored")
    assert rows[2]["scores"]["context_recall"]["outcome"] == "skipped"
    assert "reference" in rows[2]["scores"]["context_recall"]["reason"]

    # show, runs, export all accept the run id and 'last'
    code, stdout, _ = run(capsys, "show", "last", "--store", str(store), "--sample", "s000")
    assert code == 0 and "faithfulness" in stdout and "supported" in stdout
    code, stdout, _ = run(capsys, "runs", "--store", str(store))
    assert code == 0 and run_id in stdout
    for fmt in ("jsonl", "csv", "parquet"):
        target = tmp_path / f"export.{fmt}"
        code, _, _ = run(capsys, "export", run_id, "--format", fmt, "--out", str(target), "--store", str(store))
        assert code == 0 and target.stat().st_size > 0
    with (tmp_path / "export.csv").open() as f:
        exported = list(csv.DictReader(f))
    assert [r["id"] for r in exported] == ["s000", "s001", "s002"]
    assert exported[2]["context_recall__outcome"] == "skipped"


def test_rerun_is_served_from_the_cache(judge_url: str, data: Path, tmp_path: Path,
                                        capsys: pytest.CaptureFixture[str]) -> None:
    store = tmp_path / "runs.db"
    args = ["evaluate", str(data), "--metrics", "faithfulness", "--judge", "openai:m", "--base-url", judge_url,
            "--store", str(store), "--quiet"]
    assert run(capsys, *args)[0] == 0
    code, stdout, _ = run(capsys, *args)
    assert code == 0
    assert "judge: 0 calls" in stdout


def test_unusable_input_exits_2_with_a_clear_message(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    code, _, stderr = run(capsys, "evaluate", str(tmp_path / "missing.jsonl"), "--store", str(tmp_path / "s.db"))
    assert code == 2 and "no such file" in stderr
    bad = tmp_path / "bad.jsonl"
    bad.write_text('{"question": "q", "contexts": [1, 2], "response": "r"}\n')
    code, _, stderr = run(capsys, "evaluate", str(bad), "--store", str(tmp_path / "s.db"))
    assert code == 2
    assert "row 1" in stderr and "contexts" in stderr and "not a string" in stderr
    assert "Traceback" not in stderr


def test_unknown_metric_suggests_a_close_name(data: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    code, _, stderr = run(capsys, "evaluate", str(data), "--metrics", "faithfullness", "--store", str(tmp_path / "s.db"))
    assert code == 2
    assert "faithfulness" in stderr and "Did you mean" in stderr


def test_rejected_key_is_found_by_preflight(data: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                            capsys: pytest.CaptureFixture[str]) -> None:
    from tests.fakes import Reply

    monkeypatch.setenv("OPENAI_API_KEY", "sk-wrong-key-123")
    with FakeOpenAIServer(handler=lambda req: Reply.error(401, "bad key")) as srv:
        code, _, stderr = run(capsys, "evaluate", str(data), "--judge", "openai:m", "--base-url", srv.url,
                              "--metrics", "faithfulness", "--store", str(tmp_path / "s.db"))
        # the ping, and the first step of each sample in flight (the preflight goes on while the
        # first samples are judged); the refusal of the ping stops the run: no second step
        assert len(srv.requests) <= 1 + 3
    assert code == 2
    assert "API key" in stderr and "sk-wrong-key-123" not in stderr


def test_ctrl_c_saves_finished_samples_and_exits_130(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    import signal
    import sqlite3
    import subprocess
    import sys
    import time
    from contextlib import closing

    # Enough samples that the run cannot end before it is interrupted on a loaded machine (about
    # 15 s uninterrupted); the interrupt comes once 3 are finished.
    n_rows = 100
    rows = make_samples(n_rows)
    data = tmp_path / "d.jsonl"
    data.write_text("".join(json.dumps(r) + "\n" for r in rows))
    store = tmp_path / "s.db"
    env = {**__import__("os").environ, "OPENAI_API_KEY": "sk-x"}
    with FakeOpenAIServer(handler=JudgeWorld(latency=0.15)) as srv:
        proc = subprocess.Popen(
            [sys.executable, "-m", "ragsight.cli", "evaluate", str(data), "--metrics", "faithfulness",
             "--judge", "openai:m", "--base-url", srv.url, "--store", str(store), "--concurrency", "2", "--quiet"],
            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=env,
            # A shell running this suite in the background (`cmd &`, nohup) ignores SIGINT, and an
            # ignored signal stays ignored in its children: Python would then never see Ctrl-C.
            preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_DFL),
        )
        deadline = time.monotonic() + 60
        done, last_error = 0, ""
        while time.monotonic() < deadline and proc.poll() is None:
            time.sleep(0.2)
            if store.exists():
                try:
                    with closing(sqlite3.connect(store, timeout=1.0)) as c:
                        done = c.execute("SELECT COUNT(*) FROM samples WHERE finished=1").fetchone()[0]
                except sqlite3.OperationalError as exc:  # not created yet, or busy for a moment
                    last_error = str(exc)
                if done >= 3:
                    break
        assert proc.poll() is None, f"the run ended before the interrupt ({done} finished seen; {last_error})"
        assert done >= 3, f"only {done} samples finished within 60 s ({last_error})"
        proc.send_signal(signal.SIGINT)
        _, stderr = proc.communicate(timeout=30)
        assert proc.returncode == 130, stderr
        assert "--resume" in stderr and "Traceback" not in stderr
        with sqlite3.connect(store) as c:
            status = c.execute("SELECT status FROM runs").fetchone()[0]
            done = c.execute("SELECT COUNT(*) FROM samples WHERE finished=1").fetchone()[0]
            n_scores = c.execute("SELECT COUNT(*) FROM scores").fetchone()[0]
        assert status == "interrupted"
        assert 3 <= done < n_rows and n_scores == done
        resumed = subprocess.run(
            [sys.executable, "-m", "ragsight.cli", "evaluate", "--resume", "last", "--judge", "openai:m",
             "--base-url", srv.url, "--store", str(store), "--quiet"],
            capture_output=True, text=True, env=env, timeout=120,
        )
        assert resumed.returncode == 0, resumed.stderr
    with sqlite3.connect(store) as c:
        assert c.execute("SELECT COUNT(*) FROM scores").fetchone()[0] == n_rows
        assert c.execute("SELECT status FROM runs").fetchone()[0] == "completed"


def test_repeats_report_the_run_to_run_spread(judge_url: str, data: Path, tmp_path: Path,
                                              capsys: pytest.CaptureFixture[str]) -> None:
    code, stdout, _ = run(capsys, "evaluate", str(data), "--metrics", "faithfulness", "--judge", "openai:m",
                          "--base-url", judge_url, "--store", str(tmp_path / "s.db"), "--repeats", "2", "--quiet")
    assert code == 0
    assert "2 repeated runs" in stdout and "faithfulness" in stdout


def test_read_commands_refuse_a_missing_store(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    code, _, stderr = run(capsys, "show", "last", "--store", str(tmp_path / "typo.db"))
    assert code == 2 and "no store at" in stderr
    assert not (tmp_path / "typo.db").exists()
