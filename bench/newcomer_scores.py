"""A newcomer's first scores: planted invented claims must fail, verbatim answers must pass.

``bench/newcomer_set.jsonl``: 13 answers over Debian's manual pages (df, cut, base64, fallocate,
du), the truth written before any score: 6 answers of three or four claims the page states plus
one it does not (``planted``; truth ``fail``: the sample must fail at faithfulness's default
threshold) and 7 answers that copy the page (truth ``pass``: at or above the default threshold
and the README's gate ``faithfulness=0.8``).

Each answer is scored once by faithfulness with the embedded judge (claims extracted and
verified; the judge's outputs cached on disk under ``$RAGSIGHT_VALIDITY_CACHE``). From the same
verdicts:

- *before*: the value shipped before (the mean P(supported) of the claims, the combination
  without the conflict guard), failing below 0.5;
- *now*: faithfulness as it ships (the share of claims judged supported, the conflict guard on),
  failing below its default threshold (``diagnosis.THRESHOLDS``), and whether ``diagnose`` finds
  the sample failing with unsupported claims.

    .venv/bin/python bench/newcomer_scores.py [--limit N]    # N: the first N answers of the file only
"""

from __future__ import annotations

import argparse
import asyncio
import sys
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))
sys.path.insert(0, str(HERE.parent / "src"))

import validity  # noqa: E402
from _data import read_jsonl  # noqa: E402

from ragsight import Outcome  # noqa: E402
from ragsight.analyses import AnalysisSettings, SampleAnalyses  # noqa: E402
from ragsight.analyses._calibrated import combine  # noqa: E402
from ragsight.diagnosis import DEFAULT_THRESHOLD, THRESHOLDS, Threshold, diagnose_sample  # noqa: E402
from ragsight.judge import Judge, JudgeFailedError, RetryPolicy  # noqa: E402
from ragsight.metrics import Faithfulness  # noqa: E402
from ragsight.sample import Sample  # noqa: E402

DATA = HERE / "newcomer_set.jsonl"
SETTINGS = AnalysisSettings(verify_response_vs_contexts=True, explain="none")
GATE = 0.8  # the README's example gate


def sample(row: dict[str, Any]) -> Sample:
    return Sample(id=row["id"], question=row["question"], response=row["response"], contexts=tuple(row["contexts"]))


async def score_all(rows: list[dict[str, Any]]) -> dict[str, dict[str, Any]]:
    cache = validity.JsonlCache(validity.CACHE_DIR / "newcomer_calls.jsonl")
    base = validity.make_judge(cache)
    judge = Judge(base.provider, cache=cache, sink=base.sink,
                  policy=RetryPolicy(call_timeout_s=900.0, step_deadline_s=3600.0))
    threshold = THRESHOLDS.get("faithfulness", DEFAULT_THRESHOLD)
    out = {}
    for i, row in enumerate(rows, start=1):
        ctx = SampleAnalyses(sample(row), judge, None, SETTINGS)
        try:
            score = await Faithfulness().score(ctx)
        except JudgeFailedError as exc:  # counted as failed (the product's run does the same), the rest goes on
            out[row["id"]] = {"now": None, "before": None, "claims": [], "diagnosed": f"judge failed: {exc}",
                              "threshold": threshold}
            print(f"  [{i}/{len(rows)}] {row['id']}: judge failed ({exc})", file=sys.stderr, flush=True)
            continue
        claims = score.evidence.claims
        before = []
        for v in claims:
            sig = dict(v.signals or {})
            j = sig.get("judge_yes")
            before.append(combine(j, sig, conflict_guard=False) if j is not None else float(v.probability or 0.0))
        diag = diagnose_sample(sample(row), {"faithfulness": score},
                               {"faithfulness": Threshold("faithfulness", threshold)}, frozenset({"faithfulness"}))
        out[row["id"]] = {
            "now": score.value if score.outcome is Outcome.SCORED else None,
            "before": sum(before) / len(before) if before else None,
            "claims": [(v.claim, v.probability, b) for v, b in zip(claims, before)],
            "diagnosed": None if diag is None else diag.primary,
            "threshold": threshold,
        }
        print(f"  [{i}/{len(rows)}] {row['id']}: before {out[row['id']]['before']}, now {out[row['id']]['now']}",
              file=sys.stderr, flush=True)
    return out


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--limit", type=int, default=None, help="the first N answers of the file only")
    args = ap.parse_args()
    rows = read_jsonl(DATA)[:args.limit]
    got = asyncio.run(score_all(rows))
    threshold = next(iter(got.values()))["threshold"]
    print(f"{DATA.name}: {len(rows)} answers over Debian manual pages "
          f"({sum(r['truth'] == 'fail' for r in rows)} with a planted claim, {sum(r['truth'] == 'pass' for r in rows)} verbatim)")
    print(f"{'answer':<18} {'truth':<5} {'before':>7} {'now':>6}  diagnose  claims (P now / P before)")
    for r in rows:
        g = got[r["id"]]
        ps = ", ".join(f"{p:.2f}/{b:.2f}" for _, p, b in g["claims"] if p is not None)
        now = "-" if g["now"] is None else f"{g['now']:.2f}"
        before = "-" if g["before"] is None else f"{g['before']:.2f}"
        print(f"{r['id']:<18} {r['truth']:<5} {before:>7} {now:>6}  {g['diagnosed']!s:<9} {ps}")
    failed = [r["id"] for r in rows if got[r["id"]]["now"] is None]
    if failed:
        print(f"no value (the judge failed or found no claim; left out below): {', '.join(failed)}")
    planted = [got[r["id"]] for r in rows if r["truth"] == "fail" and r["id"] not in failed]
    verbatim = [got[r["id"]] for r in rows if r["truth"] == "pass" and r["id"] not in failed]

    def fails(v: float | None, t: float) -> bool:
        return v is not None and v < t

    print(f"planted invented claim fails:   before (mean P < 0.5) {sum(fails(g['before'], 0.5) for g in planted)} "
          f"of {len(planted)}; now (< {threshold:g}) {sum(fails(g['now'], threshold) for g in planted)} of {len(planted)}; "
          f"diagnosed unsupported now {sum(g['diagnosed'] == 'unsupported' for g in planted)} of {len(planted)}")
    named = [g for g in planted if g["now"] is not None and not fails(g["now"], threshold)
             and any(p is not None and p < 0.5 for _, p, _ in g["claims"])]
    print(f"planted samples that pass but are named by the run (summary, report, diagnose) as passing with a "
          f"claim judged unsupported: {len(named)} of {len(planted) - sum(fails(g['now'], threshold) for g in planted)}")
    print(f"verbatim answer passes:         before (mean P >= 0.5) "
          f"{sum(g['before'] is not None and not fails(g['before'], 0.5) for g in verbatim)} of {len(verbatim)}; "
          f"now (>= {threshold:g}) {sum(g['now'] is not None and not fails(g['now'], threshold) for g in verbatim)} "
          f"of {len(verbatim)}")
    print(f"at threshold 1 (a sample fails on any claim judged unsupported): planted fail "
          f"{sum(fails(g['now'], 1.0) for g in planted)} of {len(planted)}, verbatim pass "
          f"{sum(g['now'] is not None and not fails(g['now'], 1.0) for g in verbatim)} of {len(verbatim)}")
    print(f"verbatim answer passes the gate faithfulness={GATE:g}: before "
          f"{sum(g['before'] is not None and g['before'] >= GATE for g in verbatim)} of {len(verbatim)}; now "
          f"{sum(g['now'] is not None and g['now'] >= GATE for g in verbatim)} of {len(verbatim)}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
