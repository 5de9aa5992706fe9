"""Throughput of the Ray backend against the in-process engine, on a mock OpenAI server.

    .venv/bin/python bench/bench_ray.py                 # 200 samples, 300 ms and 0 ms per call
    .venv/bin/python bench/bench_ray.py --n 100 --latency 300

The judge is an OpenAI-compatible mock (``shared/bench/mock_openai.py``, run with the Python
that has aiohttp and tiktoken: ``--mock-python``, default ``.venv-ragas/bin/python``) that
sleeps a set time per call and counts calls and tokens with tiktoken. The data set is the
benchmark kit's ``airline_20.jsonl``, repeated to ``--n`` samples, each copy marked so that no
judge step is shared between copies (nothing is cached or deduplicated); the seven metrics run
together, with the cache off.

Printed: wall time and samples per second for the in-process engine and for Ray with 1 and 2
workers (each worker with ``--concurrency`` samples in flight and ``--cap`` judge calls in flight;
the cluster-wide limit is ``cap x workers``), the CPU time of the driver process per sample
(for the in-process engine, the whole client's work: rendering, parsing, scoring, HTTP, SQLite;
with Ray, the driver's share only), judge calls and prompt tokens per sample as the
mock counted them, the start-up cost of the Ray backend (a run of one sample per worker: the
worker processes start and import ragsight), and the machine's load average (this box is
shared: figures move with it).
"""

from __future__ import annotations

import argparse
import asyncio
import functools
import logging
import os
import time
from pathlib import Path
from typing import Any

from _data import SEVEN, marked_copy, read_jsonl
from _mock import Mock, started_mock

ROOT = Path(__file__).resolve().parents[1]
KIT = ROOT.parent / "shared" / "bench"


def rows(n: int) -> list[dict[str, Any]]:
    base = read_jsonl(KIT / "airline_20.jsonl")
    return [{**marked_copy(base[i % len(base)], i), "id": f"c{i:05d}"} for i in range(n)]


def judge_factory(base_url: str, cap: int) -> Any:
    from ragsight.judge._openai import OpenAIProvider

    return functools.partial(OpenAIProvider, "mock", base_url=base_url, max_concurrency=cap)


async def run_local(
    data: list[dict[str, Any]], base_url: str, concurrency: int, cap: int
) -> tuple[float, float]:
    """Wall time and this process's CPU time."""
    import ragsight

    t0, c0 = time.perf_counter(), time.process_time()
    res = await ragsight.aevaluate(data, SEVEN, judge=judge_factory(base_url, cap)(),
                                   embedder=ragsight.EmbedderSpec("openai:mock-embed", base_url=base_url),
                                   options=ragsight.RunOptions(cache=False, concurrency=concurrency, preflight=False))
    wall, cpu = time.perf_counter() - t0, time.process_time() - c0
    assert res.status == "completed"
    return wall, cpu


