"""A judge world held still until an interrupt is sent, for tests that interrupt a run midway: on
a busy machine the run could otherwise finish before the interrupt lands."""

from __future__ import annotations

import sqlite3
import threading
import time
from collections.abc import Callable
from contextlib import closing
from pathlib import Path

from tests.fakes import RecordedRequest, Reply
from tests.reliability.world import JudgeWorld


def finished(store: Path) -> int:
    """The samples a run has saved in ``store`` so far (0 before the store exists)."""
    if not store.exists():  # (connecting would create it before the run does)
        return 0
    try:
        with closing(sqlite3.connect(store, timeout=1.0)) as c:
            return int(c.execute("SELECT COUNT(*) FROM samples WHERE finished=1").fetchone()[0])
    except sqlite3.OperationalError:
        return 0


def held_after(store: Path, n: int, sent: threading.Event) -> Callable[[RecordedRequest], Reply | None]:
    """The judge world, answering nothing more once ``n`` samples are saved until ``sent`` is set
    (the interrupt)."""
    world = JudgeWorld(latency=0.1)

    def handler(request: RecordedRequest) -> Reply | None:
        if not sent.is_set() and finished(store) >= n:
            sent.wait(60)
        return world(request)

    return handler


def when_finished(store: Path, n: int, then: Callable[[], None], sent: threading.Event) -> threading.Thread:
    """A started thread that calls ``then`` (the interrupt) once ``n`` samples are saved, then sets
    ``sent``."""
    def wait() -> None:
        deadline = time.monotonic() + 60
        while time.monotonic() < deadline and finished(store) < n:
            time.sleep(0.1)
        then()
        sent.set()

    thread = threading.Thread(target=wait)
    thread.start()
    return thread
