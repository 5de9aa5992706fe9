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
        {"question": "", "text": fence("response", "Paris is the capital of France. It has 2 million people.")},
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
