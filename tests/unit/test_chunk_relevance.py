"""Chunk relevance: a chunk is relevant when it holds what the reference (or response) needs;
its verdict depends on neither its rank nor its neighbours. The embedded judge reads a chunk
against the reference through the reference's claims (a chunk is relevant when it supports one),
and against the response chunk by chunk, borderline verdicts carrying a reason. Scripted judges:
the JSON judge and the embedded judge's yes/no calls."""

from __future__ import annotations

from typing import Any

import pytest

import ragsight
from ragsight.analyses import AnalysisSettings
from ragsight.prompts import load_prompt
from tests.scripted import RagScript

NEEDED = "The Eiffel Tower is 330 metres tall since a new antenna was added in 2022."
ON_TOPIC = "The Eiffel Tower was built for the 1889 World's Fair in Paris."
OTHER = "Gustave Eiffel's company also built the internal frame of the Statue of Liberty."
QUESTION = "How tall is the Eiffel Tower?"
REFERENCE = "The Eiffel Tower is 330 metres tall."


def call_text(request: Any) -> str:
    return "\n".join(m.content for m in request.messages)


def script(on_topic: float = 0.1) -> RagScript:
    return RagScript(claims={REFERENCE: [REFERENCE]},
                     chunk_probabilities={NEEDED: 0.95, ON_TOPIC: on_topic, OTHER: 0.05})


def sample(sid: str, contexts: list[str]) -> dict[str, Any]:
    return {"id": sid, "question": QUESTION, "contexts": contexts, "reference": REFERENCE, "response": REFERENCE}


# the embedded judge's chunk-by-chunk step: context precision against the response
BY_CHUNK = "context_precision_without_reference"
BARE = ragsight.RunOptions(settings=AnalysisSettings(calibrated=False))


RANKINGS = {
    "rank1": [NEEDED, ON_TOPIC, OTHER],
    "rank2": [ON_TOPIC, NEEDED, OTHER],
    "rank3": [ON_TOPIC, OTHER, NEEDED],
}


@pytest.mark.parametrize("embedded", [False, True])
def test_moving_the_needed_chunk_down_lowers_context_precision(embedded: bool) -> None:
    s = script()
    judge = s.choice_judge() if embedded else s.judge()
    result = ragsight.evaluate([sample(k, v) for k, v in RANKINGS.items()], ["context_precision"], judge=judge)
    values = {k: result.scores[k]["context_precision"].value for k in RANKINGS}
    assert values == pytest.approx({"rank1": 1.0, "rank2": 0.5, "rank3": 1 / 3})
    for k, contexts in RANKINGS.items():
        chunks = result.scores[k]["context_precision"].evidence.details["chunks"]
        assert [c["relevant"] for c in chunks] == [c == NEEDED for c in contexts]
        if embedded:  # the reference is one claim: the reason does not repeat it for each chunk
            assert [c["reason"].startswith("does not support the reference's one claim (P ")
                    for c in chunks] == [c != NEEDED for c in contexts]


def test_the_remote_judge_sees_the_same_prompt_whatever_the_ranking() -> None:
    """Chunks are shown in an order fixed by their text: three rankings, one prompt, whose
    verdicts go back to each chunk's own rank."""
    s = script()
    judge = s.judge()
    ragsight.evaluate([sample(k, v) for k, v in RANKINGS.items()], ["context_precision"], judge=judge,
                      options=ragsight.RunOptions(cache=False))
    calls = judge.calls_for("chunk_relevance")
    assert len(calls) == 1  # the same messages: one call answered all three samples
    (call,) = calls
    assert sorted(call.variables["chunk_list"]) == sorted(RANKINGS["rank1"])
    text = call.messages[1].content
    assert "on its own" in text and "same topic" in text and "order of the chunks means nothing" in text


def test_the_remote_reasons_follow_their_chunks_back_to_their_ranks() -> None:
    result = ragsight.evaluate([sample("r", RANKINGS["rank3"])], ["context_precision"], judge=script().judge())
    chunks = result.scores["r"]["context_precision"].evidence.details["chunks"]
    assert [c["reason"] for c in chunks] == [f"scripted: {c}" for c in RANKINGS["rank3"]]


