"""The real embedded judge on the choice of tools: for "What will the weather be in Lyon
tomorrow?", with a weather tool and a currency converter available, the weather call is the right
choice and the conversion is not; after a weather call that failed on a misspelt city, a call
with the city corrected is a sensible recovery.

Slow: loads the embedded model once per session; a handful of yes/no calls.
"""

from __future__ import annotations

import pytest

from ragsight.analyses import AnalysisSettings, SampleAnalyses
from ragsight.conversation import ToolCall, Turn
from ragsight.judge import Judge, RetryPolicy
from ragsight.metrics.agent_judge import ToolSelection, TrajectoryQuality
from ragsight.sample import Sample

pytestmark = [pytest.mark.slow, pytest.mark.local]

TOOLS = [
    {"name": "get_weather", "description": "The weather forecast for a city on a given day.",
     "parameters": {"type": "object", "properties": {"city": {"type": "string"}, "day": {"type": "string"}},
                    "required": ["city"]}},
    {"name": "convert_currency", "description": "Convert an amount of money from one currency to another.",
     "parameters": {"type": "object", "properties": {"amount": {"type": "number"}, "source": {"type": "string"},
                                                     "target": {"type": "string"}}}},
]


def judge(provider: object) -> Judge:
    return Judge(provider, policy=RetryPolicy(call_timeout_s=1800.0, step_deadline_s=3600.0))  # type: ignore[arg-type]


def sample(history: tuple[Turn, ...]) -> Sample:
    return Sample(id="w", conversation_id="w", history=history,
                  tool_calls=tuple(c for t in history for c in t.tool_calls), metadata={"tools": TOOLS})


async def test_the_weather_tool_is_the_right_choice_and_the_converter_is_not(qwen_provider: object) -> None:
    history = (
        Turn("user", "What will the weather be in Lyon tomorrow?"),
        Turn("assistant", "", tool_calls=(ToolCall("get_weather", {"city": "Lyon", "day": "tomorrow"}),)),
        Turn("tool", "Lyon tomorrow: rain, 12 C.", name="get_weather"),
        Turn("assistant", "", tool_calls=(ToolCall("convert_currency", {"amount": 12, "source": "EUR",
                                                                         "target": "USD"}),)),
        Turn("tool", "12 EUR = 13.1 USD", name="convert_currency"),
        Turn("assistant", "Tomorrow in Lyon: rain and 12 C."),
    )
    got = await ToolSelection().score(SampleAnalyses(sample(history), judge(qwen_provider), None,
                                                     AnalysisSettings(explain="none")))
    rows = got.evidence.details["verdicts"]
    weather, convert = rows[0]["probability"], rows[1]["probability"]
    assert weather is not None and convert is not None
    assert weather > 0.5 > convert, rows
    assert got.value == 0.5


async def test_a_corrected_city_after_a_failed_call_is_a_sound_recovery(qwen_provider: object) -> None:
    history = (
        Turn("user", "What will the weather be in Lyon tomorrow?"),
        Turn("assistant", "", tool_calls=(ToolCall("get_weather", {"city": "Lyonn"}),)),
        Turn("tool", "Error: unknown city 'Lyonn'", name="get_weather"),
        Turn("assistant", "", tool_calls=(ToolCall("get_weather", {"city": "Lyon"}),)),
        Turn("tool", "Lyon tomorrow: rain, 12 C.", name="get_weather"),
        Turn("assistant", "Tomorrow in Lyon: rain and 12 C."),
    )
    got = await TrajectoryQuality().score(SampleAnalyses(sample(history), judge(qwen_provider), None,
                                                         AnalysisSettings(explain="none")))
    rows = got.evidence.details["verdicts"]
    recovery = next(r for r in rows if r["kind"] == "recovery")
    assert recovery["probability"] is not None and recovery["probability"] > 0.5, rows
