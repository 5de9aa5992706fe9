"""How well does ``abstention`` tell a decline from an answer? The embedded judge, the phrase
detector and their combinations on hand-labelled responses.

    nice -n 10 .venv/bin/python bench/abstention_check.py            # every figure (model calls cached)
    nice -n 10 .venv/bin/python bench/abstention_check.py --show     # and every row's signals

Data, each row labelled ``declines`` 1 or 0 by the rule in ``bench/abstention_dev.md`` (which
tells the story of the four sets):

- ``dev``: ``bench/abstention_dev.jsonl``, 92 responses; the detector was written against it;
- ``heldout``: 39 responses written after the first detector was frozen; its misses revised the
  detector (v2), so it became development data;
- ``final``: 40 responses written after v2 was frozen; it showed that ``detector_first`` (the
  rule's choice on dev + heldout) overfit, and chose ``detector_or_judge``: development data too;
- ``confirm``: 40 responses written after that choice: the figures to quote.

Signals, per response:

- the embedded judge's P(declines), one yes/no from log-probabilities, with three prompts in
  ``bench/prompts/``: ``declines_v1`` (the prompt shipped before this measurement: "does the
  response decline ...?"), ``declines_answers`` ("does it give an answer?", P(declines) = P(No);
  shipped since as ``declines`` v2, the same text) and ``declines_short`` ("does it say it cannot
  answer?");
- the phrase detector (``ragsight.metrics.abstention.detect_declines``, English only): ``declines``
  (decline phrases, and nothing else but remarks about the documents and referrals), ``mixed``
  (a decline phrase beside other content), ``none`` (no decline phrase), ``not_english``.

Methods, fixed before the judge's outputs were seen (the judge's prompt is the one of the three
with the highest AUROC on ``dev``):

- ``judge``: declined when P >= 0.5;
- ``detector``: declined when the detector says ``declines`` (mixed, none, not_english: answered);
- ``detector_first``: ``declines`` -> declined, ``none`` -> answered, ``mixed`` / ``not_english``
  -> the judge;
- ``detector_or_judge``: ``declines`` -> declined, anything else -> the judge.

Each method's score for AUROC: 1 for a detector decline, 0 for a detector answer, the judge's P
where the judge decides. Accuracy, AUROC, both with 95% bootstrap CIs (2,000 resamples of the
rows, seed 0), and the judge calls each method needs. The method shipped is the one that is right
most often on the development data (``dev``, ``heldout`` and ``final``; ties: fewer judge calls):
``detector_or_judge``, as ``abstention``'s ``method=combined``. The ``confirm`` figures are
reported for every method.

Every model output is cached on disk (``$RAGSIGHT_ABSTENTION_CACHE``, default
``cache/abstention/calls.jsonl`` beside the shared kit), keyed by the judge's own step key (model, prompt hash,
rendered messages), so a re-run makes no model call.
"""

from __future__ import annotations

import argparse
import asyncio
import os
import sys
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "src"))
sys.path.insert(0, str(Path(__file__).resolve().parent))

import _where  # noqa: E402
from _data import read_jsonl  # noqa: E402
from _providers import JsonlCache  # noqa: E402
from _stats import bootstrap_ci  # noqa: E402

from ragsight._stats import auroc  # noqa: E402
from ragsight.judge import Judge, make_judge  # noqa: E402
from ragsight.metrics.abstention import detect_declines  # noqa: E402
from ragsight.prompts import fence, load_prompt, load_prompt_file  # noqa: E402

SETS = {name: ROOT / "bench" / f"abstention_{name}.jsonl" for name in ("dev", "heldout", "final", "confirm")}
DEVELOPMENT = ("dev", "heldout", "final")
CACHE = Path(os.environ.get("RAGSIGHT_ABSTENTION_CACHE") or _where.cache("abstention") / "calls.jsonl")
# prompt id -> (where it is, whether P(declines) is P(Yes) (True) or P(No))
PROMPTS: dict[str, tuple[str, bool]] = {
    "declines_v1": ("bench", True),
    "declines_answers": ("bench", False),
    "declines_short": ("bench", True),
}
THRESHOLD = 0.5
METHODS = ("judge", "detector", "detector_first", "detector_or_judge")


