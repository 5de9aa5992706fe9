"""The prompts a conversation is judged with keep the conversation's language, as the single-turn
ones do (``extract_claims`` v2, ``generate_questions`` v2): the questions the judge writes for a
turn with a history and the reasons it gives for a turn's claims and for the conversation
metrics are asked in the language of the conversation. Checked on a German conversation, in the
prompt each step actually sends (scripted judge), and in the recorded prompt version."""

from __future__ import annotations

import asyncio
from collections.abc import Mapping
from typing import Any

import pytest

from ragsight import Outcome, Score
from ragsight.analyses import AnalysisSettings, SampleAnalyses
from ragsight.conversation import Turn
from ragsight.judge import Judge, ScriptedProvider
from ragsight.metrics import (
    AgentGoalAccuracy,
    AnswerRelevancy,
    ConversationCompleteness,
    Faithfulness,
    KnowledgeRetention,
    Metric,
    RoleAdherence,
)
from ragsight.sample import Sample
from tests.fakes.embedder import TableEmbedder

GERMAN = (
    Turn("user", "Ich bin Vegetarier. Empfiehl mir ein Restaurant in Rom."),
    Turn("assistant", "Probieren Sie Il Margutta, ein vegetarisches Restaurant."),
    Turn("user", "Und für das Mittagessen morgen?"),
    Turn("assistant", "Probieren Sie das Steakhaus Manzo."),
)
GRUND = "Ein Steakhaus passt nicht zu einem Vegetarier."  # a reason as a German-speaking judge writes it
CONVERSATION_RULE = "in the language of the conversation (a German conversation gets a German reason)"


def verdicts(v: Mapping[str, Any]) -> Any:
    return {"verdicts": [{"id": i, "verdict": False, "reason": GRUND}
                         for i, _ in enumerate(v["item_list"], start=1)]}


def run(metric: Metric, sample: Sample, provider: ScriptedProvider, embedder: Any = None,
        **settings: Any) -> Score:
    ctx = SampleAnalyses(sample, Judge(provider), embedder, AnalysisSettings(**settings))
    return asyncio.run(metric.score(ctx))


@pytest.mark.parametrize(("metric", "step", "fields"), [
    (KnowledgeRetention(), "knowledge_retention", {}),
    (ConversationCompleteness(), "conversation_completeness", {}),
    (RoleAdherence(), "role_adherence", {"system_role": "Ein Restaurantführer für Rom."}),
    (AgentGoalAccuracy(), "agent_goal", {"expected_outcome": "Der Nutzer bekommt ein vegetarisches Restaurant."}),
])
def test_a_german_conversations_metric_prompt_asks_for_german_reasons(
        metric: Metric, step: str, fields: dict[str, Any]) -> None:
    provider = ScriptedProvider({step: verdicts})
    got = run(metric, Sample(id="rom", conversation_id="rom", history=GERMAN, **fields), provider)
    assert got.outcome is Outcome.SCORED and got.value == 0.0
    [call] = provider.requests
    assert (call.prompt_id, call.prompt_version) == (step, "3" if step == "agent_goal" else "2")
    sent = call.messages[1].content
    assert CONVERSATION_RULE in sent
    assert "Ich bin Vegetarier" in sent  # the conversation itself, as it was written
    assert [(c.prompt_id, c.prompt_version) for c in got.evidence.calls] == [(step, call.prompt_version)]
    # the reason is kept as the judge wrote it
    assert GRUND in got.reason or GRUND in str(got.evidence.details)


def test_the_embedded_judge_asks_its_reason_with_the_same_instruction() -> None:
    # the Yes/No step writes no text; the reason for a No is asked with the JSON prompt (v2)
    provider = ScriptedProvider({"knowledge_retention": verdicts},
                                choice_handlers={"knowledge_retention_choice": lambda v: 0.1})
    got = run(KnowledgeRetention(), Sample(id="rom", conversation_id="rom", history=GERMAN), provider)
    assert got.value == 0.0
    asked = provider.calls_for("knowledge_retention")
    assert len(asked) == 2 and all(CONVERSATION_RULE in r.messages[1].content for r in asked)
    assert [r["reason"] for r in got.evidence.details["verdicts"]] == [GRUND, GRUND]


