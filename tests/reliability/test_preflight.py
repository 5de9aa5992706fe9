"""The preflight ping says what it waits for and gives up in a bounded, stated time.

A server that never answered kept the preflight silent for ~6 minutes (3 pings of the 120 s call
timeout); a server asking, with Retry-After, to wait longer than 2 s failed the preflight, since
it honoured Retry-After only up to 2 s. Now each ping waits at most min(--timeout, 30 s), the
preflight at most 90 s in all, Retry-After is honoured within that bound (a longer wait ends it
at once, saying so), and after 2 s the user is told what is awaited.
"""

from __future__ import annotations

import json
import threading
import time
from collections.abc import Callable
from pathlib import Path

import pytest

from ragsight import cli
from tests.fakes import FakeOpenAIServer, RecordedRequest, Reply
from tests.reliability.world import JudgeWorld, make_samples, prompt_id_of


def write_data(tmp_path: Path) -> Path:
    data = tmp_path / "d.jsonl"
    data.write_text("".join(json.dumps(r) + "\n" for r in make_samples(2)), encoding="utf-8")
    return data


def evaluate(data: Path, tmp_path: Path, url: str, timeout: str,
             capsys: pytest.CaptureFixture[str]) -> tuple[int, str, float]:
    start = time.monotonic()
    code = cli.main(["evaluate", str(data), "--judge", "openai:m", "--base-url", url, "--store",
                     str(tmp_path / "r.db"), "--quiet", "--metrics", "faithfulness", "--timeout", timeout])
    elapsed = time.monotonic() - start
    captured = capsys.readouterr()
    output = " ".join((captured.out + "\n" + captured.err).split())
    assert "Traceback" not in output
    return code, output, elapsed


def preflight_only(handler: Callable[[RecordedRequest], Reply | None]) -> Callable[[RecordedRequest], Reply | None]:
    """``handler`` for the preflight ping (a chat request without a schema); the world for the rest."""
    world = JudgeWorld()

    def answer(req: RecordedRequest) -> Reply | None:
        body = req.json if isinstance(req.json, dict) else {}
        if req.path.endswith("/chat/completions") and prompt_id_of(body) is None:
            return handler(req)
        return world(req)

    return answer


def test_a_server_that_never_answers_is_named_and_given_up_on_in_bounded_time(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    with FakeOpenAIServer(handler=preflight_only(lambda r: Reply.hang())) as srv:
        url = srv.url
        code, output, elapsed = evaluate(write_data(tmp_path), tmp_path, url, "3", capsys)
        # the pings: the run's first samples are judged meanwhile (answered, then dropped)
        pings = len([r for r in srv.requests_to("/chat/completions")
                     if prompt_id_of(r.json if isinstance(r.json, dict) else {}) is None])
    assert code == 2, output
    assert not (tmp_path / "r.db").exists()
    # said while waiting: what, where, and when it gives up
    assert (f"waiting for the judge 'openai:m' at {url} to answer a 1-token ping (up to 3 pings "
            "of 3 s each; giving up after 90 s in all at most)") in output
    assert "the preflight call to judge 'openai:m' failed 3 times in " in output
    assert "gave no complete answer within 3 s" in output
    assert pings == 3
    assert elapsed < 20, f"the preflight took {elapsed:.1f} s against 3 pings of 3 s"


def test_retry_after_beyond_two_seconds_is_honoured(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """The server rate-limits for its first 5 s and says so with Retry-After: 5."""
    lock = threading.Lock()
    first: list[float] = []

    def limited(req: RecordedRequest) -> Reply:
        with lock:
            if not first:
                first.append(time.monotonic())
            busy = time.monotonic() - first[0] < 4.5
        if busy:
            return Reply.error(429, "Rate limit reached", code="rate_limit_exceeded", headers={"Retry-After": "5"})
        return Reply.chat("pong")

    with FakeOpenAIServer(handler=preflight_only(limited)) as srv:
        url = srv.url
        code, output, elapsed = evaluate(write_data(tmp_path), tmp_path, url, "10", capsys)
    assert code == 0, output
    assert f"the judge 'openai:m' at {url} asked to wait 5 s (HTTP 429); waiting" in output
    assert 4.5 <= elapsed < 30


def test_retry_after_beyond_the_bound_ends_the_preflight_at_once(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    def limited(req: RecordedRequest) -> Reply:
        return Reply.error(429, "Rate limit reached", code="rate_limit_exceeded", headers={"Retry-After": "600"})

    with FakeOpenAIServer(handler=preflight_only(limited)) as srv:
        code, output, elapsed = evaluate(write_data(tmp_path), tmp_path, srv.url, "10", capsys)
    assert code == 2, output
    assert "It asked to wait 600 s." in output
    assert "That wait is longer than the preflight's 90 s limit; try again later." in output
    assert elapsed < 5
