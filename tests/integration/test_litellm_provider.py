"""The LiteLLM judge over real HTTP on 127.0.0.1, in two wire formats: the Anthropic Messages API
(FakeAnthropicServer) and OpenAI chat completions as Azure OpenAI serves it (FakeOpenAIServer),
with the same Judge guarantees as the OpenAI-compatible provider: retries with Retry-After,
caching keyed on the provider, call records, log-probabilities, JSON schema or prompt fallback."""

from __future__ import annotations

import asyncio
import dataclasses
import importlib.util
import json
import os
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

# not imported here: ragsight imports it (offline) at the first call, which is what is tested
if importlib.util.find_spec("litellm") is None:
    pytest.skip("the litellm extra is not installed", allow_module_level=True)

import ragsight
from ragsight.cli import main
from ragsight.errors import ConfigError, MissingExtraError
from ragsight.judge import (
    Judge,
    JudgeFailedError,
    JudgeRequest,
    LiteLLMProvider,
    MemoryCallCache,
    Message,
    RetryPolicy,
    make_judge,
)
from ragsight.prompts import fence, load_prompt
from ragsight.store import Store
from tests.fakes import FakeOpenAIServer, RecordedRequest, Reply
from tests.fakes.anthropic_server import FakeAnthropicServer, error, text_of, world_handler
from tests.fakes.offline import loopback_only
from tests.reliability.world import JudgeWorld

SECRET = "sk-ant-test-SECRET-7d41c9"
AZURE_KEY = "azure-SECRET-key-3b9e21f0"
ROWS = [
    {"id": "s1", "question": "When does the Oslo office open?",
     "contexts": ["The Oslo office opens at 8 am. It closes at 6 pm."],
     "response": "The Oslo office opens at 8 am. It has a rooftop garden."},
    {"id": "s2", "question": "Who approves travel?",
     "contexts": ["Travel is approved by the line manager."],
     "response": "Travel is approved by the line manager."},
]


@pytest.fixture(autouse=True)
def _env(monkeypatch: pytest.MonkeyPatch) -> Iterator[list[str]]:
    for name in ("ANTHROPIC_API_KEY", "AZURE_API_KEY", "AZURE_API_BASE", "AZURE_API_VERSION",
                 "OPENAI_API_KEY", "OPENAI_BASE_URL", "HTTP_PROXY", "HTTPS_PROXY", "ALL_PROXY",
                 "http_proxy", "https_proxy", "all_proxy"):
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setenv("ANTHROPIC_API_KEY", SECRET)
    monkeypatch.setenv("AZURE_API_KEY", AZURE_KEY)
    with loopback_only() as refused:
        yield refused
    assert refused == [], f"the judge tried to reach {refused}"


@pytest.fixture
def world() -> JudgeWorld:
    return JudgeWorld()


@pytest.fixture
def anthropic(world: JudgeWorld) -> Iterator[FakeAnthropicServer]:
    with FakeAnthropicServer(world_handler(world)) as srv:
        yield srv


def _claims_request(text: str) -> tuple[Any, dict[str, str]]:
    """ragsight's claim-extraction step for ``text``, as the analyses ask it."""
    return load_prompt("extract_claims"), {"question": "", "text": fence("response", text), "raw_text": text}


def azure(world: JudgeWorld) -> Any:
    """The world behind Azure's deployment URL (its query string holds the api-version)."""
    return lambda req: world(dataclasses.replace(req, path=req.path.split("?", 1)[0]))


def _scores(result: ragsight.EvaluationResult, metric: str) -> dict[str, float | None]:
    return {sid: s[metric].value for sid, s in result.scores.items()}


# ---- Anthropic: the Messages API ------------------------------------------------------------


