"""The shipped combination models: load, bounded, deterministic, monotone in the judge; the
embedded judge's claim verdicts are the mean of its P(Yes) and word overlap."""

from __future__ import annotations

import itertools
import math

import pytest

from ragsight.analyses._calibrated import (
    COEFFICIENTS,
    DEFAULT_MODEL,
    CombinationModel,
    combine,
    feature_values,
    get_model,
    logit,
)
from ragsight.analyses._signals import compute_signals

SIGNALS = [
    compute_signals("Marie Curie won two Nobel prizes in 1903 and 1911.",
                    ["Marie Curie received the Nobel Prize in 1903 and in 1911."]),
    compute_signals("The bridge opened in 1932.", ["The city has a river."]),
    {},
    {"overlap": 1.0, "numbers": 1.0, "entities": 1.0, "judge_prior": 0.9},
    {"overlap": 0.0, "numbers": 0.0, "entities": 0.0, "judge_prior": 0.01},
]
GRID = [0.0, 1e-6, 0.01, 0.1, 0.3, 0.5, 0.7, 0.9, 0.99, 1.0]


def test_shipped_coefficients_load() -> None:
    judge_model = get_model("judge", DEFAULT_MODEL)
    signals_model = get_model("signals", DEFAULT_MODEL)
    assert judge_model is not None and signals_model is not None
    assert judge_model.form == "mean" and judge_model.features == ("judge_p", "overlap")
    assert signals_model.form == "logistic" and "judge_logit" not in signals_model.features
    for m in (judge_model, signals_model):
        assert len(m.features) == len(m.coef) == len(m.mean) == len(m.scale)
        assert all(s > 0 for s in m.scale)
        assert all(math.isfinite(c) for c in m.coef)
        assert 0.0 < m.threshold < 1.0
        assert m.fitted_on
    for table in COEFFICIENTS.values():
        for d in table.values():
            CombinationModel.from_dict(d)  # every shipped entry is well formed


def test_embedded_claim_verdict_is_the_mean_of_judge_and_overlap() -> None:
    assert combine(0.6, {"overlap": 0.2, "judge_prior": 0.9, "numbers": 0.0}) == pytest.approx(0.4)
    assert combine(1.0, {"overlap": 1.0}) == 1.0 and combine(0.0, {"overlap": 0.0}) == 0.0
    assert combine(0.3, {}) == pytest.approx(0.3)  # no overlap recorded: the judge alone
    assert combine(1.7, {"overlap": 0.5}) == pytest.approx(0.75)  # inputs clipped to [0, 1]


def test_mean_form_and_unknown_forms() -> None:
    m = CombinationModel.from_dict({"form": "mean", "features": ["a", "b", "c"]})
    assert m.predict({"a": 0.2, "b": 0.4, "c": 0.9}) == pytest.approx(0.5)
    assert m.predict({"a": 0.2, "b": float("nan")}) == pytest.approx(0.2)
    assert m.predict({}) == 0.5
    with pytest.raises(ValueError, match="unknown form"):
        CombinationModel.from_dict({"form": "median", "features": ["a"]})
    with pytest.raises(ValueError, match="at least one input"):
        CombinationModel.from_dict({"form": "mean", "features": []})


@pytest.mark.parametrize("signals", SIGNALS)
def test_combine_monotone_in_judge_p_and_bounded(signals: dict[str, float]) -> None:
    values = [combine(p, signals) for p in GRID]
    assert all(0.0 <= v <= 1.0 for v in values)
    assert all(b >= a for a, b in itertools.pairwise(values))


@pytest.mark.parametrize("signals", SIGNALS)
def test_combine_without_judge_probability(signals: dict[str, float]) -> None:
    v = combine(None, signals)
    assert 0.0 <= v <= 1.0
    assert v == combine(None, dict(signals))


def test_combine_is_deterministic() -> None:
    a = [combine(p, s) for s in SIGNALS for p in GRID]
    b = [combine(p, dict(s)) for s in SIGNALS for p in GRID]
    assert a == b


def test_signals_move_the_combined_probability_the_right_way() -> None:
    good = {"overlap": 1.0, "overlap_best": 1.0, "numbers": 1.0, "entities": 1.0}
    bad = {"overlap": 0.2, "overlap_best": 0.2, "numbers": 0.0, "entities": 0.0}
    assert combine(0.5, good) > combine(0.5, bad)
    assert combine(None, good) > combine(None, bad)


