"""Repeated runs: one seed per run, no cache, and the run-to-run spread computed by hand."""

from __future__ import annotations

import io
import math
from collections.abc import Mapping
from typing import Any

import pytest
from rich.console import Console

from ragsight import Judge, RunOptions, Store
from ragsight.errors import ConfigError
from ragsight.judge import Completion, JudgeRequest, ScriptedProvider
from ragsight.report import evaluate_repeats, print_repeats

RESPONSE = "Paris is the capital of France. Paris is in Europe."
CLAIMS = ["Paris is the capital of France.", "Paris is in Europe."]
DATA = [
    {
        "id": "p",
        "question": "Capital of France?",
        "contexts": ["Paris is the capital of France."],
        "response": RESPONSE,
    }
]


class SeedJudge(ScriptedProvider):
    """Claim 1 is always supported; claim 2 only when the request's seed is even."""

    def __init__(self) -> None:
        self.seed_now: int | None = None
        super().__init__({"extract_claims": self._claims, "verify_claims": self._verify})

    async def complete(self, request: JudgeRequest) -> Completion:
        self.seed_now = request.seed  # the handler below runs before the next request
        return await super().complete(request)

    def _claims(self, v: Mapping[str, Any]) -> Any:
        assert v["raw_text"] == RESPONSE
        return {"claims": CLAIMS}

    def _verify(self, v: Mapping[str, Any]) -> Any:
        even = self.seed_now is not None and self.seed_now % 2 == 0
        return {
            "verdicts": [
                {"id": 1, "supported": True, "reason": "stated"},
                {"id": 2, "supported": even, "reason": f"seed {self.seed_now}"},
            ]
        }


async def test_each_run_gets_its_own_seed_and_the_spread_is_exact() -> None:
    provider = SeedJudge()
    rep = await evaluate_repeats(DATA, 3, judge=provider, metrics=["faithfulness"], run_id="rep")
    assert rep.seeds == (0, 1, 2)
    assert rep.run_ids == ("rep-r1", "rep-r2", "rep-r3")
    assert sorted({r.seed for r in provider.requests}) == [0, 1, 2]
    # cache off: each run asked the judge itself (2 steps per run)
    assert len(provider.requests) == 6
    assert rep.means("faithfulness") == [1.0, 0.5, 1.0]
    s = rep.spread["faithfulness"]
    assert s.n_runs == 3 and s.mean == pytest.approx(5 / 6)
    # deviations 1/6, -1/3, 1/6: variance (1/36 + 1/9 + 1/36) / 2 = 1/12
    assert s.sd == pytest.approx(math.sqrt(1 / 12))
    assert (s.minimum, s.maximum, s.range) == (0.5, 1.0, 0.5)
    assert rep.temperature == 0.0
    assert all(r.temperature == 0.0 for r in provider.requests)


async def test_temperature_base_seed_metadata_and_store(tmp_path: Any) -> None:
    provider = SeedJudge()
    db = tmp_path / "runs.db"
    rep = await evaluate_repeats(
        DATA,
        2,
        judge=provider,
        metrics=["faithfulness"],
        base_seed=7,
        temperature=0.8,
        store=str(db),
        metadata={"chunk_size": 512},
    )
    assert rep.seeds == (7, 8)
    assert {r.temperature for r in provider.requests} == {0.8}
    assert rep.means("faithfulness") == [0.5, 1.0]
    with Store(db) as store:
        meta = [store.run(rid).metadata for rid in rep.run_ids]
        assert meta == [
            {"chunk_size": 512, "repeat": 1, "judge_seed": 7},
            {"chunk_size": 512, "repeat": 2, "judge_seed": 8},
        ]
        assert all(store.run(rid).config["cache"] is False for rid in rep.run_ids)


async def test_a_judge_instance_is_not_mutated() -> None:
    judge = Judge(SeedJudge(), seed=100)
    rep = await evaluate_repeats(DATA, 2, judge=judge, metrics=["faithfulness"], base_seed=3)
    assert rep.seeds == (3, 4)
    assert judge.seed == 100 and judge.stats.calls == 0
    assert [r.judge_stats["calls"] for r in rep.results] == [2, 2]  # own stats per run


async def test_refuses_cache_resume_and_zero_runs() -> None:
    with pytest.raises(ConfigError, match="cache off"):
        await evaluate_repeats(DATA, 2, judge=SeedJudge(), options=RunOptions(cache=True))
    with pytest.raises(ConfigError, match="resume"):
        await evaluate_repeats(DATA, 2, judge=SeedJudge(), resume="last")
    with pytest.raises(ConfigError, match="at least 1"):
        await evaluate_repeats(DATA, 0, judge=SeedJudge())


async def test_printer_shows_runs_and_spread() -> None:
    rep = await evaluate_repeats(DATA, 3, judge=SeedJudge(), metrics=["faithfulness"])
    console = Console(width=100, record=True, color_system=None, file=io.StringIO())
    print_repeats(rep, console)
    text = console.export_text()
    assert "3 repeated runs (judge seeds 0..2, temperature 0, cache off)" in text
    row = next(line for line in text.splitlines() if "faithfulness" in line)
    assert row.split("│")[2:-1] == [
        " 1.000 ",
        " 0.500 ",
        " 1.000 ",
        " 0.833 ",
        " 0.289 ",
        " 0.500 ",
        " 1.000 ",
        " 0.500 ",
    ]
    assert "only the judge seed varied" in text
