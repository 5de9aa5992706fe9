"""Calibration against human labels: the join by id, and every statistic checked by hand."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from scipy import stats as sps

from ragsight import Store
from ragsight.cli import main
from ragsight.errors import ConfigError, InputError
from ragsight.report import auroc, calibrate, load_labels
from ragsight.result import load_result
from tests.unit.test_report_data import put_run

IDS = [f"s{i}" for i in range(1, 9)]
FAITH = [0.9, 0.8, 0.75, 0.2, 0.1, 0.6, 0.25, 0.95]
FC = [0.8, 0.9, 0.2, 0.1, 0.25, 0.8, 0.5, 0.71]
LABEL = [1, 1, 1, 0, 0, 1, 0, 0]  # s8: confidently wrong
NOISE = [0.1, 0.3, 0.2, 0.6, 0.9, 0.4, 0.5, 0.2]


def make_run(store: Store) -> None:
    put_run(
        store,
        "cal",
        {
            "faithfulness": {**dict(zip(IDS, FAITH)), "s9": 0.5},
            "factual_correctness": {**dict(zip(IDS, FC)), "s9": "failed:judge returned no JSON"},
            "noise_sensitivity": {**dict(zip(IDS, NOISE)), "s9": 0.0},
        },
        lower=frozenset({"noise_sensitivity"}),
    )


def write_labels(path: Path) -> Path:
    rows = [{"id": sid, "correct": bool(y)} for sid, y in zip(IDS, LABEL)]
    rows.append({"id": "zz", "correct": True})  # no such sample
    path.write_text("".join(json.dumps(r) + "\n" for r in rows), encoding="utf-8")
    return path


@pytest.fixture
def report(tmp_path: Path):  # type: ignore[no-untyped-def]
    with Store(":memory:") as store:
        make_run(store)
        return calibrate((store, "cal"), write_labels(tmp_path / "labels.jsonl"), "correct")


def test_join_reports_unmatched_and_unlabelled(report) -> None:  # type: ignore[no-untyped-def]
    assert report.label_kind == "binary"
    assert (report.n_labels, report.matched) == (9, 8)
    assert report.unmatched_ids == ("zz",)
    assert report.unlabelled == 1  # s9
    assert (report.n_positive, report.n_negative) == (4, 4)


def test_binary_statistics_by_hand(report) -> None:  # type: ignore[no-untyped-def]
    f = next(m for m in report.metrics if m.metric == "faithfulness")
    assert f.n == 8 and not f.oriented
    # each positive (0.9, 0.8, 0.75, 0.6) beats 3 of the 4 negatives (0.2, 0.1, 0.25, 0.95)
    assert f.auroc == pytest.approx(12 / 16)
    t = f.at_threshold
    assert t is not None and t.threshold == 0.5
    assert (t.tp, t.fp, t.tn, t.fn) == (4, 1, 3, 0)
    assert t.accuracy == pytest.approx(7 / 8)
    # p_o = 7/8, p_e = (5*4 + 3*4) / 64 = 1/2
    assert t.kappa == pytest.approx((7 / 8 - 1 / 2) / (1 / 2))
    # Youden's J: t=0.6 catches all 4 positives and only 0.95 of the negatives (J = 0.75)
    assert f.best_threshold == 0.6
    assert f.at_best is not None and f.at_best.accuracy == pytest.approx(7 / 8)
    # bins: {0.9,0.95}|0.5 -> .425*2, 0.8 -> .2, 0.75 -> .25, 0.6 -> .4, {0.2,0.25}|0 -> .225*2, 0.1 -> .1
    assert f.ece == pytest.approx((0.425 * 2 + 0.2 + 0.25 + 0.4 + 0.225 * 2 + 0.1) / 8)
    rho = sps.spearmanr(FAITH, LABEL)[0]
    assert f.correlations.spearman == pytest.approx(rho)
    assert f.correlations.pearson == pytest.approx(sps.pearsonr(FAITH, LABEL)[0])


def test_group_statistics_in_the_papers_style(report) -> None:  # type: ignore[no-untyped-def]
    g = next(m for m in report.metrics if m.metric == "faithfulness").groups
    assert g is not None and g.alternative == "greater"
    assert (g.a.n, g.b.n) == (4, 4)
    assert g.a.mean == pytest.approx(0.7625) and g.a.sd == pytest.approx(0.125)
    assert g.b.mean == pytest.approx(0.375)
    assert g.a.mean_sd() == "0.76 (0.12)"
    welch = sps.ttest_ind(
        [0.9, 0.8, 0.75, 0.6], [0.2, 0.1, 0.25, 0.95], equal_var=False, alternative="greater"
    )
    assert g.p_value == pytest.approx(welch.pvalue)


def test_concordance_table_by_hand(report) -> None:  # type: ignore[no-untyped-def]
    cc = report.concordance
    assert cc is not None and (cc.m1, cc.m2, cc.n) == ("faithfulness", "factual_correctness", 8)
    hi, lo = cc.table.correct_given_high, cc.table.wrong_given_low
    # faithfulness > 0.7: s1 s2 s3 s8 (3 correct); fc > 0.7: s1 s2 s6 s8 (3); both: s1 s2 s8 (2)
    assert [(r.k, r.n) for r in (hi.m1, hi.m2, hi.joint)] == [(3, 4), (3, 4), (2, 3)]
    # faithfulness < 0.3: s4 s5 s7 (3 wrong); fc < 0.3: s3 s4 s5 (2 wrong); both: s4 s5 (2)
    assert [(r.k, r.n) for r in (lo.m1, lo.m2, lo.joint)] == [(3, 3), (2, 3), (2, 2)]
    assert cc.table.t_high == (0.7, 0.7) and cc.table.t_low == (0.3, 0.3)


def test_lower_is_better_metric_enters_as_one_minus_value(report) -> None:  # type: ignore[no-untyped-def]
    n = next(m for m in report.metrics if m.metric == "noise_sensitivity")
    assert n.oriented
    assert n.auroc == pytest.approx(auroc([1 - v for v in NOISE], LABEL))
    assert n.auroc is not None and n.auroc > 0.5
    assert any("noise_sensitivity" in note for note in report.notes)


def test_failed_scores_are_left_out_not_zero(tmp_path: Path) -> None:
    with Store(":memory:") as store:
        make_run(store)
        labels = {**{sid: y for sid, y in zip(IDS, LABEL)}, "s9": 1}
        rep = calibrate((store, "cal"), labels, metrics=["factual_correctness"])
    fc = rep.metrics[0]
    assert (fc.n, fc.not_scored) == (8, 1)


def test_graded_labels_give_correlations_and_binarise_on_request(tmp_path: Path) -> None:
    grades = [5, 4, 4, 1, 2, 3, 2, 1]
    csv_path = tmp_path / "grades.csv"
    csv_path.write_text(
        "id,grade\n" + "".join(f"{s},{g}\n" for s, g in zip(IDS, grades)) + "s9,\n",
        encoding="utf-8",
    )
    assert load_labels(csv_path, "grade")["s1"] == "5"
    with Store(":memory:") as store:
        make_run(store)
        result = load_result(store, "cal")
    graded = calibrate(result, csv_path, "grade", ["faithfulness"])
    f = graded.metrics[0]
    assert graded.label_kind == "graded" and f.auroc is None and f.groups is None
    assert f.correlations.kendall == pytest.approx(sps.kendalltau(FAITH, grades)[0])
    assert graded.concordance is None
    assert graded.unlabelled == 1  # s9's empty label
    binary = calibrate(result, csv_path, "grade", ["faithfulness"], label_threshold=4)
    assert binary.n_positive == 3  # grades 5, 4, 4
    assert binary.metrics[0].auroc == pytest.approx(auroc(FAITH, [g >= 4 for g in grades]))


def test_label_words_and_bad_values() -> None:
    with Store(":memory:") as store:
        make_run(store)
        result = load_result(store, "cal")
    rows = [{"id": "s1", "ok": "yes"}, {"id": "s2", "ok": "wrong"}, {"id": "s3", "ok": "maybe"},
            {"id": "s4", "ok": "1_0"}]
    rep = calibrate(result, rows, "ok", ["faithfulness"])
    assert (rep.n_positive, rep.n_negative) == (1, 1)
    assert [(sid, why.split(" is ")[0]) for sid, why in rep.invalid] == [("s3", "label 'maybe'"), ("s4", "label '1_0'")]
    assert "neither a number (like 0.75) nor a word such as yes/no" in rep.invalid[0][1]
    with pytest.raises(InputError, match="none of the 1 labels matches"):
        calibrate(result, {"nope": 1}, "ok")
    with pytest.raises(InputError, match="no field 'score'"):
        calibrate(result, rows, "score")
    with pytest.raises(ConfigError, match="has no metric answer_relevancy"):
        calibrate(result, rows, "ok", ["answer_relevancy"])
    with pytest.raises(ConfigError, match="--pair"):
        calibrate(result, rows, "ok", pair=("faithfulness", "context_recall"))


def test_default_pair_missing_is_a_note_not_an_error() -> None:
    with Store(":memory:") as store:
        put_run(store, "f", {"faithfulness": dict(zip(IDS, FAITH))})
        rep = calibrate((store, "f"), dict(zip(IDS, LABEL)))
    assert rep.concordance is None
    assert any("no concordance table" in n for n in rep.notes)


def test_cli_calibrate_text_and_json(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    db = tmp_path / "runs.db"
    with Store(db) as store:
        make_run(store)
    labels = write_labels(tmp_path / "labels.jsonl")
    args = ["calibrate", "cal", "--labels", str(labels), "--label", "correct", "--store", str(db)]
    assert main(args) == 0
    out = " ".join(capsys.readouterr().out.split())
    assert "WARNING: 1 label id(s) match no sample of the run (89% paired): zz" in out
    assert "8 of 9 labels paired with a sample of the run by id" in out
    assert "0.76 (0.12)" in out  # faithfulness, correct=1: mean (s.d.)
    assert "0.75 (3/4)" in out and "0.67 (2/3)" in out  # concordance cells
    assert main([*args, "--json", "--metric", "faithfulness", "--threshold", "0.7"]) == 0
    data = json.loads(capsys.readouterr().out)
    assert [m["metric"] for m in data["metrics"]] == ["faithfulness"]
    assert data["metrics"][0]["at_threshold"]["threshold"] == 0.7
    assert data["metrics"][0]["auroc"] == pytest.approx(0.75)
    assert data["concordance"]["table"]["wrong_given_low"]["joint"] == {
        "n": 2,
        "k": 2,
        "probability": 1.0,
    }
    assert data["unmatched_ids"] == ["zz"]
    assert main([*args, "--pair", "faithfulness", "--t-high", "0.8"]) == 2
    assert "two metric names" in capsys.readouterr().err


def test_cli_calibrate_says_how_many_labels_paired_and_refuses_a_poor_pairing(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    # Labels written for other ids (e.g. data without ids evaluated again after a change): 3 of
    # 8 pair. On main the run was measured on those 3 with a yellow note at most.
    db = tmp_path / "runs.db"
    with Store(db) as store:
        make_run(store)
    labels = tmp_path / "labels.csv"
    labels.write_text(
        "id,correct\n"
        + "".join(f"{sid},{y}\n" for sid, y in zip(["s1", "s2", "s3", "q4", "q5", "q6", "q7", "q8"], LABEL)),
        encoding="utf-8",
    )
    args = ["calibrate", "cal", "--labels", str(labels), "--label", "correct", "--store", str(db)]
    assert main(args) == 2
    err = " ".join(capsys.readouterr().err.split())
    assert "only 3 of 8 labels (38%) pair with a sample of run cal by id" in err
    assert "--allow-poor-pairing" in err
    assert main([*args, "--allow-poor-pairing", "--metric", "faithfulness"]) == 0
    out = " ".join(capsys.readouterr().out.split())
    assert "3 of 8 labels paired with a sample of the run by id" in out
    assert "WARNING: 5 label id(s) match no sample of the run (38% paired): q4, q5, q6, q7, q8" in out


def test_cli_calibrate_with_graded_labels_says_they_are_graded(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    db = tmp_path / "runs.db"
    with Store(db) as store:
        make_run(store)
    grades = tmp_path / "grades.csv"
    grades.write_text("id,grade\n" + "".join(f"{s},{g}\n" for s, g in zip(IDS, [5, 4, 4, 1, 2, 3, 2, 1])),
                      encoding="utf-8")
    assert main(["calibrate", "cal", "--labels", str(grades), "--label", "grade", "--store", str(db)]) == 0
    out = " ".join(capsys.readouterr().out.split())
    # on main: "(0 with grade=1, 0 with grade=0)"
    assert "with grade=1" not in out
    assert ("8 of 8 labels paired with a sample of the run by id (graded labels from 1 to 5, not "
            "binarised: --label-threshold X makes label >= X count as 1)") in out
