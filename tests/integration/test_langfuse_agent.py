"""Langfuse agent traces read as conversations, so the agent metrics run on them. The traces are
written by Langfuse's own SDK at test time (its LangChain CallbackHandler around a LangChain agent
loop, and its observation API), into an in-memory OpenTelemetry exporter, or through the real OTLP
exporter to ``ragsight monitor``; the export shape is the SDK's API model (``ObservationV2``)."""

from __future__ import annotations

import asyncio
import datetime as dt
import itertools
import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

pytest.importorskip("langfuse")
pytest.importorskip("jsonschema")

from langchain_core.language_models.fake_chat_models import FakeMessagesListChatModel
from langchain_core.messages import AIMessage, HumanMessage
from langchain_core.messages.tool import invalid_tool_call
from langchain_core.runnables import RunnableLambda
from langchain_core.tools import tool
from langchain_core.utils.function_calling import convert_to_openai_tool
from opentelemetry.sdk.trace import ReadableSpan, TracerProvider
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter

from ragsight import Dataset, Score
from ragsight.analyses import AnalysisSettings, SampleAnalyses
from ragsight.integrations import import_traces, traces_from_records
from ragsight.metrics import resolve_metrics
from ragsight.sample import Sample, SampleWarning

REFERENCE = [{"name": "get_weather", "args": {"city": "Paris"}}]


@tool
def get_weather(city: str) -> str:
    """The weather in a city."""
    if city == "Atlantis":
        raise ValueError("no such city")
    return f"{city}: sunny, 21 C."


CLIENTS = itertools.count()


def langfuse_client(exporter: Any, key: str | None = None) -> Any:
    """A Langfuse client of its own (the SDK keeps one per public key, and a test shuts its down)
    whose spans go to ``exporter``; nothing is sent to a Langfuse server."""
    from langfuse import Langfuse

    return Langfuse(public_key=key or f"pk-lf-test-{next(CLIENTS)}", secret_key="sk-lf-test",
                    base_url="http://127.0.0.1:9", tracer_provider=TracerProvider(), span_exporter=exporter)


def callback_agent(responses: list[AIMessage]) -> list[ReadableSpan]:
    """A LangChain agent loop (model, tools, model) traced by Langfuse's CallbackHandler."""
    from langfuse.langchain import CallbackHandler

    exporter = InMemorySpanExporter()
    key = f"pk-lf-test-{next(CLIENTS)}"
    lf = langfuse_client(exporter, key)
    llm = FakeMessagesListChatModel(responses=responses)
    tools = [convert_to_openai_tool(get_weather)]

    def agent(question: str, config: Any) -> str:
        msgs: list[Any] = [HumanMessage(question)]
        ai = llm.invoke(msgs, config, tools=tools)
        msgs.append(ai)
        for call in ai.tool_calls:
            msgs.append(get_weather.invoke(call, config))
        return str(llm.invoke(msgs, config, tools=tools).content)

    handler = CallbackHandler(public_key=key)
    RunnableLambda(agent).invoke("What is the weather in Paris?", {"callbacks": [handler], "run_name": "weather-agent"})
    lf.flush()
    lf.shutdown()
    return list(exporter.get_finished_spans())


def conversation(rows: list[dict[str, Any]]) -> Sample:
    ds = Dataset.load([{**rows[0], "reference_tool_calls": REFERENCE}])
    assert ds.errors == []
    return next(s for s in ds.samples if s.turn is None)


def score(metric: str, sample: Sample) -> Score:
    (m,) = resolve_metrics(metric)
    return asyncio.run(m.score(SampleAnalyses(sample, None, None, AnalysisSettings())))


def test_the_callback_handlers_spans_are_an_agent_conversation_the_metrics_score(tmp_path: Path) -> None:
    spans = callback_agent([
        AIMessage("", tool_calls=[{"name": "get_weather", "args": {"city": "Paris"}, "id": "call_1"}]),
        AIMessage("It is sunny in Paris, 21 C.")])
    assert {s.attributes.get("langfuse.observation.type") for s in spans} >= {"generation", "tool"}
    path = tmp_path / "langfuse-spans.jsonl"  # one span per line, as the SDK's span.to_json() writes it
    path.write_text("".join(json.dumps(json.loads(s.to_json())) + "\n" for s in spans))
    got = import_traces(path)
    assert got.format == "spans" and got.traces == 1 and len(got.rows) == 1, got.problems
    row = got.rows[0]
    assert [m["role"] for m in row["messages"]] == ["user", "assistant", "tool", "assistant"]
    assert row["messages"][0]["content"] == "What is the weather in Paris?"
    assert row["messages"][2] == {"role": "tool", "content": "Paris: sunny, 21 C.", "name": "get_weather",
                                  "tool_call_id": "call_1"}
    assert row["messages"][-1]["content"] == "It is sunny in Paris, 21 C."
    assert row["tools"][0]["function"]["parameters"]["required"] == ["city"]  # the schema the model had
    assert row["metadata"]["source"] == "langfuse" and row["metadata"]["agent"] is True
    s = conversation(got.rows)
    assert score("trajectory_match", s).value == 1.0
    validity = score("tool_argument_validity", s)
    assert validity.value == 1.0 and validity.evidence.details["checked"] == 1