# In either order of the rows: which request goes out first depends on timing (s2's single
# statement needs no extraction call), and the checks must not.
@pytest.mark.parametrize("rows", [ROWS, ROWS[::-1]], ids=["s1-first", "s2-first"])
def test_anthropic_judge_evaluates_end_to_end_like_the_openai_judge(
    anthropic: FakeAnthropicServer, world: JudgeWorld, tmp_path: Path, rows: list[dict[str, str]]
) -> None:
    store = str(tmp_path / "runs.db")
    result = ragsight.evaluate(rows, ["faithfulness"], store=store,
                               judge=ragsight.JudgeSpec("anthropic:claude-test", base_url=anthropic.root))
    # the same world answering through the OpenAI wire gives the same numbers
    with FakeOpenAIServer(handler=world) as oai:
        reference = ragsight.evaluate(rows, ["faithfulness"],
                                      judge=ragsight.JudgeSpec("openai:claude-test", base_url=oai.url))
    assert _scores(result, "faithfulness") == _scores(reference, "faithfulness") == {"s1": 0.5, "s2": 1.0}
    claims = result.scores["s1"]["faithfulness"].evidence.claims
    assert [(c.claim, c.supported) for c in claims] == [
        ("The Oslo office opens at 8 am.", True), ("It has a rooftop garden.", False)]

    messages = [r for r in anthropic.requests if r.path == "/v1/messages"]
    for r in messages:  # the preflight ping included
        assert r.headers["x-api-key"] == SECRET
        assert "authorization" not in r.headers
        assert r.headers["anthropic-version"]
    # The claim extraction of s1, wherever it came (s2's one statement is its own claim, so
    # its verification may go out first). Its JSON schema travels as a forced tool.
    def tool_fields(r: Any) -> set[str]:
        tools = r.json.get("tools") or [{}]
        return set(tools[0].get("input_schema", {}).get("properties", {}))
    extractions = [r for r in messages if "claims" in tool_fields(r)]
    assert len(extractions) == 1, [sorted(tool_fields(r)) for r in messages]
    body = extractions[0].json
    assert body["model"] == "claude-test"
    assert body["tool_choice"]["type"] == "tool"
    assert body["tool_choice"]["name"] == body["tools"][0]["name"]
    assert text_of(body["system"]) and all(m["role"] != "system" for m in body["messages"])
    assert "seed" not in body  # Anthropic takes none: not sent
    assert body["temperature"] == 0

    with Store(store) as st:
        calls = st.judge_calls(result.run_id)
        run = st.run(result.run_id)
    assert {c["judge"] for c in calls} == {"anthropic:claude-test"}
    assert {c["structured"] for c in calls} == {"json_schema"}
    assert all(c["prompt_tokens"] == 21 and c["completion_tokens"] == 9 for c in calls)
    assert run.config["judge_model"] == "anthropic/claude-test"
    assert SECRET not in json.dumps([calls, run.config])


def test_the_cache_is_keyed_on_the_provider(anthropic: FakeAnthropicServer, world: JudgeWorld,
                                            tmp_path: Path) -> None:
    store = str(tmp_path / "runs.db")
    ragsight.evaluate(ROWS, ["faithfulness"], store=store,
                      judge=ragsight.JudgeSpec("anthropic:claude-test", base_url=anthropic.root),
                      options=ragsight.RunOptions(preflight=False))
    sent = len(anthropic.requests)
    again = ragsight.evaluate(ROWS, ["faithfulness"], store=store,
                              judge=ragsight.JudgeSpec("anthropic:claude-test", base_url=anthropic.root),
                              options=ragsight.RunOptions(preflight=False))
    assert len(anthropic.requests) == sent  # a second run is free
    assert again.judge_stats["calls"] == 0 and again.judge_stats["cache_hits"] > 0
    # the same model name behind another provider is another judge: nothing is reused
    with FakeOpenAIServer(handler=world) as oai:
        other = ragsight.evaluate(ROWS, ["faithfulness"], store=store,
                                  judge=ragsight.JudgeSpec("openai:claude-test", base_url=oai.url),
                                  options=ragsight.RunOptions(preflight=False))
        assert other.judge_stats["cache_hits"] == 0 and len(oai.requests_to("/chat/completions")) > 0


async def test_rate_limit_waits_for_retry_after_and_records_the_failed_call(
    anthropic: FakeAnthropicServer,
) -> None:
    anthropic.enqueue(error(429, "Number of request tokens has exceeded your rate limit",
                            headers={"retry-after": "1"}))
    judge = Judge(LiteLLMProvider("anthropic/claude-test", api_base=anthropic.root, name="anthropic:claude-test"),
                  policy=RetryPolicy(max_attempts=3, backoff_base_s=0.0))
    prompt, values = _claims_request("The sky is blue. Grass is green.")
    t0 = time.monotonic()
    answer = await judge.ask(prompt, values, lambda d: d["claims"])
    waited = time.monotonic() - t0
    assert answer.value == ["The sky is blue.", "Grass is green."]
    assert waited >= 0.95  # the server's Retry-After, not the zero backoff
    assert judge.stats.retries == 1 and judge.stats.calls == 2
    failed = answer.calls[0]
    assert failed.error is not None and "HTTP 429" in failed.error and "wait 1 s" in failed.error
    assert answer.calls[1].error is None and answer.calls[1].structured == "json_schema"


