"""``diagnose`` grouped the failing questions into topics at a cost cubic in their number: TF-IDF
vectors as a dense matrix of n rows and (words + n) columns, and average linkage over all of them
(3,000 failing samples: 157 s and 1.4 GB). The word vectors are now sparse and linkage groups at
most LINKAGE_LIMIT questions, the others joining the nearest group: linear beyond the limit, and
the same groups as before up to it. (The bench figure: bench/diagnose_topics_scale.py.)"""

from __future__ import annotations

import random
import time
import tracemalloc

import numpy as np
from scipy.cluster.hierarchy import fcluster, linkage

from ragsight.diagnosis import cluster, name_topics, word_vectors
from ragsight.diagnosis._topics import LINKAGE_LIMIT, word_matrix

SUBJECTS = {
    "bags": ("How heavy may the {a} be on a {b} flight to {c}?",
             ["cabin bag", "checked suitcase", "carry-on luggage", "sports equipment", "baggage piece", "hand luggage"]),
    "refunds": ("Can I get my money back for a {a} after a {b} in {c}?",
                ["cancelled ticket", "refund voucher", "unused fare", "missed connection", "schedule change",
                 "credit note"]),
    "meals": ("Which {a} is served with the {b} on board to {c}?",
              ["vegetarian meal", "special diet", "breakfast tray", "snack box", "hot drink", "dessert menu"]),
}
CITIES = ["Oslo", "Lima", "Porto", "Quito", "Riga", "Sofia", "Turin", "Varna", "Zadar", "Basel"]


def questions(n: int, seed: int = 0) -> tuple[list[str], list[str]]:
    """n questions of three subjects, in turn (a periodic order, as a data set sorted by kind has)."""
    rng = random.Random(seed)
    texts, truth = [], []
    for i in range(n):
        subject = list(SUBJECTS)[i % 3]
        template, words = SUBJECTS[subject]
        a, b = rng.sample(words, 2)
        texts.append(template.format(a=a, b=b, c=rng.choice(CITIES)))
        truth.append(subject)
    return texts, truth


def old_cluster(vectors: np.ndarray, k: int) -> list[int]:
    z = linkage(np.asarray(vectors, dtype=np.float64), method="average", metric="cosine")
    return [int(x) for x in fcluster(np.clip(z, 0.0, None), t=k, criterion="maxclust")]


def same_partition(a: list[int], b: list[int]) -> bool:
    return len(set(zip(a, b))) == len(set(a)) == len(set(b))


def test_up_to_the_limit_the_groups_are_those_of_linkage_over_all() -> None:
    texts, _ = questions(LINKAGE_LIMIT)
    dense = word_vectors(texts)
    assert same_partition(cluster(word_matrix(texts), 5), old_cluster(dense, 5))
    assert same_partition(cluster(dense, 5), old_cluster(dense, 5))


def test_three_thousand_failing_questions_are_grouped_in_seconds_and_little_memory() -> None:
    texts, truth = questions(3000)
    tracemalloc.start()
    t0 = time.perf_counter()
    vectors = word_matrix(texts)
    labels = cluster(vectors, 3)
    names = name_topics(texts, labels)
    took = time.perf_counter() - t0
    _, peak = tracemalloc.get_traced_memory()
    tracemalloc.stop()
    assert took < 30, took  # was 157 s (under load; about 2 s here idle)
    assert peak < 150 * 2**20, peak  # was 1.4 GB
    assert len(labels) == 3000 and len(names) == len(set(labels))
    # the planted subjects come out as the groups
    assert same_partition(labels, [list(SUBJECTS).index(t) for t in truth])


def test_linear_beyond_the_limit() -> None:
    # ten times the questions: about ten times the time of the assignment, not a hundred
    def seconds(n: int) -> float:
        texts, _ = questions(n, seed=n)
        vectors = word_matrix(texts)
        t0 = time.perf_counter()
        cluster(vectors, 3)
        return time.perf_counter() - t0

    seconds(1000)  # warm up
    small, large = min(seconds(1000) for _ in range(2)), min(seconds(10000) for _ in range(2))
    assert large < 40 * small + 1.0, (small, large)


def test_the_same_vectors_give_the_same_groups() -> None:
    texts, _ = questions(2000, seed=3)
    assert cluster(word_matrix(texts), 4) == cluster(word_matrix(texts), 4)
