"""Loader warnings and errors are grouped: one line per kind, with a count and the first rows.
5,000 rows with the same misspelt field and 2,000 unusable rows used to
print 5,000 warning lines and 2,000 error lines."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from ragsight import cli


def test_five_thousand_rows_of_problems_print_one_line_per_kind(tmp_path: Path,
                                                                capsys: pytest.CaptureFixture[str]) -> None:
    rows = []
    for i in range(1, 5001):
        row = {"id": f"r{i}", "question": f"Question {i}?", "response": "yes", "reference": "yes",
               "questoin": "typo"}  # the same misspelt field in every row
        if 1000 <= i < 3000:
            row["contexts"] = [i, i + 1]  # unusable: 2,000 rows
        rows.append(row)
    data = tmp_path / "big.jsonl"
    data.write_text("".join(json.dumps(r) + "\n" for r in rows), encoding="utf-8")
    code = cli.main(["evaluate", str(data), "--metrics", "exact_match", "--store", str(tmp_path / "r.db"),
                     "--quiet"])
    captured = capsys.readouterr()
    output = captured.out + captured.err
    assert code == 1, output  # unusable rows: exit 1, said once
    assert "pass --allow-bad-rows to accept the run without them" in output
    lines = output.splitlines()
    typo = [ln for ln in lines if "questoin" in ln]
    assert len(typo) == 1, typo
    assert "rows 1, 2, 3, 4, 5, ... (3,000 rows), field 'questoin'" in typo[0]
    assert "did you mean 'question'?" in typo[0]
    bad = [ln for ln in lines if "not a string" in ln]
    assert len(bad) == 1, bad
    assert "rows 1000, 1001, 1002, 1003, 1004, ... (2,000 rows), field 'contexts': item 0 is int" in bad[0]
    assert "2000 input row(s) could not be used" in output
    assert max(len(ln) for ln in lines) < 400
    assert len(lines) < 40