def test_each_embedded_call_holds_one_chunk_and_nothing_of_its_neighbours() -> None:
    s = script()
    judge = s.choice_judge()
    ragsight.evaluate([sample("a", [NEEDED, ON_TOPIC, OTHER])], [BY_CHUNK], judge=judge)
    calls = judge.calls_for("chunk_relevant")
    assert len(calls) == 3
    for call, chunk in zip(calls, [NEEDED, ON_TOPIC, OTHER]):
        prompt = "\n".join(m.content for m in call.messages)
        assert prompt.count("<chunk>") == 1 and chunk in prompt
        assert not any(other in prompt for other in {NEEDED, ON_TOPIC, OTHER} - {chunk})
        # the shared part (question, reference) comes first and the chunk last, so the embedded
        # judge evaluates the shared part once per sample
        assert prompt.index(QUESTION) < prompt.index(REFERENCE) < prompt.index(chunk)
    assert load_prompt("chunk_relevant").version == "3"


def test_a_chunk_gets_the_same_embedded_call_whatever_its_neighbours_and_rank() -> None:
    s = script()
    judge = s.choice_judge()
    ragsight.evaluate([sample("a", [NEEDED, ON_TOPIC]), sample("b", [OTHER, ON_TOPIC, NEEDED])],
                      [BY_CHUNK], judge=judge, options=ragsight.RunOptions(cache=False))
    prompts = {tuple((m.role, m.content) for m in c.messages) for c in judge.calls_for("chunk_relevant")
               if c.variables["chunk_text"] == NEEDED}
    assert len(prompts) == 1


def test_unrelevant_and_borderline_embedded_verdicts_get_a_reason_and_sure_ones_do_not() -> None:
    judge = script(on_topic=0.55).choice_judge()
    result = ragsight.evaluate([sample("a", [NEEDED, ON_TOPIC, OTHER])], [BY_CHUNK], judge=judge)
    score = result.scores["a"][BY_CHUNK]
    chunks = score.evidence.details["chunks"]
    assert [c["probability"] for c in chunks] == pytest.approx([0.95, 0.55, 0.05])
    assert [c["reason"] for c in chunks] == ["", f"scripted: {ON_TOPIC} is relevant",
                                             f"scripted: {OTHER} is not relevant"]
    assert score.value == pytest.approx(1.0)  # 0.55 >= 0.5: relevant (and said to be borderline)
    calls = judge.calls_for("explain_chunk")
    assert [c.variables["verdict"] for c in calls] == ["relevant", "not relevant"]
    # each asked right after its chunk's verdict, whose prompt it extends (the judge reuses it)
    order = [(r.prompt_id, r.variables["chunk_text"]) for r in judge.requests]
    assert order == [("chunk_relevant", NEEDED), ("chunk_relevant", ON_TOPIC), ("explain_chunk", ON_TOPIC),
                     ("chunk_relevant", OTHER), ("explain_chunk", OTHER)]
    relevant_prompt = call_text(judge.calls_for("chunk_relevant")[1])
    explain_prompt = call_text(calls[0])
    shared = relevant_prompt[: relevant_prompt.index("</chunk>") + len("</chunk>")]
    assert explain_prompt.startswith(shared)
    # the explanations' calls are in the trail
    assert [r.prompt_id for r in score.evidence.calls].count("explain_chunk") == 2


def test_a_relevant_chunk_well_above_the_threshold_gets_no_reason() -> None:
    judge = script(on_topic=0.7).choice_judge()  # 0.2 above: sure enough
    result = ragsight.evaluate([sample("a", [NEEDED, ON_TOPIC])], [BY_CHUNK], judge=judge)
    assert [c["reason"] for c in result.scores["a"][BY_CHUNK].evidence.details["chunks"]] == ["", ""]
    assert judge.calls_for("explain_chunk") == []


@pytest.mark.parametrize(("mode", "explained"), [("none", 0), ("unsupported", 2), ("all", 3)])
def test_the_explanation_mode_decides_how_many_chunk_reasons(mode: str, explained: int) -> None:
    judge = script(on_topic=0.35).choice_judge()
    result = ragsight.evaluate([sample("a", [NEEDED, ON_TOPIC, OTHER])], [BY_CHUNK], judge=judge,
                               options=ragsight.RunOptions(settings=AnalysisSettings(explain=mode)))
    chunks = result.scores["a"][BY_CHUNK].evidence.details["chunks"]
    assert sum(1 for c in chunks if c["reason"]) == explained
    assert len(judge.calls_for("explain_chunk")) == explained
    if explained:
        assert chunks[1]["reason"] == f"scripted: {ON_TOPIC} is not relevant"


