"""Chunk relevance (issue 30): a chunk is relevant when it holds what the reference needs; its
verdict depends on neither its rank nor its neighbours; borderline verdicts carry a reason.
Scripted judges: the JSON judge and the embedded judge's yes/no calls."""

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
    return RagScript(chunk_probabilities={NEEDED: 0.95, ON_TOPIC: on_topic, OTHER: 0.05})


def sample(sid: str, contexts: list[str]) -> dict[str, Any]:
    return {"id": sid, "question": QUESTION, "contexts": contexts, "reference": REFERENCE}


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
    ragsight.evaluate([sample("a", [NEEDED, ON_TOPIC, OTHER])], ["context_precision"], judge=judge)
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
                      ["context_precision"], judge=judge, options=ragsight.RunOptions(cache=False))
    prompts = {tuple((m.role, m.content) for m in c.messages) for c in judge.calls_for("chunk_relevant")
               if c.variables["chunk_text"] == NEEDED}
    assert len(prompts) == 1


def test_unrelevant_and_borderline_embedded_verdicts_get_a_reason_and_sure_ones_do_not() -> None:
    judge = script(on_topic=0.55).choice_judge()
    result = ragsight.evaluate([sample("a", [NEEDED, ON_TOPIC, OTHER])], ["context_precision"], judge=judge)
    score = result.scores["a"]["context_precision"]
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
    result = ragsight.evaluate([sample("a", [NEEDED, ON_TOPIC])], ["context_precision"], judge=judge)
    assert [c["reason"] for c in result.scores["a"]["context_precision"].evidence.details["chunks"]] == ["", ""]
    assert judge.calls_for("explain_chunk") == []


@pytest.mark.parametrize(("mode", "explained"), [("none", 0), ("unsupported", 2), ("all", 3)])
def test_the_explanation_mode_decides_how_many_chunk_reasons(mode: str, explained: int) -> None:
    judge = script(on_topic=0.35).choice_judge()
    result = ragsight.evaluate([sample("a", [NEEDED, ON_TOPIC, OTHER])], ["context_precision"], judge=judge,
                               options=ragsight.RunOptions(settings=AnalysisSettings(explain=mode)))
    chunks = result.scores["a"]["context_precision"].evidence.details["chunks"]
    assert sum(1 for c in chunks if c["reason"]) == explained
    assert len(judge.calls_for("explain_chunk")) == explained
    if explained:
        assert chunks[1]["reason"] == f"scripted: {ON_TOPIC} is not relevant"


def test_a_failed_explanation_leaves_the_verdict_and_an_empty_reason() -> None:
    s = script(on_topic=0.6)
    judge = s.choice_judge()
    judge.handlers["explain_chunk"] = lambda v: {"reason": 7}  # never a usable reason
    result = ragsight.evaluate([sample("a", [NEEDED, ON_TOPIC])], ["context_precision"], judge=judge)
    score = result.scores["a"]["context_precision"]
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
           "reference": "The default value of scale is 0."}
    score = ragsight.evaluate([row], ["context_precision"], judge=judge).scores["scale"]["context_precision"]
    chunks = score.evidence.details["chunks"]
    assert [c["relevant"] for c in chunks] == [True, False]
    assert score.value == pytest.approx(1.0)
    assert chunks[0]["reason"].startswith("the chunk states the reference nearly word for word (word signals P 0.8")
    if embedded:
        assert chunks[0]["probability"] > 0.7
        assert [c.variables["chunk_text"] for c in judge.calls_for("explain_chunk")] == [other]


def test_a_short_reference_found_in_a_chunk_does_not_decide_alone() -> None:
    """'Paris' occurring in a chunk says little: the judge's verdict stands."""
    chunk = "Paris hosted the Olympic Games in 1900, 1924 and 2024."
    s = RagScript(chunk_probabilities={chunk: 0.2})
    row = {"id": "p", "question": "What is the capital of France?", "contexts": [chunk], "reference": "Paris"}
    score = ragsight.evaluate([row], ["context_precision"], judge=s.choice_judge()).scores["p"]["context_precision"]
    assert score.value == 0.0 and score.evidence.details["chunks"][0]["probability"] == pytest.approx(0.2)
