"""trajectory_match in agentevals' four modes (with repeated calls and each way of comparing
arguments) and tool_argument_validity against the tools' JSON Schemas: exact values and trails."""

from __future__ import annotations

import asyncio
from typing import Any

import pytest

from ragsight import Dataset, Outcome, Score
from ragsight.analyses import AnalysisSettings, SampleAnalyses
from ragsight.conversation import ToolCall, Turn
from ragsight.errors import ConfigError
from ragsight.metrics import Metric, resolve_metrics
from ragsight.metrics.trajectory import ToolArgumentValidity, TrajectoryMatch, match_trajectory
from ragsight.sample import Sample

W_PARIS = ToolCall("get_weather", {"city": "Paris", "unit": "C"})
W_LYON = ToolCall("get_weather", {"city": "Lyon", "unit": "C"})
W_PARIS_F = ToolCall("get_weather", {"city": "Paris", "unit": "F"})
BOOK = ToolCall("book", {"city": "Paris", "date": "2025-05-02", "guests": 2})


def conv(calls: tuple[ToolCall, ...], reference: tuple[ToolCall, ...] | None,
         tools: list[dict[str, Any]] | None = None) -> Sample:
    history = (Turn("user", "Weather in Paris and book a table"), Turn("assistant", "", tool_calls=calls),
               Turn("assistant", "Done."))
    meta = {"tools": tools} if tools is not None else {}
    return Sample(id="c", conversation_id="c", history=history, tool_calls=calls, reference_tool_calls=reference,
                  metadata=meta)


def run(metric: Metric, sample: Sample) -> Score:
    return asyncio.run(metric.score(SampleAnalyses(sample, None, None, AnalysisSettings())))


def modes(calls: tuple[ToolCall, ...], reference: tuple[ToolCall, ...], args: str = "exact") -> dict[str, bool]:
    return {m: match_trajectory(calls, reference, m, args)[0] for m in ("strict", "unordered", "subset", "superset")}


def test_the_four_modes_on_the_same_calls() -> None:
    assert modes((W_PARIS, BOOK), (W_PARIS, BOOK)) == dict(strict=True, unordered=True, subset=True, superset=True)
    # same calls, other order
    assert modes((BOOK, W_PARIS), (W_PARIS, BOOK)) == dict(strict=False, unordered=True, subset=True, superset=True)
    # one call fewer than the reference
    assert modes((W_PARIS,), (W_PARIS, BOOK)) == dict(strict=False, unordered=False, subset=True, superset=False)
    # one call more than the reference
    assert modes((W_PARIS, W_LYON, BOOK), (W_PARIS, BOOK)) == dict(
        strict=False, unordered=False, subset=False, superset=True)
    # a wrong argument: the call matches nothing
    assert modes((W_LYON, BOOK), (W_PARIS, BOOK)) == dict(strict=False, unordered=False, subset=False, superset=False)


def test_a_repeated_call_needs_a_repeated_reference_call() -> None:
    # two identical calls against one: not unordered, not a subset (the second has no reference call
    # of its own), a superset (the reference call is made)
    assert modes((W_PARIS, W_PARIS), (W_PARIS,)) == dict(strict=False, unordered=False, subset=False, superset=True)
    # one call against two identical reference calls: a subset only
    assert modes((W_PARIS,), (W_PARIS, W_PARIS)) == dict(strict=False, unordered=False, subset=True, superset=False)
    assert modes((W_PARIS, W_PARIS), (W_PARIS, W_PARIS))["unordered"] is True


def test_how_arguments_are_compared() -> None:
    made, want = (W_PARIS_F, BOOK), (W_PARIS, BOOK)
    assert modes(made, want)["unordered"] is False  # unit F against C
    assert modes(made, want, "ignore")["strict"] is True  # names only
    assert modes(made, want, "keys:city,date")["strict"] is True  # the unit is not compared
    assert modes(made, want, "keys:unit")["strict"] is False
    nested = (ToolCall("ship", {"to": {"city": "Paris", "zip": "75001"}}),)
    other = (ToolCall("ship", {"to": {"city": "Paris", "zip": "75002"}}),)
    assert modes(nested, other, "keys:to.city")["strict"] is True and modes(nested, other, "keys:to.zip")["strict"] is False
    # subset / superset of the arguments
    fewer = (ToolCall("book", {"city": "Paris", "date": "2025-05-02"}),)
    assert modes(fewer, (BOOK,), "subset")["strict"] is True  # every argument given is in the reference
    assert modes(fewer, (BOOK,), "superset")["strict"] is False  # guests missing
    assert modes((BOOK,), fewer, "superset")["strict"] is True
    # normalised values: 2 and 2.0, spaces; not "paris"
    assert modes((ToolCall("book", {"city": " Paris ", "date": "2025-05-02", "guests": 2.0}),), (BOOK,))["strict"]
    assert not modes((ToolCall("book", {"city": "paris", "date": "2025-05-02", "guests": 2}),), (BOOK,))["strict"]


