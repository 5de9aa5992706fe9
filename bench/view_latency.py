"""The viewer's latency on a large store: page, filter and search times of ``ragsight view``.

    .venv/bin/python bench/view_latency.py                      # 20,000 samples (built once, kept)
    .venv/bin/python bench/view_latency.py --n 2000 --store /tmp/v2k.db

The store holds two runs of ``--n`` samples each, built once and reused: the bench kit's 20
airline samples repeated and marked (``bench/scale.py``'s ``make_data``: no two samples share a
text), evaluated with a scripted judge (``tests/fakes/scripted_world.py``: claims are sentences,
verdicts a hash), three metrics; the second run holds the same samples with the first run's
scores moved at random (seeded), written through the store's API. Then ``ragsight view``
starts on the store as a person starts it (a process of its own, ``--port 0``, a fresh search
index), and each request is timed from this process over HTTP on 127.0.0.1: the median and the
worst of ``--repeat`` tries, and the viewer process's CPU time per request (which a machine
shared with other work does not inflate as it inflates the wall time), after the first request
of a run page, which reads the run's scores
and is timed on its own (as is the first search, which builds the run's full-text index, and the
first comparison). Pages: the runs page, a run page (first page, page 200), filters (metric and
outcome; score range; label queue), sorts, a sample page, searches, a comparison of the two runs.
With ``--screenshots DIR`` the bench also saves PNGs of the pages (headless Chromium).
"""

from __future__ import annotations

import argparse
import os
import re
import signal
import statistics
import subprocess
import sys
import tempfile
import time
import urllib.request
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path[:0] = [str(ROOT / "bench"), str(ROOT)]

from scale import make_data  # noqa: E402
from tests.fakes.scripted_world import METRICS, provider  # noqa: E402


def build(store: Path, n: int) -> list[str]:
    """The ids of two finished runs of ``n`` samples in ``store`` (oldest first), made now when
    missing: the first evaluated with the scripted judge, the second written through the store's
    API with the first run's samples and scores moved by a seeded amount (the comparison reads
    scores only, and evaluating 20,000 samples again would cost minutes)."""
    import ragsight
    from ragsight.store import Store

    with Store(store) as s:
        counts = s.sample_counts()
        found = [i.id for i in sorted(s.runs(), key=lambda r: r.created_at)
                 if i.status == "completed" and counts.get(i.id, (0, 0))[1] == n]
    if found:
        print(f"reusing run(s) of {n:,} samples in {store}: {', '.join(found[:2])}")
    else:
        with tempfile.TemporaryDirectory() as tmp:
            data = Path(tmp) / "data.jsonl"
            make_data(n, data)
            t0 = time.perf_counter()
            result = ragsight.evaluate(str(data), METRICS, judge=provider(), store=str(store),
                                       options=ragsight.RunOptions(concurrency=32, cache=False))
            print(f"evaluated run {result.run_id}: {n:,} samples in {time.perf_counter() - t0:.0f} s")
            found.append(result.run_id)
    if len(found) < 2:
        t0 = time.perf_counter()
        found.append(derived_run(store, found[0]))
        print(f"wrote run {found[1]} (moved scores) in {time.perf_counter() - t0:.0f} s")
    return found[:2]


def derived_run(path: Path, base: str) -> str:
    import random

    from ragsight import Outcome, Score
    from ragsight.store import Store

    rng = random.Random(0)
    run_id = base + "-moved"
    with Store(path) as store:
        info = store.run(base)
        samples = store.samples(base)
        store.create_run(run_id, dataset=info.dataset, judge=(info.judge or "") + " (moved)", embedder=info.embedder,
                         metrics=info.metrics, config=info.config, metadata={"variant": "moved"}, samples=samples)
        rows: dict[str, list[Score]] = {}
        for sid, metric, outcome, value, reason in store.score_rows(base):
            if outcome == "scored" and value is not None:
                moved = min(1.0, max(0.0, value + rng.choice((0.0, 0.0, 0.0, 0.25, -0.25))))
                rows.setdefault(sid, []).append(Score.scored(metric, moved, reason))
            else:
                rows.setdefault(sid, []).append(Score(metric, Outcome(outcome), None, reason))
        for s in samples:
            store.save_sample(run_id, s.id, rows.get(s.id, []), [])
        store.finish_run(run_id, "completed", {"calls": 0})
    return run_id


def fetch(url: str) -> tuple[float, int, str]:
    t0 = time.perf_counter()
    with urllib.request.urlopen(url, timeout=300) as r:
        body = r.read().decode()
        return time.perf_counter() - t0, r.status, body


def start_viewer(store: Path, index: Path) -> tuple[subprocess.Popen[str], str, float]:
    env = {**os.environ, "PYTHONPATH": str(ROOT / "src") + os.pathsep + os.environ.get("PYTHONPATH", "")}
    t0 = time.perf_counter()
    proc = subprocess.Popen([sys.executable, "-m", "ragsight.cli", "view", "--store", str(store), "--port", "0",
                             "--index", str(index)], stdout=subprocess.PIPE, text=True, env=env)
    assert proc.stdout is not None
    for line in proc.stdout:
        m = re.match(r"open (http://\S+)", line)
        if m:
            return proc, m.group(1), time.perf_counter() - t0
    raise SystemExit(f"ragsight view did not start (exit {proc.wait()})")