async def test_rejected_key_is_fatal_names_the_variable_and_never_leaks(
    anthropic: FakeAnthropicServer,
) -> None:
    anthropic.enqueue(error(401, f"invalid x-api-key {SECRET}"))
    judge = Judge(LiteLLMProvider("anthropic/claude-test", api_base=anthropic.root, name="anthropic:claude-test"))
    prompt, values = _claims_request("The sky is blue.")
    with pytest.raises(JudgeFailedError) as info:
        await judge.ask(prompt, values, lambda d: d["claims"])
    assert len(anthropic.requests) == 1  # fatal: not retried
    assert "ANTHROPIC_API_KEY" in str(info.value)
    assert SECRET not in str(info.value) and SECRET not in json.dumps([c.to_dict() for c in info.value.calls])


async def test_a_provider_that_rejects_the_schema_gets_it_in_the_prompt_and_stays_there(
    anthropic: FakeAnthropicServer,
) -> None:
    def no_tools(req: RecordedRequest) -> Reply | None:
        if "tools" in (req.json or {}):
            return error(400, "tools: tool use is not supported for this model")
        return None

    anthropic.handler = no_tools
    provider = LiteLLMProvider("anthropic/claude-test", api_base=anthropic.root)
    judge = Judge(provider)
    prompt, values = _claims_request("The sky is blue.")
    answer = await judge.ask(prompt, values, lambda d: d["claims"])
    assert answer.value == ["The sky is blue."]
    assert answer.calls[-1].structured == "prompt"
    assert provider.structured_mode == "prompt"
    sent = [r.json for r in anthropic.requests]
    assert "tools" in sent[0] and "tools" not in sent[1]
    assert "matching this JSON schema" in text_of(sent[1]["messages"][-1]["content"])
    prompt2, values2 = _claims_request("Grass is green.")
    await judge.ask(prompt2, values2, lambda d: d["claims"])
    assert len(anthropic.requests) == 3  # remembered: no third rejection


# ---- Azure OpenAI: OpenAI chat completions, deployment URL, api-key header -------------------


def test_azure_judge_sends_api_key_header_api_version_and_schema(world: JudgeWorld, tmp_path: Path) -> None:
    with FakeOpenAIServer(handler=azure(world)) as srv:
        result = ragsight.evaluate(ROWS, ["faithfulness"], store=str(tmp_path / "r.db"),
                                   judge=ragsight.JudgeSpec("azure:my-gpt4o", base_url=srv.root, api_version="2024-10-21"))
        posts = [r for r in srv.requests if r.method == "POST"]
    assert _scores(result, "faithfulness") == {"s1": 0.5, "s2": 1.0}
    # a judge step (the preflight ping goes on alongside the first steps, in either order)
    judged = next(r for r in posts if isinstance(r.json, dict) and "response_format" in r.json)
    assert judged.path == "/openai/deployments/my-gpt4o/chat/completions?api-version=2024-10-21"
    assert judged.headers["api-key"] == AZURE_KEY and "authorization" not in judged.headers
    body = judged.json
    assert body["response_format"]["type"] == "json_schema"
    assert body["response_format"]["json_schema"]["name"] in ("extract_claims", "verify_claims")
    assert body["seed"] == 0 and body["logprobs"] is True and body["top_logprobs"] == 5


async def test_log_probabilities_reach_the_completion() -> None:
    with FakeOpenAIServer() as srv:
        srv.enqueue(Reply.chat('{"verdict": "yes"}', logprobs={"{": -0.01, "Sure": -4.5}))
        provider = LiteLLMProvider("azure/dep", api_base=srv.root, api_version="2024-10-21")
        completion = await provider.complete(JudgeRequest(
            prompt_id="p", prompt_version="1", messages=(Message("user", "Is it?"),),
            schema={"type": "object", "properties": {"verdict": {"type": "string"}}}))
    assert completion.text == '{"verdict": "yes"}'
    assert completion.top_logprobs == {"{": -0.01, "Sure": -4.5}
    assert completion.prompt_tokens == 11 and completion.completion_tokens == 7


