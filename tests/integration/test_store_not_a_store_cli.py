"""Every command that takes ``--store`` given a file that is not one of ragsight's stores: an empty
file, another program's SQLite database, ``/dev/null``. A command that reads a store refuses each
with one line naming the path (exit 2) and leaves the file as it was, with nothing written beside
it; ``evaluate`` refuses another program's database and a device too (an empty file, as
``mktemp`` makes, it may turn into a new store)."""

from __future__ import annotations

import json
import sqlite3
from pathlib import Path

import pytest

from ragsight import cli

READERS = [
    ["runs"],
    ["show", "last"],
    ["export", "last", "--format", "jsonl", "--out", "OUT/o.jsonl"],
    ["report", "last", "--out", "OUT/r.html"],
    ["compare", "a", "b"],
    ["diagnose", "last"],
    ["labels", "export", "--out", "OUT/l.jsonl"],
]


def _make(path: Path, kind: str) -> None:
    if kind == "empty":
        path.write_bytes(b"")
    else:
        conn = sqlite3.connect(path)
        conn.execute("CREATE TABLE notes (body TEXT)")
        conn.execute("INSERT INTO notes VALUES ('mine')")
        conn.commit()
        conn.close()


def _argv(args: list[str], out: Path, store: str) -> list[str]:
    return [a.replace("OUT", str(out)) for a in args] + ["--store", store]


@pytest.mark.parametrize("kind", ["empty", "foreign"])
@pytest.mark.parametrize("args", READERS, ids=lambda a: "-".join(a[:2]))
def test_a_reading_command_refuses_a_file_that_is_not_a_store_and_leaves_it_alone(
        tmp_path: Path, kind: str, args: list[str], capsys: pytest.CaptureFixture[str]) -> None:
    folder = tmp_path / "stores"
    folder.mkdir()
    path = folder / "notes.db"
    _make(path, kind)
    before = path.read_bytes()
    assert cli.main(_argv(args, tmp_path, str(path))) == 2
    err = capsys.readouterr().err
    assert f"{path} is not a ragsight store" in err and "Traceback" not in err, err
    assert path.read_bytes() == before
    assert [p.name for p in folder.iterdir()] == ["notes.db"]


@pytest.mark.parametrize("args", [*READERS, ["evaluate", "DATA", "--metrics", "exact_match"]],
                         ids=lambda a: "-".join(a[:2]))
def test_dev_null_is_refused_and_nothing_is_written_beside_it(
        tmp_path: Path, args: list[str], capsys: pytest.CaptureFixture[str]) -> None:
    beside = [Path("/dev/null-journal"), Path("/dev/null-wal"), Path("/dev/null-shm")]
    state = [p.stat().st_mtime_ns if p.exists() else None for p in beside]  # another program's stay as they are
    data = tmp_path / "d.jsonl"
    data.write_text(json.dumps({"question": "q", "response": "r", "reference": "r"}) + "\n")
    argv = [a.replace("DATA", str(data)) for a in _argv(args, tmp_path, "/dev/null")]
    assert cli.main(argv) == 2
    err = capsys.readouterr().err
    assert "/dev/null is not a ragsight store (not a regular file)" in err and "Traceback" not in err, err
    assert [p.stat().st_mtime_ns if p.exists() else None for p in beside] == state


def test_evaluate_refuses_another_programs_database_unchanged(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    path = tmp_path / "app.db"
    _make(path, "foreign")
    before = path.read_bytes()
    data = tmp_path / "d.jsonl"
    data.write_text(json.dumps({"question": "q", "response": "r", "reference": "r"}) + "\n")
    assert cli.main(["evaluate", str(data), "--metrics", "exact_match", "--store", str(path)]) == 2
    err = capsys.readouterr().err
    assert f"{path} is not a ragsight store (an SQLite database of another program)" in err, err
    assert path.read_bytes() == before
    assert sorted(p.name for p in tmp_path.iterdir()) == ["app.db", "d.jsonl"]
    conn = sqlite3.connect(path)
    assert [r[0] for r in conn.execute("SELECT name FROM sqlite_master")] == ["notes"]
    conn.close()


def test_evaluate_into_an_empty_file_makes_it_a_store_that_the_readers_open(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    path = tmp_path / "fresh.db"
    path.write_bytes(b"")  # as mktemp leaves it
    data = tmp_path / "d.jsonl"
    data.write_text(json.dumps({"question": "q", "response": "r", "reference": "r"}) + "\n")
    assert cli.main(["evaluate", str(data), "--metrics", "exact_match", "--store", str(path)]) == 0
    assert cli.main(["runs", "--store", str(path)]) == 0
    assert "1 run" in capsys.readouterr().out
