"""The tool-call metrics against the peers' own numbers: ``tests/fixtures/peers/tool_metrics.json``
holds, for one case per difference of definition, the values ragas 0.4.3 (ToolCallAccuracy,
ToolCallF1) and DeepEval 4.3.1 (ToolCorrectnessMetric) computed (``make_peers.py``). ragsight's
own values are pinned as docs/metrics.md's table shows them, and ``like=ragas`` /
``like=deepeval`` give the peers' values exactly."""

from __future__ import annotations

import asyncio
import json
from pathlib import Path
from typing import Any

import pytest

from ragsight.analyses import SampleAnalyses
from ragsight.conversation import ToolCall
from ragsight.errors import ConfigError
from ragsight.metrics import Metric, ToolCallAccuracy, ToolCallF1, resolve_metrics
from ragsight.sample import Sample

CASES = json.loads((Path(__file__).resolve().parents[1] / "fixtures" / "peers" / "tool_metrics.json").read_text())

# ragsight's own values (tool_call_accuracy in order, in any order; tool_call_f1): docs/metrics.md
OWN = {
    "partial_arguments": (0.5, 0.5, 0.0),
    "extra_argument": (0.5, 0.5, 0.0),
    "wrong_name_in_one_slot": (0.5, 0.5, 0.5),
    "swapped_order": (0.0, 1.0, 1.0),
    "extra_call": (0.0, 0.5, 2 / 3),
    "missing_call": (0.5, 0.5, 2 / 3),
    "duplicate_call": (0.5, 0.5, 2 / 3),
    "duplicate_expected": (1.0, 1.0, 1.0),
    "int_and_float": (1.0, 1.0, 1.0),
    "string_and_int": (0.0, 0.0, 0.0),
    "none_made": (0.0, 0.0, 0.0),
    "both_empty": (1.0, 1.0, 1.0),
}


def score(metric: Metric, case: dict[str, Any]) -> float:
    def calls(items: list[dict[str, Any]]) -> tuple[ToolCall, ...]:
        return tuple(ToolCall(c["name"], c["args"]) for c in items)

    sample = Sample(id=case["case"], tool_calls=calls(case["calls"]), reference_tool_calls=calls(case["reference"]))
    got = asyncio.run(metric.score(SampleAnalyses(sample, None, None)))
    assert got.value is not None, got.reason
    return got.value


def test_every_case_is_pinned() -> None:
    assert [c["case"] for c in CASES] == list(OWN)


@pytest.mark.parametrize("case", CASES, ids=[c["case"] for c in CASES])
def test_ragsights_own_values(case: dict[str, Any]) -> None:
    got = (score(ToolCallAccuracy(), case), score(ToolCallAccuracy(strict_order=False), case),
           score(ToolCallF1(), case))
    assert got == pytest.approx(OWN[case["case"]])


@pytest.mark.parametrize("case", CASES, ids=[c["case"] for c in CASES])
def test_like_ragas_gives_ragas_numbers(case: dict[str, Any]) -> None:
    peer = case["scores"]
    assert score(ToolCallAccuracy(like="ragas"), case) == pytest.approx(peer["ragas_accuracy"])
    assert score(ToolCallAccuracy(like="ragas", strict_order=False), case) == pytest.approx(
        peer["ragas_accuracy_any_order"])
    assert score(ToolCallF1(like="ragas"), case) == pytest.approx(peer["ragas_f1"])


@pytest.mark.parametrize("case", CASES, ids=[c["case"] for c in CASES])
def test_like_deepeval_gives_deepevals_numbers(case: dict[str, Any]) -> None:
    peer = case["scores"]
    assert score(ToolCallAccuracy(like="deepeval"), case) == pytest.approx(peer["deepeval"])
    assert score(ToolCallAccuracy(like="deepeval", strict_order=True), case) == pytest.approx(
        peer["deepeval_ordered"])


def test_like_is_a_metric_parameter_with_the_peers_default_order() -> None:
    deepeval, ragas, f1 = resolve_metrics(["tool_call_accuracy(like=deepeval)", "tool_call_accuracy(like=ragas)",
                                           "tool_call_f1(like=ragas)"])
    assert isinstance(deepeval, ToolCallAccuracy) and deepeval.strict_order is False  # DeepEval: any order
    assert isinstance(ragas, ToolCallAccuracy) and ragas.strict_order is True
    assert deepeval.params() == {"strict_order": False, "like": "deepeval"}
    assert ToolCallAccuracy().params() == {"strict_order": True}  # the default is recorded as before
    assert f1.key == "tool_call_f1(like=ragas)" and f1.params() == {"like": "ragas"}
    with pytest.raises(ConfigError, match=r"DeepEval has no tool-call F1: use tool_call_accuracy\(like=deepeval\)"):
        resolve_metrics(["tool_call_f1(like=deepeval)"])
    with pytest.raises(ConfigError, match="like must be one of ragsight, ragas, deepeval"):
        resolve_metrics(["tool_call_accuracy(like=trulens)"])


def test_a_peers_number_says_whose_definition_it_is() -> None:
    case = next(c for c in CASES if c["case"] == "extra_call")
    sample = Sample(id="x", tool_calls=tuple(ToolCall(c["name"], c["args"]) for c in case["calls"]),
                    reference_tool_calls=tuple(ToolCall(c["name"], c["args"]) for c in case["reference"]))
    got = asyncio.run(ToolCallAccuracy(like="deepeval").score(SampleAnalyses(sample, None, None)))
    assert got.value == 1.0 and "as DeepEval's ToolCorrectness: names only, extra calls free" in got.reason
    assert got.evidence.details["like"] == "deepeval"
    assert [p.get("mismatch") for p in got.evidence.details["pairs"]] == [None, "extra"]  # ragsight's pairing