def test_unknown_model_keeps_the_judge_probability() -> None:
    assert combine(0.37, SIGNALS[0], model="some-other-model") == pytest.approx(0.37)
    assert 0.0 <= combine(None, SIGNALS[0], model="some-other-model") <= 1.0


def test_feature_values() -> None:
    f = feature_values(0.5, {"overlap": 0.25, "judge_prior": 0.5})
    assert f["judge_logit"] == pytest.approx(0.0) and f["judge_p"] == 0.5
    assert f["prior_logit"] == pytest.approx(0.0)
    assert f["overlap"] == 0.25
    assert "judge_logit" not in feature_values(None, {})
    assert logit(0.0) == pytest.approx(-logit(1.0))  # clipped, finite
    assert math.isfinite(logit(0.0))


def test_missing_feature_is_imputed_with_its_mean() -> None:
    m = CombinationModel.from_dict({"features": ["a", "b"], "mean": [1.0, 2.0], "scale": [1.0, 2.0],
                                    "coef": [1.0, -1.0], "intercept": 0.5})
    assert m.linear({}) == pytest.approx(0.5)
    assert m.linear({"a": 2.0}) == pytest.approx(1.5)
    assert m.linear({"a": 2.0, "b": 4.0}) == pytest.approx(0.5)
    assert m.linear({"a": float("nan")}) == pytest.approx(0.5)


def test_from_dict_rejects_bad_tables() -> None:
    with pytest.raises(ValueError):
        CombinationModel.from_dict({"features": ["a"], "mean": [0.0, 1.0], "scale": [1.0],
                                    "coef": [1.0], "intercept": 0.0})
    with pytest.raises(ValueError):
        CombinationModel.from_dict({"features": ["a"], "mean": [0.0], "scale": [0.0],
                                    "coef": [1.0], "intercept": 0.0})


def test_a_number_the_source_lacks_caps_the_verdict_at_the_judges_own() -> None:
    """A new-user trial: "... RSA keys of 4096 bits" was invented; the judge gave 0.14 and the
    mean with its word overlap lifted it to 0.51. A number written in digits that the source does
    not hold caps P at the judge's; a number the source holds, or a number word, does not."""
    from ragsight.analyses._calibrated import assess_claim
    from ragsight.analyses._signals import describe_signals

    page = ("If invoked without any arguments, ssh-keygen will generate an RSA key. The type of key "
            "to be generated is specified with the -t option.")
    invented = "If invoked without any arguments, ssh-keygen will generate an RSA key of 4096 bits."
    p, signals = assess_claim(invented, page, 0.3)
    assert p == pytest.approx(0.3)
    assert combine(0.3, signals, number_guard=False) > 0.5  # what it was before
    assert signals["capped_by_number"] == 1.0
    assert "a number written in digits is not in the text" in describe_signals(signals)
    held, s2 = assess_claim("ssh-keygen will generate an RSA key of 4096 bits.", page + " RSA keys are 4096 bits.", 0.14)
    assert held is not None and held > 0.5 and "capped_by_number" not in s2
    worded, s3 = assess_claim("ssh-keygen will generate one RSA key if invoked without any arguments.", page, 0.4)
    assert worded is not None and worded > 0.4 and "capped_by_number" not in s3
    # the guard only lowers: never above the mean, and never below the judge
    for judge_p in GRID:
        capped = combine(judge_p, signals)
        assert min(judge_p, combine(judge_p, signals, number_guard=False)) == pytest.approx(capped)


def test_a_number_the_claim_takes_from_the_question_is_not_invented() -> None:
    # a new-user trial: "split -n l/3" answering "How do I split a file into 3 files ...?" was
    # capped at the judge's 0.44 as if "3" were invented
    from ragsight.analyses._calibrated import assess_claim

    page = "-n, --number=CHUNKS generate CHUNKS output files. l/N split into N files without splitting lines."
    claim = "Use split -n l/3 to split a file into 3 files without splitting lines."
    capped, _ = assess_claim(claim, page, 0.44)
    asked, signals = assess_claim(claim, page, 0.44, question="How do I split a file into 3 files without splitting lines?")
    assert capped == pytest.approx(0.44)
    assert asked is not None and asked > 0.5 and "capped_by_number" not in signals
    # a number neither the page nor the question holds is still capped
    other, _ = assess_claim("Use split -n l/4 to split a file into 4 files.", page, 0.44,
                            question="How do I split a file into 3 files?")
    assert other == pytest.approx(0.44)
