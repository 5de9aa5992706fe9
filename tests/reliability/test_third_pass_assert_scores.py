"""``assert_scores`` refuses data with rows it cannot use, instead of passing on
the rest. The rows are written as a careless source writes them: a line that is not JSON, a row
that is not an object, a field of the wrong type."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from ragsight.errors import InputError
from ragsight.testing import assert_scores

GOOD = {"id": "good", "question": "Who approves travel?", "retrieved_ids": ["d1", "d2"], "relevant_ids": ["d1"]}


def test_a_list_with_a_row_that_is_not_an_object_is_refused(tmp_path: Path) -> None:
    with pytest.raises(InputError, match=r"1 row\(s\) .* cannot be used.*row 2"):
        assert_scores([GOOD, "not a row"], {"hit_rate": 1.0}, store=tmp_path / "s.db")


def test_a_list_with_a_field_of_the_wrong_type_is_refused(tmp_path: Path) -> None:
    bad = {"id": "bad", "question": "Who pays?", "retrieved_ids": 42, "relevant_ids": ["d1"]}
    with pytest.raises(InputError, match="retrieved_ids"):
        assert_scores([GOOD, bad], {"hit_rate": 1.0}, store=tmp_path / "s.db")


def test_a_file_with_a_line_that_is_not_json_is_refused(tmp_path: Path) -> None:
    data = tmp_path / "golden.jsonl"
    data.write_text(json.dumps(GOOD) + "\n" + '{"id": "cut", "question": "Who\n', encoding="utf-8")
    with pytest.raises(InputError, match=r"golden\.jsonl, row 2"):
        assert_scores(data, {"hit_rate": 1.0}, store=tmp_path / "s.db")


def test_usable_rows_with_only_warnings_still_pass(tmp_path: Path) -> None:
    result = assert_scores([GOOD], {"hit_rate": 1.0}, store=tmp_path / "s.db")
    assert result.scores["good"]["hit_rate"].value == 1.0
