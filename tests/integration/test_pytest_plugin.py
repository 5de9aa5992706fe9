"""The pytest plugin from the outside: pytest runs a team's sample test file
(tests/fixtures/pytest_sample/) with a judge served over HTTP on 127.0.0.1. Thresholds met pass,
a missed threshold fails with a readable message (asserted line by line), the session summary
and the HTML report name every run, and running the unchanged suite again makes no judge call."""

from __future__ import annotations

import re
import shutil
import sys
from pathlib import Path

import pytest

import ragsight.testing  # noqa: F401 - loaded before pytester snapshots sys.modules (numpy loads once)
from tests.fakes import FakeOpenAIServer
from tests.reliability.world import JudgeWorld

pytest_plugins = ["pytester"]

ROOT = Path(__file__).resolve().parents[2]
SAMPLE = ROOT / "tests" / "fixtures" / "pytest_sample"


@pytest.fixture
def suite(pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch) -> pytest.Pytester:
    # the plugin is named explicitly (-p) whether or not this environment installed its entry point
    monkeypatch.setenv("PYTEST_DISABLE_PLUGIN_AUTOLOAD", "1")
    for name in ("RAGSIGHT_JUDGE", "RAGSIGHT_STORE", "RAGSIGHT_BASE_URL", "OPENAI_API_KEY", "OPENAI_BASE_URL"):
        monkeypatch.delenv(name, raising=False)
    shutil.copy(SAMPLE / "sample_test_rag.py", pytester.path / "test_rag.py")
    shutil.copy(SAMPLE / "golden.jsonl", pytester.path / "golden.jsonl")
    return pytester


def _run(suite: pytest.Pytester, url: str) -> pytest.RunResult:
    return suite.runpytest("-p", "_ragsight_pytestplugin", "-p", "no:cacheprovider", "--tb=short",
                           "--ragsight-judge", "openai:judge-model", "--ragsight-base-url", url,
                           "--ragsight-store", "quality.db", "--ragsight-report", "report.html")


def test_sample_suite_passes_fails_readably_and_reruns_for_free(suite: pytest.Pytester) -> None:
    with FakeOpenAIServer(handler=JudgeWorld()) as srv:
        first = _run(suite, srv.url)
        report = (suite.path / "report.html").read_text(encoding="utf-8")
        sent = len(srv.requests)
        second = _run(suite, srv.url)
        assert len(srv.requests) == sent  # the unchanged suite again: not one judge call
    assert sent > 0

    for result in (first, second):
        result.assert_outcomes(passed=3, failed=1)
    text = first.stdout.str()
    run_id = re.search(r"ragsight show (\S+) --sample oslo", text).group(1)  # type: ignore[union-attr]
    first.stdout.fnmatch_lines([
        "E   ragsight.testing.ScoresBelowThresholdError: ragsight: 1 of 1 sample below threshold",
        "E     faithfulness >= 0.8: oslo 0.50",
        "E   worst: oslo faithfulness 0.50 -- When does the Oslo office open?",
        "E       ✗ It has a rooftop garden. (not stated)",
        "E       ✓ The Oslo office opens at 8 am.",
        "E   evidence:",
        f"E     ragsight show {run_id} --sample oslo --store quality.db",
    ])
    # the session summary: each assert_scores call, then the judge's spend
    first.stdout.fnmatch_lines([
        "*= ragsight =*",
        "PASSED test_rag.py::test_golden_answers_are_grounded[leave]",
        "       faithfulness 1.00 (>=0.8)",
        "FAILED test_rag.py::test_golden_answers_are_grounded[oslo]",
        "       faithfulness 0.50 (>=0.8)",
        "PASSED test_rag.py::test_golden_answers_are_grounded[expenses]",
        "       faithfulness 1.00 (>=0.8)",
        "PASSED test_rag.py::test_travel_answers_cover_the_policy",
        "       faithfulness 1.00 (>=0.9), context_recall 1.00 (>=0.9)",
        "4 runs saved in quality.db; judge: * calls, 0 cache hits, * tokens",
        "HTML report of the session's runs: report.html",
    ])
    second.stdout.fnmatch_lines(["4 runs saved in quality.db; judge: 0 calls, * cache hits, 0 tokens"])
    assert "judge: 0 calls, 0 cache hits" not in second.stdout.str()
    for line in text.splitlines():  # what ragsight writes fits 80 columns (pytest adds the class name)
        if line.startswith(("E ", "PASSED ", "FAILED ", "       ", "4 runs")) and "Error: " not in line:
            assert len(line) <= 80, line

    assert report.count("<h2>Run ") == 4 and run_id in report
    assert "test_rag.py::test_golden_answers_are_grounded[oslo]" in report
    assert 'id="comparison"' not in report  # runs of different data are not compared


def test_a_suite_without_assert_scores_prints_nothing_and_imports_nothing(suite: pytest.Pytester) -> None:
    (suite.path / "test_rag.py").unlink()
    suite.makepyfile(test_plain="def test_one():\n    assert 1 + 1 == 2\n")
    result = suite.runpytest_subprocess("-p", "_ragsight_pytestplugin", "-p", "no:cacheprovider",
                                        "--ragsight-report", "report.html", "-s")
    result.assert_outcomes(passed=1)
    assert "ragsight" not in result.stdout.str()
    assert not (suite.path / "report.html").exists()
    code = ("import sys, pytest; pytest.main(['-q', '-p', '_ragsight_pytestplugin', 'test_plain.py']); "
            "print('RAGSIGHT_LOADED', 'ragsight' in sys.modules)")
    done = suite.run(sys.executable, "-c", code)
    assert "RAGSIGHT_LOADED False" in done.stdout.str()  # starting pytest does not import ragsight


def test_the_entry_point_names_the_plugin_module() -> None:
    project = (ROOT / "pyproject.toml").read_text(encoding="utf-8")
    assert '[project.entry-points.pytest11]\nragsight = "_ragsight_pytestplugin"\n' in project
    assert 'py-modules = ["_ragsight_pytestplugin"]' in project
    import _ragsight_pytestplugin as plugin

    assert callable(plugin.pytest_addoption) and callable(plugin.pytest_terminal_summary)


def test_an_unusable_golden_row_is_a_failing_case_not_a_case_gone(suite: pytest.Pytester) -> None:
    """A row of golden.jsonl the loader cannot use was dropped from cases(): the suite ran one
    case fewer, green. It is now a case of its own that fails with the row's problem."""
    golden = suite.path / "golden.jsonl"
    golden.write_text(golden.read_text(encoding="utf-8")
                      + '{"id": "typo", "question": "Q?", "contexts": [1, 2], "response": "x"}\n', encoding="utf-8")
    lines = golden.read_text(encoding="utf-8").splitlines()
    with FakeOpenAIServer(handler=JudgeWorld()) as srv:
        result = _run(suite, srv.url)
    result.assert_outcomes(passed=3, failed=2)
    result.stdout.fnmatch_lines([
        f"E   ragsight.errors.InputError: this case's row could not be used: *golden.jsonl, row {len(lines)}, "
        "field 'contexts': item 0 is int, not a string. Every item must be text.",
        f"FAILED test_rag.py::test_golden_answers_are_grounded[[]row-{len(lines)}[]] - ragsight.errors*",
    ])
