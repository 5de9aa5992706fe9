"""``ragsight compare`` and ``ragsight diagnose RUN_A RUN_B`` on two runs of a conversation data
set, from the outside: DeepEval-shaped conversations evaluated with ``ragsight evaluate`` over
real HTTP to a judge on 127.0.0.1. The pairing line counts the turns and the conversations each
on its own, as each metric is paired on its own level, not the two kinds of row together."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from ragsight.cli import main
from ragsight.store import Store
from tests.fakes import FakeOpenAIServer
from tests.reliability.world import JudgeWorld

TURNS = (3, 3, 2, 2, 2)  # 12 assistant turns in 5 conversations


def conversations(n: int) -> list[dict[str, Any]]:
    """The first ``n`` conversations, as DeepEval's ``ConversationalTestCase.model_dump()``."""
    rows = []
    for c, count in enumerate(TURNS[:n]):
        turns: list[dict[str, Any]] = []
        for t in range(count):
            fact = f"The shop in town {c} opens at {t + 8}."
            turns += [{"role": "user", "content": f"When does the shop in town {c} open, question {t}?"},
                      {"role": "assistant", "content": fact, "retrieval_context": [fact]}]
        rows.append({"name": f"chat-{c}", "scenario": "A customer asks about opening hours.", "turns": turns})
    return rows


@pytest.fixture()
def judge_url(monkeypatch: pytest.MonkeyPatch) -> Iterator[str]:
    monkeypatch.setenv("OPENAI_API_KEY", "sk-test-compare-conversations")
    with FakeOpenAIServer(handler=JudgeWorld()) as srv:
        yield srv.url


def _runs(tmp_path: Path, url: str, sizes: tuple[int, int]) -> tuple[Path, str, str]:
    store = tmp_path / "runs.db"
    for name, n in zip(("a", "b"), sizes):
        data = tmp_path / f"{name}.jsonl"
        data.write_text("".join(json.dumps(r) + "\n" for r in conversations(n)), encoding="utf-8")
        assert main(["evaluate", str(data), "--metrics", "faithfulness", "--judge", "openai:m",
                     "--base-url", url, "--store", str(store), "--quiet"]) == 0
    with Store(str(store)) as st:
        run_b, run_a = (r.id for r in st.runs())  # newest first
    return store, run_a, run_b


def _printed(capsys: pytest.CaptureFixture[str], *argv: str) -> str:
    """What the command printed, its lines joined (the terminal wraps long ones)."""
    capsys.readouterr()
    assert main(list(argv)) == 0
    return " ".join(capsys.readouterr().out.split())


def test_compare_counts_the_turns_and_the_conversations_each_on_its_own(
        judge_url: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    store, run_a, run_b = _runs(tmp_path, judge_url, (5, 5))
    out = _printed(capsys, "compare", run_a, run_b, "--store", str(store))
    assert "Pairing: 12 of 12 turns, 5 of 5 conversations paired between A and B." in out, out
    assert "17 samples paired" not in out
    out = _printed(capsys, "diagnose", run_a, run_b, "--store", str(store))
    assert f"Pairing: 12 of 12 turns, 5 of 5 conversations paired between {run_a} and {run_b}." in out, out


def test_what_is_unpaired_is_counted_per_level_too(
        judge_url: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    store, run_a, run_b = _runs(tmp_path, judge_url, (5, 4))  # run B lacks the last conversation
    out = _printed(capsys, "compare", run_a, run_b, "--store", str(store))
    # each level with its own share, the worst first: not 14 of 17 rows (82%) together
    assert ("WARNING: only 4 of 5 conversations (80%), 10 of 12 turns (83%) paired between A and B; "
            "unpaired in A: 2 turns, 1 conversation. The differences below") in out, out
