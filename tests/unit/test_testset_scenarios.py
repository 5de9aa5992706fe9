"""Scenarios from documents (``ragsight generate --types scenario=...,scenario_out_of_scope=...``)
with a scripted generator and critic: the rows, the checks that reject a candidate, the critic
of an out-of-scope goal, and the rows read back as ``ragsight simulate``'s input."""

from __future__ import annotations

import json
import re
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any

import pytest

from ragsight.errors import ConfigError
from ragsight.judge import Judge, ScriptedProvider
from ragsight.simulate import read_scenarios
from ragsight.testset import Corpus, TestsetSettings, agenerate, load_corpus

LEAVE = ("Staff can carry over up to 5 days of unused annual leave into the next year. Carried-over days must "
         "be taken by 31 March, or they are lost. Requests go to the line manager through the leave portal.")
TRAVEL = ("Meals on business trips are reimbursed up to 40 euros a day. Claims need the receipts and are "
          "submitted within 30 days of the trip.")

Handler = Callable[[Mapping[str, Any]], Any]


@pytest.fixture
def corpus(tmp_path: Path) -> Corpus:
    (tmp_path / "leave.md").write_text(LEAVE, "utf-8")
    (tmp_path / "travel.md").write_text(TRAVEL, "utf-8")
    return load_corpus(tmp_path)


def chunk_texts(v: Mapping[str, Any]) -> list[str]:
    return [" ".join(m.split()) for m in re.findall(r"<chunk n=\"\d+\">\n(.*?)\n</chunk>", v["contexts"], re.S)]


def scenario(v: Mapping[str, Any]) -> dict[str, str]:
    (text,) = chunk_texts(v)
    if text == LEAVE:
        return {"scenario": "A new employee wants to know how many leave days they can keep for next year, and "
                            "the date by which they must take them.",
                "persona": "polite, short questions",
                "first_message": "how many days of leave can i keep for next year?",
                "expected_outcome": "The user learns they can carry over up to 5 days, to be taken by 31 March."}
    return {"scenario": "A consultant wants to know the daily meal allowance on business trips and how to claim it.",
            "persona": "terse", "first_message": "What's the meal allowance when I travel?",
            "expected_outcome": "The user learns meals are reimbursed up to 40 euros a day, claimed with "
                                "receipts within 30 days."}


def out_of_scope(v: Mapping[str, Any]) -> dict[str, str]:
    return {"scenario": "An employee wants to know whether the company pays for a gym membership.",
            "persona": "curious", "first_message": "Does the company cover my gym membership?",
            "missing": "The documents say nothing about gym memberships.",
            "expected_outcome": "The assistant says the documents do not cover gym memberships."}


def critic(answerable: bool = True) -> Handler:
    return lambda v: {"reason": "scripted", "answerable": answerable, "self_contained": True,
                      "contradicted": False, "copied": False}


async def generate(corpus: Corpus, gen: Mapping[str, Handler], crit: Mapping[str, Handler],
                   types: str, size: int = 2) -> Any:
    g = Judge(ScriptedProvider(dict(gen), model="gen-model"))
    c = Judge(ScriptedProvider(dict(crit), model="critic-model"))
    return await agenerate(corpus, g, c, None, TestsetSettings(size=size, types=types, attempts=1))


async def test_scenario_rows_are_simulate_input(corpus: Corpus, tmp_path: Path) -> None:
    crit = ScriptedProvider({"testset_critique": critic()}, model="critic-model")
    g = Judge(ScriptedProvider({"testset_scenario": scenario}, model="gen-model"))
    result = await agenerate(corpus, g, Judge(crit), None, TestsetSettings(size=2, types="scenario=1", attempts=1))
    assert len(result.rows) == 2 and not result.rejected
    leave = next(r for r in result.rows if "leave" in r["scenario"])
    assert leave["id"].startswith("sc-")
    assert leave["first_message"] == "how many days of leave can i keep for next year?"
    assert leave["persona"] == "polite, short questions"
    meta = leave["metadata"]
    assert meta["question_type"] == "scenario" and meta["reference_context_ids"] == ["leave.md#0"]
    assert meta["prompts"]["testset_scenario"] == "1" and meta["prompts"]["testset_critique"] == "2"
    assert meta["grounding"] >= 0.5 and meta["critic_reason"] == "scripted"
    # the critic read the scenario as the question and the expected outcome as its answer
    asked = crit.calls_for("testset_critique")[0].messages[1].content
    assert "wants to know how many leave days" in asked or "daily meal allowance" in asked
    path = tmp_path / "scenarios.jsonl"
    path.write_text("".join(json.dumps(r) + "\n" for r in result.rows), "utf-8")
    scenarios, problems = read_scenarios(path)
    assert not problems
    assert [s.id for s in scenarios] == [r["id"] for r in result.rows]
    assert scenarios[0].metadata["question_type"] == "scenario"


async def test_an_out_of_scope_goal_is_checked_against_the_related_chunks(corpus: Corpus) -> None:
    result = await generate(corpus, {"testset_scenario_out_of_scope": out_of_scope},
                            {"testset_critique_oos": critic(answerable=False)}, "scenario_out_of_scope", size=1)
    [row] = result.rows
    assert row["expected_outcome"] == "The assistant says the documents do not cover gym memberships."
    meta = row["metadata"]
    assert meta["question_type"] == "scenario_out_of_scope"
    assert meta["missing"] == "The documents say nothing about gym memberships."
    assert meta["reference_context_ids"] == [] and meta["critic_chunks"]
    met = await generate(corpus, {"testset_scenario_out_of_scope": out_of_scope},
                         {"testset_critique_oos": critic(answerable=True)}, "scenario_out_of_scope", size=1)
    assert not met.rows and met.rejected[0]["reasons"] == ["answerable_from_corpus"]


@pytest.mark.parametrize(("change", "reason"), [
    ({"expected_outcome": "The user learns they can carry over 12 days, approved by Olga Brandt."},
     "reference_not_grounded"),
    ({"first_message": "Staff can carry over up to 5 days of unused annual leave into the next year?"}, "copied"),
    ({"scenario": "Leave days."}, "malformed"),
    ({"first_message": "what is the wifi password?"}, "off_topic"),
])
async def test_a_scenario_that_fails_a_check_is_rejected(corpus: Corpus, change: dict[str, str],
                                                         reason: str) -> None:
    def gen(v: Mapping[str, Any]) -> dict[str, str]:
        return {**scenario(v), **change} if chunk_texts(v) == [LEAVE] else scenario(v)

    result = await generate(corpus, {"testset_scenario": gen}, {"testset_critique": critic()}, "scenario")
    assert [r["metadata"]["reference_context_ids"] for r in result.rows] == [["travel.md#0"]]
    [rejected] = result.rejected
    assert reason in rejected["reasons"]


async def test_a_goal_the_critic_finds_unmet_is_rejected(corpus: Corpus) -> None:
    result = await generate(corpus, {"testset_scenario": scenario}, {"testset_critique": critic(answerable=False)},
                            "scenario")
    assert not result.rows and {tuple(r["reasons"]) for r in result.rejected} == {("not_answerable",)}


def test_scenarios_and_questions_are_not_mixed_in_one_file() -> None:
    TestsetSettings(types="scenario=0.8,scenario_out_of_scope=0.2")
    with pytest.raises(ConfigError, match="generate them in two runs"):
        TestsetSettings(types="single_hop=0.5,scenario=0.5")