QUESTION = "Hat es vegetarische Gerichte zum Mittagessen?"
RESPONSE = "Ja, es hat vegetarische Gerichte zum Mittagessen."
CONTEXTS = ("Il Margutta: vegetarische Küche, mittags und abends geöffnet.",)


def german_turn() -> Sample:
    return Sample(id="rom:2", question=QUESTION, response=RESPONSE, contexts=CONTEXTS,
                  conversation_id="rom", turn=2, history=GERMAN)


def test_a_german_turns_claims_are_read_in_the_conversation_with_german_reasons() -> None:
    def in_conversation(v: Mapping[str, Any]) -> Any:
        return {"verdicts": [{"id": i, "supported": True, "message": 2, "reason": "Il Margutta ist vegetarisch."}
                             for i, _ in enumerate(v["claim_list"], start=1)]}

    provider = ScriptedProvider({
        "verify_claims": lambda v: {"verdicts": [{"id": 1, "supported": False, "reason": "nicht genannt"}]},
        "verify_claims_conversation": in_conversation,
    })
    got = run(Faithfulness(), german_turn(), provider, verify_response_vs_contexts=True, calibrated=False,
              explain="none")
    assert got.value == 1.0
    [call] = provider.calls_for("verify_claims_conversation")
    assert call.prompt_version == "3"
    assert "in the language of the claims (a German claim gets a German reason)" in call.messages[1].content
    assert "Und für das Mittagessen morgen?" in call.messages[1].content
    # the one-sentence response is its own claim: kept in German, as written
    assert [v.claim for v in got.evidence.claims] == [RESPONSE]
    assert got.evidence.claims[0].reason.startswith("Il Margutta ist vegetarisch.")


def test_a_german_turns_questions_are_written_in_german() -> None:
    standalone = "Hat Il Margutta vegetarische Gerichte zum Mittagessen?"
    generated = ["Gibt es mittags vegetarische Gerichte?", "Ist das Restaurant mittags geöffnet?",
                 "Hat Il Margutta vegetarische Gerichte?"]
    provider = ScriptedProvider({"standalone_question": lambda v: {"question": standalone},
                                 "generate_questions": lambda v: {"noncommittal": False, "questions": generated}})
    emb = TableEmbedder({standalone: [1, 0], generated[0]: [1, 0], generated[1]: [0, 1], generated[2]: [1, 0]})
    got = run(AnswerRelevancy(), german_turn(), provider, emb)
    assert got.value == pytest.approx(2 / 3)
    [rewrite] = provider.calls_for("standalone_question")
    sent = rewrite.messages[1].content
    assert "Write it in German." in sent  # named, not primed by an example in another language
    assert "[this turn] user: Hat es vegetarische Gerichte zum Mittagessen?" in sent
    [questions] = provider.calls_for("generate_questions")
    assert "written in German" in questions.messages[1].content



def test_retention_asks_only_about_messages_after_something_the_user_stated() -> None:
    # questions establish nothing: the first answer cannot forget anything, and is not asked about
    chat = (Turn("user", "Welche Restaurants gibt es in Rom?"),
            Turn("assistant", "Il Margutta und Manzo."),
            Turn("user", "Ich bin Vegetarier. Welches passt?"),
            Turn("assistant", "Manzo, das Steakhaus."))
    provider = ScriptedProvider({"knowledge_retention": verdicts})
    got = run(KnowledgeRetention(), Sample(id="rom", conversation_id="rom", history=chat), provider)
    [call] = provider.requests
    assert call.variables["item_list"] == ["[4] assistant: Manzo, das Steakhaus."]
    rows = got.evidence.details["verdicts"]
    assert [(r["message"], r["verdict"]) for r in rows] == [(2, True), (4, False)]
    assert "stated nothing before this message" in rows[0]["reason"]
    assert got.value == 0.5
