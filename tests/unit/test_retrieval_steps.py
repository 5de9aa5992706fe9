"""retrieval_step_relevance: each retrieval call of an agent's conversation judged as a retrieval
(its query against its result, with context_relevance's sentence labels), the steps averaged;
which calls retrieve, the query read from the arguments, a call without a result not scored."""

from __future__ import annotations

import asyncio
from typing import Any

import pytest

from ragsight import Outcome, Score
from ragsight.analyses import AnalysisSettings, SampleAnalyses
from ragsight.conversation import ToolCall, Turn
from ragsight.judge import Judge
from ragsight.metrics import resolve_metrics
from ragsight.metrics.retrieval_steps import RetrievalStepRelevance, query_of
from ragsight.sample import Sample
from tests.scripted import RagScript

HISTORY = (
    Turn("user", "When does the ferry leave on Sunday?"),
    Turn("assistant", "", tool_calls=(ToolCall("search_docs", {"query": "Sunday ferry timetable", "k": 3}, "1"),)),
    Turn("tool", "The Sunday ferry leaves at 9:00. The café opens at 8:00.", tool_call_id="1"),
    Turn("assistant", "", tool_calls=(ToolCall("get_weather", {"city": "Oban"}, "2"),
                                      ToolCall("lookup", {"topic": "ferry fares"}, "3"))),
    Turn("tool", "Rain.", tool_call_id="2"),
    Turn("tool", "", tool_call_id="3"),
    Turn("assistant", "The Sunday ferry leaves at 9:00."),
)


def run(metric: RetrievalStepRelevance, history: tuple[Turn, ...] = HISTORY) -> tuple[Score, Any]:
    script = RagScript(sentence_relevance=lambda sent: "ferry" in sent)
    provider = script.judge()
    sample = Sample(id="f", conversation_id="f", history=history,
                    tool_calls=tuple(c for t in history for c in t.tool_calls))
    got = asyncio.run(metric.score(SampleAnalyses(sample, Judge(provider), None, AnalysisSettings())))
    return got, provider


def test_each_retrieval_step_is_judged_against_its_query() -> None:
    got, provider = run(RetrievalStepRelevance())
    assert got.outcome is Outcome.SCORED and got.value == pytest.approx(0.5)
    rows = got.evidence.details["steps"]
    # search_docs and lookup retrieve; get_weather does not; lookup returned nothing
    assert [(r["made"], r["query"], r["value"]) for r in rows] == [
        ('search_docs(query="Sunday ferry timetable", k=3)', "Sunday ferry timetable", 0.5),
        ('lookup(topic="ferry fares")', "ferry fares", None)]
    assert rows[1]["note"] == "no result"
    [asked] = provider.calls_for("label_sentences")
    assert "Sunday ferry timetable" in asked.variables["question"]
    assert got.reason.startswith("mean relevance of 1 retrieval step to their queries; lowest 0.50")


def test_the_tools_parameter_names_the_retrieval_tools() -> None:
    [m] = resolve_metrics(["retrieval_step_relevance(tools=get_weather)"])
    assert isinstance(m, RetrievalStepRelevance) and m.tools == ("get_weather",)
    got, _ = run(m)
    assert [r["made"] for r in got.evidence.details["steps"]] == ['get_weather(city="Oban")']
    assert got.value == 0.0  # the script finds a sentence relevant when it names the ferry; "Rain." does not
    none, _ = run(RetrievalStepRelevance(), (Turn("user", "Hi"), Turn("assistant", "Hello")))
    assert none.outcome is Outcome.UNDETERMINED and none.reason.startswith("no retrieval call")


def test_the_query_of_a_call() -> None:
    assert query_of(ToolCall("s", {"k": 3, "q": " a  b "})) == "a b"
    assert query_of(ToolCall("s", {"topic": "x", "lang": "en"})) == "x en"
    assert query_of(ToolCall("s", {"k": 3})) == ""
