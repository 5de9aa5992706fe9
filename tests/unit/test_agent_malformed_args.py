"""An agent's call whose arguments are broken JSON (a model's output cut short): the call is kept
with its text, tool_argument_validity counts it invalid ("arguments are not JSON: ..."), the call
comparisons find it equal to nothing, the rest of the conversation is scored, and the run counts
it among its row warnings. The same for LangChain's own invalid_tool_calls."""

from __future__ import annotations

import asyncio
import json
from pathlib import Path
from typing import Any

import pytest

from ragsight import Dataset, Outcome, Score
from ragsight.analyses import AnalysisSettings, SampleAnalyses
from ragsight.cli import main
from ragsight.conversation import ToolCall
from ragsight.metrics import Metric, resolve_metrics
from ragsight.metrics.trajectory import match_trajectory
from ragsight.sample import Sample, SampleWarning
from ragsight.store import Store

pytest.importorskip("jsonschema")

BROKEN = '{"city": "Par'
TOOLS = [{"type": "function", "function": {"name": "get_weather", "description": "The weather in a city",
                                           "parameters": {"type": "object", "properties": {"city": {"type": "string"}},
                                                          "required": ["city"]}}},
         {"type": "function", "function": {"name": "book", "description": "Book a table",
                                           "parameters": {"type": "object", "properties": {"city": {"type": "string"}},
                                                          "required": ["city"]}}}]


def chat(cid: str = "w1", arguments: str = BROKEN) -> dict[str, Any]:
    return {"id": cid, "tools": TOOLS, "messages": [
        {"role": "user", "content": "Weather in Paris, then book a table there."},
        {"role": "assistant", "content": None, "tool_calls": [
            {"id": "c1", "type": "function", "function": {"name": "get_weather", "arguments": arguments}},
            {"id": "c2", "type": "function", "function": {"name": "book", "arguments": '{"city": "Paris"}'}}]},
        {"role": "tool", "tool_call_id": "c1", "content": "Error: could not parse the arguments"},
        {"role": "tool", "tool_call_id": "c2", "content": "Booked for 8 pm."},
        {"role": "assistant", "content": "Your table in Paris is booked for 8 pm."}],
        "reference_tool_calls": [{"name": "get_weather", "args": {"city": "Paris"}},
                                 {"name": "book", "args": {"city": "Paris"}}]}


def load(rows: list[dict[str, Any]]) -> Dataset:
    """The data set, with the warning that counts each broken call (said once per kind)."""
    with pytest.warns(SampleWarning, match="arguments are not"):
        return Dataset.load(rows)


def conversation_sample(ds: Dataset, cid: str = "w1") -> Sample:
    return next(s for s in ds.samples if s.id == cid)


def score(metric: Metric, sample: Sample) -> Score:
    return asyncio.run(metric.score(SampleAnalyses(sample, None, None, AnalysisSettings())))


def test_the_call_is_kept_with_its_text_and_the_conversation_is_read() -> None:
    ds = load([chat(), chat("w2", '{"city": "Paris"}')])
    assert ds.errors == []
    s = conversation_sample(ds)
    broken, good = s.tool_calls or ()
    assert broken.name == "get_weather" and broken.args == {} and broken.raw_args == BROKEN
    assert broken.args_error is not None and broken.args_error.startswith("arguments are not JSON: Unterminated string")
    assert good == ToolCall("book", {"city": "Paris"}, "c2")
    # the run's row warnings count it, naming the conversation and the message
    (w,) = [p for p in ds.problems if p.field == "tool_calls.arguments"]
    assert w.row == 1 and w.message.startswith("warning: conversation 'w1', message 1, call 0: the 'get_weather' call's "
                                               "arguments are not JSON")
    # JSON that is no object is no arguments either
    (odd, _) = conversation_sample(load([chat("w3", "[1, 2]")]), "w3").tool_calls or ()
    assert odd.args_error == "arguments are not a JSON object: list"


def test_validity_counts_it_invalid_and_the_comparisons_find_it_equal_to_nothing() -> None:
    s = conversation_sample(load([chat()]))
    validity, = resolve_metrics("tool_argument_validity")
    v = score(validity, s)
    assert v.outcome is Outcome.SCORED and v.value == 0.5
    step = v.evidence.details["steps"][0]
    assert step["valid"] is False and step["errors"][0]["message"].startswith("arguments are not JSON: ")
    assert step["made"] == 'get_weather(<not JSON: {"city": "Par>)'
    assert "arguments are not JSON" in v.reason
    for mode in ("strict", "unordered", "subset", "superset"):
        for args in ("exact", "ignore", "keys:city", "subset", "superset"):
            ok, trail = match_trajectory(s.tool_calls or (), s.reference_tool_calls or (), mode, args)
            assert not ok, (mode, args)
            assert trail["steps"][0]["reference"] is None and trail["steps"][1]["reference"] == 1
    match, = resolve_metrics("trajectory_match(mode=unordered)")
    m = score(match, s)
    assert m.value == 0.0 and 'get_weather(<not JSON: {"city": "Par>) matches no expected call' in m.reason
    accuracy, f1 = resolve_metrics("conversation_tool_call_accuracy,conversation_tool_call_f1")
    assert score(accuracy, s).value == 0.5  # the book call earns its credit, the broken one none
    assert score(f1, s).value == 0.5
    # the same conversation with arguments that parse: every comparison passes
    fine = conversation_sample(Dataset.load([chat("ok", '{"city": "Paris"}')]), "ok")
    assert score(validity, fine).value == 1.0 and score(match, fine).value == 1.0


