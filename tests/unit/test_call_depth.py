"""Analyses that do not depend on each other start together: a sample's longest chain
of judge calls is its dependency depth, two calls (extract, then verify), not one chain per
analysis awaited in turn (factual_correctness and noise_sensitivity made four, the seven metrics
three). The judge here counts each call's depth: one more than the deepest call finished before
it started."""

from __future__ import annotations

import asyncio
from typing import Any

import pytest

import ragsight
from ragsight.judge import ScriptedProvider
from tests.fakes.embedder import TableEmbedder
from tests.scripted import RagScript

RESPONSE = "Flights to Oslo leave daily. Bags up to 23 kg are free."
REFERENCE = "Flights to Oslo leave every day. One bag of 23 kg is free."
CONTEXTS = ["Our flights to Oslo leave daily at 9:00.", "Each passenger may check one bag of up to 23 kg free."]


class DepthJudge(ScriptedProvider):
    def __init__(self, handlers: Any) -> None:
        super().__init__(handlers)
        self.finished: list[int] = []
        self.depths: list[tuple[str, int]] = []

    async def complete(self, request: Any) -> Any:
        depth = 1 + max(self.finished, default=0)
        self.depths.append((request.prompt_id, depth))
        for _ in range(50):  # in flight long enough for calls started together to overlap
            await asyncio.sleep(0)
        try:
            return await super().complete(request)
        finally:
            self.finished.append(depth)


def world() -> RagScript:
    claims = {RESPONSE: ["Flights to Oslo leave daily.", "Bags up to 23 kg are free."],
              REFERENCE: ["Flights to Oslo leave every day.", "One bag of 23 kg is free."]}
    verdicts = {(c, t): True for cs in claims.values() for c in cs for t in ("contexts", "reference", "response")}
    return RagScript(claims=claims, verdicts=verdicts, chunk_relevance={"Oslo": [True, True]},
                     entities={REFERENCE: ["Oslo"], "\n\n".join(CONTEXTS): ["Oslo"]})


@pytest.mark.parametrize("metrics", [["factual_correctness"], ["noise_sensitivity"], ["context_entity_recall"],
                                     ["faithfulness", "context_recall"], ["answer_correctness"],
                                     ["faithfulness", "context_precision", "context_recall", "factual_correctness",
                                      "noise_sensitivity", "context_entity_recall"]])
def test_a_samples_longest_chain_of_calls_is_its_dependency_depth(metrics: list[str]) -> None:
    judge = DepthJudge(world().handlers())
    row = {"id": "s", "question": "When do flights to Oslo leave, and which bag is free?", "contexts": CONTEXTS,
           "response": RESPONSE, "reference": REFERENCE}
    result = ragsight.evaluate([row], metrics, judge=judge, embedder=TableEmbedder(),
                               options=ragsight.RunOptions(cache=False, preflight=False))
    outcomes = {m: s.outcome.value for m, s in result.scores["s"].items()}
    assert set(outcomes.values()) == {"scored"}, outcomes
    deepest = max(d for _, d in judge.depths)
    expected = 1 if metrics == ["context_entity_recall"] else 2
    assert deepest == expected, judge.depths