def load(name: str) -> list[dict[str, Any]]:
    return read_jsonl(SETS[name])


def prompt(pid: str) -> Any:
    where, _ = PROMPTS[pid]
    return load_prompt(pid) if where == "package" else load_prompt_file(ROOT / "bench" / "prompts" / f"{pid}.txt")


async def judge_p(base: Judge, rows: Sequence[dict[str, Any]], pid: str,
                  cache: JsonlCache) -> tuple[list[float], float]:
    """P(declines) per row with prompt ``pid``, and the seconds it took."""
    judge = base.for_run(cache=cache)
    tmpl = prompt(pid)
    yes_means_declines = PROMPTS[pid][1]
    out: list[float] = []
    t0 = time.monotonic()
    for r in rows:  # the metric's own values: the question and the response fenced as data
        values = {"question": fence("question", r["question"]), "response": fence("response", r["response"])}
        ans = await judge.choose(tmpl, values)
        p_yes = float(ans.value["Yes"])
        out.append(p_yes if yes_means_declines else 1.0 - p_yes)
    return out, time.monotonic() - t0


def decide(method: str, verdict: str, p: float) -> tuple[int, float, bool]:
    """(declined, score for AUROC, whether the judge was needed) for one row."""
    if method == "judge":
        return int(p >= THRESHOLD), p, True
    if method == "detector":
        return int(verdict == "declines"), {"declines": 1.0, "mixed": 0.5}.get(verdict, 0.0), False
    if verdict == "declines":
        return 1, 1.0, False
    if method == "detector_first" and verdict == "none":
        return 0, 0.0, False
    return int(p >= THRESHOLD), p, True


def figures(labels: Sequence[int], decided: Sequence[int], scores: Sequence[float]) -> dict[str, Any]:
    y = np.asarray(labels)
    d = np.asarray(decided)
    s = np.asarray(scores, dtype=float)
    n = len(y)

    def acc(idx: np.ndarray) -> float:
        return float(np.mean(d[idx] == y[idx]))

    def auc(idx: np.ndarray) -> float | None:
        return auroc(s[idx], y[idx].astype(bool))

    every = np.arange(n)
    return {
        "n": n, "accuracy": acc(every), "accuracy_ci": bootstrap_ci(acc, n),
        "auroc": auc(every), "auroc_ci": bootstrap_ci(auc, n),
        "declines_found": int(np.sum((d == 1) & (y == 1))), "declines": int(np.sum(y == 1)),
        "false_declines": int(np.sum((d == 1) & (y == 0))), "answers": int(np.sum(y == 0)),
    }


def fmt(f: dict[str, Any]) -> str:
    auc = "   -  " if f["auroc"] is None else f"{f['auroc']:.3f}"
    return (f"acc {f['accuracy']:.3f} [{f['accuracy_ci'][0]:.3f}, {f['accuracy_ci'][1]:.3f}]  "
            f"AUROC {auc} [{f['auroc_ci'][0]:.3f}, {f['auroc_ci'][1]:.3f}]  "
            f"declines found {f['declines_found']}/{f['declines']}, false declines "
            f"{f['false_declines']}/{f['answers']}")


