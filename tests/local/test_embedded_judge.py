"""The real embedded judge (Qwen2.5-Coder-1.5B, llama.cpp) on the bundled example.

Slow: loads a 1.1 GB model once per session and runs a few dozen model calls.
"""

from __future__ import annotations

import pytest

import ragsight
from ragsight import Outcome
from ragsight.cli import example_path
from ragsight.judge import Judge
from ragsight.prompts import fence, load_prompt
from ragsight.sample import Dataset

pytestmark = [pytest.mark.slow, pytest.mark.local]


async def test_choice_probabilities_follow_the_context(qwen_judge: Judge) -> None:
    source = fence("context", "Python was invented by Guido van Rossum and published in 1991.", n=1)
    prompt = load_prompt("verify_claim")

    async def p_yes(claim: str) -> float:
        ans = await qwen_judge.choose(prompt, {"source": source, "claim": fence("claim", claim)})
        return ans.value["Yes"]

    copied = await p_yes("Python was invented by Guido van Rossum.")
    contradicted = await p_yes("Python was published in 1995.")
    absent = await p_yes("Python is the most widely used programming language in the world.")
    assert copied > 0.5
    assert contradicted < 0.5
    assert absent < 0.5


async def test_prefix_reuse_processes_only_the_new_tail(qwen_judge: Judge) -> None:
    provider = qwen_judge.provider
    source = fence("context", "The Larkspur frame warranty lasts ten years. " * 20, n=1)
    prompt = load_prompt("verify_claim")
    await qwen_judge.choose(prompt, {"source": source, "claim": fence("claim", "The warranty lasts ten years.")},
                            use_cache=False)
    before = provider.tokens_evaluated  # type: ignore[attr-defined]
    await qwen_judge.choose(prompt, {"source": source, "claim": fence("claim", "The warranty lasts two years.")},
                            use_cache=False)
    evaluated = provider.tokens_evaluated - before  # type: ignore[attr-defined]
    total = provider.count_tokens(provider.render(qwen_judge.request(prompt, {  # type: ignore[attr-defined]
        "source": source, "claim": fence("claim", "The warranty lasts two years.")}).messages))
    assert evaluated < total / 4, (evaluated, total)


def test_example_through_the_four_core_metrics(qwen_provider: object, tmp_path: object) -> None:
    """Two bundled samples, four core metrics, the embedded judge: the planted unsupported claim
    in ex-2 is judged unsupported and the copied sentence in ex-1 supported."""
    ds = Dataset.load(example_path())
    data = [ds.by_id("ex-1"), ds.by_id("ex-2")]
    result = ragsight.evaluate(
        data, ["faithfulness", "answer_relevancy", "context_precision", "context_recall"],
        judge=Judge(qwen_provider), embedder="local", store=str(tmp_path) + "/r.db",  # type: ignore[arg-type]
    )
    for key, summary in result.summary.items():
        assert summary.counts["scored"] == 2, (key, summary.counts, result.scores)

    ex1 = result.scores["ex-1"]["faithfulness"]
    # faithfulness is the share of claims judged supported, the mean P(supported) in the trail
    assert ex1.outcome is Outcome.SCORED and all(c.supported for c in ex1.evidence.claims), ex1.evidence.claims
    assert ex1.value == 1.0
    assert ex1.evidence.details["mean_p"] == pytest.approx(
        sum(c.probability for c in ex1.evidence.claims) / len(ex1.evidence.claims))
    ex2 = result.scores["ex-2"]["faithfulness"]
    planted = [c for c in ex2.evidence.claims if "spring" in c.claim]
    assert planted and not planted[0].supported, ex2.evidence.claims
    assert planted[0].reason  # unsupported claims get a written reason
    assert any(c.supported and "800" in c.claim for c in ex2.evidence.claims), ex2.evidence.claims
    assert all(c.probability is not None for c in ex2.evidence.claims)

    # the retrieved chunk the reference comes from is judged relevant
    cp = result.scores["ex-1"]["context_precision"]
    assert cp.evidence.details["chunks"][0]["relevant"] is True
    assert cp.evidence.details["chunks"][2]["relevant"] is False  # the company's founding: not needed
    ar = result.scores["ex-1"]["answer_relevancy"]
    assert ar.value is not None and ar.value > 0.5


def test_short_answers_are_graded_with_the_question_and_every_alias(qwen_provider: object) -> None:
    """A short reference: the real judge grades the response as a whole, the aliases count."""
    rows = [
        {"id": "right", "question": "Which city was Richard Daley the mayor of for 21 years?",
         "response": "He was the mayor of the Windy City.", "reference": ["Chicago", "Windy City", "Chicago, Illinois"]},
        {"id": "wrong", "question": "Which city was Richard Daley the mayor of for 21 years?",
         "response": "He was the mayor of Boston.", "reference": ["Chicago", "Windy City", "Chicago, Illinois"]},
    ]
    result = ragsight.evaluate(rows, ["factual_correctness"], judge=Judge(qwen_provider),  # type: ignore[arg-type]
                               options=ragsight.RunOptions(
                                   cache=False, settings=ragsight.analyses.AnalysisSettings(explain="none")))
    right, wrong = result.scores["right"]["factual_correctness"], result.scores["wrong"]["factual_correctness"]
    assert right.evidence.details["short_answer"] and wrong.evidence.details["short_answer"]
    assert right.value is not None and wrong.value is not None
    assert right.value >= 0.5 > wrong.value
    assert right.evidence.claims[0].signals["alias_contained"] == 1.0
    assert 0.0 < right.evidence.claims[0].signals["judge_yes"] < 1.0
