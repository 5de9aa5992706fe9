"""Figures for docs/testset.md: cost and acceptance of test-set generation with the embedded
judge, and the example target's speed.

    .venv/bin/python bench/testset_figures.py --size 10 --out-dir /tmp/testset-bench
    .venv/bin/python bench/testset_figures.py --size 10 --types multi_context=1 --no-run

Generates ``--size`` questions from the bundled handbook with the embedded judge (Qwen2.5-Coder
1.5B) as generator and critic, without a cache unless ``--store`` (so every call is made), then scales
calls, tokens and seconds to 100 accepted samples (linearly: each accepted sample costs the
candidates it took). Unless ``--no-run``, it then runs the example target (0.5B generator) over
the test set. The test set, rejected candidates and answers are written to ``--out-dir`` so
they can be read; multi-context rows are printed with the share of the reference's content words
found in each chunk, to help check by hand whether the answer needs both.
Timings depend on the machine and its load: report the cores and the load with the figures.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import sys
import time
from pathlib import Path

from ragsight.cli._testset import rejected_path, write_jsonl
from ragsight.judge import RetryPolicy, make_judge
from ragsight.testset import TestsetSettings, agenerate, arun, load_corpus, make_target
from ragsight.testset._filter import content_tokens, grounding
from ragsight.testset.example_target import handbook_path


def _per100(value: float, accepted: int) -> str:
    return f"{value * 100 / accepted:,.0f}" if accepted else "n/a"


async def main() -> int:
    ap = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    ap.add_argument("--size", type=int, default=10)
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--types", default=None, help="e.g. multi_context=1")
    ap.add_argument("--judge", default="local")
    ap.add_argument("--out-dir", default="testset-bench")
    ap.add_argument("--attempts", type=float, default=3.0, help="candidates per wanted question")
    ap.add_argument(
        "--store",
        help="keep the call cache here (a new file measures every call; "
        "a second run reads the cache)",
    )
    ap.add_argument("--no-run", action="store_true", help="skip running the example target")
    args = ap.parse_args()
    out = Path(args.out_dir)
    out.mkdir(parents=True, exist_ok=True)

    corpus = load_corpus(handbook_path())
    print(
        f"corpus: {len(corpus.doc_ids)} documents, {len(corpus.chunks)} chunks; "
        f"machine: {os.cpu_count()} cores, load {os.getloadavg()[0]:.1f}"
    )
    # no cache: every call is made; generous timeouts, since a loaded machine slows the model
    judge = make_judge(args.judge, policy=RetryPolicy(call_timeout_s=900, step_deadline_s=3000))
    store = None
    if args.store:
        from ragsight.store import SQLiteCallCache, Store

        store = Store(args.store)
        judge = judge.for_run(cache=SQLiteCallCache(store))
    settings = TestsetSettings(
        size=args.size,
        seed=args.seed,
        attempts=args.attempts,
        **({"types": args.types} if args.types else {}),
    )
    t0 = time.monotonic()
    result = await agenerate(
        corpus,
        judge,
        None,
        "local",
        settings,
        progress=lambda a, w, t: print(f"  {a}/{w} accepted after {t} candidates", file=sys.stderr),
    )
    gen_s = time.monotonic() - t0
    await judge.aclose()
    if store is not None:
        store.close()
    ts = out / "testset.jsonl"
    write_jsonl(result.rows, ts)
    write_jsonl(result.rejected, rejected_path(str(ts)))
    st = result.generator_stats
    n = len(result.rows)
    print(
        f"\naccepted {n} of {result.candidates} candidates "
        f"(acceptance {result.acceptance_rate or 0:.0%}); by type {result.by_type}"
    )
    print(f"rejected by reason: {result.rejected_by_reason}")
    for note in result.notes:
        print(f"note: {note}")
    print(
        f"judge calls {st['calls']} ({st['by_prompt']}), cache hits {st['cache_hits']}, prompt tokens {st['prompt_tokens']:,}, "
        f"completion tokens {st['completion_tokens']:,}, re-asks {st['reasks']}, "
        f"failed steps {st['failed_steps']}"
    )
    print(f"wall time {gen_s:.0f} s (judge time {st['latency_s']:.0f} s)")
    print(
        f"per 100 accepted samples (scaled from {n}): {_per100(st['calls'], n)} calls, "
        f"{_per100(st['prompt_tokens'] + st['completion_tokens'], n)} tokens, "
        f"{_per100(gen_s, n)} s"
    )

    multi = [r for r in result.rows if r["metadata"]["question_type"] == "multi_context"]
    if multi:
        print(
            f"\nmulti-context rows ({len(multi)}): read them; per chunk, the share of the "
            "reference's content words found in it"
        )
        for r in multi:
            _, _, per = grounding(r["reference"], r["reference_contexts"])
            total = len(set(content_tokens(r["reference"]))) or 1
            shares = ", ".join(f"{len(p) / total:.2f}" for p in per)
            print(
                f"- [{r['id']}] Q: {r['question']}\n  A: {r['reference']}\n  chunks "
                f"{r['relevant_ids']} shares [{shares}] shared {r['metadata'].get('shared_entities')}"
            )

    if not args.no_run and result.rows:
        target = make_target("ragsight.testset.example_target:answer")
        t1 = time.monotonic()
        run = await arun(result.rows, target, concurrency=1, timeout=600)
        run_s = time.monotonic() - t1
        write_jsonl(run.rows, out / "eval.jsonl")
        lat = sorted(r["metadata"]["latency_s"] for r in run.rows if not r["metadata"]["error"])
        print(
            f"\nexample target: {len(run.rows) - run.failed} answered, {run.failed} failed, "
            f"{run_s:.0f} s in all (first call loads the index and model); median latency "
            f"{lat[len(lat) // 2] if lat else float('nan'):.1f} s"
        )
        for r in run.rows[:3]:
            print(
                json.dumps(
                    {
                        "question": r["question"],
                        "response": r.get("response"),
                        "retrieved_ids": r.get("retrieved_ids"),
                        "relevant_ids": r.get("relevant_ids"),
                    },
                    ensure_ascii=False,
                )
            )
    print(f"\nfiles in {out}/")
    return 0


if __name__ == "__main__":
    sys.exit(asyncio.run(main()))
