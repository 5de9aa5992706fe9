"""tool_call_accuracy and tool_call_f1 on a set of agent traces, against values computed by
hand (the arithmetic is in each case's comment). No judge."""

from __future__ import annotations

import asyncio
from typing import Any

import pytest

from ragsight import Outcome, Score
from ragsight.analyses import SampleAnalyses
from ragsight.conversation import ToolCall
from ragsight.errors import ConfigError
from ragsight.metrics import (
    ConversationToolCallAccuracy,
    ConversationToolCallF1,
    Metric,
    ToolCallAccuracy,
    ToolCallF1,
    resolve_metrics,
)
from ragsight.sample import Sample


def call(name: str, **args: Any) -> ToolCall:
    return ToolCall(name, args)


FLIGHTS = call("search_flights", origin="Paris", destination="Rome", date="2025-05-02")
HOTEL = call("book_hotel", city="Rome", nights=3)

# (name, calls made, reference calls, accuracy in order, accuracy in any order, f1)
TRACES = [
    # both calls exactly as expected
    ("exact", [FLIGHTS, HOTEL], [FLIGHTS, HOTEL], 1.0, 1.0, 1.0),
    # the same two calls swapped: in order each pair's names differ (0 + 0) / 2; in any order 2 / 2
    ("swapped", [HOTEL, FLIGHTS], [FLIGHTS, HOTEL], 0.0, 1.0, 1.0),
    # one argument of three wrong: (2/3 + 1) / 2; f1: 1 match of 2 and 2 -> 2*1/4
    ("wrong date", [call("search_flights", origin="Paris", destination="Rome", date="2025-05-03"), HOTEL],
     [FLIGHTS, HOTEL], 5 / 6, 5 / 6, 0.5),
    # whitespace and 3 vs 3.0 normalised away: an exact match
    ("normalised", [call("book_hotel", city="  Rome ", nights=3.0)], [HOTEL], 1.0, 1.0, 1.0),
    # an extra argument: names {city, nights, breakfast}, 2 of 3 match
    ("extra argument", [call("book_hotel", city="Rome", nights=3, breakfast=True)], [HOTEL], 2 / 3, 2 / 3, 0.0),
    # true is not 1: names {city, nights}, 1 of 2 match
    ("bool is not a number", [call("book_hotel", city="Rome", nights=True)], [HOTEL], 0.5, 0.5, 0.0),
    # case is kept: "rome" is not "Rome"
    ("case kept", [call("book_hotel", city="rome", nights=3)], [HOTEL], 0.5, 0.5, 0.0),
    # a missing call: 1 / max(1, 2); f1 2*1/(1+2)
    ("missing call", [FLIGHTS], [FLIGHTS, HOTEL], 0.5, 0.5, 2 / 3),
    # an extra call first: in order (0 + 0 + 0) / 3 (hotel vs flights, flights vs hotel, one unpaired);
    # in any order 2 / 3; f1 2*2/(3+2)
    ("extra call", [HOTEL, FLIGHTS, HOTEL], [FLIGHTS, HOTEL], 0.0, 2 / 3, 0.8),
    # a repeated call counts once against one expected: in order 1/2, f1 2*1/(2+1)
    ("repeated", [HOTEL, HOTEL], [HOTEL], 0.5, 0.5, 2 / 3),
    # a wrong tool: no credit at all
    ("wrong tool", [call("search_trains", origin="Paris", destination="Rome", date="2025-05-02")],
     [FLIGHTS], 0.0, 0.0, 0.0),
    # nothing expected, nothing made
    ("no calls", [], [], 1.0, 1.0, 1.0),
    # calls expected, none made
    ("none made", [], [FLIGHTS], 0.0, 0.0, 0.0),
    # none expected, one made
    ("none expected", [HOTEL], [], 0.0, 0.0, 0.0),
]


def run(metric: Metric, sample: Sample) -> Score:
    return asyncio.run(metric.score(SampleAnalyses(sample, None, None)))


