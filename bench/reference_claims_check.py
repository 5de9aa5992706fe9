"""A reference's claims before and after they became its facts, checked against it: does an
answer identical to the reference get recall and factual correctness 1.0, does a retrieval miss
stay below context recall 1.0, and what does making the claims cost?

    RAGSIGHT_THREADS=2 nice -n 10 .venv/bin/python bench/reference_claims_check.py        # the embedded judge
    RAGSIGHT_THREADS=2 nice -n 10 .venv/bin/python bench/reference_claims_check.py --only three-sentences-hit

Data: ``bench/reference_set.jsonl``, 9 rows written for this before either run: five references
on SQLite (one plain fact; one fact in a sentence with a list, the shape that grew a claim it
never said in a new-user trial; two facts in one sentence; three facts in one sentence; three
facts in three sentences, two of them pronoun-led), each once with contexts holding every fact
(``-hit``) and, for the four that can lose one, once with one needed fact in no chunk
(``-miss``). The response of every row is the reference itself, word for word.

Two settings, the same embedded judge, reasons off (``explain="none"``: they do not change a
score):

- before: ``AnalysisSettings(reference_facts=False)``, the reference extracted whole
  (``extract_claims``), unchecked;
- after: the default, sentences as claims, the judge splitting only the sentences with several
  facts (``extract_claims_part``), each claim it writes checked against the reference.

Printed per row and setting: the reference's claims (and those dropped), context recall,
factual correctness (F1 and recall) at the run's threshold (the count of claims judged supported)
and in the expected form (from P); then the checks the issue names (identical answers at 1.0, misses
below 1.0). Then the cost of making the reference's claims alone, each setting from an empty
cache: judge calls, prompt tokens evaluated, tokens generated, seconds (under load: read the
ratio, not the seconds).
"""

from __future__ import annotations

import argparse
import asyncio
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

from _data import read_jsonl

REPO = Path(__file__).resolve().parents[1]
DATA = REPO / "bench" / "reference_set.jsonl"
METRICS = ["context_recall", "factual_correctness", "factual_correctness(mode=recall)"]


def settings(name: str) -> Any:
    from ragsight.analyses import AnalysisSettings

    return AnalysisSettings(reference_facts=(name == "after"), explain="none")


def at_threshold(score: Any, metric: str) -> float | None:
    """The metric's value with each verdict taken at the threshold (the count form)."""
    if score.value is None:
        return None
    claims = score.evidence.claims
    if metric == "context_recall":
        return sum(v.supported for v in claims) / len(claims) if claims else None
    tp = sum(v.supported for v in claims if v.target == "reference")
    fp = sum(not v.supported for v in claims if v.target == "reference")
    fn = sum(not v.supported for v in claims if v.target == "response")
    if metric.endswith("(mode=recall)"):
        return tp / (tp + fn) if tp + fn else None
    return 2 * tp / (2 * tp + fp + fn) if tp + fp + fn else None


def run_metrics(rows: list[dict[str, Any]], judge: Any, store: str) -> dict[str, Any]:
    import ragsight

    data = [{k: r[k] for k in ("id", "question", "contexts", "response", "reference")} for r in rows]
    out = {}
    for name in ("before", "after"):
        t0 = time.monotonic()
        res = ragsight.evaluate(data, METRICS, judge=judge, store=store,
                                options=ragsight.RunOptions(settings=settings(name), show_progress=False))
        out[name] = (res, time.monotonic() - t0)
    return out


async def claim_cost(rows: list[dict[str, Any]], judge: Any) -> dict[str, dict[str, float]]:
    """The reference claims alone, each setting from an empty cache."""
    from dataclasses import replace

    from ragsight.analyses import SampleAnalyses
    from ragsight.dataset import Sample

    prov: Any = judge.provider
    seen = {}
    out = {}
    for name in ("before", "after"):
        e0, g0, t0 = prov.tokens_evaluated, prov.tokens_generated, time.perf_counter()
        calls = 0
        for r in rows:
            if r["reference"] in seen.setdefault(name, set()):
                continue
            seen[name].add(r["reference"])
            sample = Sample(id=r["id"], question=r["question"], reference=r["reference"])
            sa = SampleAnalyses(sample, judge, None, replace(settings(name), use_cache=False))
            got = await sa.reference_claims()
            calls += len(got.refs)
        out[name] = {"calls": calls, "evaluated": prov.tokens_evaluated - e0,
                     "generated": prov.tokens_generated - g0, "seconds": time.perf_counter() - t0}
    return out


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--only", action="append", help="row ids to run (default: all)")
    ap.add_argument("--store", help="a store to keep the runs in (default: a temporary one)")
    ap.add_argument("--no-cost", action="store_true", help="skip the cost pass")
    args = ap.parse_args()
    from ragsight.judge import make_judge

    rows = [r for r in read_jsonl(DATA) if not args.only or r["id"] in args.only]
    judge = make_judge("local")
    store = args.store or str(Path(tempfile.mkdtemp()) / "runs.db")
    runs = run_metrics(rows, judge, store)
    print(f"judge {judge.name}; {len(rows)} rows; the response of each row is its reference, word for word\n")
    checks: dict[str, list[bool]] = {"before": [], "after": []}
    for r in rows:
        print(f"{r['id']} ({r['facts']} fact{'s' if r['facts'] != 1 else ''}; "
              f"{'every fact in the contexts' if r['needed_in_contexts'] else 'one fact in no chunk'})")
        for name, (res, _) in runs.items():
            s = res.scores[r["id"]]
            cr = s["context_recall"]
            claims = [v.claim for v in cr.evidence.claims]
            dropped = cr.evidence.details.get("dropped_claims", [])
            vals = {m: (s[m].value, at_threshold(s[m], m)) for m in METRICS}

            def show(m: str, vals: dict[str, tuple[Any, Any]] = vals) -> str:
                v, t = vals[m]
                return "n/a" if v is None else f"{t:.2f} (P form {v:.2f})"

            print(f"  {name:6} {len(claims)} claims{f', {len(dropped)} dropped' if dropped else ''}: "
                  f"context_recall {show('context_recall')}, F1 {show('factual_correctness')}, "
                  f"recall {show('factual_correctness(mode=recall)')}")
            for c in claims:
                print(f"           - {c}")
            for c in dropped:
                print(f"           x {c}")
            fc = vals["factual_correctness"][1]
            rec = vals["factual_correctness(mode=recall)"][1]
            crt = vals["context_recall"][1]
            checks[name].append(fc == 1.0 and rec == 1.0)
            if not r["needed_in_contexts"]:
                checks[name].append(crt is not None and crt < 1.0)
    print()
    for name, (_res, seconds) in runs.items():
        ok = checks[name]
        print(f"{name}: {sum(ok)} of {len(ok)} checks (each row: F1 and recall 1.0 at the threshold; "
              f"each miss: context recall below 1.0); run {seconds:.0f} s")
    if not args.no_cost:
        cost = asyncio.run(claim_cost(rows, judge))
        print("\nmaking the reference claims alone, empty cache (under load):")
        for name, c in cost.items():
            print(f"  {name:6} {c['calls']:.0f} calls, {c['evaluated']:.0f} prompt tokens evaluated, "
                  f"{c['generated']:.0f} generated, {c['seconds']:.0f} s")


if __name__ == "__main__":
    sys.exit(main())