def test_a_failed_explanation_leaves_the_verdict_and_an_empty_reason() -> None:
    s = script(on_topic=0.6)
    judge = s.choice_judge()
    judge.handlers["explain_chunk"] = lambda v: {"reason": 7}  # never a usable reason
    result = ragsight.evaluate([sample("a", [NEEDED, ON_TOPIC])], [BY_CHUNK], judge=judge)
    score = result.scores["a"][BY_CHUNK]
    assert score.value == pytest.approx(1.0)
    assert [c["reason"] for c in score.evidence.details["chunks"]] == ["", ""]


STATES_IT = ("There are four special variables, scale, ibase, obase, and last. scale defines how some operations "
             "use digits after the decimal point. The default value of scale is 0. ibase and obase define the "
             "conversion base for input and output numbers.")


@pytest.mark.parametrize("embedded", [False, True])
def test_a_chunk_that_states_the_reference_word_for_word_is_relevant_whatever_the_judge_says(embedded: bool) -> None:
    """A new-user trial: the 1.5B judge gave P(Yes) 0.33 to a chunk holding the reference
    verbatim, and context_precision was 0. The chunk's words decide (no reason asked for)."""
    other = "All numbers that are printed are followed by a newline."
    s = RagScript(chunk_probabilities={STATES_IT: 0.33, other: 0.1})
    judge = s.choice_judge() if embedded else s.judge()
    row = {"id": "scale", "question": "What is the default value of scale in bc?", "contexts": [STATES_IT, other],
           "reference": "The default value of scale is 0.", "response": "The default value of scale is 0."}
    metric = BY_CHUNK if embedded else "context_precision"  # the embedded judge's chunk-by-chunk step
    score = ragsight.evaluate([row], [metric], judge=judge).scores["scale"][metric]
    chunks = score.evidence.details["chunks"]
    assert [c["relevant"] for c in chunks] == [True, False]
    assert score.value == pytest.approx(1.0)
    assert chunks[0]["reason"].startswith(f"the chunk states the {'response' if embedded else 'reference'} nearly word for word (word signals P 0.8")
    if embedded:
        assert chunks[0]["probability"] > 0.7
        assert [c.variables["chunk_text"] for c in judge.calls_for("explain_chunk")] == [other]


def test_a_short_reference_found_in_a_chunk_does_not_decide_alone() -> None:
    """'Paris' occurring in a chunk says little: the judge's verdict stands."""
    chunk = "Paris hosted the Olympic Games in 1900, 1924 and 2024."
    s = RagScript(chunk_probabilities={chunk: 0.2})
    row = {"id": "p", "question": "What is the capital of France?", "contexts": [chunk], "response": "Paris"}
    score = ragsight.evaluate([row], [BY_CHUNK], judge=s.choice_judge()).scores["p"][BY_CHUNK]
    assert score.value == 0.0 and score.evidence.details["chunks"][0]["probability"] == pytest.approx(0.2)


# ---- the embedded judge against the reference: through the reference's claims ----------------

SUNDAY = "On Sundays and public holidays the ferry leaves Kirkwall once, at 10:30."
WEEKDAYS = "From Monday to Saturday the ferry leaves Kirkwall at 07:15, 12:00 and 17:45."
PRICE = "A single crossing costs 18 pounds for an adult; children under 5 travel free."
FERRY_Q = "When does the ferry leave on Sunday, and what does it cost?"
FERRY_REF = "On Sundays there is one crossing, at 10:30. An adult ticket costs 18 pounds."
FERRY_CLAIMS = ["On Sundays there is one crossing, at 10:30.", "An adult ticket costs 18 pounds."]


def ferry_script() -> RagScript:
    c1, c2 = FERRY_CLAIMS
    # the first sentence (a time: two numbers) goes to the judge to split, and its claim is checked
    # against the reference; the second is a plain sentence, its own claim
    return RagScript(claims={FERRY_REF: FERRY_CLAIMS}, parts={c1: [c1]}, claim_in_chunk={
        (c1, SUNDAY): 0.92, (c2, SUNDAY): 0.04,
        (c1, WEEKDAYS): 0.35, (c2, WEEKDAYS): 0.03,  # same topic, not the Sunday crossing
        (c1, PRICE): 0.05, (c2, PRICE): 0.81,
    }, verdicts={(c1, "contexts"): True, (c2, "contexts"): True, (c1, "reference"): True})


def ferry(sid: str, contexts: list[str]) -> dict[str, Any]:
    return {"id": sid, "question": FERRY_Q, "contexts": contexts, "reference": FERRY_REF}