async def run_ray(data: list[dict[str, Any]], base_url: str, concurrency: int, cap: int,
                  workers: int) -> tuple[float, float]:
    from dataclasses import replace

    from ragsight.analyses import AnalysisSettings
    from ragsight.engine._engine import describe_metrics, settings_for
    from ragsight.engine._ray import run_samples_ray
    from ragsight.judge import Judge
    from ragsight.metrics import resolve_metrics
    from ragsight.run import new_run_id
    from ragsight.sample import Dataset
    from ragsight.store import Store

    samples = Dataset.load(data).samples
    metrics = resolve_metrics(SEVEN, samples)
    factory = judge_factory(base_url, cap)
    judge = Judge(factory())
    st = Store(":memory:")
    run_id = new_run_id()
    st.create_run(run_id, dataset="bench", judge=judge.name, embedder=None,
                  metrics=describe_metrics(metrics), config={}, metadata={}, samples=samples)
    t0, c0 = time.perf_counter(), time.process_time()
    await run_samples_ray(
        samples, metrics, judge=judge, judge_spec=factory, embedder_spec="openai:mock-embed",
        embedder_base_url=base_url, settings=settings_for(metrics, replace(AnalysisSettings(), use_cache=False)),
        store=st, run_id=run_id, concurrency=concurrency, workers=workers, judge_limit=cap * workers,
    )
    wall, cpu = time.perf_counter() - t0, time.process_time() - c0
    assert len(st.finished_samples(run_id)) == len(samples)
    st.close()
    return wall, cpu


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--n", type=int, default=200, help="samples (default 200)")
    ap.add_argument("--latency", type=float, nargs="*", default=[300.0, 0.0], help="ms per call (default 300 0)")
    ap.add_argument("--concurrency", type=int, default=16, help="samples in flight per worker (default 16)")
    ap.add_argument("--cap", type=int, default=16, help="judge calls in flight per worker (default 16)")
    ap.add_argument("--mock-python", default=str(ROOT / ".venv-ragas" / "bin" / "python"))
    ap.add_argument("--mock", default=str(KIT / "mock_openai.py"))
    args = ap.parse_args()

    os.environ.setdefault("RAY_USAGE_STATS_ENABLED", "0")
    os.environ.setdefault("TIKTOKEN_CACHE_DIR", str(KIT / "tiktoken_cache"))
    import ray

    ray.init(address="local", num_cpus=2, include_dashboard=False, log_to_driver=False,
             logging_level=logging.WARNING)
    with started_mock(KIT, args.mock_python, script=Path(args.mock)) as mock:
        try:
            measure(args, mock)
        finally:
            ray.shutdown()


def measure(args: argparse.Namespace, mock: Mock) -> None:
    """The tables: each latency's engines, then Ray's start-up."""
    import ray

    base_url = mock.url + "/v1"
    data = rows(args.n)
    c, k = args.concurrency, args.cap
    print(f"ray {ray.__version__}, {args.n} samples x 7 metrics, cache off; load average "
          f"{os.getloadavg()[0]:.1f} on {os.cpu_count()} CPUs")
    for lat in args.latency:
        print(f"\n## {lat:g} ms per judge call\n")
        print("| engine | samples in flight | judge calls in flight | wall s | samples/s | driver CPU ms/sample | "
              "calls/sample | prompt tok/sample | completion tok/sample |")
        print("|---|---|---|---|---|---|---|---|---|")
        plans: list[tuple[str, int, int, int | None]] = [
            ("in-process", c, k, None), ("Ray, 1 worker", c, k, 1), ("Ray, 2 workers", c, k, 2),
            ("in-process", 2 * c, 2 * k, None),
        ]
        for name, conc, cap, workers in plans:
            mock.control(run=f"ray-{lat:g}-{name}-{conc}", latency_ms=lat, embed_latency_ms=0)
            if workers is None:
                wall, cpu = asyncio.run(run_local(data, base_url, conc, cap))
                conc_s, cap_s = str(conc), str(cap)
            else:
                wall, cpu = asyncio.run(run_ray(data, base_url, c, k, workers))
                conc_s, cap_s = f"{c} x {workers}", f"{k} x {workers}"
            st = mock.stats()
            calls = st.get("chat_calls", 0) / args.n
            ptok = st.get("prompt_tokens", 0) / args.n
            ctok = st.get("completion_tokens", 0) / args.n
            print(f"| {name} | {conc_s} | {cap_s} | {wall:.1f} | {args.n / wall:.1f} | {1000 * cpu / args.n:.0f} | "
                  f"{calls:.1f} | {ptok:,.0f} | {ctok:,.0f} |", flush=True)
    print("\n## Ray start-up: one sample per worker, 0 ms per call\n")
    print("| engine | wall s |\n|---|---|")
    mock.control(run="ray-startup", latency_ms=0, embed_latency_ms=0)
    for workers in (1, 2):
        wall, _ = asyncio.run(run_ray(rows(workers), base_url, c, k, workers))
        print(f"| Ray, {workers} worker{'s' if workers > 1 else ''} | {wall:.1f} |", flush=True)
    wall, _ = asyncio.run(run_local(rows(1), base_url, c, k))
    print(f"| in-process | {wall:.1f} |", flush=True)


if __name__ == "__main__":
    main()
