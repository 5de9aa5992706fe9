"""Output paths: every file a user names for output is checked before the work, not
after it. A missing folder, a folder, a path under a file, a pipe or an unwritable folder ends in
one line and exit 2 before anything is paid for; a write that fails anyway (a full disk, a folder
removed meanwhile) leaves no temporary file and the previous file intact, and says where the work
is kept. Through the commands as the docs show them, and the pytest plugin's ``--ragsight-report``.
"""

from __future__ import annotations

import errno
import json
import os
import sys
from pathlib import Path

import pytest

import ragsight
from ragsight import cli
from tests.reliability.world import make_samples

pytest_plugins = ["pytester"]

QUESTIONS = [("q1", "How many cabin bags may I bring?"), ("q2", "When does check-in close?")]


def run(args: list[str], capsys: pytest.CaptureFixture[str]) -> tuple[int, str]:
    code = cli.main(args)
    captured = capsys.readouterr()
    printed = captured.out + captured.err
    assert "Traceback" not in printed, printed
    return code, printed


def bad_path(kind: str, tmp_path: Path) -> str:
    """An output path of the given kind of badness, made under tmp_path."""
    if kind == "missing folder":
        return str(tmp_path / "no-such-folder" / "out.file")
    if kind == "a folder":
        (tmp_path / "somewhere").mkdir()
        return str(tmp_path / "somewhere")
    if kind == "under a file":
        (tmp_path / "plain.txt").write_text("x", "utf-8")
        return str(tmp_path / "plain.txt" / "out.file")
    if kind == "a pipe":
        os.mkfifo(tmp_path / "pipe")
        return str(tmp_path / "pipe")
    assert kind == "unwritable folder"
    (tmp_path / "locked").mkdir()
    (tmp_path / "locked").chmod(0o500)
    return str(tmp_path / "locked" / "out.file")


KINDS = [
    "missing folder", "a folder", "under a file",
    pytest.param("a pipe", marks=pytest.mark.skipif(not hasattr(os, "mkfifo"), reason="POSIX pipes")),
    pytest.param("unwritable folder", marks=pytest.mark.skipif(
        not hasattr(os, "geteuid") or os.geteuid() == 0, reason="root writes into a read-only folder")),
]
WORDS = {"missing folder": "does not exist", "a folder": "is a folder", "under a file": "is not a folder",
         "a pipe": "is not a regular file", "unwritable folder": "cannot create a file"}


def sweep_world(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, body: str = "") -> Path:
    """A sweep of two configurations over a module target that counts its calls in calls.txt."""
    (tmp_path / "ts.jsonl").write_text("".join(
        json.dumps({"id": i, "question": q, "reference": "One bag."}) + "\n" for i, q in QUESTIONS), "utf-8")
    (tmp_path / "rag_out.py").write_text(
        "import os, shutil\n"
        "def answer(question, top_k=1):\n"
        "    with open('calls.txt', 'a') as f:\n"
        "        f.write('call\\n')\n"
        f"{body}"
        "    return {'answer': 'One bag.', 'contexts': ['One bag is allowed.']}\n", "utf-8")
    monkeypatch.chdir(tmp_path)
    monkeypatch.setattr(sys, "path", [str(tmp_path), *sys.path])
    spec = tmp_path / "s.toml"
    spec.write_text('name = "paths"\ntestset = "ts.jsonl"\nmetrics = ["exact_match"]\n\n'
                    '[pipeline]\ntarget = "rag_out:answer"\n\n[grid]\ntop_k = [1, 2]\n', "utf-8")
    return spec


def calls(tmp_path: Path) -> int:
    f = tmp_path / "calls.txt"
    return len(f.read_text().split()) if f.exists() else 0


def leftovers(folder: Path) -> list[str]:
    return sorted(p.name for p in folder.iterdir() if p.name.endswith(".tmp"))