def test_a_call_whose_arguments_are_not_json_is_kept_and_counted_invalid() -> None:
    spans = callback_agent([
        AIMessage("", tool_calls=[{"name": "get_weather", "args": {"city": "Paris"}, "id": "call_1"}],
                  invalid_tool_calls=[invalid_tool_call(name="get_weather", args='{"city": Lyon}', id="call_2",
                                                        error="Expecting value")]),
        AIMessage("Sunny in Paris; Lyon I could not look up.")])
    got = traces_from_records([json.loads(s.to_json()) for s in spans], "spans")
    assert len(got.rows) == 1, got.problems
    with pytest.warns(SampleWarning, match="arguments are not JSON"):
        s = conversation(got.rows)
    calls = s.tool_calls or ()
    assert [(c.name, c.malformed) for c in calls] == [("get_weather", False), ("get_weather", True)]
    assert calls[1].raw_args == '{"city": Lyon}'
    validity = score("tool_argument_validity", s)
    assert validity.value == 0.5
    assert validity.evidence.details["steps"][1]["errors"][0]["message"] == "arguments are not JSON: Expecting value"
    assert score("trajectory_match", s).value == 0.0  # strict: a second call the reference lacks
    assert score("trajectory_match(mode=superset)", s).value == 1.0


def sdk_agent(exporter: Any) -> str:
    """An agent traced with Langfuse's observation API: an AGENT around a generation whose
    output is OpenAI's message with tool calls, a TOOL that fails (level ERROR), a retry, and the
    answer. Returns the trace id."""
    lf = langfuse_client(exporter)
    with lf.start_as_current_observation(as_type="agent", name="trip-agent",
                                         input="What is the weather in Atlantis, or else Paris?") as root:
        with lf.start_as_current_observation(as_type="generation", name="plan", model="gpt-4o-mini",
                                             input={"messages": [{"role": "user", "content": "weather"}],
                                                    "tools": [convert_to_openai_tool(get_weather)]}) as gen:
            gen.update(output={"role": "assistant", "content": None, "tool_calls": [
                {"id": "c1", "type": "function", "function": {"name": "get_weather", "arguments": '{"city": "Atlantis"}'}},
                {"id": "c2", "type": "function", "function": {"name": "get_weather", "arguments": '{"city": "Paris"}'}}]})
        with lf.start_as_current_observation(as_type="tool", name="get_weather", input={"city": "Atlantis"}) as t1:
            t1.update(output="Error: no such city", level="ERROR", status_message="no such city")
        with lf.start_as_current_observation(as_type="tool", name="get_weather", input={"city": "Paris"}) as t2:
            t2.update(output="Paris: sunny, 21 C.")
        root.update(output="Atlantis is not a city I know; Paris is sunny, 21 C.")
        trace_id = root.trace_id
    lf.flush()
    lf.shutdown()
    return str(trace_id)


def _observation(span: ReadableSpan) -> dict[str, Any]:
    """A span as Langfuse's API returns its observation (the SDK's own ObservationV2 model)."""
    from langfuse.api import ObservationV2

    a = dict(span.attributes or {})

    def value(key: str) -> Any:
        v = a.get(key)
        if isinstance(v, str) and v[:1] in "{[":
            return json.loads(v)
        return v

    ctx = span.get_span_context()
    assert span.start_time is not None and span.end_time is not None and ctx is not None
    return ObservationV2(
        id=f"{ctx.span_id:016x}", trace_id=f"{ctx.trace_id:032x}",
        parent_observation_id=f"{span.parent.span_id:016x}" if span.parent else None,
        type=str(a["langfuse.observation.type"]).upper(), name=span.name,
        start_time=dt.datetime.fromtimestamp(span.start_time / 1e9, dt.timezone.utc),
        end_time=dt.datetime.fromtimestamp(span.end_time / 1e9, dt.timezone.utc), project_id="p",
        input=value("langfuse.observation.input"), output=value("langfuse.observation.output"),
        level=a.get("langfuse.observation.level") or "DEFAULT",
        status_message=a.get("langfuse.observation.status_message"),
    ).model_dump(by_alias=True, mode="json", exclude_none=True)


