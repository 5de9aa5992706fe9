"""The viewer's page times on a store holding many labels: the runs page, a run page and a
sample page, each asked of ``ViewApp`` in this process (no socket: the time is the application's).

    .venv/bin/python bench/view_labels.py                         # 400,000 labels, 2,000 samples
    .venv/bin/python bench/view_labels.py --labels 100000 --samples 500

The store holds one run of ``--samples`` samples (hit rate and MRR, written through the store's
API) and ``--labels`` labels of the field ``human``: five people's sample labels of both metrics
on each of the run's samples, and the rest on the content of other data (as a store that has
served many data sets holds them). Each page is asked ``--repeat`` times; the median and the
worst are printed.
"""

from __future__ import annotations

import argparse
import statistics
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path[:0] = [str(ROOT / "src")]

from ragsight import Evidence, Outcome, Sample, Score, Store  # noqa: E402
from ragsight.store import Label  # noqa: E402
from ragsight.view import ViewApp  # noqa: E402


def build(path: Path, samples: int, labels: int) -> str:
    run_id = "bench-run"
    objs = [Sample(id=f"s{i}", question=f"Question {i} about the warranty?", response=f"Answer {i}.")
            for i in range(samples)]
    with Store(path) as st:
        metrics = [{"key": k, "name": k, "params": {}, "lower_is_better": False} for k in ("hit_rate", "mrr")]
        st.create_run(run_id, dataset="bench", judge=None, embedder=None, metrics=metrics, config={},
                      metadata={}, samples=objs)
        for i, s in enumerate(objs):
            st.save_sample(run_id, s.id, [Score(k, Outcome.SCORED, (i % 7) / 6, "", Evidence())
                                          for k in ("hit_rate", "mrr")],
                           [])
        st.finish_run(run_id, "completed", {"calls": 0})
        keys = st.sample_keys(run_id)
        rows: list[Label] = []
        for sid, key in keys.items():
            for metric in ("hit_rate", "mrr"):
                for who in range(5):
                    if len(rows) < labels:
                        rows.append(Label(key, metric, float((hash(sid) + who) % 2), "human", None, f"p{who}"))
        n = 0
        while len(rows) < labels:
            rows.append(Label(f"s-other{n // 10:08d}", "hit_rate", float(n % 2), "human", None, f"p{n % 10}"))
            n += 1
        for i in range(0, len(rows), 50_000):
            st.add_labels(rows[i:i + 50_000])
    return run_id


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--samples", type=int, default=2000)
    ap.add_argument("--labels", type=int, default=400_000)
    ap.add_argument("--repeat", type=int, default=5)
    args = ap.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / "runs.db"
        t0 = time.perf_counter()
        run_id = build(path, args.samples, args.labels)
        print(f"store: 1 run of {args.samples:,} samples, {args.labels:,} labels "
              f"(built in {time.perf_counter() - t0:.1f} s)")
        app = ViewApp(str(path), index_path=":memory:")
        app.bound("127.0.0.1", 8765)
        host = {"host": "127.0.0.1:8765"}
        pages = {"runs page": "/", "run page": f"/run/{run_id}", "run page, page 10": f"/run/{run_id}?page=10",
                 "sample page": f"/run/{run_id}/sample/s7"}
        try:
            for name, target in pages.items():
                times = []
                for _ in range(args.repeat):
                    ts = time.perf_counter()
                    r = app.handle("GET", target, host)
                    times.append(time.perf_counter() - ts)
                    assert r.status == 200, (target, r.status, r.body[:300])
                print(f"{name:<20} median {statistics.median(times) * 1000:8.1f} ms   worst "
                      f"{max(times) * 1000:8.1f} ms")
        finally:
            app.close()


if __name__ == "__main__":
    main()