def turn(calls: list[ToolCall], reference: list[ToolCall] | None) -> Sample:
    return Sample(id="trip:0", question="Book my trip.", response="Done.", conversation_id="trip", turn=0,
                  tool_calls=tuple(calls), reference_tool_calls=None if reference is None else tuple(reference))


@pytest.mark.parametrize(("name", "calls", "reference", "in_order", "any_order", "f1"), TRACES,
                         ids=[t[0] for t in TRACES])
def test_tool_call_metrics_match_hand_computed_values(
    name: str, calls: list[ToolCall], reference: list[ToolCall], in_order: float, any_order: float, f1: float,
) -> None:
    s = turn(calls, reference)
    got = [run(ToolCallAccuracy(), s), run(ToolCallAccuracy(strict_order=False), s), run(ToolCallF1(), s)]
    assert all(g.outcome is Outcome.SCORED for g in got)
    assert [g.value for g in got] == pytest.approx([in_order, any_order, f1])


def test_the_evidence_names_the_mismatching_call_and_argument() -> None:
    wrong = call("search_flights", origin="Paris", destination="Rome", date="2025-05-03")
    got = run(ToolCallAccuracy(), turn([wrong, HOTEL], [FLIGHTS, HOTEL]))
    first = got.evidence.details["pairs"][0]
    assert first["mismatch"] == "arguments" and first["arguments"] == ["date"]
    assert first["credit"] == pytest.approx(2 / 3)
    assert got.reason.endswith('differs from the expected search_flights(origin="Paris", destination="Rome", '
                               'date="2025-05-02") in date')
    f1 = run(ToolCallF1(), turn([wrong, HOTEL], [FLIGHTS, HOTEL]))
    assert f1.evidence.details["extra"] == ['search_flights(origin="Paris", destination="Rome", date="2025-05-03")']
    assert f1.evidence.details["missing"] == ['search_flights(origin="Paris", destination="Rome", date="2025-05-02")']
    swapped = run(ToolCallAccuracy(), turn([HOTEL, FLIGHTS], [FLIGHTS, HOTEL]))
    assert [p["mismatch"] for p in swapped.evidence.details["pairs"]] == ["name", "name"]
    assert "paired in order" in swapped.reason


def test_without_reference_calls_the_turn_is_skipped() -> None:
    got = run(ToolCallAccuracy(), turn([HOTEL], None))
    assert got.outcome is Outcome.SKIPPED and got.reason == "sample has no reference_tool_calls"


def test_conversation_level_metrics_take_every_call_and_only_conversation_samples() -> None:
    conv = Sample(id="trip", conversation_id="trip", tool_calls=(FLIGHTS, HOTEL, HOTEL),
                  reference_tool_calls=(FLIGHTS, HOTEL))
    assert ConversationToolCallAccuracy.level == "conversation" and ToolCallAccuracy.level == "turn"
    assert run(ConversationToolCallAccuracy(), conv).value == pytest.approx(2 / 3)  # (1 + 1 + 0) / 3
    assert run(ConversationToolCallF1(), conv).value == pytest.approx(0.8)  # 2*2/(3+2)
    skipped = run(ConversationToolCallF1(), turn([HOTEL], [HOTEL]))
    assert skipped.outcome is Outcome.SKIPPED and "not a conversation" in skipped.reason


def test_spec_strings_set_the_order_and_refuse_a_bad_value() -> None:
    [m] = resolve_metrics(["tool_call_accuracy(strict_order=false)"])
    assert isinstance(m, ToolCallAccuracy) and m.strict_order is False
    assert m.key == "tool_call_accuracy(strict_order=false)"
    with pytest.raises(ConfigError, match="strict_order must be true or false"):
        resolve_metrics(["tool_call_accuracy(strict_order=sometimes)"])
    agent = resolve_metrics(["agent"], [turn([HOTEL], [HOTEL])])
    assert {m.name for m in agent} >= {"tool_call_accuracy", "tool_call_f1"}
