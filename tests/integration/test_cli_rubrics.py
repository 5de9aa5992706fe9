"""Rubrics written in TOML, as a user without Python meets them: defined in pyproject.toml or a
--rubric file, evaluated with --metrics NAME, resumed, shown, reported and compared in fresh
processes that know nothing of the file; a malformed rubric refused before any judge call."""

from __future__ import annotations

import json
import os
import re
import sqlite3
import subprocess
import sys
import time
from collections.abc import Iterator
from contextlib import closing
from pathlib import Path
from typing import Any

import pytest

from ragsight.cli import main
from ragsight.metrics import REGISTRY
from ragsight.metrics.rubric import RubricMetric
from tests.fakes import FakeOpenAIServer, RecordedRequest, Reply
from tests.reliability.world import JudgeWorld, blocks, prompt_id_of

PYPROJECT = """\
[project]
name = "support-bot"

[tool.ragsight.rubrics.politeness]
criteria = "The response is polite and does not blame the user."
fields = ["question", "response"]
scale = [1, 5]            # or scale = "pass/fail"
threshold = 4
"""
SRC = str(Path(__file__).resolve().parents[2] / "src")


class RubricWorld(JudgeWorld):
    """The judge world, plus rubric answers: a response with "please" is polite (5 of 5, pass).
    ``stall_after``: rubric calls after that many are never answered (the judge hangs)."""

    stall_after: int | None = None
    rubric_calls: int = 0

    def __call__(self, request: RecordedRequest) -> Reply | None:
        body = request.json if isinstance(request.json, dict) else {}
        if self.stall_after is not None and prompt_id_of(body) in ("rubric_score", "rubric_pass_fail"):
            with self._lock:
                self.rubric_calls += 1
                stalled = self.rubric_calls > self.stall_after
            if stalled:
                return Reply.hang()
        return super().__call__(request)

    def answer(self, prompt_id: str, body: dict[str, Any]) -> tuple[dict[str, Any], int | None]:
        user = next((m["content"] for m in body["messages"] if m["role"] == "user"), "")
        polite = "please" in (blocks(user, "response") or [""])[-1].lower()  # the item, after any examples
        if prompt_id == "rubric_score":
            return {"reason": "Courteous." if polite else "Curt.", "score": 5 if polite else 2}, None
        if prompt_id == "rubric_pass_fail":
            return {"reason": "Courteous." if polite else "Curt.", "pass": polite}, None
        return super().answer(prompt_id, body)


@pytest.fixture(autouse=True)
def clean_registry() -> Iterator[None]:
    before = set(REGISTRY)
    yield
    for name in set(REGISTRY) - before:
        if issubclass(REGISTRY[name], RubricMetric):
            del REGISTRY[name]


def write_data(path: Path, n: int) -> Path:
    rows = [{"id": f"s{i:02d}", "question": "Where is my bag?",
             "response": f"Please check desk {i}." if i % 2 else f"Read rule {i}."} for i in range(n)]
    path.write_text("".join(json.dumps(r) + "\n" for r in rows))
    return path


def cli(*argv: str, cwd: Path, timeout: float = 120) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "OPENAI_API_KEY": "sk-x", "PYTHONPATH": SRC, "COLUMNS": "80"}
    return subprocess.run([sys.executable, "-m", "ragsight.cli", *argv], cwd=cwd, env=env,
                          capture_output=True, text=True, timeout=timeout)


def test_toml_rubric_evaluates_resumes_shows_and_reports_in_fresh_processes(tmp_path: Path) -> None:
    project, elsewhere = tmp_path / "project", tmp_path / "elsewhere"
    project.mkdir()
    elsewhere.mkdir()
    (project / "pyproject.toml").write_text(PYPROJECT)
    n = 40
    data = write_data(project / "data.jsonl", n)
    store = tmp_path / "runs.db"
    world = RubricWorld()
    world.stall_after = 3  # the judge answers three samples, then hangs: the run is killed there
    with FakeOpenAIServer(handler=world) as srv:
        judge = ["--judge", "openai:m", "--base-url", srv.url, "--store", str(store)]
        proc = subprocess.Popen(
            [sys.executable, "-m", "ragsight.cli", "evaluate", str(data), "--metrics", "politeness",
             *judge, "--concurrency", "1", "--quiet"],
            cwd=project, env={**os.environ, "OPENAI_API_KEY": "sk-x", "PYTHONPATH": SRC},
            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
        )
        deadline, done = time.monotonic() + 240, 0  # generous: a loaded CI machine starts slowly
        while time.monotonic() < deadline and proc.poll() is None and done < 3:
            time.sleep(0.2)
            if store.exists():
                try:
                    with closing(sqlite3.connect(store, timeout=1.0)) as c:
                        done = c.execute("SELECT COUNT(*) FROM samples WHERE finished=1").fetchone()[0]
                except sqlite3.OperationalError:
                    pass
        assert proc.poll() is None and done == 3, f"the run ended or stalled early ({done} finished)"
        proc.kill()  # killed, as a machine that goes down: no chance to save anything more
        proc.communicate(timeout=30)
        assert world.answered["rubric_score"] == 3

        # a fresh process, in a folder with no pyproject.toml: the run's stored rubric is used
        world.stall_after = None
        resumed = cli("evaluate", "--resume", "last", *judge, "--quiet", cwd=elsewhere)
        assert resumed.returncode == 0, resumed.stderr
        assert world.answered["rubric_score"] == n  # the other samples, not the three again
        line = next(ln for ln in resumed.stdout.splitlines() if ln.lstrip().startswith("politeness"))
        assert "0.625" in line  # half 5 of 5 (1.0), half 2 of 5 (0.25)

        # a second run from a --rubric file (top-level [rubrics.NAME]), to compare with
        (elsewhere / "tone.toml").write_text(
            '[rubrics.politeness]\ncriteria = "The response is polite and does not blame the user."\n'
            'fields = ["question", "response"]\nscale = "pass/fail"\n')
        second = cli("evaluate", str(data), "--rubric", "tone.toml", "--metrics", "politeness", *judge,
                     "--quiet", cwd=elsewhere)
        assert second.returncode == 0, second.stderr
        assert "0.500" in next(ln for ln in second.stdout.splitlines() if ln.lstrip().startswith("politeness"))

    with closing(sqlite3.connect(store)) as c:
        first_id, second_id = [r[0] for r in c.execute("SELECT id FROM runs ORDER BY created_at")]
    shown = cli("show", first_id, "--store", str(store), "--sample", "s01", "--metric", "politeness",
                cwd=elsewhere)
    assert shown.returncode == 0, shown.stderr
    assert "5 on 1-5 (passes threshold 4): Courteous." in " ".join(shown.stdout.split())
    report = cli("report", first_id, "--store", str(store), "--out", "r.html", cwd=elsewhere)
    assert report.returncode == 0, report.stderr
    page = (elsewhere / "r.html").read_text()
    assert "politeness" in page and "does not blame the user" in page
    compared = cli("compare", first_id, second_id, "--store", str(store), cwd=elsewhere)
    assert compared.returncode == 0, compared.stderr
    assert "politeness" in compared.stdout
    # the two runs' "politeness" are two rubrics (1-5, pass/fail): the configuration shows it
    (line,) = [ln for ln in compared.stdout.splitlines() if "rubric politeness" in ln]
    digests = re.findall(r"\b[0-9a-f]{16}\b", line)
    assert len(digests) == 2 and digests[0] != digests[1], compared.stdout


