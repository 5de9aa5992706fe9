"""What each kind of judge fault costs: outcomes, extra calls per sample, wall time.

    .venv/bin/python bench/faults.py                 # both parts
    .venv/bin/python bench/faults.py --part world    # the fault kinds, on the test suite's fake server
    .venv/bin/python bench/faults.py --part mock     # the shared mock's broken modes, beside ragas

Part "world": ``ragsight.evaluate`` over real HTTP against the test suite's FakeOpenAIServer with
the judge world of ``tests/reliability/world.py`` (schema-valid answers computed from each
request), 20 samples, the four core metrics (faithfulness, answer_relevancy, context_precision,
context_recall), 20% of the judge's answers broken in one way per row (and all ways mixed), seed 0.
Each row sums three seeds (``--seeds``); a warm-up run comes first. Retry policy: 4 attempts per
call, 3 re-asks per step, backoff 0.05 s doubling to 0.5 s, 2 s per call, 30 s per step; 429
Retry-After: 1 is honoured up to 1.5 s (3 x the backoff cap). "extra calls / sample" is
(calls - calls of the clean run) / samples.

Part "mock": the shared kit's ``mock_openai.py`` (run with ``--python``, default
``.venv-ragas/bin/python``, which needs aiohttp and tiktoken), ``airline_20.jsonl``, the seven
metrics of the ragas baseline (140 scores), broken_rate 0.2 with its two kinds (``truncate``: the
JSON cut in half with trailing garbage; ``refusal``: prose). The mock repeats one fixed question
for every ``generate_questions`` request; a shim makes them distinct, as a real judge's are (the
shim leaves broken outputs alone). Printed beside ragas 0.4.3 on the same kit (bench README):
11-28% more calls, 18 of 140 scores NaN.
"""

from __future__ import annotations

import argparse
import os
import sys
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))  # tests.fakes and tests.reliability.world

import _where  # noqa: E402
from _data import CORE4, SEVEN  # noqa: E402
from _mock import Mock, started_mock  # noqa: E402
from _providers import DistinctQuestions  # noqa: E402

import ragsight  # noqa: E402
from ragsight import Outcome  # noqa: E402
from ragsight.judge import Judge, RetryPolicy  # noqa: E402

POLICY = RetryPolicy(max_attempts=4, max_reasks=3, backoff_base_s=0.05, backoff_max_s=0.5,
                     call_timeout_s=2.0, step_deadline_s=30.0)
KIT = _where.kit()


def outcome_counts(result: Any) -> dict[str, int]:
    counts = {o.value: 0 for o in Outcome}
    for per in result.scores.values():
        for s in per.values():
            counts[s.outcome.value] += 1
    return counts


# ---- part 1: every fault kind on the fake server ---------------------------------------------------


def run_world(rate: float, faults: Sequence[str], n: int, seed: int) -> dict[str, Any]:
    import tests.fakes.openai_server as fake_server
    from tests.fakes import FakeOpenAIServer
    from tests.reliability.world import JudgeWorld, make_samples

    fake_server._Server.request_queue_size = 128  # see tests/reliability/conftest.py
    world = JudgeWorld(fault_rate=rate, faults=faults, seed=seed)
    with FakeOpenAIServer(handler=world) as srv:
        t0 = time.monotonic()
        result = ragsight.evaluate(make_samples(n), CORE4, embedder="openai:e",
                                   judge=ragsight.JudgeSpec("openai:m", base_url=srv.url),
                                   options=ragsight.RunOptions(policy=POLICY, cache=False))
        wall = time.monotonic() - t0
    return {"outcomes": outcome_counts(result), "calls": result.judge_stats["calls"],
            "retries": result.judge_stats["retries"], "reasks": result.judge_stats["reasks"],
            "injected": sum(world.injected.values()), "wall": wall}


def part_world(n: int, rate: float, seeds: Sequence[int]) -> list[dict[str, Any]]:
    from tests.reliability.world import FAULT_KINDS

    run_world(0.0, (), 2, 0)  # warm-up: lazy imports and the first connections are not measured

    def summed(faults: Sequence[str], r: float) -> dict[str, Any]:
        runs = [run_world(r, faults, n, seed) for seed in seeds]
        out: dict[str, Any] = {k: sum(x[k] for x in runs) for k in ("calls", "retries", "reasks", "injected", "wall")}
        out["outcomes"] = {o: sum(x["outcomes"][o] for x in runs) for o in runs[0]["outcomes"]}
        return out

    clean = summed((), 0.0)
    rows = [{"kind": "none (clean)", **clean}]
    for kind in [*FAULT_KINDS, "all mixed"]:
        faults = FAULT_KINDS if kind == "all mixed" else (kind,)
        rows.append({"kind": kind, **summed(faults, rate)})
    runs = len(seeds)
    print(f"\nJudge faults: {n} samples x {len(CORE4)} metrics x {runs} seeds ({n * len(CORE4) * runs} scores per row), "
          f"{int(rate * 100)}% of judge answers broken, fake server on 127.0.0.1")
    print(f"{'fault':22s} {'broken':>6s} {'scored':>6s} {'failed':>6s} {'calls':>6s} {'extra/sample':>12s} "
          f"{'extra %':>7s} {'retries':>7s} {'re-asks':>7s} {'wall s/run':>10s}")
    for r in rows:
        extra = (r["calls"] - clean["calls"]) / (n * runs)
        pct = 100.0 * (r["calls"] - clean["calls"]) / clean["calls"]
        o = r["outcomes"]
        print(f"{r['kind']:22s} {r['injected']:>6d} {o['scored']:>6d} {o['failed']:>6d} {r['calls']:>6d} "
              f"{extra:>12.2f} {pct:>6.1f}% {r['retries']:>7d} {r['reasks']:>7d} {r['wall'] / runs:>10.2f}")
    return rows


