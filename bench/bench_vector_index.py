"""Which vector index for the sweep's reference pipeline: measured, not assumed.

    nice -n 10 .venv/bin/python bench/bench_vector_index.py [--n 1000,3000,6000] [--dim 384]

For a corpus of N chunks (unit vectors of e5-small's 384 dimensions, random, seeded) and 200
queries, top-10 by inner product: the time to build the index, the time per query asked one
at a time (as a RAG pipeline asks), the time per query in one batch, and recall@10 against exact
search. Candidates: plain numpy (matrix product + argpartition), faiss-cpu IndexFlatIP (exact),
usearch exact search, and three approximate (HNSW) indexes: hnswlib, usearch Index, faiss
IndexHNSWFlat. Prints one table; the load average is printed beside it, since the machine is
shared. Needs ``pip install 'ragsight[sweep]'`` plus hnswlib, usearch for the comparison.
"""

from __future__ import annotations

import argparse
import os
import time
from collections.abc import Callable
from typing import Any

import numpy as np

K = 10


def unit(x: np.ndarray) -> np.ndarray:
    return (x / np.linalg.norm(x, axis=1, keepdims=True)).astype(np.float32)


def timed(fn: Callable[[], Any], repeat: int = 1) -> tuple[Any, float]:
    best = float("inf")
    out = None
    for _ in range(repeat):
        t0 = time.perf_counter()
        out = fn()
        best = min(best, time.perf_counter() - t0)
    return out, best


def exact_numpy(base: np.ndarray, q: np.ndarray) -> np.ndarray:
    sims = q @ base.T
    idx = np.argpartition(-sims, K, axis=1)[:, :K]
    order = np.take_along_axis(sims, idx, axis=1).argsort(axis=1)[:, ::-1]
    return np.take_along_axis(idx, order, axis=1)


def candidates() -> dict[str, tuple[Callable[[np.ndarray], Any], Callable[[Any, np.ndarray], np.ndarray]]]:
    out: dict[str, Any] = {"numpy exact": (lambda b: b, exact_numpy)}
    try:
        import faiss

        faiss.omp_set_num_threads(2)

        def flat(b: np.ndarray) -> Any:
            ix = faiss.IndexFlatIP(b.shape[1])
            ix.add(b)
            return ix

        def hnsw(b: np.ndarray) -> Any:
            ix = faiss.IndexHNSWFlat(b.shape[1], 32, faiss.METRIC_INNER_PRODUCT)
            ix.hnsw.efSearch = 64
            ix.add(b)
            return ix

        out["faiss IndexFlatIP (exact)"] = (flat, lambda ix, q: ix.search(q, K)[1])
        out["faiss IndexHNSWFlat"] = (hnsw, lambda ix, q: ix.search(q, K)[1])
    except ImportError:
        print("faiss-cpu not installed: skipped")
    try:
        from usearch.index import Index
        from usearch.index import search as usearch_search

        def us_build(b: np.ndarray) -> Any:
            ix = Index(ndim=b.shape[1], metric="ip", dtype="f32")
            ix.add(np.arange(len(b)), b)
            return ix

        out["usearch exact"] = (lambda b: b, lambda b, q: usearch_search(b, q, K, metric="ip", exact=True).keys)
        out["usearch Index (HNSW)"] = (us_build, lambda ix, q: ix.search(q, K).keys)
    except ImportError:
        print("usearch not installed: skipped")
    try:
        import hnswlib

        def hl(b: np.ndarray) -> Any:
            ix = hnswlib.Index(space="ip", dim=b.shape[1])
            ix.init_index(max_elements=len(b), ef_construction=200, M=16)
            ix.add_items(b, np.arange(len(b)))
            ix.set_ef(64)
            ix.set_num_threads(2)
            return ix

        out["hnswlib (HNSW)"] = (hl, lambda ix, q: ix.knn_query(q, k=K)[0])
    except ImportError:
        print("hnswlib not installed: skipped")
    return out


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--n", default="1000,3000,6000")
    ap.add_argument("--dim", type=int, default=384)
    ap.add_argument("--queries", type=int, default=200)
    args = ap.parse_args()
    rng = np.random.default_rng(0)
    print(f"load average at start: {os.getloadavg()}")
    print(f"{'N':>6}  {'index':28} {'build ms':>9} {'1 query us':>11} {'batch us/q':>11} {'recall@10':>9}")
    for n in (int(x) for x in args.n.split(",")):
        # clustered data, closer to real embeddings than uniform noise
        centres = unit(rng.normal(size=(max(8, n // 50), args.dim)))
        base = unit(centres[rng.integers(0, len(centres), n)] + 0.35 * rng.normal(size=(n, args.dim)))
        q = unit(centres[rng.integers(0, len(centres), args.queries)] + 0.35 * rng.normal(size=(args.queries, args.dim)))
        truth = exact_numpy(base, q)
        for name, (build, search) in candidates().items():
            ix, t_build = timed(lambda b=build, x=base: b(x), repeat=1)  # type: ignore[misc]
            _, t_batch = timed(lambda s=search, i=ix, y=q: s(i, y), repeat=3)  # type: ignore[misc]
            singles = q[:50]
            t0 = time.perf_counter()
            for row in singles:
                search(ix, row[None, :])
            t_one = (time.perf_counter() - t0) / len(singles)
            got = np.asarray(search(ix, q))
            recall = np.mean([len(set(map(int, got[i])) & set(map(int, truth[i]))) / K for i in range(len(q))])
            print(f"{n:>6}  {name:28} {t_build * 1e3:>9.1f} {t_one * 1e6:>11.0f} "
                  f"{t_batch / len(q) * 1e6:>11.1f} {recall:>9.3f}")
    print(f"load average at end: {os.getloadavg()}")


if __name__ == "__main__":
    main()
