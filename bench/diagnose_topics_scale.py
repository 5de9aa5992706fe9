"""Time and peak memory of ``diagnose``'s topics of the failing questions, by their number.

    .venv/bin/python bench/diagnose_topics_scale.py                     # 1,000 / 3,000 / 10,000 questions
    .venv/bin/python bench/diagnose_topics_scale.py --sizes 3000 --old-up-to 3000

The step measured is what ``diagnose --embedder words`` does with the failing questions: TF-IDF
vectors, grouping, names (no model, so the figure is the grouping's own). "shipped": sparse
vectors, average linkage over at most LINKAGE_LIMIT questions and the others joined to the
nearest group; "old" (up to ``--old-up-to`` questions, it grows with the cube): the dense
vectors of (words + n) columns and linkage over every question, as the first version did.
Questions are synthetic (three subjects, random route numbers, so most words are rare, as in
real failing questions); peak memory is tracemalloc's (Python and numpy allocations).
"""

from __future__ import annotations

import argparse
import random
import sys
import time
import tracemalloc
from pathlib import Path
from typing import Any

import numpy as np
from scipy.cluster.hierarchy import fcluster, linkage

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "src"))

from ragsight.diagnosis import cluster, name_topics, word_vectors
from ragsight.diagnosis._topics import LINKAGE_LIMIT, topic_count, word_matrix

WORDS = ["cabin bag", "checked luggage", "baggage allowance", "suitcase weight", "carry-on size", "refund request",
         "ticket cancellation", "voucher credit", "money back", "vegetarian meal", "onboard food", "special diet",
         "seat selection", "exit row", "lounge access", "pet transport", "infant fare", "group booking"]


def questions(n: int) -> list[str]:
    rng = random.Random(n)
    return [f"How does the {a} rule compare with the {b} policy on route {rng.randint(1, 99999)} of "
            f"carrier {rng.randint(1, 9999)}?" for a, b in (rng.sample(WORDS, 2) for _ in range(n))]


def old_topics(texts: list[str]) -> Any:
    dense = word_vectors(texts)  # dense, with a column per question besides the words, as it was
    k = topic_count(len(texts))
    z = linkage(dense, method="average", metric="cosine")
    labels = [int(x) - 1 for x in fcluster(np.clip(z, 0.0, None), t=k, criterion="maxclust")]
    return name_topics(texts, labels)


def new_topics(texts: list[str]) -> Any:
    labels = cluster(word_matrix(texts), topic_count(len(texts)))
    return name_topics(texts, labels)


def measure(fn: Any, texts: list[str]) -> tuple[float, float]:
    tracemalloc.start()
    t0 = time.perf_counter()
    fn(texts)
    took = time.perf_counter() - t0
    _, peak = tracemalloc.get_traced_memory()
    tracemalloc.stop()
    return took, peak / 2**20


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--sizes", default="1000,3000,10000")
    ap.add_argument("--old-up-to", type=int, default=1000, help="measure the old method up to this many questions")
    args = ap.parse_args()
    print(f"LINKAGE_LIMIT = {LINKAGE_LIMIT}")
    print(f"{'questions':>9} {'method':>8} {'seconds':>8} {'peak MB':>8}")
    for n in (int(x) for x in args.sizes.split(",")):
        texts = questions(n)
        s, mb = measure(new_topics, texts)
        print(f"{n:>9} {'shipped':>8} {s:>8.2f} {mb:>8.1f}", flush=True)
        if n <= args.old_up_to:
            s, mb = measure(old_topics, texts)
            print(f"{n:>9} {'old':>8} {s:>8.2f} {mb:>8.1f}", flush=True)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