async def test_openai_wire_through_litellm_uses_bearer_and_the_v1_path(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setenv("OPENAI_API_KEY", "sk-openai-test-key")
    with FakeOpenAIServer() as srv:
        srv.enqueue(Reply.chat('{"claims": ["A."]}'))
        judge = make_judge("litellm:openai/gpt-test", base_url=srv.url)
        provider = judge.provider
        assert provider.name == "litellm:openai/gpt-test" and provider.model == "openai/gpt-test"
        cache = MemoryCallCache()
        run = judge.for_run(cache=cache)
        prompt, values = _claims_request("A.")
        await run.ask(prompt, values, lambda d: d["claims"])
        again = await judge.for_run(cache=cache).ask(prompt, values, lambda d: d["claims"])
        req = srv.requests[0]
    assert again.cached and len(srv.requests) == 1
    assert req.path == "/v1/chat/completions"
    assert req.headers["authorization"] == "Bearer sk-openai-test-key"
    assert req.json["response_format"]["json_schema"]["name"] == "extract_claims"


@pytest.mark.parametrize(("kwargs", "match"), [
    ({"api_version": "2024-10-21"}, "--base-url"),
    ({"base_url": "https://res.openai.azure.com"}, "--api-version"),
])
def test_azure_without_endpoint_or_version_says_which_flag(kwargs: dict[str, str], match: str) -> None:
    with pytest.raises(ConfigError, match=match):
        make_judge("azure:dep", **kwargs)


@pytest.mark.parametrize("spec", ["anthropic:", "litellm:claude", "gemini:"])
def test_a_spec_without_a_model_is_a_config_error(spec: str) -> None:
    with pytest.raises(ConfigError, match="needs a model name"):
        make_judge(spec)


def test_cli_azure_judge(world: JudgeWorld, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    data = tmp_path / "data.jsonl"
    data.write_text("\n".join(json.dumps(r) for r in ROWS) + "\n")
    with FakeOpenAIServer(handler=azure(world)) as srv:
        code = main(["evaluate", str(data), "--metrics", "faithfulness", "--judge", "azure:my-gpt4o",
                     "--base-url", srv.root, "--api-version", "2024-10-21", "--store",
                     str(tmp_path / "r.db"), "--quiet"])
        paths = {r.path for r in srv.requests}
    out = capsys.readouterr()
    assert code == 0, out.err
    assert paths == {"/openai/deployments/my-gpt4o/chat/completions?api-version=2024-10-21"}
    assert "faithfulness" in out.out and "0.750" in out.out
    assert AZURE_KEY not in out.out + out.err


# ---- no network at import; a clear message without the extra --------------------------------


def test_importing_litellm_through_ragsight_touches_no_network() -> None:
    code = r"""
import os, socket, sys, time
attempts = []
def refuse(*a, **k):
    attempts.append(a[:1])
    raise OSError("no network in this test")
socket.getaddrinfo = refuse
socket.socket.connect = refuse
os.environ.pop("TIKTOKEN_CACHE_DIR", None)
os.environ.pop("LITELLM_LOCAL_MODEL_COST_MAP", None)
from ragsight.judge import make_judge
judge = make_judge("anthropic:claude-test")
assert "litellm" not in sys.modules, "imported before the first call"
from ragsight.judge._litellm import import_litellm
t = time.time()
import_litellm()
print(round(time.time() - t, 2), attempts, os.environ.get("TIKTOKEN_CACHE_DIR"))
"""
    env = {k: v for k, v in os.environ.items() if not k.startswith(("LITELLM", "TIKTOKEN"))}
    env["PYTHONPATH"] = os.pathsep.join(sys.path)
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=env,
                          timeout=120)
    assert done.returncode == 0, done.stderr
    _seconds, attempts, tiktoken_dir = done.stdout.split(" ", 2)
    assert attempts.strip() == "[]"
    assert tiktoken_dir.strip() == "None"  # LiteLLM's process-wide setting put back


def test_without_litellm_the_error_names_the_extra(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setitem(sys.modules, "litellm", None)  # import litellm -> ImportError
    judge = make_judge("anthropic:claude-test")
    with pytest.raises(MissingExtraError, match=r"pip install 'ragsight\[litellm\]'"):
        asyncio.run(judge.provider.preflight())
