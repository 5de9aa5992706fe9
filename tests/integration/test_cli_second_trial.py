"""The second trial from the outside (htrial2): what a new user hit on the command line, run as
the README and docs/ show it, against a judge on 127.0.0.1."""

from __future__ import annotations

import json
import re
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from ragsight.cli import main
from ragsight.store import Store
from tests.fakes import FakeOpenAIServer, RecordedRequest
from tests.reliability.world import JudgeWorld, make_samples, prompt_id_of


@pytest.fixture(autouse=True)
def _key(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("OPENAI_API_KEY", "sk-test-second-trial")


@pytest.fixture()
def judge() -> Iterator[FakeOpenAIServer]:
    with FakeOpenAIServer(handler=JudgeWorld()) as srv:
        yield srv


def write(path: Path, rows: list[dict[str, Any]]) -> Path:
    path.write_text("".join(json.dumps(r) + "\n" for r in rows), encoding="utf-8")
    return path


def judged(requests: list[RecordedRequest]) -> int:
    """Judge calls made for samples (the preflight ping excluded)."""
    return sum(1 for r in requests if r.path.endswith("/chat/completions")
               and prompt_id_of(r.json if isinstance(r.json, dict) else {}) is not None)


def run(capsys: pytest.CaptureFixture[str], *argv: str) -> tuple[int, str, str]:
    code = main(list(argv))
    cap = capsys.readouterr()
    assert "Traceback" not in cap.out + cap.err
    return code, cap.out, cap.err


def one_line(text: str) -> str:
    return " ".join(text.split())


# ---- the CI gate as the README writes it ------------------------------------------------------


def test_the_readme_gate_command_gates_a_metric_outside_the_defaults(
    tmp_path: Path, judge: FakeOpenAIServer, capsys: pytest.CaptureFixture[str],
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """README "In CI": no --metrics, and --fail-over noise_sensitivity=0.3. On main the whole
    run was paid for, then 'names noise_sensitivity, which run ... did not compute' and exit 2
    ("nothing was evaluated"): the README's command could never pass."""
    monkeypatch.chdir(tmp_path)
    write(tmp_path / "data.jsonl", make_samples(4))
    code, out, err = run(capsys, "evaluate", "data.jsonl", "--judge", "openai:gpt-4o-mini",
                         "--base-url", judge.url, "--embedder", "openai:e", "--quiet",
                         "--fail-under", "faithfulness=0.1", "--fail-under", "context_recall=0.1",
                         "--fail-over", "noise_sensitivity=0.99")
    assert code == 0, out + err
    gate = out[out.index("gate:"):]
    assert re.search(r"ok\s+noise_sensitivity \d\.\d{3} ≤ 0\.99", gate), gate
    # the gated metric joined the default ones, and the run says so
    table = out[:out.index("gate:")]
    for name in ("faithfulness", "answer_relevancy", "context_precision", "context_recall",
                 "noise_sensitivity"):
        assert re.search(rf"^{name}", table, re.M), table
    assert "noise_sensitivity" in one_line(err) and "gate" in one_line(err)


def test_a_pyproject_gate_on_a_metric_outside_metrics_stops_before_any_judge_call(
    tmp_path: Path, judge: FakeOpenAIServer, capsys: pytest.CaptureFixture[str],
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """--metrics says exactly what to compute: a gate on another metric is a contradiction,
    refused before the first judge call (exit 2, no store), not after the run."""
    monkeypatch.chdir(tmp_path)
    (tmp_path / "pyproject.toml").write_text(
        '[tool.ragsight]\nfail-under = { faithfulness = 0.5, context_recall = 0.5 }\n', encoding="utf-8")
    write(tmp_path / "data.jsonl", make_samples(4))
    code, _, err = run(capsys, "evaluate", "data.jsonl", "--judge", "openai:m", "--base-url", judge.url,
                       "--metrics", "faithfulness", "--store", "runs.db", "--quiet")
    assert code == 2
    text = one_line(err)
    assert "pyproject.toml [tool.ragsight] fail-under gates context_recall" in text, text
    assert "--metrics" in text and "nothing was evaluated" in text
    assert judged(judge.requests) == 0
    assert not (tmp_path / "runs.db").exists()


def test_resuming_a_run_against_a_gate_it_cannot_meet_stops_before_resuming(
    tmp_path: Path, judge: FakeOpenAIServer, capsys: pytest.CaptureFixture[str],
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.chdir(tmp_path)
    write(tmp_path / "data.jsonl", make_samples(3))
    code, _, _ = run(capsys, "evaluate", "data.jsonl", "--judge", "openai:m", "--base-url", judge.url,
                     "--metrics", "faithfulness", "--store", "runs.db", "--quiet")
    assert code == 0
    with Store(tmp_path / "runs.db") as st:
        st.conn.execute("UPDATE runs SET status='interrupted'")
        st.conn.execute("UPDATE samples SET finished=0 WHERE sample_id=(SELECT MIN(sample_id) FROM samples)")
        st.conn.commit()
    before = judged(judge.requests)
    code, _, err = run(capsys, "evaluate", "--resume", "last", "--store", "runs.db", "--quiet",
                       "--fail-under", "context_recall=0.5")
    assert code == 2
    assert "gates context_recall, which run" in one_line(err), err
    assert judged(judge.requests) == before


# ---- calibrate at 80 columns --------------------------------------------------------------------


def test_calibrate_names_every_metric_whole_at_80_columns(
    tmp_path: Path, judge: FakeOpenAIServer, capsys: pytest.CaptureFixture[str],
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """docs/report.md's `ragsight calibrate RUN --labels FILE --label FIELD` on a run of the four
    core metrics: on main the agreement table cut every name ('context…' twice: which is
    context_precision?)."""
    from ragsight.cli import _common

    monkeypatch.setattr(_common.out, "width", 80)
    monkeypatch.chdir(tmp_path)
    rows = make_samples(8)
    write(tmp_path / "data.jsonl", rows)
    code, _, _ = run(capsys, "evaluate", "data.jsonl", "--judge", "openai:m", "--base-url", judge.url,
                     "--embedder", "openai:e", "--quiet")
    assert code == 0
    write(tmp_path / "labels.jsonl", [{"id": r["id"], "correct": i % 3 != 0} for i, r in enumerate(rows)])
    code, out, _ = run(capsys, "calibrate", "last", "--labels", "labels.jsonl", "--label", "correct")
    assert code == 0
    assert "…" not in out
    for line in out.splitlines():
        assert len(line) <= 80, line
    agreement = out[out.index("Agreement with the labels"):out.index("Correlation with the labels")]
    for name in ("faithfulness", "answer_relevancy", "context_precision", "context_recall"):
        row = next((ln for ln in agreement.splitlines() if ln.lstrip("│ ").startswith(name)), None)
        assert row is not None, agreement
        assert re.search(r"\d\.\d{3}", row), row  # its numbers on the same line


# ---- prose on an 80-column terminal -------------------------------------------------------------


ANSI = re.compile(r"\x1b\[[0-9;]*m")


def test_reasons_warnings_and_errors_wrap_at_spaces_on_a_terminal(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch,
) -> None:
    """A judge that answers nothing usable: the summary's 'LEFT OUT of the overall' lines, the
    gate's lines and the errors ran past 80 columns and the terminal cut them mid-word
    ('verif' / 'y_claims')."""
    from ragsight.cli import _common

    for console in (_common.out, _common.err):
        monkeypatch.setattr(console, "_force_terminal", True)
        monkeypatch.setattr(console, "width", 80)
    monkeypatch.chdir(tmp_path)
    write(tmp_path / "data.jsonl", make_samples(3))
    with FakeOpenAIServer(handler=JudgeWorld(fault_rate=1.0, faults=("prose",))) as bad:
        code, out, err = run(capsys, "evaluate", "data.jsonl", "--judge", "openai:m", "--base-url", bad.url,
                             "--metrics", "faithfulness,context_recall", "--max-retries", "0", "--quiet",
                             "--fail-under", "faithfulness=0.5")
    assert code == 1
    text = ANSI.sub("", out + err)
    for line in text.splitlines():
        assert len(line) <= 80, f"{len(line)} columns: {line!r}"
    assert "LEFT OUT of the overall: faithfulness" in text
    # every word whole: the reasons read the same once the lines are joined at spaces
    assert re.search(r"judge step (extract|verify)_claims failed: unusable output", one_line(text)), text
    # an error too
    code, _, err = run(capsys, "evaluate", "missing-data-file-with-a-rather-long-name.jsonl", "--judge",
                       "openai:m", "--metrics", "faithfulness,context_recall,answer_relevancy", "--quiet")
    assert code == 2
    for line in ANSI.sub("", err).splitlines():
        assert len(line) <= 80, line