def cpu_s(pid: int) -> float:
    """User + system CPU seconds of a process so far (Linux /proc)."""
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--n", type=int, default=20_000)
    ap.add_argument("--store", type=Path, help="the store to build or reuse (default: a file in the temp folder)")
    ap.add_argument("--repeat", type=int, default=7)
    ap.add_argument("--screenshots", type=Path, help="save PNGs of the pages in this folder")
    args = ap.parse_args()
    store = args.store or Path(tempfile.gettempdir()) / f"ragsight-view-bench-{args.n}.db"
    run_a, run_b = build(store, args.n)

    with tempfile.TemporaryDirectory() as tmp:
        proc, base, started = start_viewer(store, Path(tmp) / "search-index")
        try:
            print(f"ragsight view started in {started:.2f} s ({cpu_s(proc.pid):.2f} s of CPU) on {store} "
                  f"({store.stat().st_size / 1e6:.0f} MB)")
            cpu0 = cpu_s(proc.pid)
            first, _, page = fetch(base + f"run/{run_a}")
            print(f"{'first run page (reads the run, starts indexing)':<52} {first * 1000:8.0f} ms"
                  f"  ({(cpu_s(proc.pid) - cpu0) * 1000:.0f} ms of CPU, indexing included so far)")
            sid = re.findall(r'/sample/([^"?]+)', page)[7]
            cases = [
                ("runs page", ""),
                ("run page 1", f"run/{run_a}"),
                ("run page 200", f"run/{run_a}?page=200"),
                ("filter: metric + outcome", f"run/{run_a}?metric=faithfulness&outcome=scored"),
                ("filter: score range 0.4-0.6", f"run/{run_a}?metric=faithfulness&low=0.4&high=0.6"),
                ("sort: value, lowest first", f"run/{run_a}?metric=context_recall&sort=asc"),
                ("sort + range, page 20", f"run/{run_a}?metric=context_precision&low=0.2&high=0.9&sort=desc&page=20"),
                ("label queue (informative, unlabelled)", f"run/{run_a}?sort=informative&labels=unlabelled"),
                ("sample page (evidence, judge calls)", f"run/{run_a}/sample/{sid}"),
            ]
            searches = [
                ("search: one rare word", f"run/{run_a}?q=12345"),
                ("search: common word (most samples)", f"run/{run_a}?q=baggage"),
                ("search: phrase + filter", f"run/{run_a}?q=%22checked+bag%22&metric=faithfulness&low=0.5"),
                ("search: prefix", f"run/{run_a}?q=refu"),
            ]
            # the first search waits for the index (built from the first run page on, in the background)
            t_first, _, _ = fetch(base + searches[0][1])
            print(f"{'first search (waits for / builds the index)':<52} {t_first * 1000:8.0f} ms")
            t0 = time.perf_counter()
            polls = 0
            while True:  # the page answers "computing" (and reloads) until compare() is done
                _, _, cmp_page = fetch(base + f"compare?run={run_a}&run={run_b}")
                polls += 1
                if 'id="paired"' in cmp_page:
                    break
                assert 'id="computing"' in cmp_page, cmp_page[:2000]
                time.sleep(2)
            m = re.search(r"computed in (\d+) ms", cmp_page)
            print(f"{'first comparison of the two runs (compare())':<52} {(time.perf_counter() - t0) * 1000:8.0f} ms"
                  f"  ({polls} polls; compare() itself {m.group(1) if m else '?'} ms)")
            fetch(base + f"run/{run_b}")
            cases.append(("comparison (cached)", f"compare?run={run_a}&run={run_b}"))
            print(f"{'request':<46} {'median':>7} {'worst':>7} {'CPU':>6}  (ms; {args.repeat} tries; CPU: the "
                  "viewer's, per request)")
            worst_all = 0.0
            for name, path in cases + searches:
                times = []
                cpu0 = cpu_s(proc.pid)
                for _ in range(args.repeat):
                    took, status, body = fetch(base + path)
                    assert status == 200
                    times.append(took)
                cpu = (cpu_s(proc.pid) - cpu0) / args.repeat
                m = re.search(r"<b>([\d,]+) of ([\d,]+) samples", body)
                what = f"  {m.group(1)} of {m.group(2)}" if m else ""
                worst_all = max(worst_all, max(times))
                print(f"{name:<46} {statistics.median(times) * 1000:7.0f} {max(times) * 1000:7.0f} {cpu * 1000:6.0f}{what}")
            print(f"worst of all timed requests: {worst_all * 1000:.0f} ms; load average during the run: "
                  f"{os.getloadavg()[0]:.1f} on {os.cpu_count()} cores")
            if args.screenshots:
                shots(base, run_a, run_b, sid, args.screenshots)
        finally:
            proc.send_signal(signal.SIGINT)
            proc.wait(timeout=30)


def shots(base: str, run_a: str, run_b: str, sid: str, folder: Path) -> None:
    from tests.cdp import Browser

    folder.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory() as tmp, Browser(Path(tmp), "/usr/bin/chromium", 1280, 900) as b:
        for name, path in (("view-20k-run", f"run/{run_a}?metric=faithfulness&low=0.4&high=0.6&sort=asc"),
                           ("view-20k-queue", f"run/{run_a}?sort=informative&labels=unlabelled")):
            b.goto(base + path)
            b.screenshot(folder / f"{name}.png", full_page=False)
            print(f"saved {folder / name}.png")


if __name__ == "__main__":
    main()
