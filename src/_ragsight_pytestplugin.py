"""ragsight's pytest plugin (entry point ``pytest11``).

Kept outside the ``ragsight`` package, as hypothesis keeps its own, so that starting pytest does
not import ragsight: it is imported only when a test calls ``ragsight.testing.assert_scores``
(which finds this module's session options and records its runs here), at the start of a session
given ``--ragsight-report`` (the report's path is checked before any test runs) and at the end of
a session that made runs.

Options (command line, else the ini option, else the environment variable):
``--ragsight-judge`` / ``ragsight_judge`` / ``RAGSIGHT_JUDGE``; ``--ragsight-base-url`` /
``ragsight_base_url`` / ``RAGSIGHT_BASE_URL``; ``--ragsight-store`` / ``ragsight_store`` /
``RAGSIGHT_STORE``; ``--ragsight-report PATH`` writes the HTML report of every run of the session.
"""

from __future__ import annotations

from collections.abc import Generator
from dataclasses import dataclass, field
from typing import Any

import pytest

_OPTIONS = ("judge", "base_url", "store")


@dataclass
class _Session:
    config: Any
    options: dict[str, str | None]
    report: str | None
    records: list[Any] = field(default_factory=list)
    test: str | None = None
    report_error: str | None = None


# one per configured pytest session, innermost last (pytester runs a session inside a session)
_sessions: list[_Session] = []


def _of(config: Any) -> _Session | None:
    return next((s for s in reversed(_sessions) if s.config is config), None)


def pytest_addoption(parser: pytest.Parser) -> None:
    group = parser.getgroup("ragsight", "RAG quality checks (ragsight.testing.assert_scores)")
    group.addoption("--ragsight-judge", metavar="SPEC",
                    help="judge for assert_scores: openai:MODEL, anthropic:MODEL, azure:DEPLOYMENT, local... "
                         "(default: $RAGSIGHT_JUDGE, else the embedded judge)")
    group.addoption("--ragsight-base-url", metavar="URL", help="the judge's base URL (OpenAI-compatible servers, Azure)")
    group.addoption("--ragsight-store", metavar="PATH",
                    help="run store holding the runs and the judge cache (default: $RAGSIGHT_STORE, else ./ragsight.db)")
    group.addoption("--ragsight-report", metavar="PATH", help="write the HTML report of every run of the session")
    for name in _OPTIONS:
        parser.addini(f"ragsight_{name}", f"default for --ragsight-{name.replace('_', '-')}")


def pytest_configure(config: pytest.Config) -> None:
    options = {}
    for name in _OPTIONS:
        value = config.getoption(f"ragsight_{name}") or config.getini(f"ragsight_{name}")
        options[name] = value or None
    report = config.getoption("ragsight_report")
    if report is not None:  # checked before the tests pay for their judge calls, not after them
        from ragsight.dataset._files import check_writable_target

        try:
            check_writable_target(report, "--ragsight-report file")
        except OSError as exc:
            raise pytest.UsageError(str(exc)) from None
    _sessions.append(_Session(config, options, report))


def pytest_unconfigure(config: pytest.Config) -> None:
    session = _of(config)
    if session is not None:
        _sessions.remove(session)


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_call(item: pytest.Item) -> Generator[None, None, None]:
    session = _of(item.config)
    if session is not None:
        session.test = item.nodeid
    try:
        yield
    finally:
        if session is not None:
            session.test = None


def pytest_sessionfinish(session: pytest.Session) -> None:
    mine = _of(session.config)
    if mine is not None and mine.report and mine.records:
        from ragsight.dataset._files import write_failure
        from ragsight.errors import RagsightError
        from ragsight.testing import write_session_report

        try:
            write_session_report(mine.records, mine.report)
        except (OSError, RagsightError) as exc:  # a full disk, a folder removed meanwhile
            mine.report_error = (write_failure(mine.report, exc, "--ragsight-report file")
                                 if isinstance(exc, OSError) else str(exc))
            session.exitstatus = pytest.ExitCode.USAGE_ERROR


def pytest_terminal_summary(terminalreporter: Any, config: pytest.Config) -> None:
    mine = _of(config)
    if mine is None or not mine.records:
        return
    from ragsight.testing import summary_lines

    terminalreporter.section("ragsight")
    for line in summary_lines(mine.records, None if mine.report_error else mine.report):
        terminalreporter.write_line(line)
    if mine.report_error:
        terminalreporter.write_line(f"error: {mine.report_error}", red=True, bold=True)


# ---- for ragsight.testing: the innermost session --------------------------------------------------


def active() -> bool:
    """Whether a pytest session with this plugin is running."""
    return bool(_sessions)


def option(name: str) -> str | None:
    return _sessions[-1].options.get(name) if _sessions else None


def current_test() -> str | None:
    """The node id of the test being run."""
    return _sessions[-1].test if _sessions else None


def record(run: Any) -> None:
    if _sessions:
        _sessions[-1].records.append(run)
