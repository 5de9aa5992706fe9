"""The viewer's latency on a large store: page, filter and search times of ``ragsight view``.

    .venv/bin/python bench/view_latency.py                      # 20,000 samples (built once, kept)
    .venv/bin/python bench/view_latency.py --n 2000 --store /tmp/v2k.db

The store is built (or reused when it already holds a finished run of that size) by evaluating
the bench kit's 20 airline samples repeated and marked (``bench/scale.py``'s ``make_data``: no two
samples share a text) with a scripted judge (``tests/fakes/scripted_world.py``: claims are sentences,
verdicts a hash), three metrics. The viewer then runs as ``ragsight view`` runs it (its HTTP
server on 127.0.0.1, a port of its own), and each request is timed from this process over HTTP,
median and worst of ``--repeat`` tries, after one warm-up request that fills the run's table:
the runs page, a run page (first page, a later page), a filter (metric, outcome, score range),
a sort, the label queue, a sample page, and searches. The first search of a run builds its
full-text index; that build is timed on its own (index file removed first).
"""

from __future__ import annotations

import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path[:0] = [str(ROOT / "bench"), str(ROOT)]

from scale import make_data  # noqa: E402

from tests.fakes.scripted_world import METRICS, provider  # noqa: E402


def build(store: Path, n: int) -> str:
    """The id of a finished run of ``n`` samples in ``store``, evaluated now if there is none."""
    import ragsight
    from ragsight.store import Store

    if store.exists():
        with Store(store) as s:
            counts = s.sample_counts()
            for info in s.runs():
                if info.status == "completed" and counts.get(info.id, (0, 0))[1] == n:
                    print(f"reusing run {info.id} ({n:,} samples) in {store}")
                    return info.id
    with tempfile.TemporaryDirectory() as tmp:
        data = Path(tmp) / "data.jsonl"
        make_data(n, data)
        t0 = time.perf_counter()
        result = ragsight.evaluate(str(data), METRICS, judge=provider(), store=str(store), concurrency=32)
        print(f"built run {result.run_id}: {n:,} samples in {time.perf_counter() - t0:.0f} s")
        return result.run_id
