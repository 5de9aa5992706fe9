"""The examples of docs/integrations/ run exactly as written: the trace file and command of
traces.md give the output and the sample shown there; the Python examples of langchain.md and
llamaindex.md run offline; the test file of pytest.md passes and fails as its page says."""

from __future__ import annotations

import importlib.util
import json
import re
import shutil
from pathlib import Path

import pytest

import ragsight.testing  # noqa: F401 - loaded before pytester snapshots sys.modules (numpy loads once)
from ragsight.cli import main
from tests.fakes import FakeOpenAIServer
from tests.fakes.offline import loopback_only
from tests.reliability.world import JudgeWorld

pytest_plugins = ["pytester"]

DOCS = Path(__file__).resolve().parents[2] / "docs" / "integrations"


def blocks(page: str, lang: str) -> list[str]:
    """The bodies of the page's fenced blocks of language ``lang`` ("" for plain ones), in order."""
    found: list[tuple[str, str]] = []
    current: tuple[str, list[str]] | None = None
    for line in (DOCS / page).read_text(encoding="utf-8").splitlines(keepends=True):
        if line.startswith("```"):
            if current is None:
                current = (line[3:].strip(), [])
            else:
                found.append((current[0], "".join(current[1])))
                current = None
        elif current is not None:
            current[1].append(line)
    return [body for kind, body in found if kind == lang]


def test_traces_page_example(tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                             capsys: pytest.CaptureFixture[str]) -> None:
    monkeypatch.chdir(tmp_path)
    (tmp_path / "spans.jsonl").write_text(blocks("traces.md", "jsonl")[0], encoding="utf-8")
    commands = [b.strip() for b in blocks("traces.md", "bash")]
    assert commands[1] == "ragsight import-traces spans.jsonl --out samples.jsonl"
    assert main(commands[1].split()[1:]) == 0
    shown_output = blocks("traces.md", "")[0]
    assert capsys.readouterr().out == shown_output
    shown_sample = json.loads(blocks("traces.md", "json")[0])
    assert json.loads((tmp_path / "samples.jsonl").read_text()) == shown_sample


@pytest.mark.parametrize(("page", "module"), [("langchain.md", "langchain_core"),
                                              ("llamaindex.md", "llama_index")])
def test_python_example_runs_offline(page: str, module: str, capsys: pytest.CaptureFixture[str]) -> None:
    if importlib.util.find_spec(module) is None:
        pytest.skip(f"{module} is not installed")
    (code,) = blocks(page, "python")
    tokenizer = None
    if module == "llama_index":
        from llama_index.core import Settings

        tokenizer = Settings._tokenizer
    try:
        with loopback_only() as refused:
            exec(compile(code, page, "exec"), {"__name__": "docs_example"})
    finally:
        if module == "llama_index":
            Settings._tokenizer = tokenizer
    assert refused == []
    printed = capsys.readouterr().out.splitlines()
    assert printed[0].startswith("['") and 0.0 <= float(printed[1]) <= 1.0


def test_pytest_page_example(pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("PYTEST_DISABLE_PLUGIN_AUTOLOAD", "1")
    for name in ("RAGSIGHT_JUDGE", "RAGSIGHT_STORE", "RAGSIGHT_BASE_URL", "OPENAI_API_KEY"):
        monkeypatch.delenv(name, raising=False)
    (code,) = blocks("pytest.md", "python")
    (pytester.path / "tests").mkdir()
    (pytester.path / "tests" / "test_rag_quality.py").write_text(code, encoding="utf-8")
    (pytester.path / "tests" / "golden.jsonl").write_text(blocks("pytest.md", "jsonl")[0], encoding="utf-8")
    command = blocks("pytest.md", "bash")[0].split()
    assert command[:2] == ["pytest", "tests/test_rag_quality.py"]
    with FakeOpenAIServer(handler=JudgeWorld()) as srv:
        # the page's command, with the judge served locally
        args = [a if a != "openai:gpt-4o-mini" else "openai:judge-model" for a in command[1:]]
        result = pytester.runpytest("-p", "_ragsight_pytestplugin", "-p", "no:cacheprovider", "--tb=short",
                                    "--ragsight-base-url", srv.url, *args)
    result.assert_outcomes(passed=2, failed=1)
    shown = [b for b in blocks("pytest.md", "") if "ragsight" in b]

    def pattern(line: str) -> str:
        line = re.sub(r"\d{8}-\d{6}-[0-9a-f]{6}", "*", line)
        return re.sub(r"judge: \d+ calls, \d+ cache hits, \d+ tokens", "judge: * calls, * cache hits, * tokens", line)

    for block in shown:
        result.stdout.fnmatch_lines([pattern(line) for line in block.splitlines()])
    assert (pytester.path / "report.html").exists()
    shutil.rmtree(pytester.path / "tests")
