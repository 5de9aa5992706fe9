"""The overall score and the means it combines: a metric with no mean
is named with the reason, never dropped silently; a cosine-based mean below 0 is reported as
it is and enters the overall clamped, in evaluate, compare, the multi-run report and repeats;
the headline is the mean of the metric means, the harmonic mean beside it."""

from __future__ import annotations

import io
from collections.abc import Sequence
from pathlib import Path

import numpy as np
import pytest
from rich.console import Console

import ragsight
from ragsight import Store
from ragsight.cli import main, print_summary
from ragsight.report import compare, print_comparison, render_report
from ragsight.result import load_result, overall_of
from tests.fakes.embedder import TableEmbedder
from tests.unit.test_report_data import put_run

ROWS = [
    {"id": "a", "response": "Paris is the capital", "reference": "The capital is Paris"},
    {"id": "b", "response": "It is Lyon", "reference": "The capital is Paris"},
]


def opposite_embedder() -> TableEmbedder:
    """Each response points away from its reference: answer_similarity is -1 on both samples."""
    up, down = [1.0, 0.0, 0.0], [-1.0, 0.0, 0.0]
    return TableEmbedder({"Paris is the capital": down, "It is Lyon": down,
                          "The capital is Paris": up, "ragsight preflight": up})


def text_of(render: object, *args: object, width: int = 80) -> str:
    console = Console(width=width, record=True, color_system=None, file=io.StringIO())
    render(*args, console)  # type: ignore[operator]
    return console.export_text()


def test_a_negative_cosine_mean_is_reported_as_is_and_enters_the_overall_clamped() -> None:
    result = ragsight.evaluate(ROWS, ["answer_similarity", "token_f1"], embedder=opposite_embedder())
    sim = result.summary["answer_similarity"]
    assert sim.mean == pytest.approx(-1.0)  # the raw mean cosine, as the definition says
    detail = result.overall_detail
    assert detail.entries["answer_similarity"] == 0.0 and detail.clamped == ("answer_similarity",)
    f1 = result.summary["token_f1"].mean
    assert f1 is not None and f1 > 0
    # the headline is the mean of the entries; the harmonic mean reads 0 (one entry is 0)
    assert result.overall == pytest.approx(f1 / 2)
    assert result.overall_harmonic == 0.0
    text = text_of(print_summary, result)
    assert f"overall {f1 / 2:.3f}: mean of 2 metric means" in text
    assert "harmonic mean 0.000" in text and "clamped to [0, 1]: answer_similarity" in " ".join(text.split())
    assert "↓" not in text  # no lower-is-better metric here, so no word of inverting one


def test_the_summary_says_a_lower_is_better_mean_enters_inverted_only_when_there_is_one(
    tmp_path: Path,
) -> None:
    with Store(tmp_path / "runs.db") as store:
        put_run(store, "low", {"token_f1": {"s1": 0.6, "s2": 0.8}, "noise_sensitivity": {"s1": 0.2, "s2": 0.0}},
                lower=frozenset({"noise_sensitivity"}))
        result = load_result(store, "low")
    text = text_of(print_summary, result)
    assert "noise_sensitivity ↓" in text
    assert f"overall {(0.7 + 0.9) / 2:.3f}: mean of 2 metric means (↓ as 1 - mean)" in text


def test_compare_and_the_multi_run_report_take_a_negative_mean(tmp_path: Path,
                                                               capsys: pytest.CaptureFixture[str]) -> None:
    # On main both raised ValueError ("the harmonic mean needs non-negative values").
    db = tmp_path / "runs.db"
    with Store(db) as store:
        for run_id, values in (("neg-a", [-0.4, -0.2, 0.1]), ("neg-b", [-0.1, 0.2, 0.3])):
            put_run(store, run_id, {"answer_similarity": dict(zip(["s1", "s2", "s3"], values)),
                                    "token_f1": dict(zip(["s1", "s2", "s3"], [0.5, 0.5, 0.8]))})
        runs = [load_result(store, "neg-a"), load_result(store, "neg-b")]
    cmp = compare(runs)
    assert cmp.table[0].means[0] == pytest.approx(-0.5 / 3)  # reported raw
    assert cmp.overall[0] == pytest.approx((0.0 + 0.6) / 2)  # entered clamped
    assert cmp.overall_harmonic[0] == 0.0
    text = text_of(print_comparison, cmp)
    assert "-0.167" in text and "overall (mean of means)" in text
    html = render_report(runs)
    assert "-0.167" in html and "harmonic mean" in html
    assert main(["compare", "neg-a", "neg-b", "--store", str(db)]) == 0
    assert main(["report", "neg-a", "neg-b", "--store", str(db), "--out", str(tmp_path / "r.html")]) == 0
    assert "Traceback" not in capsys.readouterr().err


def test_the_headline_is_not_zero_when_one_metric_mean_is_zero() -> None:
    ov = overall_of({"faithfulness": 0.9, "context_recall": 0.0, "noise_sensitivity": 0.2},
                    {"noise_sensitivity"})
    assert ov.mean == pytest.approx((0.9 + 0.0 + 0.8) / 3)
    assert ov.harmonic == 0.0
    assert ov.entries == {"faithfulness": 0.9, "context_recall": 0.0, "noise_sensitivity": pytest.approx(0.8)}


class FailingEmbedder:
    """Answers the preflight, then fails: the server went away after the run started."""

    name = "test:flaky"

    def __init__(self) -> None:
        self.calls = 0

    async def embed(self, texts: Sequence[str], kind: str = "passage") -> np.ndarray:
        self.calls += 1
        if self.calls > 1:
            raise ConnectionError("embedding server at http://10.0.0.9:8000: connection refused")
        return np.ones((len(texts), 3)) / np.sqrt(3)

    async def aclose(self) -> None:
        return None


def test_a_metric_failed_everywhere_is_named_in_the_overall_with_its_cause() -> None:
    # On main the overall printed the other metric's mean alone, without a word.
    result = ragsight.evaluate(ROWS, ["answer_similarity", "token_f1"], embedder=FailingEmbedder())
    assert result.summary["answer_similarity"].counts["failed"] == 2
    detail = result.overall_detail
    assert list(detail.left_out) == ["answer_similarity"]
    why = detail.left_out["answer_similarity"]
    assert why.startswith("failed on all 2 samples: internal error: ConnectionError: embedding server at "
                          "http://10.0.0.9:8000: connection refused")
    assert result.overall == result.summary["token_f1"].mean
    text = " ".join(text_of(print_summary, result).split())
    assert "LEFT OUT of the overall: answer_similarity: failed on all 2 samples" in text
    # the cause is shown whole, not cut at its first ':'
    assert ("failed answer_similarity on 2 samples: internal error: ConnectionError: embedding server "
            "at http://10.0.0.9:8000: connection refused") in text
    html = render_report([result])
    assert "The overall leaves out 1 metric(s) with no mean" in html
    assert "connection refused" in html
