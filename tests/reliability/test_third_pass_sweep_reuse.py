"""A sweep reuses a finished run only when everything that changes its answers
or scores is the same: ``--judge``, ``--embedder``, the file's ``base_url`` and the sweep's exact
name (two names that slug alike never share runs). From the outside: sweep files and the CLI as
docs/sweep.md shows them, a module target, a judge over real HTTP on 127.0.0.1."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import pytest

from ragsight import cli
from tests.fakes import FakeOpenAIServer
from tests.reliability.world import JudgeWorld

QUESTIONS = [("q1", "How many cabin bags may I bring?", "One cabin bag of eight kilograms."),
             ("q2", "When does check-in close?", "Check-in closes forty minutes before departure.")]


def write_world(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    (tmp_path / "ts.jsonl").write_text("".join(
        json.dumps({"id": i, "question": q, "reference": a}) + "\n" for i, q, a in QUESTIONS), "utf-8")
    (tmp_path / "my_rag_t3.py").write_text(
        "ANSWERS = " + repr({q: a for _, q, a in QUESTIONS}) + "\n"
        "def answer(question, top_k):\n"
        "    return {'answer': ANSWERS[question], 'contexts': [ANSWERS[question]] * top_k}\n", "utf-8")
    monkeypatch.chdir(tmp_path)
    monkeypatch.setattr(sys, "path", [str(tmp_path), *sys.path])


def sweep_file(tmp_path: Path, name: str, base_url: str, judge: str = "openai:judge-a") -> Path:
    path = tmp_path / f"{name.replace(' ', '_')}.toml"
    path.write_text(
        f'name = "{name}"\ntestset = "ts.jsonl"\nmetrics = ["faithfulness"]\njudge = "{judge}"\n'
        f'base_url = "{base_url}"\nbaseline = {{top_k = 1}}\n\n[pipeline]\ntarget = "my_rag_t3:answer"\n\n'
        '[grid]\ntop_k = [1, 2]\n', "utf-8")
    return path


def judge_models(srv: FakeOpenAIServer, since: int = 0) -> set[str]:
    return {r.json["model"] for r in srv.requests[since:] if r.path.endswith("/chat/completions")
            and isinstance(r.json, dict) and r.json.get("messages", [{}])[0].get("content") != "ping"}


def run(args: list[str], capsys: pytest.CaptureFixture[str]) -> str:
    code = cli.main(args)
    captured = capsys.readouterr()
    assert code == 0, captured.err
    return captured.err + captured.out


def test_another_judge_on_the_command_line_runs_again(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    write_world(tmp_path, monkeypatch)
    with FakeOpenAIServer(handler=JudgeWorld()) as srv:
        spec = str(sweep_file(tmp_path, "bags", srv.url))
        run(["sweep", spec, "--store", "s.db"], capsys)
        assert judge_models(srv) == {"judge-a"}
        dry = run(["sweep", spec, "--store", "s.db", "--judge", "openai:judge-b", "--dry-run"], capsys)
        assert "2 to run" in dry, dry
        before = len(srv.requests)
        printed = run(["sweep", spec, "--store", "s.db", "--judge", "openai:judge-b"], capsys)
        assert "already in the store" not in printed
        assert judge_models(srv, since=before) == {"judge-b"}
        # the same command again reuses the judge-b runs
        again = run(["sweep", spec, "--store", "s.db", "--judge", "openai:judge-b"], capsys)
        assert again.count("already in the store") == 2


def test_another_base_url_in_the_file_runs_again(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    write_world(tmp_path, monkeypatch)
    with FakeOpenAIServer(handler=JudgeWorld()) as first, FakeOpenAIServer(handler=JudgeWorld()) as second:
        run(["sweep", str(sweep_file(tmp_path, "bags", first.url)), "--store", "s.db"], capsys)
        printed = run(["sweep", str(sweep_file(tmp_path, "bags", second.url)), "--store", "s.db"], capsys)
        assert "already in the store" not in printed
        assert judge_models(second) == {"judge-a"}


def test_names_that_slug_alike_do_not_share_runs(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    write_world(tmp_path, monkeypatch)
    with FakeOpenAIServer(handler=JudgeWorld()) as srv:
        run(["sweep", str(sweep_file(tmp_path, "Bags Test", srv.url)), "--store", "s.db"], capsys)
        printed = run(["sweep", str(sweep_file(tmp_path, "bags-test", srv.url)), "--store", "s.db"], capsys)
    assert "already in the store" not in printed
