"""A store or an output file that cannot be used gives a clear error before any work is lost,
never a traceback or a run of "failed: internal error" scores with exit 0; a store of a newer
ragsight is refused without changing a byte; exports and --out are replaced atomically.

The bad stores are in ``tests/fixtures/bad_stores/`` (rebuilt by its ``make.py``); each test
works on a copy.
"""

from __future__ import annotations

import hashlib
import json
import os
import shutil
import signal
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

import ragsight
from ragsight import cli
from ragsight.store import Store
from tests.fakes import FakeOpenAIServer
from tests.reliability.conftest import ENV_TO_CLEAR
from tests.reliability.world import JudgeWorld, make_samples

BAD_STORES = Path(__file__).resolve().parents[1] / "fixtures" / "bad_stores"


def normalised(text: str) -> str:
    return " ".join(text.split())


def run_cli(args: list[str], capsys: pytest.CaptureFixture[str]) -> tuple[int, str]:
    code = cli.main(args)
    captured = capsys.readouterr()
    output = captured.out + "\n" + captured.err
    assert "Traceback" not in output, output
    return code, normalised(output)


@pytest.fixture
def server() -> Iterator[FakeOpenAIServer]:
    with FakeOpenAIServer(handler=JudgeWorld()) as srv:
        yield srv


@pytest.fixture
def data(tmp_path: Path) -> Path:
    path = tmp_path / "data.jsonl"
    path.write_text("".join(json.dumps(r) + "\n" for r in make_samples(3)), encoding="utf-8")
    return path


def evaluate_args(data: Path, store: Path, url: str, *extra: str) -> list[str]:
    return ["evaluate", str(data), "--judge", "openai:m", "--base-url", url, "--store", str(store),
            "--quiet", "--metrics", "faithfulness,rouge_l", *extra]


def copy_store(name: str, tmp_path: Path) -> Path:
    target = tmp_path / name
    shutil.copy(BAD_STORES / name, target)
    return target


