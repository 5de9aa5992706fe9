"""A TOML file the user wrote (``--config``, ``--rubric``, pyproject.toml) that cannot be read or is
not TOML stops ``ragsight evaluate`` before any call, with exit status 2 and one line naming what
the file is for and where it is (one reader, ``ragsight.dataset._files.read_toml``, says it the same way)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from ragsight.cli import main

ROW = {"id": "g1", "question": "Who wrote gzip?", "contexts": ["gzip was written by Jean-loup Gailly."],
       "response": "Jean-loup Gailly wrote gzip."}


@pytest.mark.parametrize(("flag", "what"), [("--config", "config file"), ("--rubric", "rubric file")])
@pytest.mark.parametrize("broken", ["not toml", "missing"])
def test_a_toml_file_that_cannot_be_used_is_named_with_what_it_is_for(
        flag: str, what: str, broken: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
        capsys: pytest.CaptureFixture[str]) -> None:
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("OPENAI_API_KEY", "sk-test")
    (tmp_path / "d.jsonl").write_text(json.dumps(ROW) + "\n", "utf-8")
    path = tmp_path / "settings.toml"
    if broken == "not toml":
        path.write_text("[tool.ragsight\nfail_under = {faithfulness = 0.8}\n", "utf-8")
    code = main(["evaluate", "d.jsonl", "--judge", "openai:m", "--base-url", "http://127.0.0.1:9/v1",
                 "--store", "runs.db", flag, str(path)])
    err = " ".join(capsys.readouterr().err.split())
    assert code == 2
    if broken == "not toml":
        assert f"the {what} {path} is not valid TOML: Expected ']' at the end of a table declaration" in err
    else:
        assert f"cannot read the {what} {path}: [Errno 2] No such file or directory" in err
    assert "Traceback" not in err and not (tmp_path / "runs.db").exists()
