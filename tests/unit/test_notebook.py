"""evaluate() in a notebook: inside a running event loop it works (no
nest_asyncio, no patching of the loop), ``await aevaluate(...)`` is the direct form, and the
progress shows there too (a rich bar where rich can draw, else a text line)."""

from __future__ import annotations

import asyncio
import importlib.util
import io
import os
import signal
import sqlite3
import threading
from contextlib import closing
from pathlib import Path

import pytest
from rich.console import Console

import ragsight
from ragsight import Store
from ragsight.engine import Progress, ProgressDisplay, display_mode
from ragsight.errors import ConfigError
from tests.fakes import FakeOpenAIServer
from tests.held_judge import held_after, when_finished
from tests.reliability.world import JudgeWorld, make_samples

ROWS = [{"id": "a", "response": "Paris", "reference": "Paris"},
        {"id": "b", "response": "Lyon", "reference": "Paris"}]


async def test_evaluate_works_inside_a_running_event_loop() -> None:
    # as in a Jupyter cell: this thread runs an event loop (on main: "asyncio.run() cannot be
    # called from a running event loop")
    loop = asyncio.get_running_loop()
    result = ragsight.evaluate(ROWS, ["token_f1"])
    assert result.summary["token_f1"].mean == 0.5
    assert asyncio.get_running_loop() is loop and not loop.is_closed()  # the notebook's loop untouched


async def test_a_judged_run_inside_a_running_loop_and_awaited(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("OPENAI_API_KEY", "sk-test-notebook")
    rows = make_samples(3)
    with FakeOpenAIServer(handler=JudgeWorld()) as srv:
        called = ragsight.evaluate(rows, ["faithfulness"],
                                   judge=ragsight.JudgeSpec("openai:m", base_url=srv.url))
        awaited = await ragsight.aevaluate(rows, ["faithfulness"],
                                           judge=ragsight.JudgeSpec("openai:m", base_url=srv.url))
    for result in (called, awaited):
        assert result.summary["faithfulness"].counts["scored"] == 3
    assert called.summary["faithfulness"].mean == awaited.summary["faithfulness"].mean


async def test_a_store_opened_in_the_notebook_is_used_by_the_worker(tmp_path: Path) -> None:
    # on main (with the worker thread alone): "SQLite objects created in a thread can only be
    # used in that same thread"
    with Store(tmp_path / "nb.db") as store:
        first = ragsight.evaluate(ROWS, ["token_f1"], store=store)
        second = ragsight.evaluate(ROWS, ["token_f1"], store=store)
        assert [r.id for r in store.runs()] == [second.run_id, first.run_id]


async def test_a_failure_inside_the_worker_reaches_the_caller() -> None:
    before = threading.active_count()
    with pytest.raises(ConfigError, match="unknown metric 'faithfulnes'"):
        ragsight.evaluate(ROWS, ["faithfulnes"])
    assert threading.active_count() == before  # the worker thread ended


async def test_progress_shows_as_a_text_line_inside_a_running_loop(capsys: pytest.CaptureFixture[str]) -> None:
    ragsight.evaluate(ROWS, ["token_f1"], options=ragsight.RunOptions(show_progress=True))
    err = capsys.readouterr().err
    # standard error is not a terminal here, so rich cannot draw: the text line, rewritten in place
    assert "\revaluating: 2/2 samples, failed 0, skipped 0" in err and err.endswith("\n")


def test_no_progress_is_written_to_a_file_unless_asked(capsys: pytest.CaptureFixture[str]) -> None:
    ragsight.evaluate(ROWS, ["token_f1"])
    assert capsys.readouterr().err == ""


def test_a_notebook_gets_a_bar_where_rich_can_draw_there_else_the_text_line() -> None:
    jupyter = Console(force_jupyter=True, file=io.StringIO())
    expected = "bar" if importlib.util.find_spec("ipywidgets") is not None else "text"
    assert display_mode(jupyter) == expected
    assert display_mode(Console(file=io.StringIO(), force_terminal=True)) == "bar"
    assert display_mode(Console(file=io.StringIO(), force_terminal=False, force_jupyter=False)) == "off"
    stream = io.StringIO()
    progress = Progress(total=2)
    with ProgressDisplay(progress, "text", stream=stream):
        assert progress.on_update is not None
        progress.done = 2
        progress.on_update(progress)
    assert progress.on_update is None
    assert stream.getvalue().endswith("evaluating: 2/2 samples, failed 0, skipped 0\n")


async def test_interrupting_the_kernel_stops_the_run_and_keeps_what_finished(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
) -> None:
    # Jupyter's "interrupt kernel" is a SIGINT to the kernel's main thread, which here waits for
    # the worker thread: the run is cancelled there, saves what finished, and the cell sees
    # KeyboardInterrupt.
    monkeypatch.setenv("OPENAI_API_KEY", "sk-test-notebook")
    store = tmp_path / "runs.db"

    sent = threading.Event()

    # An IPython kernel turns SIGINT into KeyboardInterrupt (Python's default handler); the
    # runner of this test suite's event loop would only cancel its task: as the kernel, here.
    previous = signal.signal(signal.SIGINT, signal.default_int_handler)
    try:
        with FakeOpenAIServer(handler=held_after(store, 2, sent)) as srv:
            timer = when_finished(store, 2, lambda: os.kill(os.getpid(), signal.SIGINT), sent)
            with pytest.raises(KeyboardInterrupt):
                ragsight.evaluate(make_samples(40), ["faithfulness"], store=store,
                                  judge=ragsight.JudgeSpec("openai:m", base_url=srv.url),
                                  options=ragsight.RunOptions(concurrency=2))
            timer.join()
    finally:
        signal.signal(signal.SIGINT, previous)
    with closing(sqlite3.connect(store)) as c:
        status = c.execute("SELECT status FROM runs").fetchone()[0]
        done = c.execute("SELECT COUNT(*) FROM samples WHERE finished=1").fetchone()[0]
    assert status == "interrupted" and 2 <= done < 40


def test_an_interrupt_as_the_run_ends_does_not_offer_a_resume(tmp_path: Path) -> None:
    from ragsight.run._evaluate import interrupted_message

    store = tmp_path / "runs.db"
    midway = interrupted_message(Progress(total=40, done=7, run_id="r1"), store)
    assert midway.startswith("interrupted: 7 of 40 samples are saved") and "resume='r1'" in midway
    ended = interrupted_message(Progress(total=40, done=40, run_id="r1"), store)
    assert ended == (f"interrupted as the run ended: all 40 samples are saved in {store} (run r1); "
                     "nothing is left to resume.")
