"""The tools an agent had available, read from the shapes OpenAI, Anthropic, LangChain, MCP and
DeepEval write, kept in ``metadata["tools"]`` through a stored run; Anthropic's tool_use and
tool_result blocks and LangChain's own messages read as calls and results."""

from __future__ import annotations

import json
from typing import Any

import pytest

from ragsight import Dataset
from ragsight.dataset import sample_from_mapping
from ragsight.dataset._tools import ToolSpec, looks_failed, read_tools, tools_of

WEATHER_SCHEMA = {"type": "object", "properties": {"city": {"type": "string"}}, "required": ["city"]}

OPENAI_REQUEST = {
    "id": "weather-1",
    "tools": [{"type": "function", "function": {"name": "get_weather", "description": "Weather of a city.",
                                                "parameters": WEATHER_SCHEMA}}],
    "messages": [
        {"role": "user", "content": "What is the weather in Paris?"},
        {"role": "assistant", "content": None, "tool_calls": [
            {"id": "call_1", "type": "function",
             "function": {"name": "get_weather", "arguments": "{\"city\": \"Paris\"}"}}]},
        {"role": "tool", "tool_call_id": "call_1", "content": "Paris: sunny, 21 C."},
        {"role": "assistant", "content": "It is sunny in Paris, 21 C."},
    ],
}

ANTHROPIC_REQUEST = {
    "id": "weather-2",
    "system": "You answer questions about the weather.",
    "tools": [{"name": "get_weather", "description": "Weather of a city.", "input_schema": WEATHER_SCHEMA}],
    "messages": [
        {"role": "user", "content": "What is the weather in Paris?"},
        {"role": "assistant", "content": [
            {"type": "text", "text": "Let me look."},
            {"type": "tool_use", "id": "toolu_1", "name": "get_weather", "input": {"city": "Pariss"}}]},
        {"role": "user", "content": [
            {"type": "tool_result", "tool_use_id": "toolu_1", "content": "unknown city: Pariss", "is_error": True}]},
        {"role": "assistant", "content": [
            {"type": "tool_use", "id": "toolu_2", "name": "get_weather", "input": {"city": "Paris"}}]},
        {"role": "user", "content": [
            {"type": "tool_result", "tool_use_id": "toolu_2", "content": [{"type": "text", "text": "sunny"}]}]},
        {"role": "assistant", "content": [{"type": "text", "text": "It is sunny in Paris."}]},
    ],
}


def conversation_samples(row: dict[str, Any]) -> list[Any]:
    return list(Dataset.from_records([row]).samples)


def test_openai_request_tools_are_kept_on_every_sample_of_the_conversation() -> None:
    samples = conversation_samples(OPENAI_REQUEST)
    assert [s.id for s in samples] == ["weather-1:0", "weather-1"]
    for s in samples:
        assert tools_of(s) == (ToolSpec("get_weather", "Weather of a city.", WEATHER_SCHEMA),)
    assert samples[-1].metadata["tools"] == [{"name": "get_weather", "description": "Weather of a city.",
                                              "parameters": WEATHER_SCHEMA}]


def test_anthropic_tool_use_and_tool_result_blocks_are_calls_and_results() -> None:
    samples = conversation_samples(ANTHROPIC_REQUEST)
    conv = samples[-1]
    assert [(c.name, dict(c.args), c.id) for c in conv.tool_calls or ()] == [
        ("get_weather", {"city": "Pariss"}, "toolu_1"), ("get_weather", {"city": "Paris"}, "toolu_2")]
    tools = [t for t in conv.history or () if t.role == "tool"]
    assert [(t.content, t.name, t.tool_call_id, t.is_error) for t in tools] == [
        ("unknown city: Pariss", "get_weather", "toolu_1", True), ("sunny", "get_weather", "toolu_2", False)]
    # a user message that only carries results is not a user turn: one exchange, one turn sample
    assert [s.id for s in samples] == ["weather-2:0", "weather-2"]
    assert samples[0].response == "It is sunny in Paris."
    assert tools_of(conv) == (ToolSpec("get_weather", "Weather of a city.", WEATHER_SCHEMA),)


