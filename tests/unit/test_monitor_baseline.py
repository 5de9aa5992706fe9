"""The monitor's baseline alert: a window's scores against a stored run's (one-sided Welch t-test,
said with its p-value), and the baseline read from a store with a one-line error naming the run
and the metric when it cannot serve."""

from __future__ import annotations

from pathlib import Path

import pytest
from scipy import stats

from ragsight.errors import ConfigError
from ragsight.monitor import Baseline, MetricWindow, Window, find_alerts, load_baseline
from ragsight.store import Store
from tests.unit.test_report_data import put_run


def window(start: float, metric: str, values: list[float]) -> Window:
    mw = MetricWindow(metric, {"scored": len(values)}, list(values), sum(values) / len(values), None, None)
    return Window(start, 3600.0, {"evaluated": len(values)}, {metric: mw})


HIGH = [1.0, 0.9, 1.0, 0.95, 1.0, 0.9, 1.0, 1.0, 0.95, 1.0, 0.9, 1.0]
LOW = [0.6, 0.7, 0.5, 0.8, 0.6, 0.7, 0.65, 0.55, 0.7, 0.6, 0.75, 0.6]


def test_a_window_below_the_baseline_raises_a_baseline_alert_with_the_welch_p_value() -> None:
    base = Baseline("run-eval", {"faithfulness": tuple(HIGH)})
    alerts = find_alerts([window(0.0, "faithfulness", LOW)], [], min_scored=10, alpha=0.01, baseline=base)
    (a,) = alerts
    expected = stats.ttest_ind(HIGH, LOW, equal_var=False, alternative="greater").pvalue
    assert a.kind == "baseline" and a.metric == "faithfulness"
    assert a.detail["p_value"] == pytest.approx(expected, rel=1e-9)
    assert a.detail["baseline_run"] == "run-eval" and a.detail["baseline_n"] == 12
    assert a.detail["baseline_mean"] == pytest.approx(sum(HIGH) / 12)
    assert "below the baseline run run-eval" in a.message and f"p={expected:.2g}" in a.message
    assert a.to_dict()["kind"] == "baseline"
    # the same scores as the baseline, a window above it, too few scores, another metric: no alert
    assert find_alerts([window(0.0, "faithfulness", HIGH)], [], baseline=base) == []
    assert find_alerts([window(0.0, "faithfulness", LOW)], [], baseline=Baseline("r", {"faithfulness": tuple(LOW)})) \
        == []
    assert find_alerts([window(0.0, "faithfulness", LOW[:9])], [], min_scored=10, baseline=base) == []
    assert find_alerts([window(0.0, "answer_relevancy", LOW)], [], baseline=base) == []
    # no baseline: no baseline alert
    assert find_alerts([window(0.0, "faithfulness", LOW)], [], min_scored=10) == []


def test_for_a_metric_where_lower_is_better_a_window_above_the_baseline_alerts() -> None:
    base = Baseline("run-eval", {"noise_sensitivity": tuple(LOW)})
    (a,) = find_alerts([window(0.0, "noise_sensitivity", HIGH)], [], baseline=base)
    assert a.kind == "baseline" and "above the baseline run" in a.message
    assert find_alerts([window(0.0, "noise_sensitivity", LOW)], [], baseline=Baseline("r", {
        "noise_sensitivity": tuple(HIGH)})) == []


@pytest.fixture
def store(tmp_path: Path) -> Store:
    st = Store(tmp_path / "runs.db")
    put_run(st, "eval-2026", {"faithfulness": {f"s{i}": v for i, v in enumerate(HIGH)},
                              "answer_relevancy": {f"s{i}": 0.8 for i in range(4)}})
    return st


def test_the_baseline_is_read_from_a_run_with_the_metrics_it_scored(store: Store) -> None:
    with store:
        b = load_baseline(store, "eval", metrics="faithfulness", min_scored=10)  # a prefix of the id
        assert b.run_id == "eval-2026" and sorted(b.values) == ["faithfulness"]
        assert sorted(b.values["faithfulness"]) == sorted(HIGH)
        # the default selection: every metric the run scored often enough (answer_relevancy has 4)
        assert sorted(load_baseline(store, "eval-2026", metrics=None, min_scored=10).values) == ["faithfulness"]
        assert sorted(load_baseline(store, "eval-2026", metrics=None, min_scored=3).values) == [
            "answer_relevancy", "faithfulness"]
        # a group: only its members
        assert sorted(load_baseline(store, "eval-2026", metrics="generation", min_scored=3).values) == [
            "answer_relevancy", "faithfulness"]
        assert b == Baseline.from_state(b.to_state())


def test_a_baseline_that_cannot_serve_is_an_error_naming_the_run_and_the_metric(store: Store) -> None:
    with store:
        with pytest.raises(ConfigError, match=r"--baseline nope: no run 'nope'"):
            load_baseline(store, "nope", metrics="faithfulness", min_scored=10)
        with pytest.raises(ConfigError, match=r"run eval-2026 .* did not score context_recall") as err:
            load_baseline(store, "eval-2026", metrics="faithfulness,context_recall", min_scored=10)
        assert "faithfulness (12)" in str(err.value)  # what it did score
        with pytest.raises(ConfigError, match=r"scored answer_relevancy on 4 samples; .* at least 10"):
            load_baseline(store, "eval-2026", metrics="answer_relevancy", min_scored=10)
        with pytest.raises(ConfigError, match=r"scored none of the metrics of .*context_recall"):
            load_baseline(store, "eval-2026", metrics="retrieval", min_scored=10)
