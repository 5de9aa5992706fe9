"""Plumbing of the embedded judge on the tiny SmolLM2-135M model (fast; verdicts meaningless)."""

from __future__ import annotations

import pytest

from ragsight.judge import Judge
from ragsight.prompts import fence, load_prompt

pytestmark = [pytest.mark.slow, pytest.mark.local]


async def test_grammar_constrained_json_parses(smollm_provider: object) -> None:
    judge = Judge(smollm_provider)  # type: ignore[arg-type]
    ans = await judge.ask(
        load_prompt("extract_claims"),
        # One short fact: on longer texts this 135M model may repeat a claim until max_tokens, and
        # where it does depends on the CPU's arithmetic (AVX2 vs AVX-512 builds).
        {"question": "", "text": fence("response", "The sky is blue.")},
        lambda d: d["claims"], max_tokens=120,
    )
    assert isinstance(ans.value, list)
    assert ans.calls[-1].structured == "grammar"


async def test_choices_are_probabilities(smollm_provider: object) -> None:
    judge = Judge(smollm_provider)  # type: ignore[arg-type]
    ans = await judge.choose(load_prompt("verify_claim"),
                             {"source": fence("context", "The sky is blue.", n=1), "claim": fence("claim", "The sky is blue.")})
    assert set(ans.value) == {"Yes", "No"}
    assert abs(sum(ans.value.values()) - 1.0) < 1e-6
    assert ans.calls[0].kind == "choices"


async def test_a_timed_out_generation_stops_and_frees_the_model(smollm_provider: object) -> None:
    """The judge gives up on a call after its timeout; the thread running llama.cpp cannot be
    killed, so it is told to stop: it must not go on to max_tokens holding the model lock."""
    from ragsight.judge import JudgeFailedError, RetryPolicy
    from ragsight.judge._local import LocalProvider

    provider = smollm_provider
    assert isinstance(provider, LocalProvider)
    await provider.preflight()
    judge = Judge(provider, policy=RetryPolicy(max_attempts=1, max_reasks=0, call_timeout_s=0.3))
    before_gen, before_abandoned = provider.tokens_generated, provider.calls_abandoned
    with pytest.raises(JudgeFailedError, match="timed out"):
        await judge.ask(
            load_prompt("extract_claims"),
            {"question": "", "text": fence("response", " ".join(f"Fact {i} is that item {i} is red." for i in range(60)))},
            lambda d: d["claims"], max_tokens=1500, use_cache=False,
        )
    assert provider._lock.acquire(timeout=60)  # the abandoned generation let go of the model
    provider._lock.release()
    assert provider.calls_abandoned == before_abandoned + 1
    assert provider.tokens_generated - before_gen < 1500
    # and the model still answers
    ans = await Judge(provider).choose(load_prompt("verify_claim"), {
        "source": fence("context", "The sky is blue.", n=1), "claim": fence("claim", "The sky is blue.")})
    assert set(ans.value) == {"Yes", "No"}
