"""Conversations as ragas, DeepEval and OpenAI write them, read into turn samples."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from ragsight import Dataset
from ragsight.conversation import Conversation, ToolCall, Turn
from ragsight.sample import Sample, turn_samples

# A ragas MultiTurnSample as ``sample.model_dump()`` writes it (messages with ``type``).
RAGAS = {
    "user_input": [
        {"content": "Which bikes do you sell?", "metadata": None, "type": "human"},
        {"content": "", "metadata": None, "type": "ai",
         "tool_calls": [{"name": "search", "args": {"query": "bikes"}}]},
        {"content": "The Trail is a hybrid bike, sold in red and blue.", "metadata": None, "type": "tool"},
        {"content": "We sell the Trail, a hybrid.", "metadata": None, "type": "ai", "tool_calls": None},
        {"content": "Does it come in red?", "metadata": None, "type": "human"},
        {"content": "Yes, the Trail comes in red.", "metadata": None, "type": "ai", "tool_calls": None},
    ],
    "reference": "The user learns that the Trail comes in red.",
    "reference_tool_calls": [{"name": "search", "args": {"query": "bikes"}}],
    "rubrics": None,
    "reference_topics": ["bikes"],
}

# A DeepEval ConversationalTestCase as ``test_case.model_dump()`` writes it.
DEEPEVAL = {
    "name": "shoes",
    "scenario": "A customer asks about refunds.",
    "expected_outcome": "The customer learns the refund policy.",
    "chatbot_role": "a polite shop assistant",
    "user_description": "a customer",
    "turns": [
        {"role": "user", "content": "What if these shoes don't fit?"},
        {"role": "assistant", "content": "We offer a 30-day full refund.",
         "retrieval_context": ["All customers are eligible for a 30 day full refund."]},
        {"role": "user", "content": "And the price of the Trail runner?"},
        {"role": "assistant", "content": "It costs $80.", "retrieval_context": None,
         "tools_called": [{"name": "price", "description": None, "reasoning": None,
                           "input_parameters": {"item": "Trail runner"}, "output": {"usd": 80}}]},
    ],
}

# OpenAI chat messages, as a chat log or a fine-tuning file holds them.
OPENAI = {
    "id": "weather-1",
    "messages": [
        {"role": "system", "content": "You answer questions about the weather."},
        {"role": "user", "content": "What is the weather in Paris?"},
        {"role": "assistant", "content": None, "tool_calls": [
            {"id": "call_1", "type": "function",
             "function": {"name": "get_weather", "arguments": "{\"city\": \"Paris\"}"}}]},
        {"role": "tool", "tool_call_id": "call_1", "content": "Paris: sunny, 21 C."},
        {"role": "assistant", "content": "It is sunny in Paris, 21 C."},
    ],
}


def _by_id(ds: Dataset) -> dict[str, Sample]:
    return {s.id: s for s in ds.samples}


def test_a_ragas_multi_turn_sample_becomes_one_sample_per_answer_and_one_for_the_conversation() -> None:
    ds = Dataset.load([RAGAS])
    assert not ds.problems
    cid = ds.samples[0].conversation_id
    assert [s.id for s in ds.samples] == [f"{cid}:0", f"{cid}:1", cid]
    s0, s1, conv = ds.samples
    assert (s0.turn, s0.question, s0.response) == (0, "Which bikes do you sell?", "We sell the Trail, a hybrid.")
    # no retrieval context of its own: the results of the tool calls before it are its contexts
    assert s0.contexts == ("The Trail is a hybrid bike, sold in red and blue.",)
    assert s0.tool_calls == (ToolCall("search", {"query": "bikes"}),)
    assert s0.history == ()
    # no evidence of its own: the tool result of turn 0, still in view, is inherited and said so
    assert (s1.turn, s1.question, s1.contexts, s1.tool_calls) == (
        1, "Does it come in red?", ("The Trail is a hybrid bike, sold in red and blue.",), ())
    assert s1.metadata["contexts_inherited_from_turn"] == 0
    assert [t.role for t in s1.history or ()] == ["user", "assistant", "tool", "assistant"]
    assert conv.turn is None and conv.conversation_id == cid and len(conv.history or ()) == 6
    assert conv.reference_tool_calls == (ToolCall("search", {"query": "bikes"}),)
    assert conv.expected_outcome == "The user learns that the Trail comes in red."
    assert conv.metadata["reference_topics"] == ["bikes"]


def test_ragas_ai_message_to_dict_form_is_read_too() -> None:
    row = {"user_input": [{"content": "price?", "type": "human"},
                          {"content": {"text": "", "tool_calls": [{"name": "price", "args": {"id": 3}}]},
                           "type": "ai"},
                          {"content": "$5", "type": "tool"},
                          {"content": "It is $5.", "type": "ai"}]}
    s0 = Dataset.load([row]).samples[0]
    assert (s0.response, s0.contexts, s0.tool_calls) == ("It is $5.", ("$5",), (ToolCall("price", {"id": 3}),))


def test_a_deepeval_conversational_test_case_loads_with_scenario_role_and_tool_outputs() -> None:
    by = _by_id(Dataset.load([DEEPEVAL]))
    assert list(by) == ["shoes:0", "shoes:1", "shoes"]
    assert by["shoes:0"].contexts == ("All customers are eligible for a 30 day full refund.",)
    t1 = by["shoes:1"]
    assert t1.response == "It costs $80."
    assert t1.tool_calls == (ToolCall("price", {"item": "Trail runner"}),)
    assert t1.contexts == ('{"usd": 80}',)  # the tool's output, as JSON text
    assert (t1.scenario, t1.expected_outcome, t1.system_role) == (
        "A customer asks about refunds.", "The customer learns the refund policy.", "a polite shop assistant")
    assert by["shoes"].metadata["user_description"] == "a customer"


def test_deepeval_camel_case_keys_of_a_test_run_file_load() -> None:
    row = {"name": "c", "expectedOutcome": "done", "chatbotRole": "bot",
           "turns": [{"role": "user", "content": "q"},
                     {"role": "assistant", "content": "a", "retrievalContext": ["ctx"],
                      "toolsCalled": [{"name": "t", "inputParameters": {"k": 1}}]}]}
    s = Dataset.load([row]).samples[0]
    assert (s.contexts, s.tool_calls, s.expected_outcome, s.system_role) == (
        ("ctx",), (ToolCall("t", {"k": 1}),), "done", "bot")


def test_openai_messages_load_with_the_system_message_as_role_and_the_tool_result_as_context() -> None:
    ds = Dataset.load([OPENAI])
    assert [s.id for s in ds.samples] == ["weather-1:0", "weather-1"]
    s = ds.samples[0]
    assert s.question == "What is the weather in Paris?" and s.response == "It is sunny in Paris, 21 C."
    assert s.contexts == ("Paris: sunny, 21 C.",)
    assert s.tool_calls == (ToolCall("get_weather", {"city": "Paris"}, id="call_1"),)
    assert s.system_role == "You answer questions about the weather."


def test_a_bad_message_names_conversation_message_and_field_and_the_rest_loads(tmp_path: Path) -> None:
    bad = json.loads(json.dumps(OPENAI))
    bad["id"] = "broken"
    bad["messages"][2]["reference_tool_calls"] = [{"name": "get_weather", "arguments": "{city: Paris"}]
    f = tmp_path / "chats.jsonl"
    f.write_text("\n".join(json.dumps(r) for r in (OPENAI, bad, DEEPEVAL)) + "\n")
    ds = Dataset.load(f)
    assert [s.conversation_id for s in ds.samples] == ["weather-1"] * 2 + ["shoes"] * 3
    (p,) = ds.problems
    assert (p.row, p.field) == (2, "messages[2].reference_tool_calls[0].arguments")
    assert "conversation 'broken', message 2" in p.message and "not valid JSON" in p.message


def test_unknown_role_and_no_assistant_are_row_problems() -> None:
    rows = [{"id": "r", "messages": [{"role": "user", "content": "hi"}, {"role": "robot", "content": "x"}]},
            {"id": "q", "messages": [{"role": "user", "content": "hi"}]}]
    ds = Dataset.load(rows)
    assert ds.samples == []
    assert [p.field for p in ds.problems] == ["messages[1].role", None]
    assert "unknown role 'robot'" in ds.problems[0].message
    assert "conversation 'q' has no assistant message" in ds.problems[1].message


def test_single_turn_rows_are_unchanged_even_with_a_conversation_id_column() -> None:
    ds = Dataset.load([{"id": "s1", "question": "q", "response": "r", "conversation_id": "abc"}])
    (s,) = ds.samples
    assert s.conversation_id is None and s.turn is None and s.metadata == {"conversation_id": "abc"}


def test_turn_samples_of_a_python_conversation_and_ids_must_not_clash() -> None:
    conv = Conversation("c", (Turn("user", "hi"), Turn("assistant", "hello", reference="hello"),
                              Turn("user", "bye"), Turn("assistant", "bye", contexts=("x",))),
                        scenario="greet")
    samples = turn_samples(conv)
    assert [(s.id, s.turn, s.question, s.reference) for s in samples] == [
        ("c:0", 0, "hi", "hello"), ("c:1", 1, "bye", None), ("c", None, None, None)]
    assert samples[1].history == conv.turns[:2] and samples[2].scenario == "greet"
    ds = Dataset.load([{"id": "c:1", "question": "q"}, conv])
    assert [s.id for s in ds.samples] == ["c:1"]
    assert "conversation 'c': the id 'c:1' was already used by row 1" in ds.problems[0].message
    assert [s.id for s in Dataset.load(conv).samples] == ["c:0", "c:1", "c"]


def test_a_tool_calling_step_is_not_a_turn_of_its_own() -> None:
    conv = Conversation("a", (Turn("user", "q"), Turn("assistant", "let me look", tool_calls=(ToolCall("s"),)),
                              Turn("tool", "r"), Turn("assistant", "answer"),
                              Turn("user", "q2"), Turn("assistant", "done", tool_calls=(ToolCall("t"),))))
    assert conv.assistant_turns == (3, 5)


@pytest.mark.parametrize("row", [RAGAS, DEEPEVAL, OPENAI])
def test_each_shape_round_trips_through_sample_to_dict(row: dict) -> None:
    from ragsight.dataset import sample_from_mapping

    for s in Dataset.load([row]).samples:
        back, _ = sample_from_mapping(json.loads(json.dumps(s.to_dict())))
        assert back == s


def test_conversations_in_a_parquet_file_load(tmp_path: Path) -> None:
    pd = pytest.importorskip("pandas")
    pytest.importorskip("pyarrow")
    path = tmp_path / "chats.parquet"
    pd.DataFrame([{"name": DEEPEVAL["name"], "scenario": DEEPEVAL["scenario"], "turns": DEEPEVAL["turns"]}]
                 ).to_parquet(path)
    by = _by_id(Dataset.load(path))
    assert list(by) == ["shoes:0", "shoes:1", "shoes"]
    assert by["shoes:1"].tool_calls == (ToolCall("price", {"item": "Trail runner"}),)
    assert by["shoes:0"].contexts == ("All customers are eligible for a 30 day full refund.",)


def test_a_deepeval_test_run_file_with_conversational_test_cases(tmp_path: Path) -> None:
    run = {"testCases": [{"input": "q", "actualOutput": "a", "name": "single"}],
           "conversationalTestCases": [{"name": "c", "turns": [
               {"role": "user", "content": "hi"},
               {"role": "assistant", "content": "hello", "retrievalContext": ["greeting"]}]}]}
    f = tmp_path / "latest_test_run.json"
    f.write_text(json.dumps(run))
    ds = Dataset.load(f)
    assert [(s.question, s.conversation_id, s.turn) for s in ds.samples] == [
        ("q", None, None), ("hi", "c", 0), (None, "c", None)]