def digest(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


# -- output files -------------------------------------------------------------------------------


def test_out_into_a_missing_folder_fails_before_the_run(
    data: Path, server: FakeOpenAIServer, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    out = tmp_path / "no-such-folder" / "results.jsonl"
    code, output = run_cli(evaluate_args(data, tmp_path / "runs.db", server.url, "--out", str(out)), capsys)
    assert code == 2
    assert output.startswith("error: the folder of the --out file")
    assert "does not exist" in output
    assert server.requests == [], "nothing may be paid for before the --out folder is checked"
    assert not (tmp_path / "runs.db").exists() or not Store(tmp_path / "runs.db").runs()


def test_export_into_a_missing_folder_is_a_clear_error(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    store = tmp_path / "runs.db"
    run = ragsight.evaluate(make_samples(2), ["rouge_l"], store=store)
    out = tmp_path / "missing" / "x.csv"
    code, output = run_cli(["export", run.run_id, "--format", "csv", "--out", str(out), "--store", str(store)],
                           capsys)
    assert code == 2
    assert "the folder of the export file" in output and "does not exist" in output


def test_an_export_that_fails_midway_leaves_the_previous_file_whole(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    store = tmp_path / "runs.db"
    run = ragsight.evaluate(make_samples(6), ["rouge_l"], store=store)
    out = tmp_path / "x.jsonl"
    with Store(store) as st:
        ragsight.store.export_run(st, run.run_id, "jsonl", out)
    before = out.read_bytes()
    assert len(before.splitlines()) == 6
    from ragsight._score import Score

    calls = {"n": 0}
    real = Score.to_dict

    def flaky(self: Score) -> dict[str, object]:
        calls["n"] += 1
        if calls["n"] == 4:
            raise OSError(28, "No space left on device")
        return real(self)

    monkeypatch.setattr(Score, "to_dict", flaky)
    with Store(store) as st, pytest.raises(OSError, match="No space left"):
        ragsight.store.export_run(st, run.run_id, "jsonl", out)
    assert out.read_bytes() == before
    assert [p.name for p in tmp_path.iterdir() if p.name.startswith(".x.jsonl")] == []  # no temp left


# -- stores that cannot be used -----------------------------------------------------------------


def test_a_store_of_a_newer_schema_is_refused_unchanged(
    data: Path, server: FakeOpenAIServer, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    store = copy_store("newer_schema.db", tmp_path)
    before = digest(store)
    for args in (evaluate_args(data, store, server.url), ["runs", "--store", str(store)]):
        code, output = run_cli(args, capsys)
        assert code == 2
        assert "was written by a newer ragsight (schema 99 > " in output
        assert "The file was not changed." in output
    assert digest(store) == before, "the store was changed (switched to WAL?) before it was refused"
    assert not Path(f"{store}-wal").exists()
    assert server.requests_to("/chat/completions") == []


def test_a_store_that_says_schema_1_but_has_no_tables(
    data: Path, server: FakeOpenAIServer, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    store = copy_store("schema1_no_tables.db", tmp_path)
    for args in (evaluate_args(data, store, server.url), ["runs", "--store", str(store)],
                 ["show", "last", "--store", str(store)]):
        code, output = run_cli(args, capsys)
        assert code == 2, output
        assert "is not a usable ragsight store: it says schema 1, but has no table cache, judge_calls" in output
        assert "pick another --store path" in output


@pytest.mark.parametrize("name", ["corrupt_cache.db", "corrupt_pages.db"])
def test_a_damaged_store_stops_the_run_with_a_clear_error(
    name: str, data: Path, server: FakeOpenAIServer, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """corrupt_cache.db: a run can be created, and its first cache read meets garbage (it used to
    end every judged score "failed: internal error" and exit 0, without a warning)."""
    store = copy_store(name, tmp_path)
    code, output = run_cli(evaluate_args(data, store, server.url), capsys)
    assert code == 2, output
    assert output.startswith("error: the store ")
    assert "is damaged (database disk image is malformed)" in output
    assert ".recover" in output
    assert "internal error" not in output


def _make_read_only(path: Path) -> None:
    if os.geteuid() == 0:  # root writes through file modes: make the file immutable instead
        done = subprocess.run(["chattr", "+i", str(path)], capture_output=True)
        if done.returncode != 0:
            pytest.skip(f"cannot make a file read-only as root here: {done.stderr.decode().strip()}")
    else:
        path.chmod(0o444)


def _make_writable(path: Path) -> None:
    if os.geteuid() == 0:
        subprocess.run(["chattr", "-i", str(path)], capture_output=True)
    else:
        path.chmod(0o644)


def test_a_read_only_store_can_be_read_and_refuses_a_run_clearly(
    data: Path, server: FakeOpenAIServer, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    store = tmp_path / "runs.db"
    run = ragsight.evaluate(make_samples(2), ["rouge_l"], store=store)
    _make_read_only(store)
    try:
        code, output = run_cli(evaluate_args(data, store, server.url), capsys)
        assert code == 2, output
        assert f"error: the store {store} is read-only" in output
        assert "make the file and its folder writable, or pick another --store path" in output
        # what is in it can still be read
        for args in (["runs", "--store", str(store)], ["show", run.run_id, "--store", str(store)],
                     ["export", run.run_id, "--out", str(tmp_path / "x.jsonl"), "--store", str(store)]):
            code, output = run_cli(args, capsys)
            assert code == 0, output
    finally:
        _make_writable(store)


# -- exports killed midway (real processes) -----------------------------------------------------


@pytest.mark.slow
def test_export_killed_midway_never_leaves_a_truncated_file(tmp_path: Path) -> None:
    """12 exports of a 3,000-sample run over the same file, each killed with SIGKILL a random
    0-30 ms after it starts writing (the moment the target changes or a new file appears in its
    folder): the target is always the whole earlier export, never a part of one. A killed
    export may leave its temporary file (.export.jsonl.*.tmp) beside the target."""
    import random

    store = tmp_path / "big.db"
    rows = [{"id": f"s{i:04d}", "question": f"What is rule {i}?", "response": f"Rule {i} is strict. " * 20,
             "reference": f"Rule {i} is strict. " * 20} for i in range(3000)]
    run = ragsight.evaluate(rows, ["rouge_l", "exact_match"], store=store)
    folder = tmp_path / "exports"
    folder.mkdir()
    out = folder / "export.jsonl"
    env = {k: v for k, v in os.environ.items() if k not in ENV_TO_CLEAR}
    cmd = [sys.executable, "-m", "ragsight.cli", "export", run.run_id, "--out", str(out), "--store", str(store)]
    assert subprocess.run(cmd, env=env, capture_output=True, timeout=120).returncode == 0
    whole = out.read_bytes()
    assert len(whole.splitlines()) == 3000
    rng = random.Random(11)
    killed = 0
    for _ in range(12):
        before = set(folder.iterdir())
        stat = out.stat()
        proc = subprocess.Popen(cmd, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        limit = time.monotonic() + 60
        while proc.poll() is None and time.monotonic() < limit:
            now = out.stat()
            if (now.st_size, now.st_mtime_ns) != (stat.st_size, stat.st_mtime_ns) or set(folder.iterdir()) != before:
                break
            time.sleep(0.0005)
        time.sleep(rng.uniform(0.0, 0.03))
        if proc.poll() is None:
            proc.send_signal(signal.SIGKILL)
            killed += 1
        proc.wait(timeout=60)
        assert out.read_bytes() == whole, "a killed export left a partial file"
    assert killed >= 8, f"only {killed} of 12 exports were killed while writing"
