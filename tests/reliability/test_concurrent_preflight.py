"""The preflight of a new run goes on while its first samples are judged.

Before, a run pinged the judge (and embedded one text) and only then sent its first judge call:
one round trip more on every run (at 300 ms per call, 7 metrics x 20 samples took 1.70-1.99 s
where the chain of calls needs about 1.2 s). Now the pings and the first samples start together;
nothing is written, to the store or the judge cache, until the pings have passed, and a failed
ping cancels the samples in flight and leaves nothing behind. Real CLI runs against a fake
judge on 127.0.0.1.
"""

from __future__ import annotations

import json
import sqlite3
import threading
import time
from pathlib import Path
from typing import Any

import pytest

from ragsight import cli
from tests.fakes import FakeOpenAIServer, RecordedRequest, Reply
from tests.reliability.world import JudgeWorld, make_samples, prompt_id_of


def _data(tmp_path: Path, n: int = 2) -> Path:
    data = tmp_path / "d.jsonl"
    data.write_text("".join(json.dumps(r) + "\n" for r in make_samples(n)), encoding="utf-8")
    return data


def _rows(path: Path, sql: str) -> list[tuple[Any, ...]]:
    conn = sqlite3.connect(path)
    try:
        return conn.execute(sql).fetchall()
    finally:
        conn.close()


class SlowPing:
    """Answers the ping after ``ping_s`` (with ``ping_reply``, else as the world does) and
    every other request at once; records when requests arrive and when the ping was answered."""

    def __init__(self, ping_s: float, ping_reply: Reply | None = None) -> None:
        self.world = JudgeWorld()
        self.ping_s = ping_s
        self.ping_reply = ping_reply
        self.lock = threading.Lock()
        self.judge_steps: list[float] = []  # arrival times of judge steps (not pings)
        self.ping_answered: float | None = None

    def __call__(self, req: RecordedRequest) -> Reply | None:
        body = req.json if isinstance(req.json, dict) else {}
        if req.path.endswith("/chat/completions") and prompt_id_of(body) is None:
            time.sleep(self.ping_s)
            with self.lock:
                self.ping_answered = time.monotonic()
            return self.ping_reply if self.ping_reply is not None else self.world(req)
        if req.path.endswith("/chat/completions"):
            with self.lock:
                self.judge_steps.append(time.monotonic())
        return self.world(req)


def _evaluate(data: Path, store: Path, url: str, capsys: pytest.CaptureFixture[str]) -> tuple[int, str]:
    code = cli.main(["evaluate", str(data), "--judge", "openai:m", "--base-url", url, "--store",
                     str(store), "--quiet", "--metrics", "faithfulness,answer_relevancy",
                     "--embedder", "openai:e"])
    captured = capsys.readouterr()
    return code, " ".join((captured.out + "\n" + captured.err).split())


def test_the_first_samples_are_judged_while_the_judge_is_pinged(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    world = SlowPing(ping_s=1.0)
    with FakeOpenAIServer(handler=world) as srv:
        code, output = _evaluate(_data(tmp_path), tmp_path / "r.db", srv.url, capsys)
    assert code == 0, output
    assert world.ping_answered is not None and world.judge_steps
    assert min(world.judge_steps) < world.ping_answered - 0.5, "the first judge step waited for the ping"
    # and the run is whole: both samples scored on both metrics, their calls cached
    store = tmp_path / "r.db"
    assert _rows(store, "SELECT COUNT(*) FROM samples WHERE finished=1") == [(2,)]
    assert _rows(store, "SELECT COUNT(*) FROM scores WHERE outcome='scored'") == [(4,)]
    assert _rows(store, "SELECT COUNT(*) FROM cache")[0][0] >= 2


@pytest.mark.parametrize("existing", [False, True], ids=["new store", "existing store"])
def test_a_failed_ping_leaves_no_run_no_rows_and_no_cache_entry(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], existing: bool
) -> None:
    store = tmp_path / "r.db"
    if existing:  # a store with one finished run: its rows stay as they are
        with FakeOpenAIServer(handler=JudgeWorld()) as srv:
            code, output = _evaluate(_data(tmp_path), store, srv.url, capsys)
        assert code == 0, output
        before = {t: _rows(store, f"SELECT COUNT(*) FROM {t}") for t in ("runs", "samples", "scores", "cache")}
    refused = Reply.error(401, "Incorrect API key provided")
    world = SlowPing(ping_s=1.0, ping_reply=refused)
    other = tmp_path / "other"
    other.mkdir()
    with FakeOpenAIServer(handler=world) as srv:
        code, output = _evaluate(_data(other, 3), store, srv.url, capsys)
    assert code == 2, output
    assert "Incorrect API key" in output, output
    assert "Traceback" not in output
    assert world.judge_steps, "no judge step was sent while the ping went on"
    if existing:
        assert {t: _rows(store, f"SELECT COUNT(*) FROM {t}") for t in before} == before
    else:
        assert not store.exists()


def test_ctrl_c_during_the_ping_keeps_nothing(tmp_path: Path) -> None:
    """The library's interrupt (a notebook's): the run is cancelled while the ping hangs, after
    its first judge steps were answered."""
    import asyncio

    import ragsight

    world = SlowPing(ping_s=30.0)
    store = tmp_path / "r.db"

    async def main(url: str) -> None:
        task = asyncio.ensure_future(ragsight.aevaluate(str(_data(tmp_path)), ["faithfulness"],
                                                        store=str(store),
                                                        judge=ragsight.JudgeSpec("openai:m", base_url=url),
                                                        options=ragsight.RunOptions(show_progress=False)))
        limit = time.monotonic() + 20
        while not world.judge_steps and time.monotonic() < limit:
            await asyncio.sleep(0.05)
        assert world.judge_steps
        await asyncio.sleep(0.3)
        task.cancel()
        with pytest.raises(asyncio.CancelledError):
            await task

    with FakeOpenAIServer(handler=world) as srv:
        asyncio.run(main(srv.url))
    assert not store.exists()
