"""A key rejected after the preflight (HTTP 401/403 on a later call) stops the run at
once, as docs/integrations/judges.md promises: through the real ``litellm`` library (Anthropic's
Messages API and Azure OpenAI, offline, against fake servers on 127.0.0.1) and through the
OpenAI-compatible provider. The run ends with exit 2, one error naming the variable to check,
the resume command; no further judge call goes out; the finished samples are saved, and
``--resume`` finishes the run once the key works again. (Before: every later step was sent, was
rejected, and the run ended "completed" with exit 0 and most scores failed.)"""

from __future__ import annotations

import dataclasses
import importlib.util
import json
import threading
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

from ragsight import cli
from ragsight.store import Store
from tests.fakes import FakeOpenAIServer, RecordedRequest, Reply
from tests.fakes.anthropic_server import FakeAnthropicServer, error, text_of, world_handler
from tests.fakes.offline import loopback_only
from tests.reliability.world import JudgeWorld, make_samples

needs_litellm = pytest.mark.skipif(importlib.util.find_spec("litellm") is None,
                                   reason="the litellm extra is not installed")

SECRET = "sk-ant-test-SECRET-90c1d7"
AZURE_KEY = "azure-SECRET-key-55e2a1c0"
OPENAI_KEY = "sk-openai-SECRET-4b7e01"
GOOD_CALLS = 6  # judge calls answered (besides the preflight's ping) before the key is revoked


@pytest.fixture(autouse=True)
def _env(monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    for name in ("AZURE_API_BASE", "AZURE_API_VERSION", "OPENAI_BASE_URL", "HTTP_PROXY", "HTTPS_PROXY",
                 "ALL_PROXY", "http_proxy", "https_proxy", "all_proxy", "RAGSIGHT_STORE"):
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setenv("ANTHROPIC_API_KEY", SECRET)
    monkeypatch.setenv("AZURE_API_KEY", AZURE_KEY)
    monkeypatch.setenv("OPENAI_API_KEY", OPENAI_KEY)
    with loopback_only() as refused:
        yield
    assert refused == [], f"the judge tried to reach {refused}"


class Revoking:
    """A handler that lets the ping and the first GOOD_CALLS judge calls through (to ``inner``)
    and rejects every later one with a 401 quoting the key; it counts what came after."""

    def __init__(self, inner: Callable[[RecordedRequest], Reply | None], reject: Callable[[], Reply],
                 is_ping: Callable[[RecordedRequest], bool]) -> None:
        self.inner, self.reject, self.is_ping = inner, reject, is_ping
        self.answered = 0
        self.rejected = 0
        self._lock = threading.Lock()

    def __call__(self, request: RecordedRequest) -> Reply | None:
        if request.method != "POST" or self.is_ping(request):
            return self.inner(request)
        with self._lock:
            if self.answered >= GOOD_CALLS:
                self.rejected += 1
                return self.reject()
            self.answered += 1
        return self.inner(request)


def _no_reply(request: RecordedRequest) -> Reply | None:
    return None


def _anthropic_ping(request: RecordedRequest) -> bool:
    body = request.json if isinstance(request.json, dict) else {}
    return [text_of(m.get("content")) for m in body.get("messages", [])] == ["ping"]


def _openai_ping(request: RecordedRequest) -> bool:
    body = request.json if isinstance(request.json, dict) else {}
    return [m.get("content") for m in body.get("messages", [])] == ["ping"]


def _azure(world: JudgeWorld) -> Callable[[RecordedRequest], Reply | None]:
    return lambda req: world(dataclasses.replace(req, path=req.path.split("?", 1)[0]))


def _anthropic_server(world: JudgeWorld, handler: Revoking | None) -> FakeAnthropicServer:
    return FakeAnthropicServer(world_handler(world), handler=handler)


# (judge flags, server factory, the 401 reply, the ping test, the variable the message names)
def _case(name: str) -> tuple[list[str], Callable[[JudgeWorld, Revoking | None], FakeOpenAIServer], Reply, str]:
    if name == "anthropic (litellm)":
        return (["--judge", "anthropic:claude-test"],
                _anthropic_server,
                error(401, f"invalid x-api-key {SECRET}"), "ANTHROPIC_API_KEY")
    if name == "azure (litellm)":
        return (["--judge", "azure:my-gpt4o", "--api-version", "2024-10-21"],
                lambda world, h: FakeOpenAIServer(handler=h or _azure(world)),
                Reply.error(401, f"Access denied due to invalid subscription key {AZURE_KEY}"), "AZURE_API_KEY")
    return (["--judge", "openai:m"],
            lambda world, h: FakeOpenAIServer(handler=h or world),
            Reply.error(401, f"Incorrect API key provided: {OPENAI_KEY}", code="invalid_api_key"),
            "OPENAI_API_KEY")


CASES = [pytest.param("anthropic (litellm)", marks=needs_litellm),
         pytest.param("azure (litellm)", marks=needs_litellm),
         "openai"]


@pytest.mark.parametrize("name", CASES)
def test_a_key_rejected_mid_run_stops_the_run_and_resume_finishes_it(
    name: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    flags, server, reply, variable = _case(name)
    data, store = tmp_path / "data.jsonl", tmp_path / "runs.db"
    data.write_text("".join(json.dumps(s) + "\n" for s in make_samples(12)), "utf-8")
    world = JudgeWorld()
    inner: Callable[[RecordedRequest], Reply | None] = world
    if name.startswith("anthropic"):
        inner = _no_reply  # the fake's own world answers what passes
    elif name.startswith("azure"):
        inner = _azure(world)
    ping = _anthropic_ping if name.startswith("anthropic") else _openai_ping
    revoking = Revoking(inner, lambda: reply, ping)
    with server(world, revoking) as srv:
        base = srv.root if name != "openai" else srv.url
        code = cli.main(["evaluate", str(data), *flags, "--base-url", base, "--store", str(store),
                         "--metrics", "faithfulness", "--quiet", "--concurrency", "1"])
    captured = capsys.readouterr()
    printed = " ".join((captured.out + captured.err).split())
    assert code == 2, printed
    assert "Traceback" not in printed
    assert f"check {variable}" in printed and "The run stops here" in printed, printed
    assert "ragsight evaluate --resume" in printed
    for key in (SECRET, AZURE_KEY, OPENAI_KEY):
        assert key not in printed
    # at once: the rejected call is the last one sent (one sample at a time; its steps go in turn)
    assert revoking.answered == GOOD_CALLS and revoking.rejected == 1, (revoking.answered, revoking.rejected)
    with Store(store) as st:
        run = st.runs()[0]
        finished = st.finished_samples(run.id)
        scores = st.scores(run.id)
    assert run.status == "interrupted"
    assert 0 < len(finished) < 12
    outcomes = {s.outcome.value for per in scores.values() for s in per.values()}
    assert outcomes == {"scored"}, outcomes  # no sample is saved as failed because of the key

    # the key works again: --resume finishes the same run, asking only what is missing
    with server(world, None) as srv:
        base = srv.root if name != "openai" else srv.url
        code = cli.main(["evaluate", "--resume", run.id, "--base-url", base, "--store", str(store), "--quiet",
                         *(["--api-version", "2024-10-21"] if name.startswith("azure") else [])])
    assert code == 0, capsys.readouterr().err
    with Store(store) as st:
        assert st.run(run.id).status == "completed"
        assert len(st.finished_samples(run.id)) == 12
