"""Run comparison: pairing by sample id, hand-computed differences, Holm, verdicts, the
experiment table, and the terminal output (golden file; regenerate with UPDATE_GOLDEN=1)."""

from __future__ import annotations

import io
import os
from pathlib import Path

import pytest
from rich.console import Console

from ragsight import Store
from ragsight.cli import main
from ragsight.errors import ConfigError
from ragsight.report import compare, compare_runs, holm, load_runs, print_comparison
from tests.unit.test_report_data import put_run

GOLDEN = Path(__file__).resolve().parents[1] / "fixtures" / "golden"
IDS = [f"s{i}" for i in range(1, 9)]


def three_runs(store: Store) -> list[str]:
    """Baseline A; B better on faithfulness (7 pairs, all +) and noise_sensitivity (8 pairs,
    all lower); C equal to A on faithfulness and worse on noise (n.s.)."""
    fa = [0.5, 0.6, 0.7, 0.4, 0.5, 0.6, 0.7, "failed:judge timed out"]
    fb = [0.7, 0.9, 0.8, 0.6, 0.8, 0.7, 0.9, 0.9]
    na = [0.4] * 8
    nb = [0.1, 0.2, 0.1, 0.2, 0.1, 0.2, 0.1, 0.2]
    nc = [0.5, 0.4, 0.4, 0.4, 0.4, 0.4, 0.4, 0.4]
    cp = [1.0, 0.5, 1.0, 0.5, 1.0, 0.5, 1.0, 0.5]
    lower = frozenset({"noise_sensitivity"})
    put_run(
        store,
        "run-A",
        {
            "faithfulness": dict(zip(IDS, fa)),
            "noise_sensitivity": dict(zip(IDS, na)),
            "context_precision": dict(zip(IDS, cp)),
        },
        metadata={"chunk_size": 512, "top_k": 3, "model": "llama3.1:8b"},
        lower=lower,
    )
    put_run(
        store,
        "run-B",
        {
            "faithfulness": dict(zip([*IDS, "s9"], [*fb, 1.0])),
            "noise_sensitivity": dict(zip(IDS, nb)),
            "context_precision": dict(zip(IDS, cp)),
        },
        metadata={"chunk_size": 1024, "top_k": 5, "model": "llama3.1:8b"},
        lower=lower,
    )
    put_run(
        store,
        "run-C",
        {"faithfulness": dict(zip(IDS, fa)), "noise_sensitivity": dict(zip(IDS, nc))},
        metadata={"chunk_size": 2048, "top_k": 10, "model": "deepseek-r1:7b", "fusion": True},
        lower=lower,
    )
    return ["run-A", "run-B", "run-C"]


def test_holm_by_hand() -> None:
    # sorted 0.01, 0.02, 0.04 -> 3*0.01=0.03, max(0.03, 2*0.02)=0.04, max(0.04, 1*0.04)=0.04
    assert holm([0.04, 0.01, None, 0.02]) == pytest.approx([0.04, 0.03, None, 0.04])
    # monotone: a later larger raw p never gets a smaller adjusted p
    assert holm([0.01, 0.011]) == pytest.approx([0.02, 0.02])
    assert holm([0.6, 0.9]) == pytest.approx([1.0, 1.0])  # 2 * 0.6 caps at 1; 0.9 follows it
    assert holm([]) == []


def test_two_runs_paired_on_shared_scored_samples() -> None:
    with Store(":memory:") as store:
        three_runs(store)
        cmp = compare_runs(store, ["run-A", "run-B"])
    rows = {r.metric: r for r in cmp.paired}
    f = rows["faithfulness"]
    # s9 exists only in B; s8 failed in A: 7 pairs of 8 shared samples
    assert (f.difference.n, f.shared) == (7, 8)
    assert f.difference.diff == pytest.approx((0.2 + 0.3 + 0.1 + 0.2 + 0.3 + 0.1 + 0.2) / 7)
    assert f.difference.mean_a == pytest.approx(4.0 / 7)
    # all 7 differences positive: exact sign-flip p = 2 / 2**7
    assert f.difference.exact and f.difference.p_value == pytest.approx(2 / 128)
    n = rows["noise_sensitivity"]
    assert n.difference.n == 8 and n.difference.p_value == pytest.approx(2 / 256)
    assert n.difference.diff == pytest.approx(-0.25)
    c = rows["context_precision"]
    assert c.difference.diff == 0 and c.difference.p_value == 1.0
    # Holm over the three tests: sorted 1/128 (x3), 1/64 (x2), 1 (x1)
    assert n.p_holm == pytest.approx(3 / 128)
    assert f.p_holm == pytest.approx(max(3 / 128, 2 / 64))
    assert c.p_holm == 1.0
    assert f.verdict == "B is better (p=0.031)"
    # noise sensitivity went down: lower is better, so B wins
    assert n.verdict == "B is better (p=0.023)"
    assert c.verdict.startswith("no significant difference")


