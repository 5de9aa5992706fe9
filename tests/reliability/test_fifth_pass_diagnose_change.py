"""``diagnose RUN_A RUN_B`` judged a change on metrics run B never measured: samples failing
exact_match in A were "now passing" in a run B that did not compute exact_match at all. A change
is now judged only on the metrics both runs measured on the sample; a metric one run did not
measure (not among its metrics, or skipped on the sample) is named with the samples it leaves
unjudged, in the text and in the JSON, and never counts as fixed or new."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

import ragsight
from ragsight import cli
from ragsight.diagnosis import diagnose, diagnose_change
from ragsight.result import load_result
from ragsight.store import Store


def rows(n: int = 8, *, close: bool = True, no_reference: tuple[int, ...] = ()) -> list[dict[str, Any]]:
    """n samples; the first six answer close to the reference but not exactly (exact_match 0,
    rouge_l well above 0.5), the others exactly."""
    out = []
    for i in range(n):
        ref = f"The cabin bag limit on route {i} is eight kilograms"
        resp = ref + " per passenger" if i < 6 and close else ref
        row: dict[str, Any] = {"id": f"s{i}", "question": f"What is the cabin bag limit on route {i}?",
                               "response": resp, "reference": ref}
        if i in no_reference:
            del row["reference"]
        out.append(row)
    return out


def two_runs(tmp_path: Path, metrics_b: list[str], **b: Any) -> Path:
    store = tmp_path / "runs.db"
    ragsight.evaluate(rows(), ["exact_match", "rouge_l"], store=store, run_id="run-a")
    ragsight.evaluate(rows(**b), metrics_b, store=store, run_id="run-b")
    return store


def change(store: Path) -> Any:
    with Store(store) as st:
        a, b = load_result(st, "run-a"), load_result(st, "run-b")
        return diagnose_change(diagnose(a, topics=False), diagnose(b, topics=False), allow_poor_pairing=True)


def test_a_metric_run_b_did_not_measure_fixes_nothing(tmp_path: Path) -> None:
    c = change(two_runs(tmp_path, ["rouge_l"]))
    assert c.now_passing == 0 and c.now_failing == 0
    assert all(x.fixed == 0 and x.introduced == 0 for x in c.causes)
    assert c.changed == ()
    (nj,) = c.not_judged
    assert (nj.metric, nj.run, nj.failing, nj.everywhere) == ("exact_match", "A", 6, True)
    assert nj.describe() == "exact_match: not measured in B, 6 samples failing in A cannot be judged"


def test_what_both_runs_measured_is_still_judged(tmp_path: Path) -> None:
    # run B measures both metrics and answers exactly: the six samples are fixed, as before
    c = change(two_runs(tmp_path, ["exact_match", "rouge_l"], close=False))
    assert c.now_passing == 6 and c.not_judged == ()


def test_a_metric_skipped_on_a_sample_in_b_leaves_that_sample_unjudged(tmp_path: Path) -> None:
    # B measures exact_match, but samples s0 and s1 have no reference there: skipped, not passed
    c = change(two_runs(tmp_path, ["exact_match", "rouge_l"], no_reference=(0, 1)))
    assert c.now_passing == 0, "a skipped metric counted as fixed"
    (nj,) = c.not_judged
    assert (nj.metric, nj.run, nj.failing, nj.everywhere) == ("exact_match", "A", 2, False)
    assert "not measured in B on these samples" in nj.describe()


def test_a_metric_only_b_measured_introduces_nothing(tmp_path: Path) -> None:
    store = tmp_path / "runs.db"
    ragsight.evaluate(rows(close=False), ["rouge_l"], store=store, run_id="run-a")
    ragsight.evaluate(rows(), ["exact_match", "rouge_l"], store=store, run_id="run-b")
    c = change(store)
    assert c.now_failing == 0 and all(x.introduced == 0 for x in c.causes)
    (nj,) = c.not_judged
    assert (nj.metric, nj.run, nj.failing) == ("exact_match", "B", 6)
    assert nj.describe() == "exact_match: not measured in A, 6 samples failing in B cannot be judged"


def test_the_command_says_it_in_text_and_json(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    store = two_runs(tmp_path, ["rouge_l"])
    code = cli.main(["diagnose", "run-a", "run-b", "--store", str(store)])
    text = capsys.readouterr().out
    assert code == 0
    assert "Now passing: 0; now failing: 0." in text
    assert "exact_match: not measured in B, 6 samples failing in A cannot be judged" in " ".join(text.split())
    code = cli.main(["diagnose", "run-a", "run-b", "--store", str(store), "--json"])
    payload = json.loads(capsys.readouterr().out)
    assert code == 0 and payload["now_passing"] == 0
    assert payload["not_judged"] == [{
        "metric": "exact_match", "failing_in": "A", "not_measured_in": "B", "samples": 6, "whole_run": True,
        "line": "exact_match: not measured in B, 6 samples failing in A cannot be judged"}]


def test_a_line_break_in_a_sample_id_cannot_forge_a_line(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    store = tmp_path / "runs.db"
    forged = "s0\nexact_match 1 0 6 0 -6"
    a = rows(close=True)
    b = rows(close=False)
    a[0]["id"] = b[0]["id"] = forged
    ragsight.evaluate(a, ["exact_match"], store=store, run_id="run-a")
    ragsight.evaluate(b, ["exact_match"], store=store, run_id="run-b")
    assert cli.main(["diagnose", "run-a", "run-b", "--store", str(store)]) == 0
    out = capsys.readouterr().out
    assert "s0\\nexact_match" in out
    assert not any(line.startswith("exact_match 1 0 6") for line in out.splitlines())