def test_langchain_messages_written_by_langchain_itself() -> None:
    lc = pytest.importorskip("langchain_core")
    from langchain_core.messages import AIMessage, HumanMessage, ToolMessage, messages_to_dict
    from langchain_core.tools import tool
    from langchain_core.utils.function_calling import convert_to_openai_tool

    assert lc is not None

    @tool
    def get_weather(city: str) -> str:
        """Weather of a city."""
        return "sunny"

    messages = [
        HumanMessage("What is the weather in Paris?"),
        AIMessage("", tool_calls=[{"name": "get_weather", "args": {"city": "Paris"}, "id": "c1"}]),
        ToolMessage("service down", tool_call_id="c1", status="error"),
        AIMessage("", tool_calls=[{"name": "get_weather", "args": {"city": "Paris"}, "id": "c2"}]),
        ToolMessage("sunny", tool_call_id="c2"),
        AIMessage("It is sunny in Paris."),
    ]
    spec = convert_to_openai_tool(get_weather)
    for shape in (messages, [m.model_dump() for m in messages], messages_to_dict(messages)):
        samples = conversation_samples({"id": "lc", "messages": shape, "tools": [spec]})
        conv = samples[-1]
        assert [(c.name, dict(c.args)) for c in conv.tool_calls or ()] == [("get_weather", {"city": "Paris"})] * 2
        results = [t for t in conv.history or () if t.role == "tool"]
        assert [(t.content, t.is_error) for t in results] == [("service down", True), ("sunny", False)]
        [t] = tools_of(conv) or ()
        assert t.name == "get_weather" and t.description == "Weather of a city."
        assert t.parameters is not None and t.parameters["required"] == ["city"]


def test_deepeval_mcp_servers_and_mcp_tool_calls() -> None:
    row = {
        "name": "mcp-1",
        "mcp_servers": [{"server_name": "weather-server", "transport": "stdio", "available_tools": [
            {"name": "get_weather", "description": "Weather of a city.", "inputSchema": WEATHER_SCHEMA}]}],
        "turns": [
            {"role": "user", "content": "Weather in Paris?"},
            {"role": "assistant", "content": "Sunny.", "mcp_tools_called": [
                {"name": "get_weather", "args": {"city": "Paris"},
                 "result": {"content": [{"type": "text", "text": "sunny"}], "isError": False}}]},
        ],
    }
    conv = conversation_samples(row)[-1]
    assert tools_of(conv) == (ToolSpec("get_weather", "Weather of a city.", WEATHER_SCHEMA, "weather-server"),)
    assert [c.name for c in conv.tool_calls or ()] == ["get_weather"]
    assert [t.content for t in conv.history or () if t.role == "tool"] == ["sunny"]
    assert "mcp_servers" not in conv.metadata


def test_every_tool_shape_and_the_errors_that_name_the_tool() -> None:
    got = read_tools([
        {"type": "function", "name": "a", "parameters": WEATHER_SCHEMA},  # OpenAI Responses
        {"type": "web_search"},  # a built-in tool
        {"name": "c", "inputSchema": WEATHER_SCHEMA, "server": "s1"},  # MCP / ragsight
    ])
    assert got == (ToolSpec("a", "", WEATHER_SCHEMA), ToolSpec("web_search"), ToolSpec("c", "", WEATHER_SCHEMA, "s1"))
    assert read_tools({"tools": [{"name": "x"}]}) == (ToolSpec("x"),)  # a tools/list result
    assert read_tools('["search", {"name": "calc"}]') == (ToolSpec("search"), ToolSpec("calc"))  # a CSV cell
    bad = {**OPENAI_REQUEST, "tools": [{"type": "function", "function": {"description": "no name"}}]}
    ds = Dataset.from_records([bad])
    [problem] = ds.problems
    assert problem.field == "tools[0].function.name"
    assert "conversation 'weather-1'" in problem.message and "a tool has no name" in problem.message
    bad_schema = {**OPENAI_REQUEST, "tools": [{"name": "get_weather", "input_schema": "city: str"}]}
    [problem] = Dataset.from_records([bad_schema]).problems
    assert problem.field == "tools[0].input_schema" and "JSON Schema object" in problem.message


def test_tools_and_failed_results_survive_a_stored_run() -> None:
    for s in conversation_samples(ANTHROPIC_REQUEST):
        stored = json.loads(json.dumps(s.to_dict()))
        back, _ = sample_from_mapping(stored)
        assert back == s
        assert tools_of(back) == tools_of(s)


@pytest.mark.parametrize(("text", "failed"), [
    ("Error: city not found", True), ('{"error": "timeout"}', True), ('{"isError": true}', True),
    ("Traceback (most recent call last):", True), ("sunny, 21 C", False), ('{"error": null, "t": 21}', False),
    ("No errors were found in the log.", False),
])
def test_a_result_that_reads_as_a_failure(text: str, failed: bool) -> None:
    assert looks_failed(text) is failed