@pytest.mark.parametrize("shape", ["otel", "observations", "trace"])
def test_the_sdks_agent_tool_and_generation_observations_become_the_trajectory(shape: str) -> None:
    exporter = InMemorySpanExporter()
    trace_id = sdk_agent(exporter)
    spans = list(exporter.get_finished_spans())
    if shape == "otel":  # the spans as the SDK exports them
        got = traces_from_records([json.loads(s.to_json()) for s in spans], "spans")
    elif shape == "observations":  # the observations API: observations alone, grouped by traceId
        got = traces_from_records([{"data": [_observation(s) for s in spans]}], "langfuse")
    else:  # a trace with its observations (GET /api/public/traces/{id}), its input and output its own
        got = traces_from_records([{"id": trace_id, "name": "trip-agent", "sessionId": "s-1",
                                    "input": "What is the weather in Atlantis, or else Paris?",
                                    "output": "Atlantis is not a city I know; Paris is sunny, 21 C.",
                                    "observations": [_observation(s) for s in spans]}], "langfuse")
        assert got.sessions[trace_id][0] == "s-1"
    assert len(got.rows) == 1, got.problems
    row = got.rows[0]
    assert row["id"] == trace_id
    roles = [(m["role"], m.get("is_error", False)) for m in row["messages"]]
    assert roles == [("user", False), ("assistant", False), ("tool", True), ("tool", False), ("assistant", False)]
    assert [m.get("tool_call_id") for m in row["messages"][2:4]] == ["c1", "c2"]
    assert row["messages"][-1]["content"] == "Atlantis is not a city I know; Paris is sunny, 21 C."
    s = conversation(got.rows)
    assert [c.args for c in s.tool_calls or ()] == [{"city": "Atlantis"}, {"city": "Paris"}]
    assert score("trajectory_match(mode=superset)", s).value == 1.0
    assert score("tool_argument_validity", s).value == 1.0
    assert [t.is_error for t in s.history or () if t.role == "tool"] == [True, False]


def test_the_monitor_reads_langfuse_agent_spans_the_sdk_sends(tmp_path: Path) -> None:
    pytest.importorskip("opentelemetry.exporter.otlp.proto.http")
    from opentelemetry.exporter.otlp.proto.http.trace_exporter import OTLPSpanExporter

    from ragsight.judge import Judge, JudgeSpec
    from ragsight.monitor import EvalSettings, Monitor, MonitorConfig
    from tests.fakes.scripted_world import provider
    from tests.integration.monitor_world import status_json, wait_for

    store = str(tmp_path / "prod.db")
    m = Monitor(MonitorConfig(store=store, port=0, settle_s=0.3, tick_s=0.05, evaluation=EvalSettings(
        metrics=["tool_argument_validity", "trajectory_match(mode=superset)"], judge=JudgeSpec(Judge(provider())),
        poll_s=0.05, retry_s=0.2)))
    m.start()
    try:
        exporter = OTLPSpanExporter(endpoint=f"http://127.0.0.1:{m.port}/v1/traces", timeout=10)
        trace_id = sdk_agent(exporter)
        done: Callable[[], bool] = lambda: status_json(store)["evaluated"] == 1  # noqa: E731
        wait_for(done, 60)
    finally:
        m.stop()
    import sqlite3

    with sqlite3.connect(store) as conn:
        got = dict(conn.execute("SELECT metric, outcome FROM monitor_scores WHERE trace_id=?", (trace_id,)).fetchall())
        value = conn.execute("SELECT value FROM monitor_scores WHERE metric='tool_argument_validity'").fetchone()[0]
    # no reference calls in production: trajectory_match is skipped, and counted so
    assert got == {"tool_argument_validity": "scored", "trajectory_match(mode=superset)": "skipped"}
    assert value == 1.0


def test_a_langfuse_rag_trace_in_otel_spans_is_a_rag_sample() -> None:
    exporter = InMemorySpanExporter()
    lf = langfuse_client(exporter)
    with lf.start_as_current_observation(as_type="chain", name="rag", input={"question": "How long is the refund window?"}) as root:
        with lf.start_as_current_observation(as_type="retriever", name="retrieve", input="refund window") as r:
            r.update(output=[{"page_content": "Refunds are accepted within 30 days.", "metadata": {"id": "p-1"}}])
        with lf.start_as_current_observation(as_type="generation", name="answer", model="m") as g:
            g.update(output="Within 30 days.")
        root.update(output="Within 30 days.")
    lf.flush()
    lf.shutdown()
    got = traces_from_records([json.loads(s.to_json()) for s in exporter.get_finished_spans()], "spans")
    (row,) = got.rows
    assert (row["question"], row["contexts"], row["response"]) == (
        "How long is the refund window?", ["Refunds are accepted within 30 days."], "Within 30 days.")
    assert row["retrieved_ids"] == ["p-1"] and row["metadata"]["source"] == "langfuse"
