"""``ragsight compare`` and ``ragsight diagnose RUN_A RUN_B`` on two runs of a conversation data
set, from the outside: DeepEval-shaped conversations evaluated with ``ragsight evaluate`` over
real HTTP to a judge on 127.0.0.1. The pairing line, the runs' header and the share that warns
or refuses count the turns and the conversations each on its own, as each metric is paired on
its own level, not the two kinds of row together."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from ragsight.cli import main
from ragsight.store import Store
from ragsight.view import ViewApp
from tests.fakes import FakeOpenAIServer
from tests.reliability.world import JudgeWorld

TURNS = (3, 3, 2, 2, 2)  # 12 assistant turns in 5 conversations


def conversations(n: int, turns: tuple[int, ...] = TURNS) -> list[dict[str, Any]]:
    """The first ``n`` conversations of ``turns`` assistant turns each, as DeepEval's
    ``ConversationalTestCase.model_dump()``."""
    rows = []
    for c, count in enumerate(turns[:n]):
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


def _runs(tmp_path: Path, url: str, sizes: tuple[int, int], turns: tuple[int, ...] = TURNS
          ) -> tuple[Path, str, str]:
    store = tmp_path / "runs.db"
    for name, n in zip(("a", "b"), sizes):
        data = tmp_path / f"{name}.jsonl"
        data.write_text("".join(json.dumps(r) + "\n" for r in conversations(n, turns)), encoding="utf-8")
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
    assert f"A = {run_a} (12 turns, 5 conversations) (baseline) B = {run_b} (12 turns, 5 conversations)" in out
    assert "17 samples" not in out
    out = _printed(capsys, "diagnose", run_a, run_b, "--store", str(store))
    assert f"Pairing: 12 of 12 turns, 5 of 5 conversations paired between {run_a} and {run_b}." in out, out


def test_what_is_unpaired_is_counted_per_level_too(
        judge_url: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    store, run_a, run_b = _runs(tmp_path, judge_url, (5, 4))  # run B lacks the last conversation
    out = _printed(capsys, "compare", run_a, run_b, "--store", str(store))
    assert f"B = {run_b} (10 turns, 4 conversations)" in out, out
    # each level with its own share, the worst first: not 14 of 17 rows (82%) together
    assert ("WARNING: only 4 of 5 conversations (80%), 10 of 12 turns (83%) paired between A and B; "
            "unpaired in A: 2 turns, 1 conversation. The differences below") in out, out


LOPSIDED = (12, 12, 1, 1, 1)  # 27 assistant turns, 24 of them in the first two conversations


def test_a_run_missing_conversations_is_refused_for_them_though_its_turns_mostly_pair(
        judge_url: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """Run B lacks 3 of the 5 conversations, holding 3 of the 27 turns: 26 of the 32 rows pair
    (81%), but only 2 of the 5 conversations (40%), so the conversation metrics would speak for
    two conversations: the comparison is refused, naming the conversations."""
    store, run_a, run_b = _runs(tmp_path, judge_url, (5, 2), LOPSIDED)
    said = "2 of 5 conversations (40%), 24 of 27 turns (89%) paired between A and B; unpaired in A: 3 turns, 3 conversations"

    capsys.readouterr()
    assert main(["compare", run_a, run_b, "--store", str(store)]) == 2
    err = " ".join(capsys.readouterr().err.split())
    assert f"the runs share too few conversations to compare ({said})" in err, err
    assert "--allow-poor-pairing" in err

    out = _printed(capsys, "compare", run_a, run_b, "--store", str(store), "--allow-poor-pairing")
    assert f"A = {run_a} (27 turns, 5 conversations) (baseline) B = {run_b} (24 turns, 2 conversations)" in out
    assert f"WARNING: only {said}. The differences below speak for the paired samples only." in out, out

    assert main(["diagnose", run_a, run_b, "--store", str(store)]) == 2
    err = " ".join(capsys.readouterr().err.split())
    assert "the runs share too few conversations to compare their causes (2 of 5 conversations (40%)" in err, err
    out = _printed(capsys, "diagnose", run_a, run_b, "--store", str(store), "--allow-poor-pairing")
    assert (f"WARNING: only 2 of 5 conversations (40%), 24 of 27 turns (89%) paired between {run_a} and "
            f"{run_b}; unpaired in {run_a}: 3 turns, 3 conversations.") in out, out


def test_the_report_and_the_viewer_state_the_runs_and_the_pairing_as_compare_does(
        judge_url: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    store, run_a, run_b = _runs(tmp_path, judge_url, (5, 2), LOPSIDED)
    said = "2 of 5 conversations (40%), 24 of 27 turns (89%) paired between A and B; unpaired in A: 3 turns, 3 conversations"
    html = tmp_path / "compare.html"
    capsys.readouterr()
    assert main(["report", run_a, run_b, "--store", str(store), "--out", str(html)]) == 2
    assert "share too few conversations" in capsys.readouterr().err
    assert main(["report", run_a, run_b, "--store", str(store), "--out", str(html), "--allow-poor-pairing"]) == 0
    page = html.read_text(encoding="utf-8")
    assert '<td class="text">27 turns, 5 conversations</td>' in page
    assert '<td class="text">24 turns, 2 conversations</td>' in page
    assert f"<strong>Only {said}.</strong>" in page

    app = ViewApp(str(store), index_path=str(store) + ".search-index")
    app.bound("127.0.0.1", 8765)
    refused = app.handle("GET", f"/compare?run={run_a}&run={run_b}", {"host": "127.0.0.1:8765"})
    text = refused.body.decode("utf-8")
    assert refused.status == 200 and "share too few conversations" in text and "allow_poor=1" in text
    assert "(27 turns, 5 conversations) (baseline)" in text and "(24 turns, 2 conversations)" in text
    shown = app.handle("GET", f"/compare?run={run_a}&run={run_b}&allow_poor=1", {"host": "127.0.0.1:8765"})
    assert f'<p class="warn">Only {said}.</p>' in shown.body.decode("utf-8")
