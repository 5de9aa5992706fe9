"""A large run's result, met as a user meets it: the README's Python example and the
command line, against a judge on 127.0.0.1, on data written as ragas writes it. The result that
reads the store when asked must give exactly what the result held in memory gives.

The threshold from which a result reads the store (``LAZY_FROM``, 500 samples) is lowered for
these runs, so that a run of a dozen samples takes that path; everything else is as documented."""

from __future__ import annotations

import json
import re
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

import ragsight
import ragsight.run._execute
from ragsight.cli import _common, main
from tests.fakes import FakeOpenAIServer
from tests.reliability.world import JudgeWorld


@pytest.fixture(autouse=True)
def _key(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("OPENAI_API_KEY", "sk-test-lazy")


@pytest.fixture()
def judge() -> Iterator[FakeOpenAIServer]:
    with FakeOpenAIServer(handler=JudgeWorld()) as srv:
        yield srv


def _data(path: Path, n: int = 12) -> Path:
    rows: list[dict[str, Any]] = []
    for i in range(n):
        rows.append({
            "user_input": f"When was the Harbor{i} bridge opened?",
            "retrieved_contexts": [f"The Harbor{i} bridge opened in {1900 + i}. It spans the river.",
                                   f"Tolls on Harbor{i} were removed in {1950 + i}."],
            "response": (f"The Harbor{i} bridge opened in {1900 + i}." if i % 3 else
                         f"The Harbor{i} bridge opened in {1800 + i} and was painted red."),
            "reference": f"It opened in {1900 + i}.",
        })
    path.write_text("".join(json.dumps(r) + "\n" for r in rows), encoding="utf-8")
    return path


def test_the_readme_example_gives_the_same_on_a_result_read_from_the_store(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, judge: FakeOpenAIServer, capsys: pytest.CaptureFixture[str]
) -> None:
    pd = pytest.importorskip("pandas")
    monkeypatch.chdir(tmp_path)
    _data(tmp_path / "data.jsonl")

    def readme(store: str) -> tuple[ragsight.EvaluationResult, str, Any]:
        result = ragsight.evaluate("data.jsonl", ["faithfulness", "context_precision"], store=store,
                                   judge=ragsight.JudgeSpec("openai:fake-model", base_url=judge.url))
        print(result.summary["faithfulness"])
        df = result.to_pandas()
        low = df[df.faithfulness < 0.5][["question", "contexts"]]
        return result, capsys.readouterr().out, low

    held, held_out, held_low = readme("held.db")
    monkeypatch.setattr(ragsight.run._execute, "LAZY_FROM", 10)
    lazy, lazy_out, lazy_low = readme("runs.db")
    assert not held.lazy and lazy.lazy
    assert lazy_out == held_out and "MetricSummary(metric='faithfulness'" in lazy_out
    assert len(lazy_low) == 4  # the samples whose response says another year
    pd.testing.assert_frame_equal(lazy_low, held_low)
    assert repr(lazy).split(",", 1)[1] == repr(held).split(",", 1)[1]  # all but the run id


def _normalise(text: str) -> str:
    return re.sub(r"\d{8}-\d{6}-[0-9a-f]{6}", "RUN", re.sub(r"\S*\.db\b", "STORE", text))


def test_the_command_line_prints_the_same_summary_from_a_result_read_from_the_store(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, judge: FakeOpenAIServer, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.setattr(_common.out, "width", 80)
    data = str(_data(tmp_path / "data.jsonl"))

    def cli(store: str) -> str:
        code = main(["evaluate", data, "--metrics", "faithfulness,context_recall", "--judge", "openai:fake-model",
                     "--base-url", judge.url, "--store", str(tmp_path / store)])
        assert code == 0
        cap = capsys.readouterr()
        assert "Traceback" not in cap.out + cap.err
        return _normalise(cap.out)

    held = cli("held.db")
    monkeypatch.setattr(ragsight.run._execute, "LAZY_FROM", 10)
    lazy = cli("runs.db")
    assert lazy == held
    assert "faithfulness" in lazy and "12 samples" in lazy
    assert all(len(line) <= 80 for line in lazy.splitlines())
