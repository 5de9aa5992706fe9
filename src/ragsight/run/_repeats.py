"""Repeated runs of one evaluation: how much do the metric means move from run to run?

``evaluate_repeats`` runs the same evaluation N times with judge seeds ``base_seed + i`` and
the cache off, and reports the spread of every metric's mean (``_stats.run_spread``). The seed
is the only thing that changes unless you pass ``temperature``: at temperature 0 (the default)
a provider that decodes greedily (the embedded judge, most servers) returns the same output
whatever the seed, so a spread of 0 then says "deterministic", not "stable under sampling".
Pass ``temperature=0.7`` (for example) to measure the judge's sampling noise.

Every option of the evaluation applies to each run (the judge spec with its server, API version,
ceiling and prices; the options' policy, settings, backend...), except ``max_cost``, which is the
limit of the whole call: each run is given what the runs before it left, and the repeats stop
(:class:`RepeatsBudgetExceeded`) before a call could take the total past it.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, replace
from typing import Any

from .._stats import RunSpread, run_spread
from ..dataset import Dataset
from ..errors import BudgetExceededError, ConfigError
from ..judge import Judge, JudgeSpec, RetryPolicy
from ..result import EvaluationResult
from ._evaluate import aevaluate
from ._options import RunOptions

__all__ = ["RepeatReport", "RepeatsBudgetExceeded", "evaluate_repeats"]


class RepeatsBudgetExceeded(BudgetExceededError):
    """Repeated runs stopped at their ``max_cost``, the limit of all the runs together:
    ``spent`` is what all of them paid; ``finished`` the ids of the runs that ended before the
    stop; ``run_id``, ``done`` and ``total`` are those of the run that stopped ("" and 0 when the
    limit was used up between two runs); ``repeat`` its number (1..n) and ``repeats`` n."""

    def __init__(self, message: str, *, spent: float, limit: float, finished: tuple[str, ...], repeat: int,
                 repeats: int) -> None:
        super().__init__(message, spent=spent, limit=limit)
        self.finished = finished
        self.repeat = repeat
        self.repeats = repeats


@dataclass(frozen=True)
class RepeatReport:
    """N runs of the same evaluation and the run-to-run spread of each metric's mean.

    ``spread[metric]`` is over the runs where the metric had a mean (scored at least once);
    ``overall`` is the spread of the overall score (the mean of the metric means) and
    ``overall_harmonic`` that of their harmonic mean (docs/metrics.md, "Overall score").
    """

    run_ids: tuple[str, ...]
    seeds: tuple[int, ...]
    temperature: float
    results: tuple[EvaluationResult, ...]
    spread: Mapping[str, RunSpread]
    overall: RunSpread
    overall_harmonic: RunSpread | None = None

    def means(self, metric: str) -> list[float | None]:
        """The metric's mean in each run, in run order."""
        return [r.summary[metric].mean if metric in r.summary else None for r in self.results]


def _judge_for(spec: JudgeSpec, seed: int, temperature: float | None, policy: RetryPolicy | None) -> Judge:
    # A fresh Judge on the same provider: its own seed and stats, no shared in-flight calls.
    return spec.make(policy=policy).for_run(seed=seed, temperature=temperature)


async def evaluate_repeats(
    data: Any,
    n: int,
    *,
    base_seed: int = 0,
    temperature: float | None = None,
    **evaluate_kwargs: Any,
) -> RepeatReport:
    """Run the same evaluation ``n`` times and measure the run-to-run spread of each metric.

    Run i (from 0) uses judge seed ``base_seed + i`` and no cache (a cached answer would make
    every run identical). ``temperature`` sets the judge's sampling temperature for every run;
    by default the judge's own (0 unless you built the Judge otherwise), in which case only the
    seed varies. Other keyword arguments go to :func:`ragsight.aevaluate` (``metrics``,
    ``judge``, ``store``, ``metadata``, ``options``...); each run's metadata gets ``repeat``
    (1..n) and ``judge_seed``, and a given ``run_id`` becomes ``<run_id>-r<i>``. The runs read
    no cache: ``options``, when given, says ``cache=False``.
    """
    if n < 1:
        raise ConfigError(f"repeats must be at least 1, got {n}")
    options = evaluate_kwargs.pop("options", None) or RunOptions(cache=False)
    if options.cache:
        raise ConfigError("repeated runs need the cache off (a cached answer repeats itself): "
                          "options=ragsight.RunOptions(cache=False, ...)")
    if evaluate_kwargs.get("resume") is not None:
        raise ConfigError("repeated runs cannot resume a run")
    kwargs = {k: v for k, v in evaluate_kwargs.items() if k != "resume"}
    spec = JudgeSpec.of(kwargs.pop("judge", None))
    metadata = dict(kwargs.pop("metadata", None) or {})
    run_id = kwargs.pop("run_id", None)
    dataset = Dataset.load(data)  # once: an iterator of rows would be empty the second time
    results: list[EvaluationResult] = []
    seeds: list[int] = []
    used_temperature = 0.0
    cap: float | None = options.max_cost
    spent = 0.0
    for i in range(n):
        seed = base_seed + i
        left = None if cap is None else cap - spent
        if cap is not None and left is not None and not left > 0:
            raise RepeatsBudgetExceeded(
                f"max_cost ${cap:g} is spent after {i} of {n} repeated runs", spent=spent, limit=cap,
                finished=tuple(r.run_id for r in results), repeat=i + 1, repeats=n)
        judge = _judge_for(spec, seed, temperature, options.policy)
        used_temperature = judge.temperature
        try:
            result = await aevaluate(
                dataset,
                judge=replace(spec, model=judge),
                options=options if left is None else replace(options, max_cost=left),
                metadata={**metadata, "repeat": i + 1, "judge_seed": seed},
                run_id=f"{run_id}-r{i + 1}" if run_id else None,
                **kwargs,
            )
        except BudgetExceededError as stop:
            assert cap is not None
            stopped = RepeatsBudgetExceeded(
                f"max_cost ${cap:g} reached in repeated run {i + 1} of {n}", spent=spent + stop.spent,
                limit=float(cap), finished=tuple(r.run_id for r in results), repeat=i + 1, repeats=n)
            stopped.unreported, stopped.unreported_calls = stop.unreported, stop.unreported_calls
            stopped.run_id, stopped.done, stopped.total = stop.run_id, stop.done, stop.total
            raise stopped from None
        results.append(result)
        seeds.append(seed)
        spent += float((result.cost or {}).get("usd") or 0.0)

    metrics: list[str] = []
    for r in results:
        metrics.extend(k for k in r.summary if k not in metrics)
    spread = {}
    for key in metrics:
        means = [r.summary[key].mean for r in results if key in r.summary]
        spread[key] = run_spread([m for m in means if m is not None])
    overall = run_spread([o for o in (r.overall for r in results) if o is not None])
    harmonic = run_spread([o for o in (r.overall_harmonic for r in results) if o is not None])
    return RepeatReport(
        run_ids=tuple(r.run_id for r in results),
        seeds=tuple(seeds),
        temperature=used_temperature,
        results=tuple(results),
        spread=spread,
        overall=overall,
        overall_harmonic=harmonic,
    )
