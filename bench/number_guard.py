"""The number guard of the embedded judge's claim verdicts, against human labels.

A new-user trial's claim "... RSA keys of 4096 bits" was invented: the judge gave it P(Yes)
0.14 and its number was not in the page, yet the shipped combination (the mean of the judge's
P(Yes) and word overlap, ``analyses/_calibrated.py``) lifted it to 0.51 on the strength of its
words. The guard: when a number the claim writes in digits is not in the source, P(supported) is
at most the judge's own P(Yes). Number words ("one", "two") are not counted: "one" is as often a
pronoun as a number. The rule was fixed before any figure below was looked at.

What it changes is measured on the labelled claim sets (WiCE development file and ExpertQA
claims, every row), with the judge's P(Yes) for the ``bare`` probe of ``bench/validity.py``
(cached on disk, the same cache):

- the rows the guard touches: their labels, and how many cross 0.5 each way (at the 0.5
  threshold only these rows can change, so this is the whole change in accuracy there);
- AUROC of the shipped mean and of the guarded mean, with a paired bootstrap CI of the gain, on
  every row whose judge output is cached (and word overlap beside them).

    .venv/bin/python bench/number_guard.py --run      # make the missing judge calls (slow)
    .venv/bin/python bench/number_guard.py            # the figures, cached outputs only
    .venv/bin/python bench/number_guard.py --run --touched-only   # the touched rows first
"""

from __future__ import annotations

import argparse
import asyncio
import sys
import time
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))
sys.path.insert(0, str(HERE.parent / "src"))

import validity  # noqa: E402

from ragsight.analyses._calibrated import combine  # noqa: E402
from ragsight.analyses._signals import compute_signals, unfence  # noqa: E402

SETS = ("wice", "expertqa")


def rows_of(name: str) -> list[dict[str, Any]]:
    return validity.order_rows(name, validity.load_set(name, "all"))


def features(name: str, row: dict[str, Any]) -> dict[str, float]:
    source = unfence(validity.probe_calls(name, row, "bare")[0][1]["source"])
    return compute_signals(row["answer"], source)


def touched(sig: dict[str, float]) -> bool:
    return sig.get("n_digits", 0.0) > 0 and sig.get("digits", 1.0) < 1.0


async def run(touched_only: bool) -> None:
    cache = validity.JsonlCache(validity.CACHE_DIR / "calls.jsonl")
    judge = validity.make_judge(cache)
    todo: list[tuple[str, dict[str, Any]]] = []
    for name in SETS:
        todo += [(name, r) for r in rows_of(name) if touched(features(name, r))]
    if not touched_only:
        for name in SETS:
            todo += [(name, r) for r in rows_of(name) if not touched(features(name, r))]
    t0 = time.monotonic()
    for done, (name, row) in enumerate(todo, start=1):
        for prompt_id, values in validity.probe_calls(name, row, "bare"):
            await judge.choose(validity.load_prompt(prompt_id), values)
        if done % 10 == 0 or done == len(todo):
            print(f"{done}/{len(todo)} rows, {time.monotonic() - t0:.0f} s, calls {judge.stats.calls}, "
                  f"cached {judge.stats.cache_hits}", flush=True)


def report() -> None:
    import numpy as np

    cache = validity.JsonlCache(validity.CACHE_DIR / "calls.jsonl")
    judge = validity.make_judge(cache)
    for name in SETS:
        y, shipped, guarded, overlap, is_touched = [], [], [], [], []
        total = 0
        for row in rows_of(name):
            total += 1
            p = validity.cached_p(judge, cache, validity.probe_calls(name, row, "bare")[0])
            if p is None:
                continue
            sig = features(name, row)
            y.append(validity.label_of(name, row))
            shipped.append(combine(p, {k: v for k, v in sig.items() if k not in ("digits", "n_digits")},
                                   number_guard=False))
            guarded.append(combine(p, sig))
            overlap.append(sig["overlap"])
            is_touched.append(touched(sig))
        if not y:
            print(f"{name}: no cached judge output")
            continue
        ya, sa, ga, oa, ta = (np.asarray(v, float) for v in (y, shipped, guarded, overlap, is_touched))
        ta = ta.astype(bool)
        print(f"\n{name}: {len(y)} of {total} rows with the judge's output cached; "
              f"{int(ya.sum())} supported")
        print(f"  touched by the guard: {int(ta.sum())} rows, {int(ya[ta].sum())} of them supported")
        right_before = (sa[ta] >= 0.5) == (ya[ta] == 1)
        right_after = (ga[ta] >= 0.5) == (ya[ta] == 1)
        print(f"  at 0.5: {int((~right_before & right_after).sum())} made right, "
              f"{int((right_before & ~right_after).sum())} made wrong, "
              f"{int((sa[ta] >= 0.5).sum())} -> {int((ga[ta] >= 0.5).sum())} called supported")
        for label, v in (("shipped mean", sa), ("guarded mean", ga), ("word overlap", oa)):
            pt, lo, hi = validity.auroc_ci(v, ya)
            print(f"  AUROC {label:13s} {pt:.3f} [{lo:.3f}, {hi:.3f}]")
        g, glo, ghi = validity.auroc_gain(sa, ga, ya)
        print(f"  gain of the guard {g:+.3f} [{glo:+.3f}, {ghi:+.3f}] (paired bootstrap)")


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--run", action="store_true", help="make the missing judge calls first")
    ap.add_argument("--touched-only", action="store_true", help="with --run: only the rows the guard touches")
    args = ap.parse_args(argv)
    if args.run:
        asyncio.run(run(args.touched_only))
    report()
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
