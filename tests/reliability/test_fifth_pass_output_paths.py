"""An output path that names a file the command reads or keeps: the store (or its -wal, -shm or
-journal file), the input data, the scenarios, a test set. Writing there replaced it: every run,
label and cached call gone, or the data overwritten, with exit 0. Now every command that writes a
file the user names refuses such a path in one line, exit 2, before anything is written or
called, and the file is left byte for byte as it was; a path that is another spelling of the same
file (./S, a symbolic link, a hard link) is the same file."""

from __future__ import annotations

import json
import os
import sqlite3
from pathlib import Path

import pytest

import ragsight
from ragsight import cli
from tests.reliability.world import make_samples


def run(args: list[str], capsys: pytest.CaptureFixture[str]) -> tuple[int, str]:
    code = cli.main(args)
    captured = capsys.readouterr()
    printed = captured.out + captured.err
    assert "Traceback" not in printed, printed
    return code, " ".join(printed.split())


@pytest.fixture
def world(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """A folder with data.jsonl and a store S.db holding one run (and the default store too)."""
    monkeypatch.chdir(tmp_path)
    (tmp_path / "data.jsonl").write_text("".join(json.dumps(r) + "\n" for r in make_samples(2)), "utf-8")
    ragsight.evaluate(make_samples(2), ["rouge_l"], store=tmp_path / "S.db")
    ragsight.evaluate(make_samples(2), ["rouge_l"], store=tmp_path / "ragsight.db")
    return tmp_path


def runs_in(store: Path) -> int:
    with sqlite3.connect(store) as db:
        return int(db.execute("SELECT COUNT(*) FROM runs").fetchone()[0])


def snapshot(folder: Path) -> dict[str, bytes]:
    return {p.name: p.read_bytes() for p in folder.iterdir() if p.is_file() and not p.name.endswith(("-wal", "-shm"))}


COMMANDS = {
    "evaluate --out at the store": (["evaluate", "data.jsonl", "--metrics", "rouge_l", "--store", "S.db",
                                     "--out", "S.db"], "the store"),
    "evaluate --out at the default store": (["evaluate", "data.jsonl", "--metrics", "rouge_l", "--out",
                                             "ragsight.db"], "the store"),
    "evaluate --out at the data": (["evaluate", "data.jsonl", "--metrics", "rouge_l", "--store", "S.db",
                                    "--out", "./data.jsonl"], "the data file"),
    "evaluate --out at the store's log": (["evaluate", "data.jsonl", "--metrics", "rouge_l", "--store", "S.db",
                                           "--out", "S.db-wal"], "write-ahead log"),
    "export --out at the store": (["export", "last", "--store", "S.db", "--out", "S.db"], "the store"),
    "export --out at the store's shared memory": (["export", "last", "--store", "S.db", "--format", "csv",
                                                   "--out", "S.db-shm"], "shared-memory"),
    "report --out at the store": (["report", "last", "--store", "S.db", "--out", "S.db"], "the store"),
    "report --out at the default store": (["report", "last", "--out", "ragsight.db"], "the store"),
    "labels export --out at the store": (["labels", "export", "--store", "S.db", "--out", "./S.db"], "the store"),
    "simulate --out at the store": (["simulate", "data.jsonl", "--target", "nothing:here", "--store", "S.db",
                                     "--out", "S.db"], "the store"),
    "simulate --out at the default store": (["simulate", "data.jsonl", "--target", "nothing:here", "--out",
                                             "ragsight.db"], "the store"),
    "simulate --out at the scenarios": (["simulate", "data.jsonl", "--target", "nothing:here", "--store", "S.db",
                                         "--out", "data.jsonl"], "the scenarios file"),
    "answer --out at the test set": (["answer", "data.jsonl", "--target", "nothing:here", "--out", "data.jsonl"],
                                     "the test set"),
}


@pytest.mark.parametrize("name", list(COMMANDS))
def test_an_output_over_a_file_the_command_reads_is_refused_before_anything_is_written(
    name: str, world: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    args, what = COMMANDS[name]
    before = snapshot(world)
    code, printed = run(args, capsys)
    assert code == 2, printed
    assert printed.startswith("error: ") and what in printed and "give another file name" in printed, printed
    assert snapshot(world) == before, "a file changed"
    assert runs_in(world / "S.db") == 1 and runs_in(world / "ragsight.db") == 1


def test_another_spelling_of_the_store_is_the_store(world: Path, capsys: pytest.CaptureFixture[str]) -> None:
    (world / "sub").mkdir()
    os.symlink(world / "S.db", world / "sub" / "link.db")
    os.link(world / "S.db", world / "hard.db")
    for out in ("sub/../S.db", str(world / "S.db"), "sub/link.db", "hard.db"):
        code, printed = run(["export", "last", "--store", "S.db", "--out", out], capsys)
        assert code == 2 and "is the store" in printed, (out, printed)
    assert runs_in(world / "S.db") == 1
    # and the other way round: the store named through the link, the output by its own name
    code, printed = run(["export", "last", "--store", "sub/link.db", "--out", "S.db"], capsys)
    assert code == 2 and "is the store" in printed
    assert runs_in(world / "S.db") == 1


def test_a_store_not_made_yet_is_still_the_store(world: Path, capsys: pytest.CaptureFixture[str]) -> None:
    # evaluate makes the store after its checks: the --out check cannot ask the disk which file it is
    code, printed = run(["evaluate", "data.jsonl", "--metrics", "rouge_l", "--store", "new.db", "--out",
                         "./new.db"], capsys)
    assert code == 2 and "is the store" in printed, printed
    assert not (world / "new.db").exists()


def test_a_config_or_alignment_file_is_not_replaced(world: Path, capsys: pytest.CaptureFixture[str]) -> None:
    (world / "gate.toml").write_text("[tool.ragsight]\n", "utf-8")
    before = snapshot(world)
    code, printed = run(["evaluate", "data.jsonl", "--metrics", "rouge_l", "--store", "S.db", "--config",
                         "gate.toml", "--out", "gate.toml"], capsys)
    assert code == 2 and "the --config file" in printed, printed
    assert snapshot(world) == before


def test_an_ordinary_out_is_still_written_through_a_temporary_file(
    world: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    code, printed = run(["evaluate", "data.jsonl", "--metrics", "rouge_l", "--store", "S.db", "--out",
                         "results.jsonl"], capsys)
    assert code == 0, printed
    assert len((world / "results.jsonl").read_text("utf-8").splitlines()) == 2
    assert runs_in(world / "S.db") == 2
    assert not [p for p in world.iterdir() if p.name.endswith(".tmp")]


def test_the_api_refuses_to_write_a_result_over_its_store(tmp_path: Path) -> None:
    from ragsight.errors import ConfigError

    result = ragsight.evaluate(make_samples(2), ["rouge_l"], store=tmp_path / "S.db")
    for name in ("S.db", "S.db-wal"):
        with pytest.raises(ConfigError, match="is the store of run"):
            result.write(tmp_path / name)
    assert runs_in(tmp_path / "S.db") == 1
    result.write(tmp_path / "ok.jsonl")
    assert len((tmp_path / "ok.jsonl").read_text("utf-8").splitlines()) == 2
