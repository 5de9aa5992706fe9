"""Values a loader must not get wrong: ids by one rule, the inputs that used to end a run,
out-of-scope rows."""

from __future__ import annotations

import json
import math
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

import ragsight
from ragsight import Dataset, Outcome


def test_float_ids_from_parquet_match_integer_ids(tmp_path: Path) -> None:
    """A list of integers stored as doubles ([3.0, 2.0]) and an id column promoted to float by a
    null: hit_rate matches "2" against 2.0 (it was silently 0.0 when 2.0 became "2.0")."""
    table = pa.table({
        "id": pa.array([1, None, 3], type=pa.int64()),  # pandas reads this column as 1.0, NaN, 3.0
        "question": ["Q one?", "Q two?", "Q three?"],
        "retrieved_ids": pa.array([[3.0, 2.0], [5.0], [7, None]], type=pa.list_(pa.float64())),
        "relevant_ids": pa.array([[2], [5], [7]], type=pa.list_(pa.int64())),
    })
    path = tmp_path / "ir.parquet"
    pq.write_table(table, path)
    result = ragsight.evaluate(str(path), ["hit_rate", "mrr"])
    by_id = {s.id: s for s in result.samples}
    assert by_id["1"].retrieved_ids == ("3", "2") and by_id["1"].relevant_ids == ("2",)
    assert result.scores["1"]["hit_rate"].value == 1.0
    assert result.scores["1"]["mrr"].value == 0.5
    # the row whose id was null gets the question's id, and scores
    (nulled,) = [s for s in result.samples if s.question == "Q two?"]
    assert nulled.id.startswith("q-") and result.scores[nulled.id]["hit_rate"].value == 1.0
    # the null inside a list of ids is refused, naming row and field; never the id "nan"
    (problem,) = result.problems
    assert (problem.row, problem.field) == (3, "retrieved_ids")
    assert "holds nan, not an id" in problem.message


@pytest.mark.parametrize("value,expected", [
    (2, "2"), (2.0, "2"), (2.5, "2.5"), (" d1 ", "d1"), (10**20, "100000000000000000000"), (-0.0, "0"),
])
def test_the_id_rule(value: object, expected: str) -> None:
    s = Dataset.load([{"question": "Q?", "retrieved_ids": [value], "relevant_ids": {str(expected): 1}}])[0]
    assert s.retrieved_ids == (expected,)


@pytest.mark.parametrize("bad", [math.nan, math.inf, -math.inf, True, None, ""])
def test_ids_that_are_not_ids_are_row_problems(bad: object) -> None:
    ds = Dataset.load([{"question": "Q?", "retrieved_ids": ["d1", bad], "relevant_ids": ["d1"]},
                       {"question": "Q2?", "retrieved_ids": ["d1"], "relevant_ids": ["d1"]}])
    assert [s.question for s in ds] == ["Q2?"]
    (p,) = ds.errors
    assert (p.row, p.field) == (1, "retrieved_ids")


def test_nan_matching_nan_no_longer_scores(tmp_path: Path) -> None:
    path = tmp_path / "nan.jsonl"
    path.write_text('{"question": "Q?", "retrieved_ids": [NaN], "relevant_ids": [NaN]}\n'
                    '{"question": "Q2?", "retrieved_ids": ["a"], "relevant_ids": ["a"]}\n')
    result = ragsight.evaluate(str(path), ["hit_rate"])
    assert [s.question for s in result.samples] == ["Q2?"]
    assert result.summary["hit_rate"].mean == 1.0
    assert result.problems[0].field == "retrieved_ids"


@pytest.mark.parametrize("row,field", [
    ({"question": "Q?", "response": "cut \ud83d"}, "response"),
    ({"question": "Q?", "contexts": ["ok", "cut \udc00 here"]}, "contexts"),
    ({"question": "Q?", "metadata": {"note": "\ud83d"}}, "metadata"),
    ({"question": "Q?", "tag\ud83d": "x"}, "tag\\ud83d"),
    ({"question": "Q?", "metadata": json.loads('{"a":' * 100 + "1" + "}" * 100)}, "metadata"),
    ({"question": "Q?", "extra": 10**5000}, "extra"),
])
def test_values_that_used_to_end_the_run_are_row_problems(row: dict[str, object], field: str) -> None:
    ds = Dataset.load([row, {"question": "fine?", "response": "yes"}])
    assert [s.question for s in ds] == ["fine?"]
    (p,) = ds.errors
    assert (p.row, p.field) == (1, field)


def test_evaluate_goes_on_past_the_bad_rows() -> None:
    rows = [{"id": "bad", "question": "Q?", "response": "cut \ud83d", "reference": "x"},
            {"id": "good", "question": "Q?", "response": "x", "reference": "x"}]
    result = ragsight.evaluate(rows, ["exact_match"])
    assert [s.id for s in result.samples] == ["good"]
    assert result.scores["good"]["exact_match"].outcome is Outcome.SCORED
    assert result.problems[0].field == "response"
