"""Human labels in the store: keyed on a sample's content so they follow the data across runs,
upserted per (sample, metric, claim, field, who), read back per run, deleted; the migration
reaches older stores."""

from __future__ import annotations

import sqlite3
from dataclasses import replace
from pathlib import Path
from typing import Any

import pytest

from ragsight.dataset import Sample, sample_from_mapping
from ragsight.errors import InputError
from ragsight.store import Label, Store, claim_key, sample_key


def sample(i: int, sid: str | None = None, **extra: Any) -> Sample:
    row = {"id": sid or f"s{i}", "question": f"How heavy may cabin bag {i} be?",
           "contexts": ["A cabin bag may weigh up to 8 kg."], "response": f"8 kg for bag {i}.",
           "reference": "Up to 8 kg.", **extra}
    s, problems = sample_from_mapping(row)
    assert s is not None, problems
    return s


def new_run(st: Store, samples: list[Sample], run_id: str) -> str:
    st.create_run(run_id, dataset="d", judge="scripted", embedder=None, metrics=[], config={}, metadata={},
                  samples=samples)
    return run_id


def test_sample_key_follows_content_not_id_or_order() -> None:
    a, b = sample(1, "first"), sample(1, "other-id")
    assert sample_key(a) == sample_key(b)
    assert sample_key(a).startswith("s-") and len(sample_key(a)) == 22
    assert sample_key(sample(1, response="9 kg for bag 1.")) != sample_key(a)
    assert sample_key(sample(1, contexts=["A cabin bag may weigh up to 9 kg."])) != sample_key(a)
    assert sample_key(sample(1, reference="Up to 9 kg.")) != sample_key(a)
    assert sample_key(sample(1, question="  How heavy may cabin bag 1 be?\n")) == sample_key(a)
    assert sample_key(sample(1, metadata={"x": 1})) == sample_key(a)  # metadata is not content
    from ragsight.conversation import Turn

    turn = replace(a, history=(Turn("user", "Hi"), Turn("assistant", "Hello, how can I help?")))
    assert sample_key(turn) != sample_key(a)
    assert sample_key(replace(turn, history=(Turn("user", "Hi"),))) != sample_key(turn)
    assert claim_key("The bag  may weigh\n8 kg.") == claim_key("The bag may weigh 8 kg.")
    assert claim_key("The bag may weigh 8 kg.") != claim_key("The bag may weigh 9 kg.")


def test_labels_upsert_read_per_run_and_delete(tmp_path: Path) -> None:
    with Store(tmp_path / "r.db") as st:
        assert st.schema_version >= 4
        new_run(st, [sample(0), sample(1), sample(2)], "r1")
        # a re-run of the same data in another order and with other ids
        new_run(st, [sample(2, "x2"), sample(9), sample(0, "x0")], "r2")
        keys = st.sample_keys("r1")
        assert list(keys) == ["s0", "s1", "s2"]
        c = claim_key("A cabin bag may weigh 8 kg.")
        n = st.add_labels([
            Label(keys["s0"], "faithfulness", 1.0, who="ann", run_id="r1", sample_id="s0"),
            Label(keys["s0"], "faithfulness", 0.0, claim=c, who="ann", run_id="r1", sample_id="s0"),
            Label(keys["s2"], "faithfulness", 0.0, who="ann", note="the answer adds a fee"),
            Label(keys["s2"], "answer_correctness", 4.0, field="grade", who="bob"),
        ])
        assert n == 4
        every = st.labels()
        assert len(every) == 4 and all(lb.when.endswith("Z") and "T" in lb.when for lb in every)
        # the same key again replaces (value, note), a different who adds
        st.add_labels([Label(keys["s0"], "faithfulness", 0.0, who="ann", when="2026-01-02T03:04:05Z", note="no"),
                       Label(keys["s0"], "faithfulness", 1.0, who="bob")])
        sample_labels = [lb for lb in st.labels(metric="faithfulness", field="human") if lb.claim is None]
        assert {(lb.who, lb.value, lb.note) for lb in sample_labels if lb.sample_key == keys["s0"]} == {
            ("ann", 0.0, "no"), ("bob", 1.0, None)}
        assert [lb.when for lb in sample_labels if lb.who == "ann" and lb.sample_key == keys["s0"]] == [
            "2026-01-02T03:04:05Z"]

        # read for run r2: the labels of its samples by content, naming r2's sample ids, in r2's order
        on_r2 = st.labels("r2", metric="faithfulness")
        assert [(lb.run_id, lb.sample_id) for lb in on_r2] == [("r2", "x2")] + [("r2", "x0")] * 3
        assert [lb.claim for lb in on_r2 if lb.sample_id == "x0"].count(c) == 1
        assert st.labels("r2", field="grade")[0].value == 4.0
        assert st.labels("r2", sample_key=keys["s2"], metric="faithfulness")[0].note == "the answer adds a fee"
        assert st.labels("nope") == []

        assert st.delete_label(keys["s0"], "faithfulness", claim=c, who="ann") is True
        assert st.delete_label(keys["s0"], "faithfulness", claim=c, who="ann") is False
        bob = next(lb for lb in st.labels("r1") if lb.who == "bob" and lb.metric == "faithfulness")
        assert st.delete_label(replace(bob, value=0.5)) is True
        assert len(st.labels()) == 3
    with Store(tmp_path / "r.db") as st:  # persisted
        assert len(st.labels("r1")) == 3


@pytest.mark.parametrize(("bad", "says"), [
    ({"value": float("nan")}, "not a finite number"),
    ({"value": "yes"}, "not a finite number"),
    ({"metric": ""}, "'metric' is empty"),
    ({"sample_key": " "}, "'sample_key' is empty"),
    ({"claim": ""}, "'claim' is an empty key"),
])
def test_a_bad_label_is_refused_and_nothing_is_written(tmp_path: Path, bad: dict[str, Any], says: str) -> None:
    with Store(tmp_path / "r.db") as st:
        good = Label("s-1", "faithfulness", 1.0)
        with pytest.raises(InputError, match=f"label 2 .*{says}"):
            st.add_labels([good, replace(good, **bad)])
        assert st.labels() == []


def test_an_older_store_gets_the_labels_tables_and_its_runs_their_keys(tmp_path: Path) -> None:
    path = tmp_path / "old.db"
    with Store(path) as st:
        new_run(st, [sample(0), sample(1)], "old")
    with sqlite3.connect(path) as con:  # back to a store of schema 3, before labels
        con.execute("DROP TABLE labels")
        con.execute("DROP TABLE sample_keys")
        con.execute("PRAGMA user_version = 3")
    with Store(path) as st:
        assert st.schema_version >= 4
        keys = st.sample_keys("old")
        assert keys == {"s0": sample_key(sample(0)), "s1": sample_key(sample(1))}
        st.add_labels([Label(keys["s1"], "faithfulness", 1.0)])
        assert [lb.sample_id for lb in st.labels("old")] == ["s1"]
    with sqlite3.connect(path) as con:  # the keys were kept
        assert con.execute("SELECT COUNT(*) FROM sample_keys WHERE run_id='old'").fetchone()[0] == 2
