"""A pyproject.toml in the working folder that ragsight cannot read (saved as Latin-1, or nested
beyond reading) ended every ``ragsight evaluate`` there in a traceback (UnicodeDecodeError,
RecursionError from tomllib). Now it is one line naming the file and what is wrong, exit 2, as an
invalid TOML file already was; the same for a ``--config`` file."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from ragsight import cli

ROWS = [{"id": f"s{i}", "question": f"Question {i}?", "retrieved_ids": ["d1"], "relevant_ids": ["d1"]}
        for i in range(2)]

FILES = {
    "latin-1": ('[project]\nname = "caf\xe9"\n'.encode("latin-1"), "is not UTF-8 (byte 0xe9 on line 2)"),
    "deep arrays": (("x = " + "[" * 100_000 + "]" * 100_000 + "\n").encode(), "nests arrays or tables too deeply"),
    "deep inline tables": (("x = " + "{a = " * 50_000 + "1" + "}" * 50_000 + "\n").encode(),
                           "nests arrays or tables too deeply"),
}


@pytest.mark.parametrize("kind", list(FILES))
@pytest.mark.parametrize("how", ["working folder", "--config"])
def test_an_unreadable_pyproject_is_a_clear_error(kind: str, how: str, tmp_path: Path,
                                                  monkeypatch: pytest.MonkeyPatch,
                                                  capsys: pytest.CaptureFixture[str]) -> None:
    monkeypatch.chdir(tmp_path)
    content, expected = FILES[kind]
    name = "pyproject.toml" if how == "working folder" else "settings.toml"
    (tmp_path / name).write_bytes(content)
    (tmp_path / "data.jsonl").write_text("".join(json.dumps(r) + "\n" for r in ROWS), encoding="utf-8")
    extra = ["--config", name] if how == "--config" else []
    code = cli.main(["evaluate", "data.jsonl", "--metrics", "hit_rate", "--store", "runs.db", "--quiet", *extra])
    err = " ".join(capsys.readouterr().err.split())
    assert code == 2, err
    assert f"the config file {name} {expected}" in err, err
    assert "Traceback" not in err
