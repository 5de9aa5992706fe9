"""Mistakes a newcomer makes on the command line, as the README shows it: each gets one clear
message naming the problem and the fix, with no traceback and nothing else that misleads."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from ragsight.cli import main


def write_data(path: Path) -> Path:
    row = {"user_input": "When does the depot open?", "retrieved_contexts": ["It opens at nine."],
           "response": "At nine.", "reference": "At nine."}
    path.write_text(json.dumps(row) + "\n", encoding="utf-8")
    return path


def test_a_misspelt_embedded_judge_is_not_announced_before_it_is_refused(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """`--judge local:qwen2.5-coder-1.5` (the b left out) printed "Embedded judge
    qwen2.5-coder-1.5: agreement with people not measured. Stronger: ..." as if it were a judge
    being used, then the error: the one line now is the error with the right name."""
    data = write_data(tmp_path / "data.jsonl")
    code = main(["evaluate", str(data), "--judge", "local:qwen2.5-coder-1.5",
                 "--store", str(tmp_path / "runs.db")])
    out, err = capsys.readouterr()
    assert code == 2
    text = out + err
    assert "Unknown model 'qwen2.5-coder-1.5'. Did you mean 'qwen2.5-coder-1.5b'?" in text
    assert "Embedded judge" not in text
    assert "Traceback" not in text
    assert not (tmp_path / "runs.db").exists()
