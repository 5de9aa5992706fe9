"""Without a cache, a step asked again later in the same run is answered once (the run's memo),
recorded as a cache hit, and a new run asks again."""

from __future__ import annotations

import asyncio

import pytest

import ragsight
from ragsight.judge import Judge, MemoryCallCache, ScriptedProvider
from ragsight.prompts import load_prompt


def _provider() -> ScriptedProvider:
    return ScriptedProvider(
        {"extract_claims": lambda v: {"claims": [v["raw_text"]]}},
        choice_handlers={"verify_claim": lambda v: 0.9},
    )


def test_same_step_later_in_a_run_is_sent_once() -> None:
    provider = _provider()
    judge = Judge(provider)
    prompt = load_prompt("verify_claim")
    values = {"source": "<context n=\"1\">The sky is blue.</context>", "claim": "The sky is blue.",
              "claim_text": "The sky is blue."}

    async def go() -> tuple[object, object, object]:
        a = await judge.choose(prompt, values)
        b = await judge.choose(prompt, values)  # asked after the first one finished
        other = await judge.choose(prompt, {**values, "claim": "Grass is red.", "claim_text": "Grass is red."})
        return a, b, other

    a, b, _ = asyncio.run(go())
    assert len(provider.requests) == 2  # the repeated step was not sent again
    assert a.value == b.value
    assert not a.calls[-1].cached and b.calls[-1].cached  # the trail shows where it came from
    assert judge.stats.calls == 2 and judge.stats.cache_hits == 1

    judge.start_run()  # a new run asks afresh
    asyncio.run(judge.choose(prompt, values))
    assert len(provider.requests) == 3


def test_with_a_cache_the_cache_answers() -> None:
    prompt = load_prompt("verify_claim")
    values = {"source": "<context n=\"1\">x</context>", "claim": "x", "claim_text": "x"}
    provider = _provider()
    judge = Judge(provider, cache=MemoryCallCache())

    async def twice() -> None:
        await judge.choose(prompt, values)
        await judge.choose(prompt, values)

    asyncio.run(twice())
    assert len(provider.requests) == 1 and not judge._memo  # the cache answered, no memo kept
    asyncio.run(twice())
    assert len(provider.requests) == 1


def test_evaluate_without_cache_sends_a_shared_text_once() -> None:
    # Two samples with the same question and response (e.g. two retriever settings): the
    # response's claims are extracted once in the run.
    seen: list[str] = []

    def extract(v: dict[str, str]) -> dict[str, list[str]]:
        seen.append(v["raw_text"])
        return {"claims": [v["raw_text"]]}

    provider = ScriptedProvider({"extract_claims": extract}, choice_handlers={"verify_claim": lambda v: 0.9})
    rows = [{"id": f"s{i}", "question": "Where is Paris?", "response": "Paris is in France.",
             "contexts": ["Paris is the capital of France."]} for i in range(2)]
    res = ragsight.evaluate(rows, ["faithfulness"], judge=Judge(provider), store=":memory:",
                            options=ragsight.RunOptions(cache=False))
    assert [res.scores[sid]["faithfulness"].value for sid in ("s0", "s1")] == [1.0, 1.0]  # P 0.9: supported
    assert seen == ["Paris is in France."]


def test_memo_is_bounded(monkeypatch: pytest.MonkeyPatch) -> None:
    import ragsight.judge._judge as judge_module

    monkeypatch.setattr(judge_module, "MEMO_SIZE", 2)
    provider = _provider()
    judge = Judge(provider)
    prompt = load_prompt("verify_claim")

    def values(c: str) -> dict[str, str]:
        return {"source": "<context n=\"1\">t</context>", "claim": c, "claim_text": c}

    async def go() -> None:
        for c in ("a", "b", "a", "c", "b"):  # "a" was used again, so "b" is the oldest when "c" comes
            await judge.choose(prompt, values(c))

    asyncio.run(go())
    assert [r.variables["claim"] for r in provider.requests] == ["a", "b", "c", "b"]
    assert len(judge._memo) == 2
