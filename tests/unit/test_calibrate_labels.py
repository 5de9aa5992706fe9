"""calibrate with the labels kept in the store: the same figures as from a file, a metric's own
labels before the sample's, several people, and a clear error when there are none."""

from __future__ import annotations

import pytest

from ragsight import Store
from ragsight.errors import InputError
from ragsight.report import calibrate
from ragsight.result import load_result
from ragsight.store import ANY_METRIC, Label, claim_key
from tests.unit.test_report_calibrate import IDS, LABEL, make_run


def put_labels(store: Store, run: str, values: dict[str, float], metric: str = ANY_METRIC,
               field: str = "correct", who: str = "ana", when: str = "") -> None:
    keys = store.sample_keys(run)
    store.add_labels([Label(keys[sid], metric, float(v), field=field, who=who, when=when) for sid, v in values.items()])


def test_store_labels_give_the_figures_of_the_same_labels_in_a_file() -> None:
    with Store(":memory:") as store:
        make_run(store)
        from_file = calibrate((store, "cal"), dict(zip(IDS, LABEL)), "correct")
        put_labels(store, "cal", dict(zip(IDS, LABEL)))
        # a claim label and another field do not enter
        keys = store.sample_keys("cal")
        store.add_labels([Label(keys["s1"], "faithfulness", 0.0, field="correct", claim=claim_key("x")),
                          Label(keys["s2"], ANY_METRIC, 0.0, field="other")])
        from_store = calibrate((store, "cal"), None, "correct")
    assert from_store.metrics == from_file.metrics
    assert (from_store.matched, from_store.n_labels, from_store.unlabelled) == (8, 8, 1)
    assert (from_store.n_positive, from_store.n_negative) == (4, 4)
    assert from_store.concordance == from_file.concordance
    assert any("labels from the store (8 of field 'correct')" in n for n in from_store.notes)


def test_a_metrics_own_label_comes_before_the_samples_and_the_latest_person_counts() -> None:
    with Store(":memory:") as store:
        make_run(store)
        put_labels(store, "cal", dict(zip(IDS, LABEL)))
        # faithfulness has its own labels on s1 and s8 (s8 twice: the later one counts)
        put_labels(store, "cal", {"s1": 0}, metric="faithfulness")
        put_labels(store, "cal", {"s8": 0}, metric="faithfulness", who="bob", when="2026-01-01T00:00:00Z")
        put_labels(store, "cal", {"s8": 1}, metric="faithfulness", who="cyd", when="2026-01-02T00:00:00Z")
        rep = calibrate((store, "cal"), None, "correct", ["faithfulness", "factual_correctness"])
        result = load_result(store, "cal")
    mine = dict(zip(IDS, LABEL), s1=0, s8=1)
    expected = calibrate(result, mine, "correct", ["faithfulness"]).metrics[0]
    assert rep.metrics[0] == expected
    plain = calibrate(result, dict(zip(IDS, LABEL)), "correct", ["factual_correctness"]).metrics[0]
    assert rep.metrics[1] == plain
    assert any("given by several people: the latest counts" in n for n in rep.notes)
    assert rep.concordance is None
    assert any("faithfulness or factual_correctness has labels of its own" in n for n in rep.notes)


def test_only_per_metric_labels_and_labels_of_an_unknown_metric() -> None:
    with Store(":memory:") as store:
        make_run(store)
        put_labels(store, "cal", dict(zip(IDS, LABEL)), metric="faithfulness")
        put_labels(store, "cal", {"s1": 1}, metric="context_recall")
        rep = calibrate((store, "cal"), None, "correct")
    faith = next(m for m in rep.metrics if m.metric == "faithfulness")
    assert faith.n == 8 and faith.auroc is not None
    assert all(m.n == 0 for m in rep.metrics if m.metric != "faithfulness")
    assert any("left out: context_recall" in n for n in rep.notes)


def test_no_labels_in_the_store_is_a_clear_error() -> None:
    with Store(":memory:") as store:
        make_run(store)
        put_labels(store, "cal", {"s1": 1}, field="grade")
        with pytest.raises(InputError, match=r"no sample labels 'correct' .* have labels 'grade'.*"
                                             r"ragsight labels import FILE --run cal --label correct"):
            calibrate((store, "cal"), None, "correct")
