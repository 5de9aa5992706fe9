"""Mistakes a newcomer makes on the command line, as the README shows it: each gets one clear
message naming the problem and the fix, with no traceback and nothing else that misleads."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from ragsight.cli import main
from ragsight.store import Store
from tests.fakes import FakeOpenAIServer
from tests.reliability.world import JudgeWorld


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


def test_resume_last_with_nothing_to_resume_says_so_and_needs_no_judge(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """`ragsight evaluate --resume last` after a run that completed: it pinged the judge (and,
    with the judge's server gone, failed its preflight with exit 2), then printed the summary as
    if it had run. Now it says there is nothing to resume and shows the results, judge or not."""
    data = write_data(tmp_path / "data.jsonl")
    store = tmp_path / "runs.db"
    with FakeOpenAIServer(handler=JudgeWorld()) as srv:
        assert main(["evaluate", str(data), "--metrics", "faithfulness", "--judge", "openai:m",
                     "--base-url", srv.url, "--store", str(store)]) == 0
    # the judge's server is gone now
    capsys.readouterr()
    with Store(str(store)) as st:
        run_id = st.runs()[0].id

    code = main(["evaluate", "--resume", "last", "--store", str(store)])
    out, err = capsys.readouterr()
    assert code == 0, out + err
    assert f"Run {run_id} is already complete: nothing to resume." in " ".join(err.split())
    assert "ping" not in err and "Traceback" not in out + err
    assert f"run {run_id}  (1 samples, completed)" in out
    assert "faithfulness" in out