def test_the_largest_matching_is_found_whatever_the_order() -> None:
    # with args=subset, the first call fits both reference calls, the second only the first: a greedy
    # first-fit pairing (agentevals') would give the first reference to the first call and miss
    any_date = ToolCall("book", {"city": "Paris"})
    exact = ToolCall("book", {"city": "Paris", "date": "2025-05-02"})
    ok, trail = match_trajectory((any_date, exact), (exact, ToolCall("book", {"city": "Paris", "date": "x"})),
                                 "unordered", "subset")
    assert ok and trail["matched"] == 2


def test_trajectory_match_scores_and_says_why() -> None:
    got = run(TrajectoryMatch(), conv((W_PARIS, BOOK), (W_PARIS, BOOK)))
    assert got.outcome is Outcome.SCORED and got.value == 1.0
    assert got.reason == "the 2 calls are the 2 expected, in the same order"
    wrong = run(TrajectoryMatch(), conv((W_LYON, BOOK), (W_PARIS, BOOK)))
    assert wrong.value == 0.0
    assert wrong.reason == ('call 1, get_weather(city="Lyon", unit="C"), is not the expected '
                            'get_weather(city="Paris", unit="C") (2 made, 2 expected)')
    steps = wrong.evidence.details["steps"]
    assert [s["reference"] for s in steps] == [None, 1]
    missing = run(TrajectoryMatch(mode="superset"), conv((W_PARIS,), (W_PARIS, BOOK)))
    assert missing.value == 0.0 and missing.reason.startswith('expected call book(city="Paris", date="2025-05-02", '
                                                               'guests=2) was not made')
    vacuous = run(TrajectoryMatch(mode="subset"), conv((), (W_PARIS,)))
    assert vacuous.value == 1.0 and "vacuously" in vacuous.reason
    assert run(TrajectoryMatch(), conv((), ())).reason == "no call was expected and none was made"
    served = run(TrajectoryMatch(), conv((W_PARIS,), (W_PARIS,), [{"name": "get_weather", "server": "wx-mcp"}]))
    assert served.evidence.details["steps"][0]["server"] == "wx-mcp"
    skipped = run(TrajectoryMatch(), conv((W_PARIS,), None))
    assert skipped.outcome is Outcome.SKIPPED and skipped.reason == "sample has no reference_tool_calls"
    turn = Sample(id="c:0", question="q", response="r", conversation_id="c", turn=0, history=(),
                  tool_calls=(W_PARIS,), reference_tool_calls=(W_PARIS,))
    assert run(TrajectoryMatch(), turn).outcome is Outcome.SKIPPED


def test_parameters_as_the_command_line_writes_them() -> None:
    [m] = resolve_metrics(["trajectory_match(mode=unordered, args=keys:city,date)"])
    assert isinstance(m, TrajectoryMatch) and (m.mode, m.args) == ("unordered", "keys:city,date")
    assert m.key == "trajectory_match(mode=unordered, args=keys:city,date)"
    [m2] = resolve_metrics(["trajectory_match(args=keys:city/date)"])
    assert run(m2, conv((W_PARIS_F, BOOK), (W_PARIS, BOOK))).value == 1.0
    with pytest.raises(ConfigError, match="mode must be one of strict, unordered, subset, superset"):
        resolve_metrics(["trajectory_match(mode=any)"])
    with pytest.raises(ConfigError, match="args must be exact, ignore, subset, superset or keys"):
        resolve_metrics(["trajectory_match(args=names)"])


SCHEMA = {"type": "object", "properties": {"city": {"type": "string"}, "unit": {"enum": ["C", "F"]}},
          "required": ["city"], "additionalProperties": False}
