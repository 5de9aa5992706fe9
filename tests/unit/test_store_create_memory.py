"""Creating a run does not hold its samples' texts until the transaction commits: a
run of 100,000 samples is written in one transaction by a writer per 64 samples, and the writers
kept every text they wrote until the commit (253 MB at 100,000 samples in bench/memory.py)."""

from __future__ import annotations

import hashlib
import tracemalloc
from pathlib import Path

from ragsight.sample import Sample
from ragsight.store import Store


def _samples(n: int) -> list[Sample]:
    out = []
    for i in range(n):
        # 8 kB of distinct text per sample: 24 MB for the run
        words = " ".join(hashlib.sha256(f"{i}-{k}".encode()).hexdigest() for k in range(120))
        out.append(Sample(id=f"s{i}", question=f"Question {i}?", contexts=(words,), response=f"Answer {i}."))
    return out


def test_creating_a_run_holds_a_packs_worth_of_text_not_the_runs(tmp_path: Path) -> None:
    samples = _samples(3000)
    total = sum(len(s.contexts[0]) for s in samples if s.contexts)
    assert total > 20_000_000
    store = Store(str(tmp_path / "runs.db"))
    tracemalloc.start()
    try:
        store.create_run("r1", dataset="d", judge=None, embedder=None, metrics=[], config={}, metadata={},
                         samples=samples)
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    assert peak < total / 3, f"creating the run peaked at {peak / 1e6:.1f} MB for {total / 1e6:.1f} MB of text"
    # and every sample reads back whole
    back = list(store.samples("r1"))
    assert back == samples
    store.close()
