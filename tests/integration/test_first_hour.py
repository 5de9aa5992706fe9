"""The first hour of a new user, end to end through the command line: two configurations of
id-less data written the way ragas writes it, both evaluated into one store, then compared.

The changed samples must pair with their counterparts (the automatic id names the question, not
the answer) and the difference must be detected; data sets that do not pair must be refused
unless the user asks, and then flagged loudly.
"""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

import pytest

from ragsight.cli import main
from ragsight.store import Store
from tests.fakes import FakeOpenAIServer
from tests.reliability.world import JudgeWorld, make_samples

# A sentence no context supports: faithfulness of the samples that get it must fall.
INVENTED = " Every passenger also gets free lounge access and a hot meal on all routes."


def ragas_rows(changed: set[int] = frozenset()) -> list[dict[str, Any]]:
    """20 rows as ragas 0.2's EvaluationDataset.to_jsonl writes them: no id."""
    rows = []
    for i, s in enumerate(make_samples(20, seed=11)):
        rows.append({
            "user_input": s["question"].replace("?", f" (case {i})?"),
            "retrieved_contexts": s["contexts"],
            "response": s["response"] + (INVENTED if i in changed else ""),
            "reference": s["reference"],
        })
    return rows


def write_jsonl(path: Path, rows: list[dict[str, Any]]) -> Path:
    path.write_text("".join(json.dumps(r) + "\n" for r in rows), encoding="utf-8")
    return path


def evaluate(data: Path, store: Path, url: str, tag: str) -> str:
    code = main(["evaluate", str(data), "--metrics", "faithfulness", "--judge", "openai:m",
                 "--base-url", url, "--store", str(store), "--metadata", f"config={tag}"])
    assert code == 0
    with Store(str(store)) as st:
        return st.runs()[0].id


@pytest.fixture
def world_url() -> Any:
    with FakeOpenAIServer(handler=JudgeWorld()) as srv:
        yield srv.url


def test_two_configurations_of_id_less_data_pair_and_the_change_is_detected(
    tmp_path: Path, world_url: str, capsys: pytest.CaptureFixture[str]
) -> None:
    store = tmp_path / "runs.db"
    changed = set(range(0, 20, 2))  # 10 of the 20 answers change
    run_a = evaluate(write_jsonl(tmp_path / "a.jsonl", ragas_rows()), store, world_url, "A")
    run_b = evaluate(write_jsonl(tmp_path / "b.jsonl", ragas_rows(changed)), store, world_url, "B")
    capsys.readouterr()

    assert main(["compare", run_a, run_b, "--store", str(store)]) == 0
    text = capsys.readouterr().out
    assert "Pairing: 20 of 20 samples paired between A (20) and B (20)." in text
    assert "WARNING" not in text
    row = next(line for line in text.splitlines() if re.match(r"\W*faithfulness\W+B\W", line))
    # every sample paired, and B (the invented sentence) is worse, significantly
    assert re.search(r"\b20/20\b", row), row
    assert re.search(r"faithfulness ↑ B vs A \([^)]*\): A is better", text), text
    with Store(str(store)) as st:
        a, b = st.scores(run_a), st.scores(run_b)
    assert set(a) == set(b) and len(a) == 20  # the same 20 question ids in both runs
    worse = [sid for sid in a if b[sid]["faithfulness"].value < a[sid]["faithfulness"].value]
    assert len(worse) == 10


def test_data_that_does_not_pair_is_refused_unless_asked(
    tmp_path: Path, world_url: str, capsys: pytest.CaptureFixture[str]
) -> None:
    store = tmp_path / "runs.db"
    rows = ragas_rows()
    other = [{**r, "user_input": r["user_input"].replace("case", "item")} if i % 2 else r
             for i, r in enumerate(rows)]  # half the questions reworded: those no longer pair
    run_a = evaluate(write_jsonl(tmp_path / "a.jsonl", rows), store, world_url, "A")
    run_b = evaluate(write_jsonl(tmp_path / "b.jsonl", other), store, world_url, "B")
    capsys.readouterr()

    assert main(["compare", run_a, run_b, "--store", str(store)]) == 2
    err = capsys.readouterr().err
    assert "share too few samples" in err and "10 of 20 samples paired" in err
    assert "--allow-poor-pairing" in err

    assert main(["compare", run_a, run_b, "--store", str(store), "--allow-poor-pairing"]) == 0
    out = capsys.readouterr().out
    assert ("WARNING: only 10 of 20 samples paired between A (20) and B (20); unpaired: 10 in A, 10 in B (50%)"
            in " ".join(out.split()))  # (wrapped at 80 columns when piped)

    html = tmp_path / "r.html"
    assert main(["report", run_a, run_b, "--store", str(store), "--out", str(html)]) == 2
    assert main(["report", run_a, run_b, "--store", str(store), "--out", str(html),
                 "--allow-poor-pairing"]) == 0
    assert 'class="warn"><strong>Only 10 of 20 samples paired' in html.read_text(encoding="utf-8")


def test_rows_without_id_question_or_reference_are_paired_by_position_and_said(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    from ragsight import Dataset

    with pytest.warns(UserWarning, match=r"2 row\(s\) have no id, question or reference \(rows 1, 2\)"):
        ds = Dataset.from_records([{"response": "x", "retrieved_contexts": ["c"]},
                                   {"response": "y", "retrieved_contexts": ["d"]}])
    assert ds.ids() == ["row-1", "row-2"]
    # the same question and reference twice: the second gets a suffix, deterministically
    twice = Dataset.from_records([{"question": "q", "reference": "r", "response": "a"},
                                  {"question": "q", "reference": "r", "response": "b"}])
    assert twice.ids()[1] == twice.ids()[0] + "-2"
    assert twice.ids()[0].startswith("q-")
