"""The corrected estimate (PPI, PPI++) against computations by hand."""

from __future__ import annotations

import math

import pytest

from ragsight._stats import MIN_LABELS, corrected_estimate, ppi_mean

F_L = [0.9, 0.8, 0.3, 0.6]  # the judge on the 4 labelled samples
F_U = [0.7, 0.5]            # the judge on the 2 nobody labelled (N = 6)
Z = 1.959963984540054


def test_plain_ppi_by_hand() -> None:
    est = ppi_mean(F_L, [1, 0, 0, 1], F_U, power_tuning=False)
    # judge mean over all 6: 3.8 / 6; judge - human on the labelled: -0.1, 0.8, 0.3, -0.4 (mean 0.15)
    assert est.judge_mean == pytest.approx(3.8 / 6)
    assert est.corrected_mean == pytest.approx(3.8 / 6 - 0.15)  # 0.48333
    # w = 2/6; y - w f = 0.7, -0.26667, -0.1, 0.8: sample variance 0.89 / 3; var_U(f) = 0.02
    variance = (0.89 / 3) / 4 + (1 / 9) * 0.02 / 2
    assert variance == pytest.approx(0.0752778, abs=1e-7)
    assert est.corrected_ci == pytest.approx((0.483333 - Z * math.sqrt(variance), 0.483333 + Z * math.sqrt(variance)),
                                             abs=1e-6)
    assert est.corrected_ci == pytest.approx((-0.054418, 1.021085), abs=1e-6)
    assert (est.n_labels, est.n_judged, est.lam, est.too_few) == (4, 6, 1.0, True)
    assert est.labels_mean == 0.5
    half = Z * math.sqrt((1 / 3) / 4)  # labels 1, 0, 0, 1: sample variance 1/3
    assert est.labels_ci == pytest.approx((0.5 - half, 0.5 + half))


def test_power_tuned_lambda_by_hand() -> None:
    # y = 0, 1, 0, 1: cov(y, f_L) = 0.1 / 3; var(f over all 6) = 0.23333 / 5; 1 + n/(N-n) = 3
    # w = (0.1/3) / (0.046667 * 3) = 0.238095; lam = w / (2/6) = 0.714286
    est = ppi_mean(F_L, [0, 1, 0, 1], F_U)
    w = (0.1 / 3) / ((0.23333333 / 5) * 3)
    assert est.lam == pytest.approx(w * 3, abs=1e-6) and est.lam == pytest.approx(0.714286, abs=1e-6)
    theta = sum(y - w * f for y, f in zip([0, 1, 0, 1], F_L)) / 4 + w * 0.6
    assert est.corrected_mean == pytest.approx(theta) and theta == pytest.approx(0.488095, abs=1e-6)
    assert est.corrected_ci == pytest.approx((-0.069459, 1.045649), abs=1e-5)
    # a judge that goes against the labels gets no weight: the labels alone
    against = ppi_mean(F_L, [1, 0, 1, 0], F_U)
    assert against.lam == 0.0
    assert (against.corrected_mean, against.corrected_ci) == (against.labels_mean, against.labels_ci)
    # a judge that tracks the labels closely gets the whole weight (clipped at 1: plain PPI)
    tracks = ppi_mean(F_L, [1, 0, 0, 1], F_U)
    assert tracks.lam == 1.0
    assert tracks.corrected_mean == ppi_mean(F_L, [1, 0, 0, 1], F_U, power_tuning=False).corrected_mean


def test_small_and_edge_cases_say_so_and_never_nan() -> None:
    one = ppi_mean([0.9], [1], [0.5, 0.4])
    assert (one.corrected_mean, one.corrected_ci, one.labels_mean, one.too_few) == (None, None, 1.0, True)
    none = ppi_mean([], [], [0.5])
    assert none.judge_mean == 0.5 and none.labels_mean is None and none.n_labels == 0
    every = ppi_mean(F_L, [1, 0, 0, 1], [])  # all labelled: the labels alone
    assert every.corrected_mean == 0.5 and every.corrected_ci == every.labels_ci
    flat = ppi_mean([0.5] * 12, [1, 0] * 6, [0.5] * 30)  # a constant judge: no weight, no NaN
    assert flat.lam == 0.0 and flat.corrected_mean == 0.5 and not flat.too_few
    assert MIN_LABELS == 10
    with pytest.raises(ValueError, match="pair up"):
        ppi_mean([0.1, 0.2], [1], [])
    with pytest.raises(ValueError, match="NaN"):
        ppi_mean([0.1, float("nan")], [1, 0], [])


def test_by_sample_id_and_a_lower_is_better_metric() -> None:
    judged = {"a": 0.9, "b": 0.8, "c": 0.3, "d": 0.6, "e": 0.7, "f": 0.5}
    labels = {"a": 1, "b": 0, "c": 0, "d": 1, "zz": 1}  # zz: not scored, cannot show an error
    est = corrected_estimate(judged, labels, power_tuning=False)
    assert est == ppi_mean(F_L, [1, 0, 0, 1], F_U, power_tuning=False, bounds=(0.0, 1.0))
    # lower is better (e.g. noise_sensitivity): label 1 = good, the metric as 1 - value, and back
    low = corrected_estimate({k: 1 - v for k, v in judged.items()}, labels, lower_is_better=True,
                             power_tuning=False)
    assert low.corrected_mean == pytest.approx(1 - est.corrected_mean)  # type: ignore[operator]
    assert low.judge_mean == pytest.approx(1 - 3.8 / 6)
    assert low.corrected_ci == pytest.approx((1 - est.corrected_ci[1], 1 - est.corrected_ci[0]))  # type: ignore[index]


@pytest.mark.parametrize("label", [1.0, 0.0])
def test_unanimous_labels_give_the_wilson_interval_not_a_zero_width_one(label: float) -> None:
    judged = {f"s{i}": 0.9 for i in range(60)}
    labels = {f"s{i}": label for i in range(12)}
    est = corrected_estimate(judged, labels)
    assert est.unanimous and est.too_few  # said beside the figure, whatever the count
    lo, hi = est.corrected_ci
    # Wilson at p = 1, n = 12, z = 1.96: [0.7575, 1]; at p = 0 its mirror
    expected = (0.7575, 1.0) if label == 1.0 else (0.0, 0.2425)
    assert (round(lo, 4) + 0.0, round(hi, 4)) == expected
    assert est.labels_ci == pytest.approx(est.corrected_ci)
    assert hi - lo > 0.2


def test_a_bounded_metric_keeps_its_mean_and_interval_in_its_range() -> None:
    # the judge says 1.0 on almost everything, the labels disagree on a few: plain PPI leaves [0, 1]
    judged = {f"s{i}": 1.0 if i % 10 else 0.0 for i in range(40)}
    labels = {f"s{i}": 1.0 if i not in (1, 2) else 0.0 for i in range(10)}
    unbounded = corrected_estimate(judged, labels, power_tuning=False, bounds=None)
    assert unbounded.corrected_ci[1] > 1.0  # the case a user met: [0.46, 1.13]
    est = corrected_estimate(judged, labels, power_tuning=False)
    assert 0.0 <= est.corrected_ci[0] <= est.corrected_mean <= est.corrected_ci[1] == 1.0
    assert est.labels_ci[1] <= 1.0