# ---- part 2: the shared mock's broken modes ----------------------------------------------------------


def run_mock_once(mock: Mock, rate: float, kind: str, seed: int) -> dict[str, Any]:
    from ragsight.judge._openai import OpenAIProvider

    url = mock.url
    mock.control(run=f"faults-{kind}-{rate}-{seed}", latency_ms=0, embed_latency_ms=0,
                 broken_rate=rate, broken_kind=kind, seed=seed)
    provider: Any = DistinctQuestions(OpenAIProvider("gpt-4o-mini", base_url=url + "/v1", timeout=30))
    judge = Judge(provider, policy=POLICY)
    t0 = time.monotonic()
    result = ragsight.evaluate(str(KIT / "airline_20.jsonl"), SEVEN, embedder="openai:text-embedding-3-small",
                               judge=ragsight.JudgeSpec(judge, base_url=url + "/v1"),
                               options=ragsight.RunOptions(cache=False))
    wall = time.monotonic() - t0
    st = mock.stats()
    return {"outcomes": outcome_counts(result), "calls": result.judge_stats["calls"],
            "server_calls": st.get("chat_calls"), "broken": st.get("broken"),
            "reasks": result.judge_stats["reasks"], "wall": wall, "n": len(result.samples)}


def part_mock(python: Path, rate: float, seeds: Sequence[int]) -> list[dict[str, Any]]:
    rows = []
    with started_mock(KIT, python, tiktoken_dir=str(KIT / "tiktoken_cache")) as mock:
        clean = run_mock_once(mock, 0.0, "truncate", 0)
        rows.append({"kind": "none (clean)", "seed": 0, **clean})
        for kind in ("truncate", "refusal"):
            for seed in seeds:
                rows.append({"kind": kind, "seed": seed, **run_mock_once(mock, rate, kind, seed)})
    n = clean["n"]
    total = n * len(SEVEN)
    print(f"\nShared mock ({KIT / 'mock_openai.py'}), airline_20, {len(SEVEN)} metrics = {total} scores, "
          f"broken_rate {rate}")
    print(f"{'broken kind':14s} {'seed':>4s} {'broken':>6s} {'calls':>6s} {'extra/sample':>12s} {'extra %':>7s} "
          f"{'scored':>6s} {'undet.':>6s} {'failed':>6s} {'lost %':>6s} {'wall s':>7s}")
    for r in rows:
        o = r["outcomes"]
        extra = (r["calls"] - clean["calls"]) / n
        pct = 100.0 * (r["calls"] - clean["calls"]) / clean["calls"]
        print(f"{r['kind']:14s} {r['seed']:>4d} {r['broken'] or 0:>6d} {r['calls']:>6d} {extra:>12.2f} "
              f"{pct:>6.1f}% {o['scored']:>6d} {o['undetermined']:>6d} {o['failed']:>6d} "
              f"{100.0 * o['failed'] / total:>5.1f}% {r['wall']:>7.2f}")
    print("ragas 0.4.3 on the same kit, broken_rate 0.2 (bench README): 11-28% more calls, "
          "18 of 140 scores NaN (12.9%), some truncated JSON repaired into shorter claim lists.")
    return rows


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--part", choices=["world", "mock", "both"], default="both")
    ap.add_argument("--samples", type=int, default=20)
    ap.add_argument("--rate", type=float, default=0.2)
    ap.add_argument("--seeds", default="0,1,2", help="seeds of the fake server's faults (part world)")
    ap.add_argument("--mock-seeds", default="0,1,2", help="seeds of the mock's broken outputs")
    ap.add_argument("--python", default=str(ROOT / ".venv-ragas" / "bin" / "python"),
                    help="a python with aiohttp and tiktoken, to run the shared mock")
    args = ap.parse_args()
    for name in ("OPENAI_API_KEY", "OPENAI_BASE_URL", "HTTP_PROXY", "HTTPS_PROXY", "http_proxy", "https_proxy"):
        os.environ.pop(name, None)
    if args.part in ("world", "both"):
        part_world(args.samples, args.rate, [int(x) for x in args.seeds.split(",")])
    if args.part in ("mock", "both"):
        part_mock(Path(args.python), args.rate, [int(s) for s in args.mock_seeds.split(",")])


if __name__ == "__main__":
    main()
