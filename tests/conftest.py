"""Settings for the whole suite.

Property tests (Hypothesis) check correctness, not speed: without a deadline, an example that a
slow or loaded CI machine takes over 200 ms to run is not a failure.

Ctrl-C: a suite started in the background by a shell without job control (``nohup ... &``)
inherits SIGINT ignored, and so does every process it starts; the tests that press Ctrl-C (on
themselves or on a child) then saw nothing happen. The suite takes SIGINT back, and its children
start with it (a handler, unlike an ignored signal, is not inherited across exec).

The embedded models are loaded once per session by the fixtures of tests/model_fixtures.py.

A test writes its files under ``tmp_path``: one that leaves a file or folder in the checkout's top
folder (a store, an export named after its run) fails, naming it; under pytest-xdist, where two
workers share the folder, the session fails at its end instead, naming what was left.
"""

from __future__ import annotations

import os
import signal
from collections.abc import Iterator
from pathlib import Path

import pytest
from hypothesis import settings

pytest_plugins = ["tests.model_fixtures"]

settings.register_profile("ragsight", deadline=None)
settings.load_profile("ragsight")

if signal.getsignal(signal.SIGINT) is signal.SIG_IGN:
    signal.signal(signal.SIGINT, signal.default_int_handler)

CHECKOUT = Path(__file__).resolve().parents[1]
_TOOL_FOLDERS = {".pytest_cache", ".hypothesis"}  # pytest's and Hypothesis's own
_BEFORE = pytest.StashKey[set[str]]()


def _top_level() -> set[str]:
    return set(os.listdir(CHECKOUT)) - _TOOL_FOLDERS


def left_in_checkout(before: set[str]) -> list[str]:
    """What appeared in the checkout's top folder since ``before``."""
    return sorted(_top_level() - before)


@pytest.fixture(autouse=True)
def _nothing_left_in_the_checkout(request: pytest.FixtureRequest) -> Iterator[None]:
    if hasattr(request.config, "workerinput"):  # an xdist worker: checked once, at the end
        yield
        return
    before = _top_level()
    yield
    left = left_in_checkout(before)
    if left:
        pytest.fail(f"the test left {', '.join(left)} in the checkout's top folder ({CHECKOUT}); "
                    "write under tmp_path", pytrace=False)


def pytest_sessionstart(session: pytest.Session) -> None:
    session.config.stash[_BEFORE] = _top_level()


def pytest_sessionfinish(session: pytest.Session, exitstatus: int) -> None:
    if hasattr(session.config, "workerinput"):
        return
    left = left_in_checkout(session.config.stash[_BEFORE])
    if left:
        session.config.get_terminal_writer().line(
            f"the tests left {', '.join(left)} in the checkout's top folder ({CHECKOUT}); "
            "each test writes under tmp_path", red=True)
        session.exitstatus = pytest.ExitCode.TESTS_FAILED

