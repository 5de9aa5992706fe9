"""The verdict pipeline: the embedded judge's P(Yes) combined with the plausibility prior and the
deterministic signals by the shipped model; remote verdicts kept with the signals as evidence;
short-form references graded as a whole with the question and every alias."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import pytest

import ragsight
from ragsight import Outcome
from ragsight.analyses import AnalysisSettings, SampleAnalyses, contexts_block
from ragsight.analyses._calibrated import DEFAULT_MODEL, PRIOR_SOURCE, assess_claim, combine_answer
from ragsight.analyses._signals import alias_signals
from ragsight.judge import Judge
from ragsight.judge._scripted import ScriptedProvider
from ragsight.sample import Sample

CONTEXT = "The Eiffel Tower was completed in 1889 for the World's Fair in Paris."
COPIED = "The Eiffel Tower was completed in 1889."
INVENTED = "The Eiffel Tower was painted green by Gustave Moreau in 1925."


def local_like(p_source: float, p_prior: float, model: str = DEFAULT_MODEL) -> ScriptedProvider:
    """A choices judge that answers p_source against the context and p_prior against the empty
    text, named like the embedded model so that its shipped coefficients apply."""

    def verify_claim(v: Mapping[str, Any]) -> float:
        return p_prior if v["source"] == PRIOR_SOURCE else p_source

    return ScriptedProvider({"explain_verdict": lambda v: {"reason": "scripted reason"}},
                         choice_handlers={"verify_claim": verify_claim}, model=model)


async def verdicts(provider: ScriptedProvider, claims: list[str], **settings: Any) -> Any:
    ctx = SampleAnalyses(Sample(id="s", contexts=(CONTEXT,), response="r"), Judge(provider), None,
                        AnalysisSettings(**settings))
    return await ctx.verify(claims, "contexts", contexts_block([CONTEXT]))


async def test_embedded_judge_verdict_is_the_mean_of_its_probability_and_word_overlap() -> None:
    provider = local_like(0.6, 0.3)
    out = await verdicts(provider, [COPIED, INVENTED])
    # one call per claim against the context; no plausibility prior
    sources = [r.variables["source"] for r in provider.calls_for("verify_claim")]
    assert len(sources) == 2 and PRIOR_SOURCE not in sources
    copied, invented = out.verdicts
    for v, claim in ((copied, COPIED), (invented, INVENTED)):
        p, sig = assess_claim(claim, contexts_block([CONTEXT]), 0.6)
        assert v.probability == pytest.approx(p) == pytest.approx((0.6 + sig["overlap"]) / 2)
        assert v.signals["judge_yes"] == 0.6 and "judge_prior" not in v.signals
        assert v.signals["p_combined"] == pytest.approx(p)
        assert v.supported is (p >= 0.5)
    # every word of the copied claim is in the context: (0.6 + 1) / 2
    assert copied.signals["overlap"] == 1.0 and copied.probability == pytest.approx(0.8)
    assert invented.signals["overlap"] < 0.6 and not invented.supported
    assert invented.reason == "scripted reason" and copied.reason == ""
    assert len(out.refs) == 2


async def test_a_higher_judge_probability_never_lowers_the_verdict() -> None:
    lo = (await verdicts(local_like(0.3, 0.5), [INVENTED])).verdicts[0].probability
    hi = (await verdicts(local_like(0.9, 0.5), [INVENTED])).verdicts[0].probability
    assert hi > lo


async def test_calibration_can_be_turned_off() -> None:
    provider = local_like(0.6, 0.3)
    out = await verdicts(provider, [INVENTED], calibrated=False)
    assert out.verdicts[0].probability == 0.6 and out.verdicts[0].supported
    assert out.verdicts[0].signals["judge_yes"] == 0.6 and "overlap" in out.verdicts[0].signals
    assert len(provider.calls_for("verify_claim")) == 1  # no prior call


async def test_a_model_without_coefficients_keeps_its_probability() -> None:
    provider = local_like(0.6, 0.3, model="my-own-8b.gguf")
    out = await verdicts(provider, [INVENTED])
    assert out.verdicts[0].probability == 0.6
    assert len(provider.calls_for("verify_claim")) == 1
    assert "overlap" in out.verdicts[0].signals


# ---- short-form references -------------------------------------------------------------------

QUESTION = "Which city hosts the Eiffel Tower?"


def short_sample(response: str) -> dict[str, Any]:
    return {"id": "q", "question": QUESTION, "response": response, "reference": ["Paris", "Paris, France"]}


def remote_grader(correct: bool) -> ScriptedProvider:
    return ScriptedProvider({"verify_claim_answer_json": lambda v: {"correct": correct}})


@pytest.mark.parametrize(("correct", "want"), [(True, 1.0), (False, 0.0)])
def test_short_reference_is_graded_as_a_whole(correct: bool, want: float) -> None:
    provider = remote_grader(correct)
    res = ragsight.evaluate([short_sample("It is in Paris.")], ["factual_correctness"], judge=provider)
    score = res.scores["q"]["factual_correctness"]
    assert score.outcome is Outcome.SCORED and score.value == want
    assert score.evidence.details["short_answer"] is True
    (verdict,) = score.evidence.claims
    assert verdict.claim == "It is in Paris." and verdict.supported is correct
    assert verdict.signals["alias_contained"] == 1.0 and "p_signals" in verdict.signals
    # one call, with the question and every alias in it
    (req,) = provider.calls_for("verify_claim_answer_json")
    assert QUESTION in req.variables["question"]
    assert "Paris / Paris, France" in req.variables["reference"]


def test_short_answer_probability_is_the_expected_f1_in_every_mode() -> None:
    p_yes = 0.4

    provider = ScriptedProvider({"explain_verdict": lambda v: {"reason": "r"}},
                             choice_handlers={"verify_claim_answer": lambda v: p_yes}, model=DEFAULT_MODEL)
    specs = ["factual_correctness", "factual_correctness(mode=precision)", "factual_correctness(mode=recall)"]
    res = ragsight.evaluate([short_sample("The tower stands in Lyon.")], specs, judge=provider)
    want = combine_answer(p_yes, alias_signals("The tower stands in Lyon.", ["Paris", "Paris, France"]))
    for spec in specs:
        assert res.scores["q"][spec].value == pytest.approx(want)
    assert want < p_yes  # no alias in the response pulls the probability down
    assert len(provider.calls_for("verify_claim_answer")) == 1  # graded once, shared by the metrics


def test_long_reference_and_missing_question_use_claims() -> None:
    provider = remote_grader(True)
    rows = [{"id": "noq", "response": "Paris.", "reference": "Paris"}]
    with pytest.raises(BaseException, match="extract_claims"):
        ragsight.evaluate(rows, ["factual_correctness"], judge=provider)
    rows = [{"id": "long", "question": QUESTION, "response": "Paris.",
             "reference": "The Eiffel Tower stands on the Champ de Mars in Paris, the capital of France."}]
    with pytest.raises(BaseException, match="extract_claims"):
        ragsight.evaluate(rows, ["factual_correctness"], judge=provider)


def test_short_answers_can_be_turned_off() -> None:
    provider = remote_grader(True)
    with pytest.raises(BaseException, match="extract_claims"):
        ragsight.evaluate([short_sample("Paris.")], ["factual_correctness"], judge=provider,
                          options=ragsight.RunOptions(settings=AnalysisSettings(short_answers=False)))
