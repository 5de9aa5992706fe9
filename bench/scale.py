"""A synthetic large run: 20,000 samples, seven metrics, the in-process engine, the kit's mock at
0 ms; killed part-way with SIGKILL, then resumed.

    nice .venv/bin/python bench/scale.py                      # 20,000 samples, killed at 12,000
    .venv/bin/python bench/scale.py --n 2000 --kill-at 1200   # a quick look

The samples are the kit's 20 airline samples (``shared/bench/airline_20.jsonl``) repeated, each
copy marked (" (case i)" in every text), so no text and no judge step is shared between copies:
nothing is cached, every sample costs its full judge work and its full store space. The judge is
the kit's OpenAI-compatible mock (``mock_openai.py``, run with ``--mock-python``), answering at
once; its request log goes to /dev/null. ragsight runs with its defaults (cache on, a store file,
the adaptive limit), in a child process, as ``ragsight evaluate`` would.

Printed, per 1,000 samples saved: the seconds they took, the child's resident memory and the
store's size; then what the kill cost (samples lost: only those in flight), the resume (seconds
until it evaluates again, and to the end), and checks: every sample scored once, the judge calls
of the killed run's samples not paid twice. The mock shares the 2 cores with the client, so the
seconds are the pair's, not ragsight's alone: the CPU seconds of the client are printed beside.
"""

from __future__ import annotations

import argparse
import json
import os
import signal
import sqlite3
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import _where
from _data import SEVEN, marked_copy, read_jsonl
from _machine import rss_mb

ROOT = Path(__file__).resolve().parents[1]
KIT = _where.kit()


def make_data(n: int, path: Path) -> None:
    base = read_jsonl(KIT / "airline_20.jsonl")
    with path.open("w", encoding="utf-8") as f:
        for i in range(n):
            f.write(json.dumps({**marked_copy(base[i % len(base)], i), "id": f"c{i:06d}"}) + "\n")


def store_bytes(path: str) -> int:
    return sum(os.path.getsize(p) for p in (path, path + "-wal") if os.path.exists(p))


# ---- the child: one evaluate() (a new run, or a resume), logging a line per 1,000 samples --------


def child(args: argparse.Namespace) -> None:
    import asyncio

    import ragsight
    from ragsight.engine import Progress

    with open(args.log, "a", buffering=1, encoding="utf-8") as log:
        t0, c0 = time.monotonic(), time.process_time()
        marks: dict[str, float | None] = {"first": None}

        def on_update(p: Progress) -> None:
            if marks["first"] is None:
                marks["first"] = time.monotonic() - t0
                log.write(json.dumps({"event": "first", "done": p.done, "s": marks["first"], "run": p.run_id}) + "\n")
            if p.done % args.every == 0 or p.done == p.total:
                log.write(json.dumps({"event": "mark", "done": p.done, "total": p.total, "s": time.monotonic() - t0,
                                      "cpu": time.process_time() - c0, "rss_mb": rss_mb(),
                                      "store": store_bytes(args.store), "run": p.run_id}) + "\n")

        progress = Progress(on_update=on_update)
        res = asyncio.run(ragsight.aevaluate(str(args.data) if not args.resume else None, SEVEN,
                                             embedder="openai:mock-embed", store=args.store,
                                             resume=args.resume,
                                             judge=ragsight.JudgeSpec("openai:mock", base_url=args.base_url),
                                             options=ragsight.RunOptions(progress=progress, preflight=False)))
        stats = res.judge_stats
        log.write(json.dumps({"event": "end", "status": res.status, "s": time.monotonic() - t0,
                              "cpu": time.process_time() - c0, "rss_mb": rss_mb(), "calls": stats.get("calls"),
                              "cache_hits": stats.get("cache_hits"), "run": res.run_id,
                              "samples": len(res.samples)}) + "\n")


# ---- the parent ------------------------------------------------------------------------------


def read_log(path: Path) -> list[dict[str, Any]]:
    if not path.exists():
        return []
    return read_jsonl(path)


