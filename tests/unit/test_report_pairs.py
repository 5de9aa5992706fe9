"""``ragsight calibrate`` with a pair-labels file: each metric's difference between two samples
against human preferences, by RAGChecker's protocol."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from scipy import stats

from ragsight.cli import main
from ragsight.errors import InputError
from ragsight.report import calibrate_pairs, is_pair_labels
from ragsight.store import Store
from tests.unit.test_report_data import put_run

VALUES = {"factual_correctness": {"a": 0.9, "b": 0.2, "c": 0.5, "d": 0.6, "e": 0.1, "f": 0.8},
          "answer_similarity": {"a": 0.1, "b": 0.4, "c": 0.3, "d": 0.2, "e": 0.7}}  # f not scored
PAIRS = [  # (id_1, id_2, two annotators' preferences: positive when id_2 is better)
    ("a", "b", [-2, -1]),
    ("c", "d", [1, 0]),
    ("e", "f", [2, 2]),
]


@pytest.fixture()
def run(tmp_path: Path) -> tuple[Path, Path]:
    db = tmp_path / "runs.db"
    with Store(db) as st:
        put_run(st, "r1", VALUES)
    labels = tmp_path / "pairs.jsonl"
    labels.write_text("".join(json.dumps({"id_1": a, "id_2": b, "overall": ys}) + "\n" for a, b, ys in PAIRS))
    return db, labels


def test_difference_repeated_per_annotator_and_median_fill(run: tuple[Path, Path]) -> None:
    db, labels = run
    assert is_pair_labels(labels)
    with Store(db) as st:
        rep = calibrate_pairs((st, "r1"), labels, "overall")
    assert (rep.matched, rep.n_labels) == (3, 6)
    good, noisy = rep.metrics
    x = [-0.7, -0.7, 0.1, 0.1, 0.7, 0.7]
    y = [-2, -1, 1, 0, 2, 2]
    assert good.correlations.pearson == pytest.approx(stats.pearsonr(x, y)[0])
    assert good.correlations.spearman == pytest.approx(stats.spearmanr(x, y)[0])
    assert (good.n_pairs, good.filled) == (3, 0)
    # answer_similarity has no value for f: that pair takes the median of the other differences (0.3, -0.1)
    xn = [0.3, 0.3, -0.1, -0.1, 0.1, 0.1]
    assert noisy.correlations.pearson == pytest.approx(stats.pearsonr(xn, y)[0])
    assert (noisy.n_pairs, noisy.filled) == (2, 1)
    assert any("median" in n for n in rep.notes)


def test_cli_detects_a_pair_file(run: tuple[Path, Path], capsys: pytest.CaptureFixture[str]) -> None:
    db, labels = run
    assert main(["calibrate", "r1", "--labels", str(labels), "--label", "overall", "--store", str(db),
                 "--metric", "factual_correctness"]) == 0
    text = capsys.readouterr().out
    assert "pairwise preferences 'overall'" in text and "3 of 3 labelled pairs" in text
    assert f"{stats.pearsonr([-0.7, -0.7, 0.1, 0.1, 0.7, 0.7], [-2, -1, 1, 0, 2, 2])[0]:.3f}" in text
    assert main(["calibrate", "r1", "--labels", str(labels), "--label", "overall", "--store", str(db),
                 "--json"]) == 0
    data = json.loads(capsys.readouterr().out)
    assert [m["metric"] for m in data["metrics"]] == ["factual_correctness", "answer_similarity"]


def test_pairs_that_match_no_sample_are_an_error(tmp_path: Path, run: tuple[Path, Path]) -> None:
    db, _ = run
    bad = tmp_path / "bad.jsonl"
    bad.write_text(json.dumps({"id_1": "x", "id_2": "y", "overall": 1}) + "\n")
    with Store(db) as st, pytest.raises(InputError, match="none of the 1 labelled pairs"):
        calibrate_pairs((st, "r1"), bad, "overall")
    plain = tmp_path / "plain.jsonl"
    plain.write_text(json.dumps({"id": "a", "overall": 1}) + "\n")
    assert not is_pair_labels(plain)
