"""OpenAIProvider over real HTTP against the fault-injecting fake server."""

from __future__ import annotations

import asyncio
import email.utils
import socket
import threading
import time
import traceback
from collections.abc import AsyncIterator, Callable, Iterator
from typing import Any

import pytest

from ragsight.errors import ConfigError, JudgeUnavailableError
from ragsight.judge import JudgeProvider, JudgeRequest, Message, ProviderError
from ragsight.judge._openai import OpenAIProvider
from tests.fakes import FakeOpenAIServer, RecordedRequest, Reply, unused_port

SECRET = "sk-test-SECRET123"
SCHEMA = {
    "type": "object",
    "properties": {"verdict": {"type": "string", "enum": ["yes", "no"]}},
    "required": ["verdict"],
}
MESSAGES = (Message("system", "You are a strict judge."), Message("user", "Is the sky blue?"))


def make_request(*, schema: dict[str, Any] | None = SCHEMA, **kw: Any) -> JudgeRequest:
    return JudgeRequest(
        prompt_id="claim verdict/v1", prompt_version="3", messages=MESSAGES, schema=schema, **kw
    )


@pytest.fixture(autouse=True)
def _clean_env(monkeypatch: pytest.MonkeyPatch) -> None:
    for name in ("OPENAI_API_KEY", "OPENAI_BASE_URL"):
        monkeypatch.delenv(name, raising=False)
    for name in ("HTTP_PROXY", "HTTPS_PROXY", "ALL_PROXY"):
        monkeypatch.delenv(name, raising=False)
        monkeypatch.delenv(name.lower(), raising=False)


@pytest.fixture
def server() -> Iterator[FakeOpenAIServer]:
    with FakeOpenAIServer() as srv:
        yield srv


@pytest.fixture
async def make_judge(server: FakeOpenAIServer) -> AsyncIterator[Callable[..., OpenAIProvider]]:
    made: list[OpenAIProvider] = []

    def make(**kw: Any) -> OpenAIProvider:
        kw.setdefault("base_url", server.url)
        kw.setdefault("api_key", SECRET)
        kw.setdefault("timeout", 5.0)
        judge = OpenAIProvider("fake-model", **kw)
        made.append(judge)
        return judge

    yield make
    for judge in made:
        await judge.aclose()


def _no_secret_anywhere(err: BaseException) -> None:
    rendered = "".join(traceback.format_exception(type(err), err, err.__traceback__))
    for text in (str(err), repr(err), repr(err.args), rendered):
        assert SECRET not in text
        assert "SECRET123" not in text


def _only_response_format_json_object(req: RecordedRequest) -> Reply:
    fmt = (req.json or {}).get("response_format")
    if fmt is not None and fmt.get("type") == "json_schema":
        return Reply.json_schema_unsupported()
    return Reply.chat('{"verdict": "yes"}')


# -- request shape ------------------------------------------------------------------------------


async def test_structured_request_body_and_completion(
    server: FakeOpenAIServer, make_judge: Callable[..., OpenAIProvider]
) -> None:
    judge = make_judge(extra_headers={"X-Team": "evals"})
    server.enqueue(Reply.chat('{"verdict": "yes"}', usage=(42, 5), model="fake-model-2024"))

    done = await judge.complete(make_request(max_tokens=50, seed=7, temperature=0.2))

    [req] = server.requests
    assert req.method == "POST"
    assert req.path == "/v1/chat/completions"
    assert req.headers["authorization"] == f"Bearer {SECRET}"
    assert req.headers["x-team"] == "evals"
    assert req.json == {
        "model": "fake-model",
        "messages": [
            {"role": "system", "content": "You are a strict judge."},
            {"role": "user", "content": "Is the sky blue?"},
        ],
        "temperature": 0.2,
        "max_tokens": 50,
        "seed": 7,
        "logprobs": True,
        "top_logprobs": 5,
        "response_format": {
            "type": "json_schema",
            "json_schema": {"name": "claim_verdict_v1", "schema": SCHEMA, "strict": False},
        },
    }
    assert done.text == '{"verdict": "yes"}'
    assert (done.prompt_tokens, done.completion_tokens) == (42, 5)
    assert done.finish_reason == "stop"
    assert done.model == "fake-model-2024"
    assert done.structured == "json_schema"
    assert done.top_logprobs is None