@pytest.mark.parametrize("kind", KINDS)
def test_sweep_report_path_is_checked_before_the_sweep_runs(
    kind: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    spec = sweep_world(tmp_path, monkeypatch)
    target = bad_path(kind, tmp_path)
    code, printed = run(["sweep", str(spec), "--store", "s.db", "--report", target], capsys)
    assert code == 2, printed
    assert printed.startswith("error: ") and WORDS[kind] in " ".join(printed.split()), printed
    assert calls(tmp_path) == 0, "the target was called before the --report path was checked"
    assert leftovers(tmp_path) == []


def test_a_sweep_report_that_cannot_be_written_after_the_run_says_the_sweep_is_saved(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    # the report's folder is removed while the sweep runs (by the target itself)
    spec = sweep_world(tmp_path, monkeypatch, "    shutil.rmtree('reports', ignore_errors=True)\n")
    (tmp_path / "reports").mkdir()
    code, printed = run(["sweep", str(spec), "--store", "s.db", "--report", "reports/sweep.html"], capsys)
    text = " ".join(printed.split())
    assert code == 2, printed
    assert "error: cannot write the --report file reports/sweep.html" in text
    assert "The sweep is saved; write its report with: ragsight sweep report paths --store s.db --html FILE" in text
    assert calls(tmp_path) == 4
    # and that command writes it, reusing the saved sweep (no new call)
    code, printed = run(["sweep", "report", "paths", "--store", "s.db", "--html", "again.html"], capsys)
    assert code == 0 and (tmp_path / "again.html").read_text("utf-8").lower().startswith("<!doctype html>")
    assert calls(tmp_path) == 4


@pytest.fixture
def one_run(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> str:
    monkeypatch.chdir(tmp_path)
    return ragsight.evaluate(make_samples(2), ["rouge_l"], store=tmp_path / "runs.db").run_id


@pytest.mark.parametrize("kind", KINDS)
def test_report_out_is_checked_first_and_leaves_no_tmp(
    kind: str, tmp_path: Path, one_run: str, capsys: pytest.CaptureFixture[str]
) -> None:
    target = bad_path(kind, tmp_path)
    code, printed = run(["report", "last", "--out", target, "--store", "runs.db"], capsys)
    assert code == 2 and len(printed.strip().splitlines()) == 1, printed
    assert printed.startswith("error: ") and "report file" in printed and WORDS[kind] in printed
    assert leftovers(tmp_path) == [], "a <name>.tmp was left beside the output"
    if kind == "a folder":
        assert list((tmp_path / "somewhere").iterdir()) == []


def test_a_report_whose_write_fails_keeps_the_previous_file(
    tmp_path: Path, one_run: str, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    (tmp_path / "report.html").write_text("previous report", "utf-8")

    def full_disk(fd: int) -> None:
        raise OSError(errno.ENOSPC, "No space left on device")

    monkeypatch.setattr(os, "fsync", full_disk)
    code, printed = run(["report", "last", "--out", "report.html", "--store", "runs.db"], capsys)
    assert code == 2
    assert " ".join(printed.split()) == ("error: cannot write the report file report.html (No space left on "
                                         "device); nothing was written there (a previous file is intact)")
    assert (tmp_path / "report.html").read_text("utf-8") == "previous report"
    assert leftovers(tmp_path) == []


@pytest.mark.parametrize("command", [
    ["export", "last", "--format", "csv", "--out"],
    ["labels", "export", "--out"],
    ["align", "last", "--metric", "faithfulness", "--label", "correct", "--out"],
    ["evaluate", "data.jsonl", "--metrics", "rouge_l", "--out"],
])
@pytest.mark.parametrize("kind", ["a folder", "under a file",
                                  pytest.param("a pipe", marks=pytest.mark.skipif(
                                      not hasattr(os, "mkfifo"), reason="POSIX pipes"))])
def test_every_out_option_refuses_a_bad_path_in_one_line(
    command: list[str], kind: str, tmp_path: Path, one_run: str, capsys: pytest.CaptureFixture[str]
) -> None:
    (tmp_path / "data.jsonl").write_text(json.dumps({"id": "a", "question": "q?", "response": "r",
                                                     "reference": "r"}) + "\n", "utf-8")
    runs_before = len(ragsight.store.Store(tmp_path / "runs.db").runs())
    target = bad_path(kind, tmp_path)
    code, printed = run([*command, target, "--store", "runs.db"], capsys)
    assert code == 2 and len(printed.strip().splitlines()) == 1, printed
    assert printed.startswith("error: ") and WORDS[kind] in printed, printed
    assert len(ragsight.store.Store(tmp_path / "runs.db").runs()) == runs_before, "evaluated before the check"
    if kind == "a pipe":
        assert Path(target).exists() and not Path(target).is_file(), "the pipe was replaced"


def test_generate_and_answer_check_out_before_calling_anything(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    sweep_world(tmp_path, monkeypatch)
    (tmp_path / "docs").mkdir()
    (tmp_path / "docs" / "a.md").write_text("Each passenger may bring one cabin bag.\n", "utf-8")
    code, printed = run(["generate", "docs", "--size", "2", "--out", "gone/ts.jsonl",
                         "--judge", "openai:m", "--base-url", "http://127.0.0.1:9/v1"], capsys)
    assert code == 2 and "the folder of the --out file gone/ts.jsonl does not exist" in printed
    assert not (tmp_path / "gone").exists()
    code, printed = run(["answer", "ts.jsonl", "--target", "rag_out:answer", "--out", "docs"], capsys)
    assert code == 2 and "the --out file docs is a folder" in printed
    assert calls(tmp_path) == 0
    code, printed = run(["answer", "ts.jsonl", "--target", "rag_out:answer", "--out", "eval.jsonl"], capsys)
    assert code == 0 and len((tmp_path / "eval.jsonl").read_text().splitlines()) == 2
    assert leftovers(tmp_path) == []


PLAIN_TEST = """
from pathlib import Path
def test_one():
    Path("ran.txt").write_text("yes")
"""

LEXICAL_TEST = """
import shutil
from ragsight.testing import assert_scores
def test_answers():
    assert_scores([{"id": "a", "question": "q?", "response": "One bag.", "reference": "One bag."}],
                  {"exact_match": 1.0})
    shutil.rmtree("reports")   # the report's folder disappears before the session ends
"""


@pytest.fixture
def plugin_suite(pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch) -> pytest.Pytester:
    monkeypatch.setenv("PYTEST_DISABLE_PLUGIN_AUTOLOAD", "1")
    for name in ("RAGSIGHT_JUDGE", "RAGSIGHT_STORE", "RAGSIGHT_BASE_URL"):
        monkeypatch.delenv(name, raising=False)
    return pytester


def test_the_pytest_report_path_is_checked_before_any_test_runs(plugin_suite: pytest.Pytester) -> None:
    plugin_suite.makepyfile(test_plain=PLAIN_TEST)
    result = plugin_suite.runpytest_subprocess("-p", "_ragsight_pytestplugin", "-p", "no:cacheprovider",
                                               "--ragsight-report", "missing/report.html")
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    assert "the folder of the --ragsight-report file missing/report.html does not exist" in result.stderr.str()
    assert "Traceback" not in result.stdout.str() + result.stderr.str()
    assert not (plugin_suite.path / "ran.txt").exists(), "the tests ran before the report path was checked"


def test_a_pytest_report_that_cannot_be_written_is_one_line_not_an_internal_error(
    plugin_suite: pytest.Pytester,
) -> None:
    plugin_suite.makepyfile(test_lexical=LEXICAL_TEST)
    (plugin_suite.path / "reports").mkdir()
    result = plugin_suite.runpytest_subprocess("-p", "_ragsight_pytestplugin", "-p", "no:cacheprovider",
                                               "--ragsight-store", "q.db", "--ragsight-report",
                                               "reports/report.html")
    printed = result.stdout.str() + result.stderr.str()
    assert "INTERNALERROR" not in printed and "Traceback" not in printed, printed
    result.assert_outcomes(passed=1)
    assert ("error: the folder of the --ragsight-report file reports/report.html does not exist"
            in " ".join(printed.split()))
    assert result.ret == pytest.ExitCode.USAGE_ERROR  # the session does not look clean
    assert not (plugin_suite.path / "reports").exists()
