"""Soak: faults at 20% of calls, random kill -9 and resume, until 200 samples are done.

    .venv/bin/python bench/soak.py                       # 200 samples, 10 kills, 20% faults
    .venv/bin/python bench/soak.py --samples 60 --kills 4 --seed 3

The judge and the embedder are the test suite's fake OpenAI-compatible server on 127.0.0.1
(``tests/fakes/openai_server.py``) with its judge world (``tests/reliability/world.py``). A fifth
of all requests, judge and embeddings alike, get a fault drawn from every kind the reliability
suite knows (``ALL_FAULTS``): malformed, cut-off (by length, at a list item), prose and
wrong-count answers; HTTP 429 (with and without Retry-After), 500, 502, 503; reset connections;
servers that hang or trickle; a good answer that echoes the API key in its content and its model
field; an answer larger than the 8 MiB the judge reads; and, for embeddings, NaN values, base64
float32 holding an infinity, all-zero vectors and values beyond float32.

``ragsight evaluate`` runs as a real process (five metrics: faithfulness, answer_relevancy,
context_precision, context_recall, answer_similarity; --timeout 2) with a planted key without the
``sk-`` prefix. It is killed with SIGKILL ``--kills`` times, each after a random number of
further samples finished (spread over the run), and resumed with ``--resume last`` each time,
then resumed to the end; the run is exported to JSONL and CSV and
two samples are shown with their judge calls. Then it prints:

- lost: input samples without a finished record and every metric's score;
- duplicated: judge-call rows saved twice (same sample, step, attempt and start time) and extra
  score rows (a sample with a failed score asked again on a resume is counted apart: its first
  attempt's calls stay in its trail);
- NaN: non-finite score values, and bare NaN/Infinity tokens in the store's JSON columns and
  the exports;
- failed: the share of (sample, metric) pairs that ended failed;
- leaked: places holding the key, or 12 characters of it, or its bearer form (the SQLite file
  and its WAL, the exports, everything the processes printed).

Must be 0, 0, 0, <= 1%, 0. The exit status is 1 when one is not.
"""

from __future__ import annotations

import argparse
import json
import os
import random
import signal
import sqlite3
import subprocess
import sys
import tempfile
import time
from collections import Counter
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))  # tests.fakes and tests.reliability.world

from tests.fakes import FakeOpenAIServer  # noqa: E402
from tests.reliability.world import ALL_FAULTS, JudgeWorld, make_samples  # noqa: E402

from ragsight import Store  # noqa: E402

KEY = "soakSECRETkey7f3a1c9e5b2d8046f1e3"  # 33 characters, no "sk-" prefix
NEEDLES = (KEY, KEY[:12], KEY[-12:], KEY[10:22], f"Bearer {KEY}")
METRICS = ["faithfulness", "answer_relevancy", "context_precision", "context_recall", "answer_similarity"]


def leaks(data: bytes) -> list[str]:
    return [n for n in NEEDLES if n.encode() in data]


def query(path: Path, sql: str) -> list[tuple[Any, ...]]:
    conn = sqlite3.connect(path, timeout=30)
    try:
        return conn.execute(sql).fetchall()
    except sqlite3.OperationalError:
        return []
    finally:
        conn.close()


