"""Gates as a careless CI file writes them. A percentage for a 0-1 metric and
``true`` for a threshold are refused by the shared threshold rule (``metrics.check_threshold``,
also behind ``assert_scores``); a metric gated twice on the command line is refused instead of
the last value winning silently."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from ragsight import cli

ROW = {"id": "a", "question": "Who approves travel?", "retrieved_ids": ["d1"], "relevant_ids": ["d1"]}


@pytest.mark.parametrize(("gate", "said"), [
    (["--fail-over", "noise_sensitivity=30"], "did you mean 0.3?"),
    (["--fail-under", "hit_rate=0.5", "--fail-under", "hit_rate=0.9"], "gives hit_rate twice (0.5 and 0.9)"),
    (["--fail-under", "hit_rate=0.5,hit_rate=0.9"], "gives hit_rate twice (0.5 and 0.9)"),
    (["--config", "CONFIG"], "the threshold must be a number, not True"),
])
def test_gates_that_would_mislead_are_refused(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], gate: list[str], said: str
) -> None:
    data = tmp_path / "d.jsonl"
    data.write_text(json.dumps(ROW) + "\n", encoding="utf-8")
    config = tmp_path / "ci.toml"
    config.write_text("[tool.ragsight]\nfail-under = { hit_rate = true }\n", encoding="utf-8")
    args = [str(config) if a == "CONFIG" else a for a in gate]
    code = cli.main(["evaluate", str(data), "--metrics", "hit_rate", "--store", str(tmp_path / "s.db"),
                     "--quiet", *args])
    err = " ".join(capsys.readouterr().err.split())
    assert code == 2, err
    assert err.startswith("error: ") and said in err, err
