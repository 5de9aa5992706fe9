"""An agent's trace as OpenInference's LangChain instrumentation writes it (a fake chat model that
calls tools, real LangChain tools, the instrumentor's spans exported by the OpenTelemetry SDK),
read by import_traces into a conversation of its calls and results, with the tools it had, then
scored by trajectory_match and tool_argument_validity. Offline."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from ragsight import Dataset
from ragsight.dataset import tools_of
from ragsight.integrations import import_traces

pytest.importorskip("openinference.instrumentation.langchain", reason="OpenInference's LangChain instrumentation")
pytest.importorskip("opentelemetry.sdk", reason="the OpenTelemetry SDK")
pytest.importorskip("langchain_core", reason="langchain-core")


def agent_spans() -> list[str]:
    from langchain_core.language_models.fake_chat_models import GenericFakeChatModel
    from langchain_core.messages import AIMessage, HumanMessage
    from langchain_core.runnables import RunnableLambda
    from langchain_core.tools import ToolException, tool
    from openinference.instrumentation.langchain import LangChainInstrumentor
    from opentelemetry.sdk.trace import TracerProvider
    from opentelemetry.sdk.trace.export import SimpleSpanProcessor
    from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter

    @tool
    def get_order(order_id: str) -> str:
        """Look up an order by its id."""
        if not order_id.isdigit():
            raise ToolException(f"unknown order {order_id}")
        return f"order {order_id}: shipped"

    get_order.handle_tool_error = True
    model = GenericFakeChatModel(messages=iter([
        AIMessage("", tool_calls=[{"name": "get_order", "args": {"order_id": "A42"}, "id": "c1"}]),
        AIMessage("", tool_calls=[{"name": "get_order", "args": {"order_id": "42"}, "id": "c2"}]),
        AIMessage("Your order 42 has shipped."),
    ]))

    def agent(question: str) -> Any:
        messages: list[Any] = [HumanMessage(question)]
        while True:
            reply = model.invoke(messages)
            messages.append(reply)
            if not reply.tool_calls:
                return reply.content
            messages.extend(get_order.invoke(c) for c in reply.tool_calls)

    exporter = InMemorySpanExporter()
    provider = TracerProvider()
    provider.add_span_processor(SimpleSpanProcessor(exporter))
    instrumentor = LangChainInstrumentor()
    instrumentor.instrument(tracer_provider=provider)
    try:
        RunnableLambda(agent).invoke("Where is my order 42?")
    finally:
        instrumentor.uninstrument()
    return [span.to_json(indent=None) for span in exporter.get_finished_spans()]


def test_an_agent_trace_becomes_a_conversation_of_its_calls(tmp_path: Path) -> None:
    path = tmp_path / "spans.jsonl"
    path.write_text("".join(line + "\n" for line in agent_spans()))
    got = import_traces(str(path))
    [row] = got.rows
    assert [m["role"] for m in row["messages"]] == ["user", "assistant", "tool", "assistant", "tool", "assistant"]
    failed, ok = row["messages"][2], row["messages"][4]
    assert (failed["tool_call_id"], failed.get("is_error"), failed["content"]) == ("c1", True, "unknown order A42")
    assert (ok["tool_call_id"], ok.get("is_error"), ok["content"]) == ("c2", None, "order 42: shipped")
    assert row["messages"][-1]["content"] == "Your order 42 has shipped."

    out = tmp_path / "samples.jsonl"
    out.write_text(json.dumps(row) + "\n")
    conv = Dataset.load(out).samples[-1]
    assert [(c.name, dict(c.args)) for c in conv.tool_calls or ()] == [("get_order", {"order_id": "A42"}),
                                                                     ("get_order", {"order_id": "42"})]
    [tool] = tools_of(conv) or ()
    assert (tool.name, tool.description) == ("get_order", "Look up an order by its id.")
    assert [t.is_error for t in conv.history or () if t.role == "tool"] == [True, False]