def finished_count(store: Path) -> int:
    done = query(store, "SELECT COUNT(*) FROM samples WHERE finished=1") if store.exists() else []
    return int(done[0][0]) if done else 0


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--samples", type=int, default=200)
    ap.add_argument("--kills", type=int, default=10)
    ap.add_argument("--fault-rate", type=float, default=0.2)
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--keep", help="keep the store and exports in this folder")
    args = ap.parse_args(argv)

    rng = random.Random(args.seed)
    work = Path(args.keep) if args.keep else Path(tempfile.mkdtemp(prefix="ragsight-soak-"))
    work.mkdir(parents=True, exist_ok=True)
    data = work / "data.jsonl"
    data.write_text("".join(json.dumps(r) + "\n" for r in make_samples(args.samples, seed=args.seed)),
                    encoding="utf-8")
    store = work / "soak.db"
    env = {k: v for k, v in os.environ.items()
           if k not in ("OPENAI_API_KEY", "OPENAI_BASE_URL", "RAGSIGHT_STORE") and "proxy" not in k.lower()}
    env["OPENAI_API_KEY"] = KEY
    env["PYTHONUNBUFFERED"] = "1"
    world = JudgeWorld(fault_rate=args.fault_rate, faults=ALL_FAULTS, seed=args.seed)
    printed: list[bytes] = []
    kills: list[dict[str, Any]] = []
    processes = 0
    t0 = time.monotonic()
    with FakeOpenAIServer(handler=world) as srv:
        common = ["--base-url", srv.url, "--store", str(store), "--quiet", "--timeout", "2",
                  "--out", str(work / "out.jsonl")]
        while True:
            resume = bool(query(store, "SELECT id FROM runs")) if store.exists() else False
            cmd = [sys.executable, "-m", "ragsight.cli", "evaluate"]
            cmd += ["--resume", "last"] if resume else [str(data), "--metrics", ",".join(METRICS),
                                                         "--judge", "openai:m", "--embedder", "openai:e"]
            proc = subprocess.Popen([*cmd, *common], env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
            processes += 1
            killed = False
            if len(kills) < args.kills:
                # Kill once the process has finished a random number of further samples (spread
                # over the run: on average the run divided by kills + 1), a random fraction of a
                # second later; a fixed 0.8-3.5 s after the start would hit a large run's start-up
                # (loading, the preflight) every time and never its middle.
                before = finished_count(store)
                target = min(args.samples - 1, before + rng.randint(1, max(1, 2 * args.samples // (args.kills + 1))))
                lag = rng.uniform(0.0, 0.5)
                deadline = time.monotonic() + 900
                while time.monotonic() < deadline and proc.poll() is None:
                    if finished_count(store) >= target:
                        time.sleep(lag)
                        break
                    time.sleep(0.1)
                if proc.poll() is None:
                    proc.send_signal(signal.SIGKILL)
                    killed = True
            out, err = proc.communicate(timeout=1800)
            printed += [out, err]
            if killed:
                kills.append({"finished": finished_count(store)})
                continue
            if proc.returncode != 0:
                text = err.decode(errors="replace")
                print(text if len(text) <= 6000 else text[:2000] + "\n[...]\n" + text[-4000:], file=sys.stderr)
                print(f"the final process exited {proc.returncode}", file=sys.stderr)
                return 1
            break
        elapsed = time.monotonic() - t0
        run_id = query(store, "SELECT id FROM runs")[0][0]
        for args_ in (["export", run_id, "--format", "jsonl", "--out", str(work / "export.jsonl")],
                      ["export", run_id, "--format", "csv", "--out", str(work / "export.csv")],
                      ["show", run_id, "--sample", "s000", "--calls"],
                      ["show", run_id, "--sample", "s001", "--calls"]):
            done_ = subprocess.run([sys.executable, "-m", "ragsight.cli", *args_, "--store", str(store)],
                                   env=env, capture_output=True, timeout=600)
            printed += [done_.stdout, done_.stderr]
            if done_.returncode != 0:
                print(done_.stderr.decode(errors="replace"), file=sys.stderr)
                return 1
        requests = len(srv.requests)

    # -- the figures --------------------------------------------------------------------------
    n_metrics = len(METRICS)
    finished = {r[0] for r in query(store, "SELECT sample_id FROM samples WHERE finished=1")}
    score_rows = query(store, "SELECT sample_id, metric, outcome, value FROM scores")
    per_sample = Counter(r[0] for r in score_rows)
    ids = [json.loads(line)["id"] for line in data.read_text(encoding="utf-8").splitlines()]
    lost = [i for i in ids if i not in finished or per_sample[i] != n_metrics]
    # A call row saved twice has the same sample, step, attempt and start time. The same step and
    # attempt started at another time is a sample asked again: --resume asks a sample with a
    # failed score again, and the first attempt's calls (paid for) stay in its trail.
    dup_calls = query(store, "SELECT COUNT(*) FROM (SELECT sample_id, step, attempt, started_at FROM judge_calls"
                             " GROUP BY sample_id, step, attempt, started_at HAVING COUNT(*) > 1)")[0][0]
    retried = query(store, "SELECT COUNT(DISTINCT sample_id) FROM (SELECT sample_id FROM judge_calls"
                           " GROUP BY sample_id, step, attempt HAVING COUNT(DISTINCT started_at) > 1)")[0][0]
    duplicated = dup_calls + max(0, len(score_rows) - len(ids) * n_metrics)
    bad_values = [r for r in score_rows if r[3] is not None and (r[3] != r[3] or abs(r[3]) == float("inf"))]
    tokens = 0
    with Store(store) as st:  # a score's evidence is a text id in the compact store: read the text
        columns: dict[tuple[str, str], list[Any]] = {}
        for col, table in (("evidence", "scores"), ("parsed", "judge_calls"), ("stats", "runs"),
                           ("entry", "cache"), ("config", "runs")):
            got = [v for (v,) in query(store, f"SELECT {col} FROM {table}")]
            packed = st.texts.get_many(v for v in got if isinstance(v, int))
            columns[(col, table)] = [packed[v] if isinstance(v, int) else v for v in got]
    for texts in columns.values():
        for text in texts:
            if text and any(t in text for t in ("NaN", "Infinity")):
                try:
                    json.loads(text, parse_constant=lambda c: (_ for _ in ()).throw(ValueError(c)))
                except ValueError:
                    tokens += 1
    for name in ("export.jsonl", "out.jsonl"):
        for line in (work / name).read_text(encoding="utf-8").splitlines():
            try:
                json.loads(line, parse_constant=lambda c: (_ for _ in ()).throw(ValueError(c)))
            except ValueError:
                tokens += 1
    nan = len(bad_values) + tokens
    outcomes = Counter(r[2] for r in score_rows)
    failed_share = outcomes["failed"] / max(1, len(score_rows))
    leaked_in: list[str] = []
    for path in sorted(work.iterdir()):
        if path.is_file() and leaks(path.read_bytes()):
            leaked_in.append(path.name)
    leaked_in += [f"output of process {i // 2}" for i, blob in enumerate(printed) if leaks(blob)]
    stats = json.loads(query(store, "SELECT stats FROM runs")[0][0] or "{}")
    fail_reasons = Counter(r[0] for r in query(store, "SELECT reason FROM scores WHERE outcome='failed'"))

    print(f"soak: {args.samples} samples x {n_metrics} metrics, faults at {args.fault_rate:.0%} of "
          f"{requests} requests ({sum(world.injected.values())} injected: "
          f"{', '.join(f'{k} {v}' for k, v in sorted(world.injected.items()))})")
    print(f"      {len(kills)} kills (finished samples at each: {[k['finished'] for k in kills]}), "
          f"{processes} processes, {elapsed:.0f} s; run stats: {stats.get('calls')} calls, "
          f"{stats.get('retries')} retries, {stats.get('reasks')} re-asks, "
          f"{stats.get('answers_too_large')} answers too large")
    print(f"lost {len(lost)}, duplicated {duplicated}, NaN {nan}, "
          f"failed {outcomes['failed']} of {len(score_rows)} ({failed_share:.2%}), leaked {len(leaked_in)}")
    print(f"      asked again on a resume (a failed score; the first attempt's calls kept): {retried} samples")
    for reason, n in fail_reasons.most_common(5):
        print(f"  failed x{n}: {reason[:160]}")
    if leaked_in:
        print(f"  the key was found in: {', '.join(leaked_in)}")
    if lost:
        print(f"  lost samples: {lost[:10]}")
    ok = not lost and duplicated == 0 and nan == 0 and failed_share <= 0.01 and not leaked_in
    print("PASS" if ok else "FAIL", f"(work folder {work})")
    return 0 if ok else 1


if __name__ == "__main__":
    raise SystemExit(main())
