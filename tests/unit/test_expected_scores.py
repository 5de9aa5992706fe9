"""A sample's value: faithfulness, factual_correctness and answer_correctness count the claims
judged supported, each at its threshold, by default, with per-claim probabilities (the embedded
judge) as without; the expected counts and the mean P(supported) stay in the evidence, and the
expected form stays selectable (``form=expected``). Exact values from a scripted world."""

from __future__ import annotations

import pytest

import ragsight
from ragsight import Outcome
from ragsight.analyses import AnalysisSettings
from ragsight.errors import ConfigError
from tests.fakes.embedder import TableEmbedder
from tests.scripted import RagScript

RESP = "The response says two things. It says them briefly."
REF = "The reference says three things. It says them at length."
CONTEXT = "Some context."

# response claims against the reference, reference claims against the response
P_RESP = {"A": 0.8, "B": 0.3}
P_REF = {"C": 0.9, "D": 0.6, "E": 0.2}


def world() -> RagScript:
    s = RagScript()
    s.claims[RESP] = list(P_RESP)
    s.claims[REF] = list(P_REF)
    for c, p in P_RESP.items():
        s.verdicts[(c, "reference")] = p >= 0.5
        s.verdicts[(c, "contexts")] = p >= 0.5
        s.probabilities[(c, "reference")] = p
        s.probabilities[(c, "contexts")] = p
    for c, p in P_REF.items():
        s.verdicts[(c, "response")] = p >= 0.5
        s.probabilities[(c, "response")] = p
    return s


def run(spec: str, *, choices: bool = True) -> ragsight.Score:
    s = world()
    judge = s.choice_judge() if choices else s.judge()
    # the scripted claims stand for the reference's as written (the arithmetic is the point here, not
    # how a reference becomes claims: tests/unit/test_reference_claims.py)
    res = ragsight.evaluate([{"id": "s", "response": RESP, "reference": REF, "contexts": [CONTEXT]}], [spec],
                            judge=judge, embedder=TableEmbedder({RESP: [1, 0], REF: [0.6, 0.8]}),
                            options=ragsight.RunOptions(settings=AnalysisSettings(reference_facts=False)))
    return res.scores["s"][spec]


# expected counts: TP = 0.8 + 0.3 = 1.1, FP = 0.2 + 0.7 = 0.9, FN = 0.1 + 0.4 + 0.8 = 1.3
TP, FP, FN = 1.1, 0.9, 1.3


@pytest.mark.parametrize(
    ("spec", "want"),
    [
        ("factual_correctness(mode=precision, form=expected)", TP / (TP + FP)),  # 0.55 = mean P of A and B
        ("factual_correctness(mode=recall, form=expected)", TP / (TP + FN)),  # 0.458333...
        ("factual_correctness(form=expected)", 2 * TP / (2 * TP + FP + FN)),  # 0.5
        ("factual_correctness(mode=fbeta, beta=2, form=expected)",
         5 * (TP / 2.0) * (TP / 2.4) / (4 * TP / 2.0 + TP / 2.4)),
        ("faithfulness(form=expected)", 0.55),  # mean P(supported) against the contexts
        ("answer_correctness(form=expected)", 0.75 * 0.5 + 0.25 * 0.6),
    ],
)
def test_the_expected_form_stays_selectable(spec: str, want: float) -> None:
    score = run(spec)
    assert score.outcome is Outcome.SCORED and score.value == pytest.approx(want)
    assert score.evidence.details["form"] == "expected"


def test_factual_correctness_expected_trail_shows_expected_and_threshold_counts() -> None:
    score = run("factual_correctness(form=expected)")
    d = score.evidence.details
    assert (d["tp"], d["fp"], d["fn"]) == (pytest.approx(TP), pytest.approx(FP), pytest.approx(FN))
    assert d["counts_at_threshold"] == {"tp": 1, "fp": 1, "fn": 1}
    assert score.reason == "expected TP=1.10 FP=0.90 FN=1.30 (from P(supported))"