def test_verdict_uses_the_holm_adjusted_p() -> None:
    with Store(":memory:") as store:
        three_runs(store)
        strict = compare_runs(store, ["run-A", "run-B"], alpha=0.025)
    rows = {r.metric: r for r in strict.paired}
    assert rows["faithfulness"].difference.p_value < 0.025  # raw p passes...
    assert rows["faithfulness"].verdict.startswith(
        "no significant difference"
    )  # ...Holm's does not
    assert rows["noise_sensitivity"].verdict == "B is better (p=0.023)"


def test_experiment_table_marks_the_best_per_metric_and_respects_direction() -> None:
    with Store(":memory:") as store:
        three_runs(store)
        cmp = compare_runs(store, ["run-A", "run-B", "run-C"])
    table = {r.metric: r for r in cmp.table}
    assert table["faithfulness"].means[1] == pytest.approx(
        sum([0.7, 0.9, 0.8, 0.6, 0.8, 0.7, 0.9, 0.9, 1.0]) / 9
    )
    assert table["faithfulness"].best == (1,)
    assert table["noise_sensitivity"].best == (1,)  # lowest
    assert table["noise_sensitivity"].lower_is_better
    # C has no context_precision: None, and A and B tie
    assert table["context_precision"].means[2] is None
    assert table["context_precision"].best == (0, 1)
    # overall over the metrics every run has (faithfulness, 1 - noise): their mean, and the
    # harmonic mean beside it; context_precision is left out, with the reason
    assert cmp.overall_metrics == ("faithfulness", "noise_sensitivity")
    fa, na = 4.0 / 7, 0.4
    assert cmp.overall[0] == pytest.approx((fa + (1 - na)) / 2)
    assert cmp.overall_harmonic[0] == pytest.approx(2 / (1 / fa + 1 / (1 - na)))
    assert cmp.overall_left_out == (("context_precision", "run C does not have it"),)
    # every run compared with A: 3 metrics for B, 2 for C (C lacks context_precision)
    assert [(r.other, r.metric) for r in cmp.paired] == [
        ("B", "faithfulness"),
        ("B", "noise_sensitivity"),
        ("B", "context_precision"),
        ("C", "faithfulness"),
        ("C", "noise_sensitivity"),
    ]
    assert cmp.differing_keys() == {"chunk_size", "top_k", "model", "fusion"}
    assert cmp.runs[2].config["fusion"] is True


def test_compare_refuses_one_run_and_the_same_run_twice() -> None:
    with Store(":memory:") as store:
        three_runs(store)
        runs = load_runs(store, ["run-A"])
        with pytest.raises(ConfigError, match="at least two"):
            compare(runs)
        with pytest.raises(ConfigError, match="given twice"):
            load_runs(store, ["run-A", "run-A"])


def render(cmp_console_width: int = 80) -> str:
    with Store(":memory:") as store:
        ids = three_runs(store)
        cmp = compare_runs(store, ids)
    console = Console(width=cmp_console_width, record=True, color_system=None, file=io.StringIO())
    print_comparison(cmp, console)
    # trailing spaces (rich pads titles) are dropped so an editor cannot break the golden file
    return "\n".join(line.rstrip() for line in console.export_text().splitlines()) + "\n"


def test_terminal_comparison_matches_golden() -> None:
    text = render()
    path = GOLDEN / "compare_three_runs.txt"
    if os.environ.get("UPDATE_GOLDEN") == "1":
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text, encoding="utf-8")
    assert path.exists(), "golden file missing; run with UPDATE_GOLDEN=1 to create it"
    assert text == path.read_text(encoding="utf-8")


def test_terminal_comparison_says_what_it_compares() -> None:
    text = render()
    assert "each of B..C against run A (baseline)" in text
    assert "Holm-adjusted p < 0.05 over all 5 comparisons" in text
    assert "noise_sensitivity ↓ B vs A (0.400 → 0.150): B is better" in " ".join(text.split())
    assert "0.611*" not in text  # no star on a value that is not the best


def test_cli_compare(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    db = tmp_path / "runs.db"
    with Store(db) as store:
        three_runs(store)
    assert main(["compare", "run-A", "run-B", "--store", str(db)]) == 0
    out = capsys.readouterr().out
    assert "Comparing run B with run A (baseline)" in out
    assert "faithfulness ↑" in out and "7/8" in out
    assert main(["compare", "run-A", "--store", str(db)]) == 2
    assert "at least two runs" in capsys.readouterr().err
    assert main(["compare", "run-A", "run-B", "--store", str(tmp_path / "none.db")]) == 2
    assert not (tmp_path / "none.db").exists()