def test_the_run_scores_the_rest_counts_the_warning_and_the_store_keeps_the_text(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    data, db = tmp_path / "chats.jsonl", tmp_path / "runs.db"
    data.write_text("\n".join(json.dumps(r) for r in (chat(), chat("w2", '{"city": "Paris"}'))) + "\n")
    assert main(["evaluate", str(data), "--metrics", "trajectory_match,tool_argument_validity", "--store", str(db),
                 "--quiet"]) == 0
    with Store(db) as st:
        run = st.runs()[0].id
        problems = st.problems(run)
        assert [(p.row, p.field) for p in problems] == [(1, "tool_calls.arguments")]
        scores = st.scores(run)
        assert scores["w1"]["tool_argument_validity"].value == 0.5
        assert scores["w1"]["trajectory_match"].value == 0.0
        assert scores["w2"]["trajectory_match"].value == 1.0
        kept = st.sample(run, "w1").tool_calls or ()
        assert kept[0].raw_args == BROKEN and kept[0].malformed  # read back as it was
    err = capsys.readouterr().err
    assert "arguments are not JSON" in err


def test_langchain_writes_unparsable_call_chunks_as_invalid_tool_calls_and_they_are_read() -> None:
    from langchain_core.messages import AIMessageChunk, HumanMessage, ToolMessage, messages_to_dict
    from langchain_core.messages.tool import tool_call_chunk

    broken = '{"city": Paris}'  # a cut string LangChain's partial-JSON parser completes; this it cannot
    streamed = AIMessageChunk(content="", tool_call_chunks=[
        tool_call_chunk(name="get_weather", args=broken, id="c1", index=0),
        tool_call_chunk(name="book", args='{"city": "Paris"}', id="c2", index=1)])
    assert streamed.invalid_tool_calls and streamed.tool_calls  # LangChain's own split
    msgs = [HumanMessage("Weather in Paris, then book a table there."), streamed,
            ToolMessage("Booked.", tool_call_id="c2"), AIMessageChunk(content="Booked for 8 pm.")]
    for shape in ([m.model_dump() for m in msgs], messages_to_dict(msgs)):
        ds = load([{"id": "lc", "messages": shape, "tools": TOOLS}])
        assert ds.errors == []
        calls = conversation_sample(ds, "lc").tool_calls or ()
        assert [(c.name, c.malformed) for c in calls] == [("book", False), ("get_weather", True)]
        assert calls[1].raw_args == broken and calls[1].id == "c1"
        assert calls[1].args_error is not None and calls[1].args_error.startswith("arguments are not JSON")


def test_the_viewer_shows_the_calls_text_and_why_it_is_invalid() -> None:
    from ragsight.view._trajectory import trajectory_field

    s = conversation_sample(load([chat()]))
    validity, match = resolve_metrics("tool_argument_validity,trajectory_match")
    html = trajectory_field(s, {"tool_argument_validity": score(validity, s), "trajectory_match": score(match, s)})
    first = html.split('id="call-0"', 1)[1].split("</tr>", 1)[0]
    assert "get_weather(&lt;not JSON: {&quot;city&quot;: &quot;Par&gt;)" in first
    assert "invalid: $: arguments are not JSON: Unterminated string" in first and "no reference call" in first


def test_a_turn_row_reads_arguments_given_as_json_text_the_same_way() -> None:
    def turn(cid: str, calls: list[dict[str, Any]], reference: list[dict[str, Any]]) -> dict[str, Any]:
        return {"id": f"{cid}:0", "conversation_id": cid, "turn": 0, "question": "Weather in Paris?",
                "response": "Sunny.", "history": [{"role": "user", "content": "Weather in Paris?"}],
                "tool_calls": calls, "reference_tool_calls": reference}

    ref = [{"name": "get_weather", "args": {"city": "Paris"}}]
    ds = load([turn("a", [{"name": "get_weather", "arguments": BROKEN}], ref),
               turn("b", [{"name": "get_weather", "arguments": '{"city": "Paris"}'}], ref),
               turn("c", [{"name": "get_weather", "args": {"city": "Paris"}}],
                    [{"name": "get_weather", "arguments": BROKEN}])])
    by_id = {s.id: s for s in ds.samples}
    (broken,) = by_id["a:0"].tool_calls or ()
    assert broken.malformed and broken.raw_args == BROKEN
    assert by_id["b:0"].tool_calls == (ToolCall("get_weather", {"city": "Paris"}),)
    (error,) = ds.errors  # a reference call's broken arguments: the data to fix
    assert error.row == 3 and "the reference call of get_weather: arguments are not JSON" in error.message
    (warning,) = [p for p in ds.problems if p.field == "tool_calls.arguments"]
    assert warning.row == 1 and "sample 'a:0', call 0" in warning.message
    accuracy, = resolve_metrics("tool_call_accuracy")
    assert score(accuracy, by_id["a:0"]).value == 0.0 and score(accuracy, by_id["b:0"]).value == 1.0