async def test_free_text_sends_no_response_format_and_no_seed_when_none(
    server: FakeOpenAIServer, make_judge: Callable[..., OpenAIProvider]
) -> None:
    server.enqueue(Reply.chat("The sky is blue."))
    done = await make_judge(logprobs=False).complete(make_request(schema=None, seed=None))
    body = server.requests[0].json
    assert "response_format" not in body
    assert "seed" not in body
    assert "logprobs" not in body and "top_logprobs" not in body
    assert body["messages"][-1]["content"] == "Is the sky blue?"
    assert done.text == "The sky is blue."


async def test_key_and_base_url_from_environment(
    server: FakeOpenAIServer, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("OPENAI_BASE_URL", server.url + "/")
    monkeypatch.setenv("OPENAI_API_KEY", SECRET)
    server.enqueue(Reply.chat("ok"))
    async with OpenAIProvider("fake-model", timeout=5) as judge:
        await judge.complete(make_request(schema=None))
    assert server.requests[0].path == "/v1/chat/completions"
    assert server.requests[0].headers["authorization"] == f"Bearer {SECRET}"


async def test_without_a_key_no_authorization_header_is_sent(
    server: FakeOpenAIServer, make_judge: Callable[..., OpenAIProvider]
) -> None:
    server.enqueue(Reply.chat("ok"))
    await make_judge(api_key=None).complete(make_request(schema=None))
    assert "authorization" not in server.requests[0].headers


def test_identity_and_protocol_conformance() -> None:
    # constructed outside any event loop: the client is created lazily, nothing is contacted
    judge = OpenAIProvider("gpt-4o-mini", "http://localhost:9/v1", context_window=128_000)
    assert isinstance(judge, JudgeProvider)
    assert judge.name == "openai:gpt-4o-mini"
    assert judge.model == "gpt-4o-mini"
    assert judge.supports_choices is False
    assert judge.max_concurrency == 256  # a ceiling: the Judge adapts the limit below it
    assert judge.context_window == 128_000
    assert judge.count_tokens("abcdefghi") == 3  # ceil(9 / 4): an estimate, not a tokenizer
    assert judge.count_tokens("") == 0


async def test_score_choices_is_not_supported() -> None:
    judge = OpenAIProvider("m", "http://localhost:9/v1")
    with pytest.raises(NotImplementedError, match="supports_choices is False"):
        await judge.score_choices(make_request(), ["yes", "no"])


@pytest.mark.parametrize(
    ("kwargs", "match"),
    [
        ({"base_url": "localhost:8000/v1"}, "http:// or https://"),
        ({"base_url": "ftp://example.com/v1"}, "http:// or https://"),
        ({"timeout": 0}, "timeout"),
        ({"max_concurrency": 0}, "max_concurrency"),
    ],
)
def test_bad_settings_raise_config_error(kwargs: dict[str, Any], match: str) -> None:
    with pytest.raises(ConfigError, match=match):
        OpenAIProvider("m", **kwargs)


# -- negotiation --------------------------------------------------------------------------------


async def test_falls_back_json_schema_to_json_object_to_prompt_and_remembers(
    server: FakeOpenAIServer, make_judge: Callable[..., OpenAIProvider]
) -> None:
    def handler(req: RecordedRequest) -> Reply:
        fmt = req.json.get("response_format")
        if fmt is None:
            return Reply.chat('{"verdict": "no"}')
        if fmt["type"] == "json_schema":
            return Reply.json_schema_unsupported()
        return Reply.error(422, "Unknown field: response_format")

    server.handler = handler
    judge = make_judge(logprobs=False)

    first = await judge.complete(make_request())
    assert first.structured == "prompt"
    assert first.text == '{"verdict": "no"}'
    bodies = [r.json for r in server.requests]
    assert [b.get("response_format", {}).get("type") for b in bodies] == [
        "json_schema",
        "json_object",
        None,
    ]
    # json_object and prompt modes describe the schema at the end of the last user message
    for body in bodies[1:]:
        content = body["messages"][-1]["content"]
        assert content.startswith("Is the sky blue?\n\nReply with one JSON object")
        assert '"enum": ["yes", "no"]' in content
    assert bodies[0]["messages"][-1]["content"] == "Is the sky blue?"

    second = await judge.complete(make_request())
    assert second.structured == "prompt"
    assert len(server.requests) == 4  # no re-probing
    assert "response_format" not in server.requests[-1].json
    assert judge.structured_mode == "prompt"


async def test_stops_at_json_object_when_the_server_accepts_it(
    server: FakeOpenAIServer, make_judge: Callable[..., OpenAIProvider]
) -> None:
    server.handler = _only_response_format_json_object
    judge = make_judge(logprobs=False)
    assert (await judge.complete(make_request())).structured == "json_object"
    assert (await judge.complete(make_request())).structured == "json_object"
    types = [r.json["response_format"]["type"] for r in server.requests]
    assert types == ["json_schema", "json_object", "json_object"]


async def test_concurrent_rejections_move_down_only_one_step(
    server: FakeOpenAIServer, make_judge: Callable[..., OpenAIProvider]
) -> None:
    server.handler = _only_response_format_json_object
    judge = make_judge(logprobs=False)
    results = await asyncio.gather(*(judge.complete(make_request()) for _ in range(6)))
    assert {c.structured for c in results} == {"json_object"}
    assert judge.structured_mode == "json_object"


async def test_rejected_logprobs_are_dropped_and_remembered(
    server: FakeOpenAIServer, make_judge: Callable[..., OpenAIProvider]
) -> None:
    def handler(req: RecordedRequest) -> Reply:
        if "logprobs" in req.json:
            return Reply.error(400, "logprobs is not supported with this model")
        return Reply.chat("fine")

    server.handler = handler
    judge = make_judge()
    await judge.complete(make_request(schema=None))
    await judge.complete(make_request(schema=None))
    assert ["logprobs" in r.json for r in server.requests] == [True, False, False]
    assert judge.logprobs is False


async def test_max_tokens_switches_to_max_completion_tokens_and_remembers(
    server: FakeOpenAIServer, make_judge: Callable[..., OpenAIProvider]
) -> None:
    def handler(req: RecordedRequest) -> Reply:
        if "max_tokens" in req.json:
            return Reply.error(
                400,
                "Unsupported parameter: 'max_tokens' is not supported with this model. "
                "Use 'max_completion_tokens' instead.",
                code="unsupported_parameter",
            )
        return Reply.chat("fine")

    server.handler = handler
    judge = make_judge(logprobs=False)
    await judge.complete(make_request(schema=None, max_tokens=33))
    await judge.complete(make_request(schema=None, max_tokens=44))
    bodies = [r.json for r in server.requests]
    assert len(bodies) == 3
    assert bodies[1]["max_completion_tokens"] == 33 and "max_tokens" not in bodies[1]
    assert bodies[2]["max_completion_tokens"] == 44
    assert judge.tokens_param == "max_completion_tokens"


async def test_unrelated_400_is_not_retried_or_negotiated(
    server: FakeOpenAIServer, make_judge: Callable[..., OpenAIProvider]
) -> None:
    server.enqueue(Reply.error(400, "This model's maximum context length is 8192 tokens."))
    with pytest.raises(ProviderError, match="maximum context length") as info:
        await make_judge().complete(make_request())
    assert (info.value.retryable, info.value.fatal, info.value.status) == (False, False, 400)
    assert len(server.requests) == 1


# -- parsing ------------------------------------------------------------------------------------


async def test_first_token_top_logprobs_are_parsed(
    server: FakeOpenAIServer, make_judge: Callable[..., OpenAIProvider]
) -> None:
    server.enqueue(Reply.chat("Yes", logprobs={"Yes": -0.05, "No": -3.1, "yes": -4.0}))
    done = await make_judge().complete(make_request(schema=None))
    assert done.top_logprobs == {"Yes": -0.05, "No": -3.1, "yes": -4.0}


async def test_legacy_logprobs_format_is_parsed(
    server: FakeOpenAIServer, make_judge: Callable[..., OpenAIProvider]
) -> None:
    body = {
        "choices": [
            {
                "message": {"role": "assistant", "content": "No"},
                "finish_reason": "stop",
                "logprobs": {"tokens": ["No"], "top_logprobs": [{"No": -0.2, "Yes": -1.7}]},
            }
        ],
        "usage": {"prompt_tokens": 3, "completion_tokens": 1},
    }
    server.enqueue(Reply.json(body))
    done = await make_judge().complete(make_request(schema=None))
    assert done.top_logprobs == {"No": -0.2, "Yes": -1.7}
    assert done.model == "fake-model"  # the server named none: the configured model


async def test_truncation_and_estimated_usage(
    server: FakeOpenAIServer, make_judge: Callable[..., OpenAIProvider]
) -> None:
    server.enqueue(Reply.chat('{"verdict": "y', finish_reason="length", usage=None))
    done = await make_judge().complete(make_request(schema=None))
    assert done.finish_reason == "length"
    # no usage in the answer: ceil(len / 4) of each message, and of the output
    assert done.prompt_tokens == -(-len("You are a strict judge.") // 4) + -(
        -len("Is the sky blue?") // 4
    )
    assert done.completion_tokens == -(-len('{"verdict": "y') // 4)


@pytest.mark.parametrize(
    "reply",
    [
        Reply.raw("<html><body>Bad gateway</body></html>"),
        Reply.json({"object": "chat.completion", "choices": []}),
        Reply.json({"error": {"message": "upstream overloaded"}}),
    ],
    ids=["html", "no-choices", "error-in-200"],
)
async def test_malformed_success_body_is_retryable(
    reply: Reply, server: FakeOpenAIServer, make_judge: Callable[..., OpenAIProvider]
) -> None:
    server.enqueue(reply)
    with pytest.raises(ProviderError) as info:
        await make_judge().complete(make_request())
    assert info.value.retryable is True
    assert info.value.fatal is False


# -- HTTP error mapping -------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("headers", "expected"),
    [({"Retry-After": "1"}, 1.0), ({"retry-after-ms": "1500"}, 1.5), ({}, None)],
)
async def test_429_is_retryable_with_retry_after(
    headers: dict[str, str],
    expected: float | None,
    server: FakeOpenAIServer,
    make_judge: Callable[..., OpenAIProvider],
) -> None:
    server.enqueue(Reply.error(429, "Rate limit reached", headers=headers))
    with pytest.raises(ProviderError, match="HTTP 429") as info:
        await make_judge().complete(make_request())
    err = info.value
    assert (err.retryable, err.fatal, err.status, err.retry_after) == (True, False, 429, expected)


async def test_retry_after_as_http_date(
    server: FakeOpenAIServer, make_judge: Callable[..., OpenAIProvider]
) -> None:
    when = email.utils.formatdate(time.time() + 30, usegmt=True)
    server.enqueue(Reply.error(429, headers={"Retry-After": when}))
    with pytest.raises(ProviderError) as info:
        await make_judge().complete(make_request())
    assert info.value.retry_after is not None
    assert 27.0 <= info.value.retry_after <= 30.0


async def test_429_insufficient_quota_is_fatal(
    server: FakeOpenAIServer, make_judge: Callable[..., OpenAIProvider]
) -> None:
    server.enqueue(Reply.error(429, "You exceeded your current quota", code="insufficient_quota"))
    with pytest.raises(ProviderError, match="no quota left") as info:
        await make_judge().complete(make_request())
    assert (info.value.retryable, info.value.fatal) == (False, True)


@pytest.mark.parametrize("status", [408, 500, 502, 503, 504])
async def test_transient_statuses_are_retryable(
    status: int, server: FakeOpenAIServer, make_judge: Callable[..., OpenAIProvider]
) -> None:
    server.enqueue(Reply.error(status, "try later", headers={"Retry-After": "2"}))
    with pytest.raises(ProviderError, match=f"HTTP {status}") as info:
        await make_judge().complete(make_request())
    err = info.value
    assert (err.retryable, err.fatal, err.status, err.retry_after) == (True, False, status, 2.0)


async def test_5xx_html_page_is_retryable_with_readable_message(
    server: FakeOpenAIServer, make_judge: Callable[..., OpenAIProvider]
) -> None:
    server.enqueue(Reply.raw("<html><h1>502 Bad Gateway</h1></html>", status=502))
    with pytest.raises(ProviderError, match="502 Bad Gateway") as info:
        await make_judge().complete(make_request())
    assert info.value.retryable is True


@pytest.mark.parametrize("status", [401, 403])
async def test_rejected_key_is_fatal_and_never_leaks(
    status: int, server: FakeOpenAIServer, make_judge: Callable[..., OpenAIProvider]
) -> None:
    # a careless proxy echoes the key back in its error body
    server.enqueue(Reply.error(status, f"Incorrect API key provided: {SECRET}. Bearer {SECRET}"))
    judge = make_judge()
    with pytest.raises(ProviderError) as info:
        await judge.complete(make_request())
    err = info.value
    assert (err.retryable, err.fatal, err.status) == (False, True, status)
    assert str(err).startswith(
        f"the judge rejected the API key (HTTP {status}); check OPENAI_API_KEY"
    )
    _no_secret_anywhere(err)
    assert SECRET not in repr(judge)
    assert server.requests[0].headers["authorization"] == f"Bearer {SECRET}"  # it was sent


async def test_401_without_a_key_says_to_set_one(
    server: FakeOpenAIServer, make_judge: Callable[..., OpenAIProvider]
) -> None:
    server.enqueue(Reply.error(401, "Missing bearer authentication"))
    with pytest.raises(ProviderError, match="set OPENAI_API_KEY or pass api_key") as info:
        await make_judge(api_key=None).complete(make_request())
    assert info.value.fatal is True


async def test_404_unknown_model_is_fatal(
    server: FakeOpenAIServer, make_judge: Callable[..., OpenAIProvider]
) -> None:
    server.enqueue(
        Reply.error(404, "The model `fake-model` does not exist", code="model_not_found")
    )
    with pytest.raises(ProviderError, match="check the model name") as info:
        await make_judge().complete(make_request())
    assert (info.value.retryable, info.value.fatal, info.value.status) == (False, True, 404)


async def test_other_4xx_is_final_but_not_fatal(
    server: FakeOpenAIServer, make_judge: Callable[..., OpenAIProvider]
) -> None:
    server.enqueue(Reply.error(413, "Request too large"))
    with pytest.raises(ProviderError, match="HTTP 413") as info:
        await make_judge().complete(make_request())
    assert (info.value.retryable, info.value.fatal) == (False, False)


# -- transport failures and timeouts ------------------------------------------------------------


async def test_connection_reset_is_retryable(
    server: FakeOpenAIServer, make_judge: Callable[..., OpenAIProvider]
) -> None:
    server.enqueue(Reply.reset())
    with pytest.raises(ProviderError, match="reset or closed") as info:
        await make_judge().complete(make_request())
    assert (info.value.retryable, info.value.fatal) == (True, False)
    assert len(server.requests) == 1


async def test_connection_refused_is_retryable(make_judge: Callable[..., OpenAIProvider]) -> None:
    judge = make_judge(base_url=f"http://127.0.0.1:{unused_port()}/v1")
    with pytest.raises(ProviderError, match="connection refused") as info:
        await judge.complete(make_request())
    assert (info.value.retryable, info.value.fatal) == (True, False)


async def test_server_that_never_answers_times_out(
    server: FakeOpenAIServer, make_judge: Callable[..., OpenAIProvider]
) -> None:
    server.enqueue(Reply.hang())
    start = time.monotonic()
    with pytest.raises(ProviderError, match="no complete answer within 1 s") as info:
        # the outer guard only turns a hang of the code under test into a quick failure
        await asyncio.wait_for(make_judge(timeout=1.0).complete(make_request()), 5)
    elapsed = time.monotonic() - start
    assert 0.9 <= elapsed < 2.0
    assert info.value.retryable is True


async def test_trickling_server_is_bounded_by_the_timeout(
    server: FakeOpenAIServer, make_judge: Callable[..., OpenAIProvider]
) -> None:
    # one byte every 0.2 s never trips a 1 s read timeout; only the overall guard stops it
    server.enqueue(Reply.trickle(Reply.chat("x" * 200), interval=0.2))
    start = time.monotonic()
    with pytest.raises(ProviderError, match="no complete answer") as info:
        await asyncio.wait_for(make_judge(timeout=1.0).complete(make_request()), 5)
    assert time.monotonic() - start < 2.0
    assert info.value.retryable is True


async def test_a_slow_but_complete_trickle_succeeds(
    server: FakeOpenAIServer, make_judge: Callable[..., OpenAIProvider]
) -> None:
    body = Reply.chat("ok", usage=None)
    server.enqueue(Reply.trickle(body, interval=0.001))
    done = await make_judge(timeout=5.0).complete(make_request(schema=None))
    assert done.text == "ok"


@pytest.fixture
def fake_dns(monkeypatch: pytest.MonkeyPatch) -> None:
    """Names under .invalid (reserved, RFC 2606) fail to resolve without asking any resolver,
    so the test needs no network; others resolve as usual."""
    real = socket.getaddrinfo

    def getaddrinfo(host: Any, *args: Any, **kwargs: Any) -> Any:
        name = host.decode() if isinstance(host, bytes) else str(host)
        if name.endswith(".invalid"):
            code = socket.EAI_AGAIN if name.startswith("flaky.") else socket.EAI_NONAME
            raise socket.gaierror(code, "Name or service not known")
        return real(host, *args, **kwargs)

    monkeypatch.setattr(socket, "getaddrinfo", getaddrinfo)


@pytest.mark.usefixtures("fake_dns")
async def test_unresolvable_host_is_fatal_and_names_the_host(
    make_judge: Callable[..., OpenAIProvider],
) -> None:
    start = time.monotonic()
    with pytest.raises(ProviderError, match=r"'nonexistent\.invalid' does not resolve") as info:
        await make_judge(base_url="http://nonexistent.invalid/v1").complete(make_request())
    assert (info.value.retryable, info.value.fatal) == (False, True)
    assert time.monotonic() - start < 2.0


@pytest.mark.usefixtures("fake_dns")
async def test_temporary_dns_failure_is_retryable(make_judge: Callable[..., OpenAIProvider]) -> None:
    with pytest.raises(ProviderError, match="temporary DNS failure") as info:
        await make_judge(base_url="http://flaky.invalid/v1").complete(make_request())
    assert (info.value.retryable, info.value.fatal) == (True, False)


async def test_concurrency_is_limited(
    server: FakeOpenAIServer, make_judge: Callable[..., OpenAIProvider]
) -> None:
    lock = threading.Lock()
    active = [0, 0]  # now, most

    def handler(req: RecordedRequest) -> Reply:
        with lock:
            active[0] += 1
            active[1] = max(active)
        time.sleep(0.1)
        with lock:
            active[0] -= 1
        return Reply.chat("ok")

    server.handler = handler
    judge = make_judge(max_concurrency=2)
    await asyncio.gather(*(judge.complete(make_request(schema=None)) for _ in range(6)))
    assert len(server.requests) == 6
    assert active[1] == 2


# -- preflight ----------------------------------------------------------------------------------


async def test_preflight_sends_one_tiny_ping(
    server: FakeOpenAIServer, make_judge: Callable[..., OpenAIProvider]
) -> None:
    server.enqueue(Reply.chat("p"))
    await make_judge().preflight()
    [req] = server.requests
    assert req.json["max_tokens"] == 1
    assert req.json["messages"] == [{"role": "user", "content": "ping"}]
    assert "logprobs" not in req.json and "response_format" not in req.json


async def test_preflight_rejected_key_raises_unavailable_without_the_key(
    server: FakeOpenAIServer, make_judge: Callable[..., OpenAIProvider]
) -> None:
    server.enqueue(Reply.error(401, f"Incorrect API key provided: {SECRET}"))
    with pytest.raises(JudgeUnavailableError, match="check OPENAI_API_KEY") as info:
        await make_judge().preflight()
    assert len(server.requests) == 1  # fatal: not retried
    _no_secret_anywhere(info.value)


async def test_preflight_unknown_model_raises_unavailable(
    server: FakeOpenAIServer, make_judge: Callable[..., OpenAIProvider]
) -> None:
    server.enqueue(Reply.error(404, "model not found"))
    with pytest.raises(JudgeUnavailableError, match="HTTP 404"):
        await make_judge().preflight()


async def test_preflight_connection_refused_raises_unavailable_quickly(
    make_judge: Callable[..., OpenAIProvider],
) -> None:
    judge = make_judge(base_url=f"http://127.0.0.1:{unused_port()}/v1")
    start = time.monotonic()
    with pytest.raises(JudgeUnavailableError, match=r"failed 3 times.*connection refused"):
        await judge.preflight()
    assert time.monotonic() - start < 3.0


@pytest.mark.usefixtures("fake_dns")
async def test_preflight_unresolvable_host_raises_unavailable(
    make_judge: Callable[..., OpenAIProvider],
) -> None:
    with pytest.raises(JudgeUnavailableError, match=r"nonexistent\.invalid"):
        await make_judge(base_url="http://nonexistent.invalid/v1").preflight()


async def test_preflight_retries_transient_errors(
    server: FakeOpenAIServer, make_judge: Callable[..., OpenAIProvider]
) -> None:
    server.enqueue(Reply.error(503), Reply.reset(), Reply.chat("p"))
    await make_judge().preflight()
    assert len(server.requests) == 3


async def test_judge_works_again_after_aclose(
    server: FakeOpenAIServer, make_judge: Callable[..., OpenAIProvider]
) -> None:
    judge = make_judge()
    server.enqueue(Reply.chat("one"), Reply.chat("two"))
    assert (await judge.complete(make_request(schema=None))).text == "one"
    await judge.aclose()
    assert (await judge.complete(make_request(schema=None))).text == "two"