MALFORMED = [
    ('criterion = "x"', "unknown key 'criterion' (did you mean 'criteria'?)"),
    ('criteria = ""', "criteria must be a non-empty text"),
    ('criteria = "Polite."\nscale = "1-5"', "scale must be [low, high]"),
    ('criteria = "Polite."\nscale = [5, 1]', "scale must be [low, high]"),
    ('criteria = "Polite."\nfields = ["question", "answer"]', "unknown field 'answer'"),
    ('criteria = "Polite."\nfields = "response"', "fields must be a non-empty list"),
    ('criteria = "Polite."\nthreshold = 9', "threshold 9 is off the scale 1-5"),
    ('criteria = "Polite."\nexamples = [{ response = "Go.", score = 1 }]', "examples[1] lacks question"),
    ('criteria = "Polite."\nexamples = [{ question = "q", response = "Go.", score = 7 }]', "off the scale"),
]


@pytest.mark.parametrize(("body", "message"), MALFORMED)
def test_malformed_rubric_is_refused_before_any_call(
    body: str, message: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("OPENAI_API_KEY", "sk-x")
    (tmp_path / "pyproject.toml").write_text(f"[tool.ragsight.rubrics.politeness]\n{body}\n")
    data = write_data(tmp_path / "d.jsonl", 2)
    with FakeOpenAIServer(handler=RubricWorld()) as srv:
        code = main(["evaluate", str(data), "--metrics", "politeness", "--judge", "openai:m",
                     "--base-url", srv.url, "--store", str(tmp_path / "s.db")])
        assert srv.requests == []
    err = " ".join(capsys.readouterr().err.split())
    assert code == 2
    assert "[tool.ragsight.rubrics.politeness" in err and message in err, err
    assert not (tmp_path / "s.db").exists()


def test_rubric_file_named_twice_and_built_in_names_are_refused(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.chdir(tmp_path)
    (tmp_path / "a.toml").write_text('[rubrics.faithfulness]\ncriteria = "Mine."\n')
    data = write_data(tmp_path / "d.jsonl", 1)
    assert main(["evaluate", str(data), "--rubric", "a.toml", "--metrics", "faithfulness"]) == 2
    assert "built-in metric" in capsys.readouterr().err
    (tmp_path / "b.toml").write_text("[other]\nx = 1\n")
    assert main(["evaluate", str(data), "--rubric", "b.toml"]) == 2
    assert "defines no rubric" in capsys.readouterr().err


def test_the_docs_rubric_file_and_gate_work_as_written(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    """docs/rubrics.md's rubrics.toml, used with the command in its first line, and a gate on a
    pyproject rubric as the docs show it."""
    doc = (Path(__file__).resolve().parents[2] / "docs" / "rubrics.md").read_text()
    block = doc.split("```toml\n# rubrics.toml")[1].split("```")[0]
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("OPENAI_API_KEY", "sk-x")
    Path("rubrics.toml").write_text("# rubrics.toml" + block)
    (tmp_path / "pyproject.toml").write_text(PYPROJECT)
    data = write_data(tmp_path / "data.jsonl", 4)
    with FakeOpenAIServer(handler=RubricWorld()) as srv:
        judge = ["--judge", "openai:m", "--base-url", srv.url, "--store", "s.db", "--quiet"]
        code = main(["evaluate", str(data), "--rubric", "rubrics.toml", "--metrics", "tone,no_blame", *judge])
        out = capsys.readouterr().out
        assert code == 0
        means = {ln.split()[0]: ln.split()[1] for ln in out.splitlines() if ln.startswith(("tone", "no_blame"))}
        assert means == {"tone": "0.500", "no_blame": "0.350"}  # half pass; half 5 and half 2 on 0-10
        code = main(["evaluate", str(data), "--metrics", "politeness", "--fail-under", "politeness=0.75", *judge])
        assert code == 1  # the mean is 0.625
        assert "FAILED politeness 0.625 < 0.75" in capsys.readouterr().out
