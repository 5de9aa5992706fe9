"""A metric that stops the run leaves nothing of its sample running: the other metrics and the
shared analyses are cancelled and their outcomes read, so no call goes out after the sample and
nothing is reported at exit as an exception nobody retrieved (seen in a soak as pages of
"unhandled exception during shutdown" after "the judge stopped answering")."""

from __future__ import annotations

import asyncio
import gc

import pytest

from ragsight import Score
from ragsight.analyses import AnalysisSettings, SampleAnalyses
from ragsight.engine._engine import score_sample
from ragsight.errors import JudgeUnavailableError
from ragsight.metrics import Metric
from ragsight.sample import Sample

STARTED: list[str] = []
FINISHED: list[str] = []


async def slow_analysis() -> str:
    STARTED.append("analysis")
    await asyncio.sleep(0.5)
    FINISHED.append("analysis")  # a call that would go out after the run stopped
    raise RuntimeError("Cannot send a request, as the client has been closed.")


class Waits(Metric):
    name = "waits_for_analysis"

    async def compute(self, ctx: SampleAnalyses) -> Score:
        await ctx.once("slow", slow_analysis)
        return Score.scored(self.key, 1.0, "done")


class Stops(Metric):
    name = "stops_the_run"

    async def compute(self, ctx: SampleAnalyses) -> Score:
        await asyncio.sleep(0.05)
        raise JudgeUnavailableError("judge 'm' stopped answering")


def test_a_metric_that_stops_the_run_leaves_no_analysis_running() -> None:
    STARTED.clear()
    FINISHED.clear()
    reported: list[dict[str, object]] = []

    async def main() -> None:
        asyncio.get_running_loop().set_exception_handler(lambda loop, ctx: reported.append(ctx))
        sample = Sample(id="s1", question="q?", response="r.")
        with pytest.raises(JudgeUnavailableError):
            await score_sample(sample, [Waits(), Stops()], None, None, AnalysisSettings())
        others = [t for t in asyncio.all_tasks() if t is not asyncio.current_task()]
        assert others == [], others  # nothing of the sample left running
        await asyncio.sleep(0.7)  # long enough for the analysis to have finished, had it run on
        gc.collect()

    asyncio.run(main())
    assert STARTED == ["analysis"]
    assert FINISHED == []
    assert reported == []


def test_an_analysis_that_fails_after_its_callers_left_is_not_reported_at_exit() -> None:
    reported: list[dict[str, object]] = []

    async def fails() -> str:
        await asyncio.sleep(0.05)
        raise JudgeUnavailableError("judge 'm' stopped answering")

    async def main() -> None:
        asyncio.get_running_loop().set_exception_handler(lambda loop, ctx: reported.append(ctx))
        ctx = SampleAnalyses(Sample(id="s1", question="q?", response="r."), None, None)
        caller = asyncio.ensure_future(ctx.once("k", fails))
        await asyncio.sleep(0.01)
        caller.cancel()
        await asyncio.gather(caller, return_exceptions=True)
        await asyncio.sleep(0.1)  # the analysis fails with nobody waiting
        gc.collect()

    asyncio.run(main())
    gc.collect()
    assert reported == []
