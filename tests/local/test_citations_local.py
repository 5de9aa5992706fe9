"""The real embedded judge (Qwen2.5-Coder-1.5B, llama.cpp) on citations: a response citing the
wrong chunks scores below the same response citing the right ones, on both citation metrics.

Slow: two samples, about forty model calls (claim extraction, the claim x chunk grid)."""

from __future__ import annotations

import pytest

import ragsight
from ragsight import Outcome
from ragsight.judge import Judge

pytestmark = [pytest.mark.slow, pytest.mark.local]

CHUNKS = [
    "Refunds for cancelled flights are paid within five working days of the request.",
    "Each passenger may check one bag of up to 23 kg; a second checked bag costs 30 euros.",
    "The airport lounge in Terminal 2 opens at 6 am and closes at 11 pm.",
]
RIGHT = ("Refunds for cancelled flights are paid within five working days [1]. "
         "A second checked bag costs 30 euros [2].")
WRONG = ("Refunds for cancelled flights are paid within five working days [3]. "
         "A second checked bag costs 30 euros [1].")


def test_wrong_citations_rank_below_right_ones(qwen_provider: object) -> None:
    data = [{"id": k, "question": "How fast are refunds paid, and what does a second bag cost?",
             "contexts": CHUNKS, "response": r} for k, r in (("right", RIGHT), ("wrong", WRONG))]
    result = ragsight.evaluate(data, ["citation_precision", "citation_recall"],
                               judge=Judge(qwen_provider))  # type: ignore[arg-type]
    for metric in ("citation_precision", "citation_recall"):
        right, wrong = result.scores["right"][metric], result.scores["wrong"][metric]
        assert right.outcome is Outcome.SCORED and wrong.outcome is Outcome.SCORED, (right.reason, wrong.reason)
        assert right.value is not None and wrong.value is not None
        assert right.value > wrong.value, (metric, right.reason, wrong.reason)
        assert right.value >= 0.5, (metric, right.reason)
