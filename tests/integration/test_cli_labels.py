"""docs/review.md from the outside: label files as people and other tools write them go into the
store with `ragsight labels import`, come out with `ragsight labels export` (and back in), and
`ragsight calibrate RUN --label FIELD` reads them, with the corrected estimate in --json."""

from __future__ import annotations

import csv
import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from ragsight.cli import main
from ragsight.report import corrected_estimate
from ragsight.store import Store
from tests.fakes import FakeOpenAIServer
from tests.reliability.world import JudgeWorld, make_samples


@pytest.fixture(autouse=True)
def _key(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("OPENAI_API_KEY", "sk-test-labels")


@pytest.fixture()
def judge() -> Iterator[FakeOpenAIServer]:
    with FakeOpenAIServer(handler=JudgeWorld()) as srv:
        yield srv


def run(capsys: pytest.CaptureFixture[str], *argv: str) -> tuple[int, str, str]:
    code = main(list(argv))
    cap = capsys.readouterr()
    assert "Traceback" not in cap.out + cap.err
    return code, cap.out, cap.err


def write_jsonl(path: Path, rows: list[dict[str, Any]]) -> Path:
    path.write_text("".join(json.dumps(r) + "\n" for r in rows), encoding="utf-8")
    return path


@pytest.fixture()
def evaluated(tmp_path: Path, judge: FakeOpenAIServer, capsys: pytest.CaptureFixture[str],
              monkeypatch: pytest.MonkeyPatch) -> list[dict[str, Any]]:
    monkeypatch.chdir(tmp_path)
    rows = make_samples(24)
    write_jsonl(tmp_path / "data.jsonl", rows)
    code, out, err = run(capsys, "evaluate", "data.jsonl", "--judge", "openai:m", "--base-url", judge.url,
                         "--metrics", "faithfulness", "--quiet")
    assert code == 0, out + err
    return rows


def test_import_a_csv_by_id_and_by_question_export_and_import_back(
    tmp_path: Path, evaluated: list[dict[str, Any]], judge: FakeOpenAIServer, capsys: pytest.CaptureFixture[str],
) -> None:
    rows = evaluated
    with (tmp_path / "labels.csv").open("w", newline="", encoding="utf-8") as f:
        w = csv.writer(f)
        w.writerow(["id", "question", "correct", "who"])
        for i, r in enumerate(rows[:12]):
            # half the rows name the sample by id, half by its question (a spreadsheet's way)
            w.writerow([r["id"] if i % 2 else "", "" if i % 2 else r["question"], "yes" if i % 3 else "no", "ana"])
        w.writerow(["nope", "", "yes", "ana"])          # no such sample
        w.writerow([rows[12]["id"], "", "maybe", "ana"])  # unreadable label
    code, out, err = run(capsys, "labels", "import", "labels.csv", "--run", "last", "--label", "correct")
    assert code == 0, err
    assert "12 label(s) 'correct' from labels.csv written" in " ".join(out.split())
    assert "2 row(s) left out" in err and "row 14: no sample with id 'nope'" in err
    assert "row 15: field 'correct'" in err and "'maybe'" in err

    with Store(tmp_path / "ragsight.db") as st:
        run_id = st.resolve_run("last")
        got = {lb.sample_id: (lb.value, lb.who, lb.metric) for lb in st.labels(run_id, field="correct")}
    assert got == {r["id"]: (1.0 if i % 3 else 0.0, "ana", "*") for i, r in enumerate(rows[:12])}

    code, out, _ = run(capsys, "labels", "export", "--run", "last", "--out", "out.jsonl")
    assert code == 0 and "12 label(s) written to out.jsonl" in out
    exported = [json.loads(line) for line in (tmp_path / "out.jsonl").read_text().splitlines()]
    assert len(exported) == 12
    assert exported[0]["question"] == rows[0]["question"] and exported[0]["field"] == "correct"
    assert {"sample_key", "sample_id", "metric", "value", "who", "when"} <= set(exported[0])

    # into a fresh store with a re-run of the same data in another order: the labels follow the content
    code, _, _ = run(capsys, "evaluate", "data.jsonl", "--judge", "openai:m", "--metrics", "faithfulness",
                     "--quiet", "--store", "other.db", "--base-url", judge.url)
    assert code == 0
    code, out, err = run(capsys, "labels", "import", "out.jsonl", "--label", "correct", "--store", "other.db")
    assert code == 0, err
    with Store(tmp_path / "other.db") as st:
        back = {lb.sample_id: (lb.value, lb.who, lb.metric, lb.when)
                for lb in st.labels(st.resolve_run("last"), field="correct")}
    assert back == {e["sample_id"]: (e["value"], e["who"], e["metric"], e["when"]) for e in exported}
    # and standard output when no --out
    code, out, _ = run(capsys, "labels", "export", "--store", "other.db")
    assert code == 0 and len(out.splitlines()) == 12


def test_import_refuses_a_file_without_the_label_column(
    tmp_path: Path, evaluated: list[dict[str, Any]], capsys: pytest.CaptureFixture[str],
) -> None:
    write_jsonl(tmp_path / "l.jsonl", [{"id": evaluated[0]["id"], "ok": True}])
    code, _, err = run(capsys, "labels", "import", "l.jsonl", "--run", "last", "--label", "correct")
    assert code == 2
    assert "no label 'correct'" in " ".join(err.split()) and "ok" in err


def test_calibrate_reads_the_imported_labels_from_the_store(
    tmp_path: Path, evaluated: list[dict[str, Any]], capsys: pytest.CaptureFixture[str],
) -> None:
    """docs/review.md: `ragsight labels import FILE --run RUN --label FIELD`, then
    `ragsight calibrate RUN --label FIELD [--json]` with no --labels file."""
    labels = [{"id": r["id"], "correct": i % 4 != 0} for i, r in enumerate(evaluated[:16])]
    write_jsonl(tmp_path / "labels.jsonl", labels)
    assert run(capsys, "labels", "import", "labels.jsonl", "--run", "last", "--label", "correct")[0] == 0
    code, out, err = run(capsys, "calibrate", "last", "--label", "correct", "--json")
    assert code == 0, err
    data = json.loads(out)
    assert (data["matched"], data["n_positive"], data["n_negative"]) == (16, 12, 4)
    faith = data["metrics"][0]
    assert faith["metric"] == "faithfulness" and faith["n"] == 16
    # the corrected estimate beside the raw mean, and what it rests on
    assert faith["n_labels"] == 16 and faith["n_judged"] == 24 and not faith["too_few_labels"]
    assert 0.0 <= faith["mean"] <= 1.0
    low, high = faith["corrected_ci"]
    assert low < faith["corrected_mean"] < high and 0.0 <= faith["corrected_lambda"] <= 1.0
    with Store(tmp_path / "ragsight.db") as st:
        scores = st.scores(st.resolve_run("last"))
    judged = {sid: per["faithfulness"].value for sid, per in scores.items()
              if per["faithfulness"].value is not None}
    assert faith["mean"] == pytest.approx(sum(judged.values()) / len(judged))
    assert faith["corrected_mean"] == pytest.approx(
        corrected_estimate(judged, {r["id"]: float(r["correct"]) for r in labels}).corrected_mean)
    # the same as the file given with --labels
    code, out2, _ = run(capsys, "calibrate", "last", "--labels", "labels.jsonl", "--label", "correct", "--json")
    assert json.loads(out2)["metrics"] == data["metrics"]
    code, text, _ = run(capsys, "calibrate", "last", "--label", "correct")
    assert code == 0 and "16 of 16 labels from the store matched to a sample of the run by content" in " ".join(text.split())
    assert "Means corrected by the labels (PPI)" in text and "WARNING: too few labels" not in text
    code, _, err = run(capsys, "calibrate", "last", "--label", "grade")
    assert code == 2 and "no sample labels 'grade'" in " ".join(err.split())
    # the HTML report shows the same corrected mean beside the raw one
    code, _, _ = run(capsys, "report", "last", "--out", "report.html")
    html = (tmp_path / "report.html").read_text(encoding="utf-8")
    part = html[html.index("Corrected by the labels 'correct'"):]
    part = part[:part.index("</table>")]
    assert f"<td>{faith['corrected_mean']:.3f}</td>" in part and f"<td>{faith['mean']:.3f}</td>" in part
    assert "16 of 24" in part and "too few labels" not in part


def test_calibrate_says_loudly_when_the_corrected_mean_rests_on_too_few_labels(
    tmp_path: Path, evaluated: list[dict[str, Any]], capsys: pytest.CaptureFixture[str],
) -> None:
    write_jsonl(tmp_path / "few.csv", [])
    (tmp_path / "few.csv").write_text("id,correct\n" + "".join(f"{r['id']},{i % 2}\n"
                                                               for i, r in enumerate(evaluated[:6])))
    assert run(capsys, "labels", "import", "few.csv", "--run", "last", "--label", "correct")[0] == 0
    code, text, _ = run(capsys, "calibrate", "last", "--label", "correct")
    assert code == 0
    flat = " ".join(text.split())
    assert "WARNING: too few labels: faithfulness rests on 6 (fewer than 10)" in flat
    code, out, _ = run(capsys, "calibrate", "last", "--label", "correct", "--json")
    faith = json.loads(out)["metrics"][0]
    assert faith["too_few_labels"] is True and faith["n_labels"] == 6
    code, _, _ = run(capsys, "report", "last", "--out", "report.html")
    html = (tmp_path / "report.html").read_text(encoding="utf-8")
    assert "Too few labels:</strong> faithfulness rests on 6 (fewer than 10)" in html


def test_align_refuses_an_alignment_that_does_not_improve_held_out_agreement(
    tmp_path: Path, evaluated: list[dict[str, Any]], judge: FakeOpenAIServer, capsys: pytest.CaptureFixture[str],
) -> None:
    """docs/review.md: claim labels as a reviewing tool writes them (the claim's text, right or
    wrong), then `ragsight align RUN --metric M --label FIELD --out FILE`. The judge answers the
    same with the worked examples, so held-out agreement cannot improve: nothing is saved, exit 1."""
    with Store(tmp_path / "ragsight.db") as st:
        scores = st.scores(st.resolve_run("last"))
    rows = []
    for sid, per in scores.items():
        for k, c in enumerate(per["faithfulness"].evidence.claims):
            rows.append({"id": sid, "metric": "faithfulness", "claim": c.claim, "correct": (len(rows) + k) % 5 != 0})
    assert len(rows) >= 40
    write_jsonl(tmp_path / "claims.jsonl", rows)
    assert run(capsys, "labels", "import", "claims.jsonl", "--run", "last", "--label", "correct")[0] == 0
    asked = len(judge.requests)
    code, out, err = run(capsys, "align", "last", "--metric", "faithfulness", "--label", "correct",
                         "--out", "faith.align.json", "--base-url", judge.url)
    assert code == 1, out + err
    flat = " ".join(out.split())
    assert f"{len(rows)} labelled claim(s)" in flat and "5-fold cross-validation by sample" in flat
    assert "held-out agreement before: kappa" in flat and "held-out agreement after: kappa" in flat
    assert "NOT SAVED: held-out agreement did not improve" in " ".join(err.split())
    assert not (tmp_path / "faith.align.json").exists()
    assert len(judge.requests) > asked  # the held-out folds were judged again with the examples
    assert any("Worked examples" in json.dumps(r.json) for r in judge.requests[asked:])


def test_evaluate_with_an_alignment_file_names_it_and_its_prompt_variant(
    tmp_path: Path, evaluated: list[dict[str, Any]], judge: FakeOpenAIServer, capsys: pytest.CaptureFixture[str],
) -> None:
    from ragsight.report import Agreement, Alignment, AlignmentExample

    a = Alignment("faithfulness", "correct", "r0", None, 0.5,
                  (AlignmentExample("Bags cost 25 euros.", "Checked bags cost 25 euros.", True),), "aligned-0123abcd",
                  Agreement(40, 0.8, 0.5), Agreement(40, 0.9, 0.7), 5, 40, 20, ("examples",), True, "improved")
    a.save(tmp_path / "a.json")
    code, out, err = run(capsys, "evaluate", "data.jsonl", "--judge", "openai:m", "--base-url", judge.url,
                         "--metrics", "faithfulness", "--quiet", "--alignment", "a.json", "--store", "aligned.db")
    assert code == 0, out + err
    assert "Alignment faithfulness:aligned-0123abcd (a.json)" in " ".join(err.split())
    with Store(tmp_path / "aligned.db") as st:
        rid = st.resolve_run("last")
        assert st.run(rid).config["settings"]["alignment"] == "faithfulness:aligned-0123abcd"
        versions = {c["prompt_version"] for c in st.judge_calls(rid) if c["prompt_id"] == "verify_claims"}
    assert versions == {"2+aligned-0123abcd"}
    code, _, err = run(capsys, "evaluate", "data.jsonl", "--judge", "openai:m", "--base-url", judge.url,
                       "--alignment", "nope.json", "--quiet")
    assert code == 2 and "alignment file nope.json does not exist" in err