TOOLS = [{"name": "get_weather", "parameters": SCHEMA, "server": "weather-mcp"},
         {"name": "book", "description": "no schema given"}]


def test_tool_argument_validity_names_the_failing_paths() -> None:
    bad = ToolCall("get_weather", {"city": 7, "unit": "K", "extra": 1})
    got = run(ToolArgumentValidity(), conv((W_PARIS, bad, BOOK, ToolCall("fly", {})), None, TOOLS))
    assert got.outcome is Outcome.SCORED and got.value == pytest.approx(1 / 3)
    steps = got.evidence.details["steps"]
    assert [s["valid"] for s in steps] == [True, False, None, False]
    assert steps[0]["server"] == "weather-mcp"
    assert [e["path"] for e in steps[1]["errors"]] == ["$", "$.city", "$.unit"]
    assert "Additional properties are not allowed ('extra' was unexpected)" in steps[1]["errors"][0]["message"]
    assert steps[3]["errors"][0]["message"] == "no tool named 'fly' among the 2 available"
    assert got.reason.startswith("1 of 3 calls have valid arguments (1 unchecked: no schema); "
                                 'get_weather(city=7, unit="K", extra=1): $: Additional properties')
    assert got.reason.endswith("(and 2 more errors)")


def test_tool_argument_validity_without_schemas_or_calls() -> None:
    no_tools = run(ToolArgumentValidity(), conv((W_PARIS,), None))
    assert no_tools.outcome is Outcome.SKIPPED and no_tools.reason.startswith("sample has no tools")
    no_schema = run(ToolArgumentValidity(), conv((BOOK,), None, TOOLS))
    assert no_schema.outcome is Outcome.UNDETERMINED
    assert no_schema.reason == "no call could be checked: the tool 'book' has no schema"
    no_calls = run(ToolArgumentValidity(), conv((), None, TOOLS))
    assert no_calls.outcome is Outcome.UNDETERMINED and no_calls.reason == "no call was made: no arguments to check"
    broken = run(ToolArgumentValidity(), conv((W_PARIS,), None, [{"name": "get_weather",
                                                                  "parameters": {"type": "strng"}}]))
    assert broken.outcome is Outcome.UNDETERMINED and "not valid JSON Schema" in broken.reason


def test_openai_chats_with_tools_and_reference_calls_end_to_end() -> None:
    row = {
        "id": "w", "tools": [{"type": "function", "function": {"name": "get_weather", "parameters": SCHEMA}}],
        "messages": [
            {"role": "user", "content": "Weather in Paris?"},
            {"role": "assistant", "content": None, "tool_calls": [
                {"id": "1", "type": "function", "function": {"name": "get_weather",
                                                             "arguments": "{\"city\": \"Paris\", \"unit\": \"X\"}"}}]},
            {"role": "tool", "tool_call_id": "1", "content": "Error: unit must be C or F"},
            {"role": "assistant", "content": None, "tool_calls": [
                {"id": "2", "type": "function", "function": {"name": "get_weather",
                                                             "arguments": "{\"city\": \"Paris\", \"unit\": \"C\"}"}}]},
            {"role": "tool", "tool_call_id": "2", "content": "sunny"},
            {"role": "assistant", "content": "Sunny."},
        ],
        "reference_tool_calls": [{"name": "get_weather", "args": {"city": "Paris", "unit": "C"}}],
    }
    [_, conversation] = Dataset.from_records([row]).samples
    validity = run(ToolArgumentValidity(), conversation)
    assert validity.value == 0.5
    match = {m: run(TrajectoryMatch(mode=m), conversation).value for m in ("strict", "unordered", "subset", "superset")}
    assert match == {"strict": 0.0, "unordered": 0.0, "subset": 0.0, "superset": 1.0}


def test_without_jsonschema_the_metric_fails_naming_the_extra(monkeypatch: pytest.MonkeyPatch) -> None:
    import sys

    monkeypatch.setitem(sys.modules, "jsonschema", None)
    got = run(ToolArgumentValidity(), conv((W_PARIS,), None, TOOLS))
    assert got.outcome is Outcome.FAILED
    assert "pip install 'ragsight[agents]'" in got.reason and "jsonschema" in got.reason