def test_faithfulness_expected_reason_names_the_mean_and_the_count() -> None:
    score = run("faithfulness(form=expected)")
    assert score.reason == ("mean P(supported) of 2 claims against the contexts "
                            "(expected 1.10 supported; 1 at or above the threshold)")
    assert score.evidence.details == {"form": "expected", "supported": 1, "claims": 2,
                                      "expected_supported": pytest.approx(1.1), "mean_p": pytest.approx(0.55)}


def test_the_share_is_the_default_and_the_evidence_keeps_the_expected_value() -> None:
    """One claim at P 0.8, one at 0.3: the share judged supported is 0.5 (the mean P was 0.55);
    each P and the expected value stay in the trail."""
    score = run("faithfulness")
    assert score.value == 0.5
    assert score.reason == "1 of 2 claims supported by the contexts; mean P(supported) 0.55"
    assert score.evidence.details == {"form": "count", "supported": 1, "claims": 2,
                                      "expected_supported": pytest.approx(1.1), "mean_p": pytest.approx(0.55)}
    assert [c.probability for c in score.evidence.claims] == [0.8, 0.3]
    fc = run("factual_correctness")
    assert fc.value == 0.5 and fc.reason == "TP=1 FP=1 FN=1"
    assert fc.evidence.details["expected_counts"] == {"tp": pytest.approx(TP), "fp": pytest.approx(FP),
                                                      "fn": pytest.approx(FN)}


@pytest.mark.parametrize(
    ("spec", "want", "reason"),
    [
        ("factual_correctness(form=count)", 0.5, "TP=1 FP=1 FN=1"),
        ("factual_correctness(mode=precision, form=count)", 0.5, "TP=1 FP=1"),
        ("faithfulness(form=count)", 0.5, "1 of 2 claims supported by the contexts; mean P(supported) 0.55"),
    ],
)
def test_the_count_at_the_threshold_stays_available(spec: str, want: float, reason: str) -> None:
    score = run(spec)
    assert score.value == want and score.reason == reason
    assert score.evidence.details["form"] == "count"


def test_answer_correctness_count_form() -> None:
    score = run("answer_correctness(form=count)")
    assert score.value == pytest.approx(0.75 * 0.5 + 0.25 * 0.6)
    assert score.evidence.details["form"] == "count" and score.evidence.details["tp"] == 1


@pytest.mark.parametrize("spec", ["factual_correctness", "faithfulness", "factual_correctness(form=expected)"])
def test_a_judge_without_probabilities_counts_its_verdicts(spec: str) -> None:
    # auto -> count; expected with no probability counts each verdict as 1 or 0: the same value
    score = run(spec, choices=False)
    assert score.value == 0.5 and "mean_p" not in score.evidence.details
    assert all(c.probability is None for c in score.evidence.claims)


def test_unknown_form_is_refused() -> None:
    with pytest.raises(ConfigError, match="form must be one of auto, expected, count"):
        run("faithfulness(form=mean)")


def test_diagnose_reads_the_share_at_its_threshold() -> None:
    """Claim A supported (P 0.8), claim B not (P 0.3): the share 0.5 is not below the default 0.5,
    so diagnose leaves the sample alone (as a mean P of 0.55 did); at ``faithfulness=1`` (fail on
    any claim judged unsupported) it is diagnosed unsupported, naming B."""
    from ragsight.diagnosis import diagnose

    s = world()
    res = ragsight.evaluate([{"id": "s", "question": "What does it say?", "response": RESP, "contexts": [CONTEXT]}],
                            ["faithfulness"], judge=s.choice_judge())
    assert res.scores["s"]["faithfulness"].value == 0.5
    assert diagnose(res, topics=False).sample("s") is None
    strict = diagnose(res, topics=False, thresholds={"faithfulness": 1.0}).sample("s")
    assert strict is not None and strict.primary == "unsupported"
    assert [e.text for f in strict.findings if f.cause == "unsupported" for e in f.evidence] == ["B"]
