"""Interrupting a run in a notebook says what was kept and how to go on (second trial, htrial2).

On main the cell showed a bare ``KeyboardInterrupt`` (``evaluate``) or ``CancelledError``
(``await aevaluate``): no run id, no count of the saved samples, no way to continue, and with
the API's default in-memory store every finished sample was lost without a word, although the
README says "the finished samples are kept in the store"."""

from __future__ import annotations

import asyncio
import os
import re
import signal
import threading
from pathlib import Path

import pytest

import ragsight
from tests.fakes import FakeOpenAIServer, RecordedRequest, Reply
from tests.held_judge import finished, held_after, when_finished
from tests.reliability.world import JudgeWorld, make_samples, prompt_id_of


@pytest.fixture(autouse=True)
def _key(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("OPENAI_API_KEY", "sk-test-notebook")


async def test_an_interrupted_evaluate_says_what_is_saved_and_how_to_continue(
    tmp_path: Path, capsys: pytest.CaptureFixture[str],
) -> None:
    store = tmp_path / "nb.db"
    previous = signal.signal(signal.SIGINT, signal.default_int_handler)  # as an IPython kernel
    try:
        sent = threading.Event()
        with FakeOpenAIServer(handler=held_after(store, 2, sent)) as srv:
            timer = when_finished(store, 2, lambda: os.kill(os.getpid(), signal.SIGINT), sent)
            with pytest.raises(KeyboardInterrupt) as stop:
                ragsight.evaluate(make_samples(40), ["faithfulness"], store=str(store),
                                  judge=ragsight.JudgeSpec("openai:m", base_url=srv.url),
                                  options=ragsight.RunOptions(concurrency=2, show_progress=False))
            timer.join()
            text = str(stop.value)
            m = re.search(r"interrupted: (\d+) of 40 samples are saved in (\S+) \(run (\S+)\)", text)
            assert m is not None, text
            assert m.group(2) == str(store)
            # the cell's output says it too (the traceback's last line may be scrolled away)
            assert m.group(0) in capsys.readouterr().err
            hint = f"ragsight.evaluate(None, resume='{m.group(3)}', store='{store}')"
            assert hint in text
            # and the call it names finishes the run
            done = ragsight.evaluate(None, resume=m.group(3), store=str(store),
                                     options=ragsight.RunOptions(show_progress=False))
    finally:
        signal.signal(signal.SIGINT, previous)
    assert done.status == "completed" and done.summary["faithfulness"].counts["scored"] == 40
    assert 2 <= int(m.group(1)) < 40


async def test_an_interrupted_run_in_memory_says_that_nothing_is_kept(
    capsys: pytest.CaptureFixture[str],
) -> None:
    # The interrupt comes once the run is judging (4 judge steps asked). A fixed 1.5 s came before
    # the run had started when the preflight was slow (a loaded machine), and the message was
    # then "interrupted before the run started".
    world = JudgeWorld(latency=0.2)
    asked: list[RecordedRequest] = []
    judging = threading.Event()

    def handler(request: RecordedRequest) -> Reply | None:
        if prompt_id_of(request.json if isinstance(request.json, dict) else {}) is not None:
            asked.append(request)
            if len(asked) >= 4:
                judging.set()
        return world(request)

    def interrupt() -> None:
        judging.wait(60)
        os.kill(os.getpid(), signal.SIGINT)

    previous = signal.signal(signal.SIGINT, signal.default_int_handler)
    try:
        with FakeOpenAIServer(handler=handler) as srv:
            timer = threading.Thread(target=interrupt)
            timer.start()
            with pytest.raises(KeyboardInterrupt) as stop:  # the README's call: no store
                ragsight.evaluate(make_samples(40), ["faithfulness"],
                                  judge=ragsight.JudgeSpec("openai:m", base_url=srv.url),
                                  options=ragsight.RunOptions(concurrency=2, show_progress=False))
            timer.join()
    finally:
        signal.signal(signal.SIGINT, previous)
    text = str(stop.value)
    assert re.search(r"interrupted: \d+ of 40 samples were finished, but the store is in memory: "
                     r"they are lost\. Pass store='runs\.db'", text), text
    assert "store is in memory" in capsys.readouterr().err


async def test_a_cancelled_aevaluate_says_what_is_saved(tmp_path: Path,
                                                        capsys: pytest.CaptureFixture[str]) -> None:
    # `await aevaluate(...)` in a cell: interrupting the kernel cancels the cell's task
    store = tmp_path / "nb.db"
    sent = threading.Event()
    with FakeOpenAIServer(handler=held_after(store, 2, sent)) as srv:
        task = asyncio.ensure_future(ragsight.aevaluate(make_samples(40), ["faithfulness"], store=str(store),
                                                        judge=ragsight.JudgeSpec("openai:m", base_url=srv.url),
                                                        options=ragsight.RunOptions(concurrency=2, show_progress=False)))
        while not task.done() and finished(store) < 2:
            await asyncio.sleep(0.1)
        task.cancel()
        sent.set()
        with pytest.raises(asyncio.CancelledError):
            await task
    err = capsys.readouterr().err
    m = re.search(r"interrupted: \d+ of 40 samples are saved in \S+ \(run (\S+)\)\. Continue with: "
                  r"ragsight\.evaluate\(None, resume='(\S+)', store='(\S+)'\)", err)
    assert m is not None, err
    assert m.group(1) == m.group(2) and m.group(3) == str(store)
