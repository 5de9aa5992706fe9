"""Honest defaults: every run with the embedded judge prints one line with its
measured agreement with people and how to use a stronger judge; ``ragsight judges`` lists the
built-in judges and embedders; the HTML report repeats the line. The figures come from the docs
where the commands that measured them are given."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

from ragsight.cli import main
from ragsight.errors import ConfigError
from ragsight.judge import (
    BUILTIN_EMBEDDERS,
    BUILTIN_JUDGES,
    STRONGER_JUDGE,
    LocalProvider,
    agreement_notice,
    conversation_notice,
)
from ragsight.report._html_run import judge_note

DOCS = Path(__file__).resolve().parents[2] / "docs"
NUMBER = re.compile(r"\d+\.\d+")


def test_every_figure_quoted_is_in_the_docs() -> None:
    docs = "\n".join((DOCS / n).read_text("utf-8") for n in ("validity.md", "benchmarks.md", "embedders.md"))
    for m in (*BUILTIN_JUDGES, *BUILTIN_EMBEDDERS):
        for text in (m.agreement, m.speed, m.short):
            for figure in NUMBER.findall(text):
                if figure in ("2.5", "1.5", "0.5"):  # parts of model names, not figures
                    continue
                assert figure in docs, f"{m.name}: {figure!r} ({text!r}) is not in docs/"


def test_one_default_of_each_kind() -> None:
    assert [m.name for m in BUILTIN_JUDGES if m.default] == ["qwen2.5-coder-1.5b"]
    assert [m.name for m in BUILTIN_EMBEDDERS if m.default] == ["e5-small"]


def test_the_notice_is_one_line_with_the_figure_and_the_way_up() -> None:
    line = agreement_notice("qwen2.5-coder-1.5b")
    assert "\n" not in line
    assert "AUROC" in line and "docs/validity.md" in line
    assert line.endswith(STRONGER_JUDGE) and "--judge openai:MODEL" in line
    unknown = agreement_notice("my-own-8b.gguf")
    assert "not measured" in unknown and unknown.endswith(STRONGER_JUDGE)


def test_judges_command_lists_every_builtin_within_80_columns(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["judges"]) == 0
    text = capsys.readouterr().out
    for m in (*BUILTIN_JUDGES, *BUILTIN_EMBEDDERS):
        assert f"  {m.name}" in text
    assert "--judge local:qwen2.5-coder-1.5b" in text and "--embedder local:e5-small" in text
    assert "AUROC" in text and "--judge openai:MODEL" in text
    assert max(len(line) for line in text.splitlines()) <= 80


@pytest.mark.parametrize(("judge_args", "prefix"), [([], "No judge configured. "), (["--judge", "local"], "")])
def test_evaluate_with_the_embedded_judge_prints_the_line(
    judge_args: list[str], prefix: str, tmp_path: Path, capsys: pytest.CaptureFixture[str],
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    # Stop the run before the model loads: the line comes first. The samples start beside the
    # preflight, so the model's loading itself is stopped (stopping the preflight alone let the
    # first calls load the model and run while the failed run waited for them).
    def no_model(self: LocalProvider) -> None:
        raise ConfigError("stopped by the test before the model loads")

    monkeypatch.setattr(LocalProvider, "_load", no_model)
    data = tmp_path / "d.jsonl"
    data.write_text(json.dumps({"id": "a", "response": "The tower is tall. It is old.", "contexts": ["c"]}) + "\n")
    code = main(["evaluate", str(data), "--metrics", "faithfulness", "--store", str(tmp_path / "s.db"),
                 *judge_args])
    err = capsys.readouterr().err
    assert code != 0 and "stopped by the test" in err
    want = prefix + agreement_notice("qwen2.5-coder-1.5b")
    assert want in " ".join(err.split())


def test_a_remote_judge_prints_no_such_line() -> None:
    from ragsight.judge import make_judge

    said: list[str] = []
    make_judge("openai:gpt-4o-mini", notice=said.append)
    with pytest.warns(UserWarning, match="useless as a judge"):
        make_judge("local:smollm2-135m", notice=said.append)
    assert len(said) == 1 and "not a judge" in said[0]


def test_the_report_repeats_the_line_for_embedded_runs_only() -> None:
    assert judge_note({"judge_spec": "local:qwen2.5-coder-1.5b", "judge_model": "qwen2.5-coder-1.5b"}) == \
        agreement_notice("qwen2.5-coder-1.5b")
    assert judge_note({"judge_spec": "openai:gpt-4o", "judge_model": "gpt-4o"}) is None
    assert judge_note({}) is None


def test_conversation_turns_get_the_judges_conversation_figures() -> None:
    line = conversation_notice("qwen2.5-coder-1.5b")
    assert "\n" not in line
    assert "0.779 against 0.824 on held-out turns" in line and "0.935 against 0.947" in line
    assert "docs/validity.md#conversations" in line and "--judge openai:MODEL" in line
    assert "not measured" in conversation_notice("my-own-8b.gguf")
    docs = (DOCS / "validity.md").read_text("utf-8")
    assert "{#conversations}" in docs
    for figure in NUMBER.findall(BUILTIN_JUDGES[0].conversations):
        assert figure in docs, figure


def test_the_run_says_the_conversation_line_only_for_the_embedded_judge_over_turns() -> None:
    from ragsight import Sample
    from ragsight.judge import Judge, ScriptedProvider
    from ragsight.run._evaluate import _turns_notice

    local = ScriptedProvider(model="qwen2.5-coder-1.5b")
    local.name = "local:qwen2.5-coder-1.5b"
    turn = Sample(id="c1:1", question="and on Sundays?", response="At 10:30.", conversation_id="c1", turn=1)
    single = Sample(id="s1", question="When does the ferry leave?", response="At 9.")
    assert _turns_notice(Judge(local), [single, turn]) == conversation_notice("qwen2.5-coder-1.5b")
    assert _turns_notice(Judge(local), [single]) is None
    assert _turns_notice(Judge(ScriptedProvider()), [turn]) is None
    assert _turns_notice(None, [turn]) is None


def test_the_report_adds_the_conversation_line_for_runs_with_turns() -> None:
    config = {"judge_spec": "local:qwen2.5-coder-1.5b", "judge_model": "qwen2.5-coder-1.5b"}
    note = judge_note(config, turns=True)
    assert note is not None and note.endswith(conversation_notice("qwen2.5-coder-1.5b"))
    assert judge_note(config) == agreement_notice("qwen2.5-coder-1.5b")
    assert judge_note({"judge_spec": "openai:gpt-4o", "judge_model": "gpt-4o"}, turns=True) is None