async def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--show", action="store_true", help="print every row's signals")
    args = ap.parse_args()
    shipped = load_prompt("declines")
    assert shipped.hash == prompt("declines_answers").hash, "the shipped declines prompt is not the one measured"
    cache = JsonlCache(CACHE)
    data = {name: load(name) for name in SETS}
    print(f"cache: {CACHE} ({len(cache.d)} outputs); load average {os.getloadavg()}")
    p: dict[tuple[str, str], list[float]] = {}
    base = make_judge("local")  # the model loads on its first call, which a full cache never makes
    try:
        for pid in PROMPTS:
            for name, rows in data.items():
                before = len(cache.d)
                p[(pid, name)], secs = await judge_p(base, rows, pid, cache)
                made = len(cache.d) - before
                if made:
                    print(f"  {pid} on {name}: {made} model calls in {secs:.0f} s ({secs / made:.2f} s each)")
    finally:
        await base.aclose()
    verdicts = {name: [detect_declines(r["response"]) for r in rows] for name, rows in data.items()}

    # the judge's prompt: the highest AUROC on the development set (English rows)
    print("\nThe embedded judge alone, P(declines) >= 0.5, by prompt:")
    best_pid, best_auc = "declines_v1", -1.0
    for pid in PROMPTS:
        for name, rows in data.items():
            en = [i for i, r in enumerate(rows) if r["lang"] == "en"]
            f = figures([rows[i]["declines"] for i in en], [int(p[(pid, name)][i] >= THRESHOLD) for i in en],
                        [p[(pid, name)][i] for i in en])
            print(f"  {pid:17} {name:8} (English, n={f['n']}): {fmt(f)}")
            if name == "dev" and f["auroc"] is not None and f["auroc"] > best_auc:
                best_pid, best_auc = pid, f["auroc"]
    print(f"judge prompt used below: {best_pid} (highest AUROC on the development set)")

    chosen: dict[str, list[int]] = {m: [0, 0, 0] for m in METHODS}  # right, rows, judge calls
    for name, rows in data.items():
        groups = {"English": [i for i, r in enumerate(rows) if r["lang"] == "en"],
                  "other languages": [i for i, r in enumerate(rows) if r["lang"] != "en"],
                  "all": list(range(len(rows)))}
        print(f"\n{name}: {len(rows)} rows ({sum(r['declines'] for r in rows)} declines)")
        for method in METHODS:
            out = [decide(method, v.verdict, pp) for v, pp in zip(verdicts[name], p[(best_pid, name)])]
            calls = sum(1 for _, _, used in out if used)
            for group, idx in groups.items():
                if not idx:
                    continue
                f = figures([rows[i]["declines"] for i in idx], [out[i][0] for i in idx], [out[i][1] for i in idx])
                print(f"  {method:18} {group:16} n={f['n']:3}  {fmt(f)}"
                      + (f"  judge calls {calls}/{len(rows)}" if group == "all" else ""))
                if name in DEVELOPMENT and group == "all":
                    chosen[method][0] += round(f["accuracy"] * f["n"])
                    chosen[method][1] += f["n"]
                    chosen[method][2] += calls
        kinds = sorted({r["kind"] for r in rows})
        print("  by kind (accuracy of judge / detector / detector_first / detector_or_judge):")
        for kind in kinds:
            idx = [i for i, r in enumerate(rows) if r["kind"] == kind and r["lang"] == "en"]
            if not idx:
                continue
            accs = []
            for method in METHODS:
                out = [decide(method, verdicts[name][i].verdict, p[(best_pid, name)][i]) for i in idx]
                accs.append(np.mean([o[0] == rows[i]["declines"] for o, i in zip(out, idx)]))
            print(f"    {kind:22} n={len(idx):2}  " + "  ".join(f"{a:.2f}" for a in accs))
        if args.show:
            for i, r in enumerate(rows):
                v = verdicts[name][i]
                ps = " ".join(f"{p[(pid, name)][i]:.2f}" for pid in PROMPTS)
                print(f"    {r['id']} {r['declines']} {v.verdict:11} P[{ps}] {r['response'][:70]}")
    print("\ndevelopment data (dev, heldout, final): " + ", ".join(
        f"{m} {r}/{n} right, {c} judge calls" for m, (r, n, c) in chosen.items()))
    winner = max(METHODS, key=lambda m: (chosen[m][0], -chosen[m][2]))
    print(f"shipped by the rule (most right on the development data, then fewer judge calls): {winner}")


if __name__ == "__main__":
    asyncio.run(main())