def spawn(args: argparse.Namespace, data: Path, store: str, log: Path, base_url: str, resume: str | None) -> subprocess.Popen[bytes]:
    cmd = [sys.executable, __file__, "--child", "--data", str(data), "--store", store, "--log", str(log),
           "--base-url", base_url, "--every", str(args.every)]
    if resume:
        cmd += ["--resume", resume]
    return subprocess.Popen(cmd, env=dict(os.environ))


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--n", type=int, default=20_000)
    ap.add_argument("--kill-at", type=int, default=12_000, help="SIGKILL the run after this many samples (0: never)")
    ap.add_argument("--every", type=int, default=1000)
    ap.add_argument("--mock-python", default=str(ROOT / ".venv-ragas" / "bin" / "python"))
    ap.add_argument("--keep", default=None, help="a folder to keep the store and logs in")
    ap.add_argument("--child", action="store_true", help=argparse.SUPPRESS)
    ap.add_argument("--data", type=Path, help=argparse.SUPPRESS)
    ap.add_argument("--store", help=argparse.SUPPRESS)
    ap.add_argument("--log", help=argparse.SUPPRESS)
    ap.add_argument("--base-url", help=argparse.SUPPRESS)
    ap.add_argument("--resume", default=None, help=argparse.SUPPRESS)
    args = ap.parse_args()
    if args.child:
        child(args)
        return
    from _mock import started_mock  # in the parent only: the child's memory is measured

    work = Path(args.keep or tempfile.mkdtemp(prefix="ragsight-scale-"))
    work.mkdir(parents=True, exist_ok=True)
    logs = work / "mock-logs"
    logs.mkdir(exist_ok=True)
    os.environ["MOCK_LOG_DIR"] = str(logs)
    (logs / "scale.jsonl").unlink(missing_ok=True)
    (logs / "scale.jsonl").symlink_to("/dev/null")  # the mock logs every request in full
    data, store = work / "data.jsonl", str(work / "runs.db")
    for p in (store, store + "-wal", store + "-shm"):
        if os.path.exists(p):
            os.remove(p)
    make_data(args.n, data)
    with started_mock(KIT, args.mock_python) as mock:
        mock.control(run="scale", latency_ms=0, embed_latency_ms=0)
        base_url = mock.url + "/v1"
        log1, log2 = work / "run.log", work / "resume.log"
        for p in (log1, log2):
            p.unlink(missing_ok=True)
        print(f"{args.n:,} samples x 7 metrics, the in-process engine, the kit's mock at 0 ms; load average "
              f"{os.getloadavg()[0]:.1f} on {os.cpu_count()} CPUs; work folder {work}", flush=True)
        proc = spawn(args, data, store, log1, base_url, None)
        killed_at = None
        while proc.poll() is None:
            time.sleep(0.5)
            if args.kill_at and killed_at is None:
                done = _finished(store)
                if done >= args.kill_at:
                    proc.send_signal(signal.SIGKILL)
                    proc.wait()
                    killed_at = _finished(store)
        run_log = read_log(log1)
        run_id = next(e["run"] for e in run_log if e.get("run"))
        resume_log: list[dict[str, Any]] = []
        calls_before = mock.stats().get("chat_calls", 0)
        t_resume = None
        if killed_at is not None:
            t0 = time.monotonic()
            proc = spawn(args, data, store, log2, base_url, run_id)
            proc.wait()
            t_resume = time.monotonic() - t0
            resume_log = read_log(log2)
        report(args, run_log, resume_log, killed_at, t_resume, store, mock.stats().get("chat_calls", 0) - calls_before)


def _finished(store: str) -> int:
    try:
        con = sqlite3.connect(f"file:{store}?mode=ro", uri=True, timeout=5)
        try:
            return int(con.execute("SELECT COUNT(*) FROM samples WHERE finished=1").fetchone()[0])
        finally:
            con.close()
    except sqlite3.Error:
        return 0


def report(args: argparse.Namespace, run_log: list[dict[str, Any]], resume_log: list[dict[str, Any]],
           killed_at: int | None, t_resume: float | None, store: str, resume_calls: int) -> None:
    marks = [e for e in run_log if e["event"] == "mark"]
    rmarks = [e for e in resume_log if e["event"] == "mark"]
    print("\n| samples saved | s for these 1,000 | client CPU s | client RSS MB | store MB | store kB/sample |")
    print("|---|---|---|---|---|---|")
    prev_s, prev_cpu, prev_done = 0.0, 0.0, 0
    rows = [(m, "run") for m in marks] + [(m, "resume") for m in rmarks]
    offset_s = offset_cpu = 0.0
    for i, (m, part) in enumerate(rows):
        if part == "resume" and (i == 0 or rows[i - 1][1] == "run"):
            prev_s = prev_cpu = 0.0  # the resumed process's clock starts at 0
            prev_done = killed_at or 0
            first = next((e for e in resume_log if e["event"] == "first"), None)
            print(f"| (killed at {killed_at:,}; resumed: first sample saved after "
                  f"{first['s'] if first else float('nan'):.1f} s) | | | | | |")
        n = m["done"] - prev_done
        if n <= 0:
            continue
        print(f"| {m['done']:,} | {(m['s'] - prev_s) * 1000 / n:.1f} | {(m['cpu'] - prev_cpu) * 1000 / n:.1f} | "
              f"{m['rss_mb']:.0f} | {m['store'] / 1e6:.1f} | {m['store'] / m['done'] / 1e3:.1f} |")
        prev_s, prev_cpu, prev_done = m["s"], m["cpu"], m["done"]
    del offset_s, offset_cpu
    end = next((e for e in resume_log or run_log if e["event"] == "end"), None)
    con = sqlite3.connect(store)
    n_scores = con.execute("SELECT COUNT(*) FROM scores").fetchone()[0]
    n_finished = con.execute("SELECT COUNT(*) FROM samples WHERE finished=1").fetchone()[0]
    dup = con.execute("SELECT COUNT(*) FROM (SELECT sample_id, step, attempt, cached FROM judge_calls"
                      " GROUP BY sample_id, step, attempt, cached HAVING COUNT(*) > 1)").fetchone()[0]
    con.execute("PRAGMA wal_checkpoint(TRUNCATE)")
    size = os.path.getsize(store)
    con.close()
    print(f"\nfinal: {n_finished:,} samples finished, {n_scores:,} scores ({7 * args.n:,} expected), "
          f"{dup} duplicated calls; store {size / 1e6:.1f} MB = {size / args.n / 1e3:.1f} kB per sample")
    if end:
        print(f"the {'resumed' if resume_log else ''} process: {end['s']:.0f} s, {end['cpu']:.0f} s CPU, "
              f"peak RSS {end['rss_mb']:.0f} MB at the end, {end['calls']} judge calls, {end['cache_hits']} cache hits")
    if killed_at is not None and t_resume is not None:
        done_before = killed_at
        print(f"kill: SIGKILL with {killed_at:,} samples saved; resume: {args.n - done_before:,} samples left, "
              f"{t_resume:.0f} s in all, {resume_calls:,} chat calls to the mock "
              f"({resume_calls / max(1, args.n - done_before):.1f} per sample left)")


if __name__ == "__main__":
    main()
