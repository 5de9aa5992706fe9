"""Repeated runs of one evaluation: how much do the metric means move from run to run?

``evaluate_repeats`` runs the same evaluation N times with judge seeds ``base_seed + i`` and
the cache off, and reports the spread of every metric's mean (``_stats.run_spread``). The seed
is the only thing that changes unless you pass ``temperature``: at temperature 0 (the default)
a provider that decodes greedily (the embedded judge, most servers) returns the same output
whatever the seed, so a spread of 0 then says "deterministic", not "stable under sampling".
Pass ``temperature=0.7`` (for example) to measure the judge's sampling noise.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, replace
from typing import Any

from .._stats import RunSpread, run_spread
from ..dataset import Dataset
from ..errors import ConfigError
from ..judge import Judge, JudgeSpec, RetryPolicy
from ..result import EvaluationResult
from ._evaluate import aevaluate
from ._options import RunOptions

__all__ = ["RepeatReport", "evaluate_repeats"]


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
    for i in range(n):
        seed = base_seed + i
        judge = _judge_for(spec, seed, temperature, options.policy)
        used_temperature = judge.temperature
        result = await aevaluate(
            dataset,
            judge=replace(spec, model=judge),
            options=options,
            metadata={**metadata, "repeat": i + 1, "judge_seed": seed},
            run_id=f"{run_id}-r{i + 1}" if run_id else None,
            **kwargs,
        )
        results.append(result)
        seeds.append(seed)

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