def test_an_embedded_chunk_is_relevant_when_it_supports_a_reference_claim() -> None:
    judge = ferry_script().choice_judge()
    result = ragsight.evaluate([ferry("f", [WEEKDAYS, SUNDAY, PRICE])], ["context_precision"], judge=judge, options=BARE)
    score = result.scores["f"]["context_precision"]
    details = score.evidence.details
    assert details["by"] == "reference claims" and details["claims"] == FERRY_CLAIMS
    assert [c["relevant"] for c in details["chunks"]] == [False, True, True]
    assert [c["supports"] for c in details["chunks"]] == [[], [1], [2]]
    assert [c["probability"] for c in details["chunks"]] == pytest.approx([0.35, 0.92, 0.81])
    assert score.value == pytest.approx((1 / 2 + 2 / 3) / 2)
    reasons = [c["reason"] for c in details["chunks"]]
    assert reasons[0] == f'supports none of the 2 reference claims; closest: claim 1 (P 0.35) "{FERRY_CLAIMS[0]}"'
    assert reasons[1] == f'supports reference claim 1 (P 0.92): "{FERRY_CLAIMS[0]}"'
    # the claim verdicts are the whole cost: no chunk step, no generated reason
    assert judge.calls_for("chunk_relevant") == [] and judge.calls_for("explain_chunk") == []
    assert len([c for c in judge.calls_for("verify_claim") if c.variables["target"] != "reference"]) == 6
    assert {r.prompt_id for r in score.evidence.calls} == {"verify_claim"}


def test_with_context_recall_the_reference_is_read_once_and_each_call_is_the_same_at_any_rank() -> None:
    judge = ferry_script().choice_judge()
    result = ragsight.evaluate([ferry("a", [WEEKDAYS, SUNDAY, PRICE]), ferry("b", [PRICE, SUNDAY])],
                               ["context_precision", "context_recall"], judge=judge,
                               options=ragsight.RunOptions(cache=False, settings=AnalysisSettings(calibrated=False)))
    assert result.scores["b"]["context_precision"].value == pytest.approx(1.0)
    assert result.scores["b"]["context_recall"].value == pytest.approx(1.0)
    # one extraction of the reference serves both metrics (and both samples: the same text)
    assert len(judge.calls_for("extract_claims_part")) == 1
    per_chunk = [c for c in judge.calls_for("verify_claim") if c.variables["target"] == "chunk"]
    # sample b's four calls (its chunks at other ranks, with other neighbours) are the same
    # requests as sample a's, answered once: 3 chunks x 2 claims in all
    assert len(per_chunk) == 3 * 2
    prompts: dict[tuple[str, str], set[tuple[str, ...]]] = {}
    for c in per_chunk:
        text = tuple(m.content for m in c.messages)
        prompts.setdefault((c.variables["chunk_text"], c.variables["claim_text"]), set()).add(text)
        assert "\n".join(text).count("<context") == 1 and c.variables["chunk_text"] in "\n".join(text)
    # SUNDAY at rank 2 in both, PRICE at rank 3 in a and rank 1 in b: one prompt per pair
    assert all(len(v) == 1 for v in prompts.values())


def test_a_claimless_reference_falls_back_to_the_chunk_step() -> None:
    s = RagScript(claims={"Yes.": []}, chunk_probabilities={NEEDED: 0.95, ON_TOPIC: 0.1})
    judge = s.choice_judge()
    row = {"id": "a", "question": "Is the Eiffel Tower taller than 300 metres?", "contexts": [NEEDED, ON_TOPIC],
           "reference": "Yes."}
    result = ragsight.evaluate([row], ["context_precision"], judge=judge)
    details = result.scores["a"]["context_precision"].evidence.details
    assert "by" not in details and [c["relevant"] for c in details["chunks"]] == [True, False]
    assert len(judge.calls_for("chunk_relevant")) == 2


def test_a_chunk_supporting_two_claims_names_both() -> None:
    c1, c2 = FERRY_CLAIMS
    both = SUNDAY + " " + PRICE
    s = ferry_script()
    s.claim_in_chunk.update({(c1, both): 0.9, (c2, both): 0.8})
    result = ragsight.evaluate([ferry("f", [both, WEEKDAYS])], ["context_precision"], judge=s.choice_judge(),
                               options=BARE)
    chunk = result.scores["f"]["context_precision"].evidence.details["chunks"][0]
    assert chunk["supports"] == [1, 2]
    assert chunk["reason"] == f'supports reference claims 1 (P 0.90) and 2 (P 0.80); claim 1: "{c1}"'
