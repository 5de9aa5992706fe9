"""A remote OpenAI-compatible judge with log-probability verdicts: the judge spec
``openai-logprobs:MODEL`` reads P(Yes) from the first output token's top log-probabilities, over
real HTTP on 127.0.0.1, as a larger model served by llama.cpp's server or Ollama would give it."""

from __future__ import annotations

import json
import math

import pytest

import ragsight
from ragsight import Outcome
from ragsight.errors import ConfigError, ProviderError
from ragsight.judge import JudgeRequest, Message, OpenAIProvider, make_judge
from tests.fakes import FakeOpenAIServer
from tests.fakes.openai_server import RecordedRequest, Reply

RESPONSE = "The tower is in Paris. It was painted green."
CLAIMS = ["The tower is in Paris.", "The tower was painted green."]


def yes_no(p_yes: float) -> Reply:
    # what a llama.cpp server returns: the chosen token first, the others with a leading space too
    return Reply.chat("Yes" if p_yes >= 0.5 else "No", logprobs={
        "Yes": math.log(p_yes * 0.9), " Yes": math.log(p_yes * 0.1),
        "No": math.log(1 - p_yes), "Maybe": math.log(0.001)})


def world(request: RecordedRequest) -> Reply | None:
    body = request.json or {}
    text = " ".join(m["content"] for m in body.get("messages", []))
    if text == "ping":  # the preflight call
        return Reply.chat("pong")
    if body.get("max_tokens") == 1:
        return yes_no(0.8 if "Paris." in text.split("<claim>")[-1] else 0.3)
    if "claims" in json.dumps(body.get("response_format", {})) or "claims" in text:
        return Reply.chat(json.dumps({"claims": CLAIMS}))
    return None


def request() -> JudgeRequest:
    return JudgeRequest("verify_claim", "2", (Message("user", "Is it supported? Answer Yes or No."),),
                        max_tokens=1)


async def test_score_choices_reads_the_first_token_log_probabilities() -> None:
    with FakeOpenAIServer() as srv:
        srv.enqueue(yes_no(0.8))
        provider = OpenAIProvider("m", base_url=srv.url, choices=True)
        scores = await provider.score_choices(request(), ["Yes", "No"])
        await provider.aclose()
        body = srv.requests[0].json
    assert scores.probs["Yes"] == pytest.approx(0.8) and scores.probs["No"] == pytest.approx(0.2)
    assert body["max_tokens"] == 1 and body["logprobs"] is True and body["top_logprobs"] == 20
    assert provider.supports_choices and provider.name == "openai-logprobs:m"


@pytest.mark.parametrize("reply", [Reply.chat("Yes"), Reply.chat("Sure", logprobs={"Sure": -0.1, "Ok": -3.0})])
async def test_no_usable_log_probabilities_is_a_clear_error(reply: Reply) -> None:
    with FakeOpenAIServer() as srv:
        srv.enqueue(reply)
        provider = OpenAIProvider("m", base_url=srv.url, choices=True)
        with pytest.raises(ProviderError, match="openai:MODEL") as info:
            await provider.score_choices(request(), ["Yes", "No"])
        await provider.aclose()
    assert info.value.retryable is False


async def test_a_choice_outside_the_top_list_gets_less_than_the_lowest_listed() -> None:
    with FakeOpenAIServer() as srv:
        srv.enqueue(Reply.chat("Yes", logprobs={"Yes": math.log(0.9), "Sure": math.log(0.05)}))
        provider = OpenAIProvider("m", base_url=srv.url, choices=True)
        scores = await provider.score_choices(request(), ["Yes", "No"])
        await provider.aclose()
    assert scores.probs["No"] == pytest.approx(0.025 / 0.925)


def test_plain_openai_judge_keeps_json_verdicts() -> None:
    assert make_judge("openai:m").supports_choices is False
    assert make_judge("openai-logprobs:m").supports_choices is True
    with pytest.raises(ConfigError, match="openai-logprobs:MODEL"):
        make_judge("openai-logprobs")


def test_evaluate_with_logprob_verdicts_over_http(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    with FakeOpenAIServer(handler=world) as srv:
        res = ragsight.evaluate([{"id": "s", "response": RESPONSE, "contexts": ["The tower stands in Paris."]}],
                                ["faithfulness"],
                                judge=ragsight.JudgeSpec("openai-logprobs:big-model", base_url=srv.url))
        verdict_calls = [r for r in srv.requests if (r.json or {}).get("max_tokens") == 1]
    score = res.scores["s"]["faithfulness"]
    assert score.outcome is Outcome.SCORED
    # a model without fitted coefficients keeps its own P(Yes): no prior call; 1 of the 2 claims at
    # P >= 0.5, the mean of 0.8 and 0.3 in the trail
    assert [c.probability for c in score.evidence.claims] == [pytest.approx(0.8), pytest.approx(0.3)]
    assert score.value == 0.5 and score.evidence.details["form"] == "count"
    assert score.evidence.details["mean_p"] == pytest.approx(0.55)
    assert [c.supported for c in score.evidence.claims] == [True, False]
    assert len([r for r in verdict_calls if "ping" not in json.dumps(r.json)]) == 2


