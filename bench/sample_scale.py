"""A sample's faithfulness value against human labels: the mean P(supported) of its claims, the
share of claims judged supported, and the share with a sample failing on any unsupported claim.

Rows (development splits only; a row is held out when ``int(sha256(id), 16) % 3 == 0``):

- WiCE development claims and ExpertQA development claims (N/A skipped): the claim as the
  response, its evidence as the contexts, label ``label_supported``; in an order fixed by a hash
  of the id;
- MTRAG development responses with contexts, label ``label_faithful``: the turns with a response
  the annotators judged unfaithful first, all three responses of each (as
  ``bench/mtrag_faithfulness.py --matched``), the turn scored as a single-turn sample.

Each row is scored by faithfulness with the embedded judge as the product scores it (claims
extracted where a response is more than one short sentence, each verified), and its claims'
judge P(Yes), signals and P(supported) are saved, so every aggregation below comes from the same
verdicts with no model call. The sets are taken in turn, one row of each, so a run cut short
still has rows of all three. Judge outputs are cached on disk under ``$RAGSIGHT_VALIDITY_CACHE``
and the per-row trails beside them (``sample_scale_rows.jsonl``).

    .venv/bin/python bench/sample_scale.py run --rows 20     # up to 20 rows of each set (slow)
    .venv/bin/python bench/sample_scale.py report            # the figures, no model call

The report gives, per set and candidate, AUROC and balanced accuracy at the candidate's
threshold, each with and without the conflict guard (``analyses/_conflict.py``: the combination
never lifts a claim above the judge's P(Yes) when the closest source sentence says otherwise),
recomputed from the saved judge P(Yes) and signals.
"""

from __future__ import annotations

import argparse
import asyncio
import hashlib
import json
import sys
import time
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parent / "src"))
sys.path.insert(0, str(HERE))

import validity  # noqa: E402
from _data import read_jsonl  # noqa: E402

from ragsight._stats import auroc, threshold_metrics  # noqa: E402
from ragsight.analyses import AnalysisSettings, SampleAnalyses  # noqa: E402
from ragsight.analyses._calibrated import combine  # noqa: E402
from ragsight.analyses._signals import compute_signals  # noqa: E402
from ragsight.judge import Judge, JudgeFailedError, RetryPolicy  # noqa: E402
from ragsight.metrics import Faithfulness  # noqa: E402
from ragsight.sample import Sample  # noqa: E402

SETTINGS = AnalysisSettings(verify_response_vs_contexts=True, explain="none")
ROWS = validity.CACHE_DIR / "sample_scale_rows.jsonl"
SETS = ("wice", "expertqa", "mtrag")
CLAIM_THRESHOLD = 0.5


def _pick(row_id: str) -> str:
    return hashlib.sha256(("pick:" + row_id).encode("utf-8")).hexdigest()


def rows_of(name: str) -> list[dict[str, Any]]:
    """The development rows of a set, in the order they are scored."""
    if name in ("wice", "expertqa"):
        rows = validity.load_set(name, "dev")
        return sorted(rows, key=lambda r: _pick(r["id"]))
    rows = [r for r in read_jsonl(validity.METAEVAL / "mtrag_meta_dev.jsonl") if r["contexts"]]
    turns: dict[str, list[dict[str, Any]]] = {}
    for r in rows:
        turns.setdefault(r["task_id"], []).append(r)
    matched = [t for t, rs in turns.items() if any(not r["label_faithful"] for r in rs)]
    rest = sorted((t for t in turns if t not in matched), key=_pick)
    return [r for t in matched + rest for r in turns[t]]


def label(name: str, row: dict[str, Any]) -> int:
    return int(bool(row["label_faithful"] if name == "mtrag" else row["label_supported"]))


def sample(name: str, row: dict[str, Any]) -> Sample:
    if name == "mtrag":
        return Sample(id=row["id"], question=row["question"], response=row["response"],
                      contexts=tuple(row["contexts"]))
    return Sample(id=row["id"], question=row.get("question"), response=row["answer"],
                  contexts=tuple(row["contexts"]))


def done_rows() -> dict[str, dict[str, Any]]:
    return {r["id"]: r for r in read_jsonl(ROWS)} if ROWS.exists() else {}


async def run(n_rows: int) -> None:
    cache = validity.JsonlCache(validity.CACHE_DIR / "sample_scale_calls.jsonl")
    base = validity.make_judge(cache)
    # a shared, loaded machine: a generation may take minutes
    judge = Judge(base.provider, cache=cache, sink=base.sink,
                  policy=RetryPolicy(call_timeout_s=900.0, step_deadline_s=3600.0))
    done = done_rows()
    queues = {name: rows_of(name)[:n_rows] for name in SETS}
    order = [(name, q[i]) for i in range(n_rows) for name, q in queues.items() if i < len(q)]
    ROWS.parent.mkdir(parents=True, exist_ok=True)
    for k, (name, row) in enumerate(order, start=1):
        if row["id"] in done:
            continue
        t0 = time.time()
        out: dict[str, Any] = {"id": row["id"], "set": name, "label": label(name, row)}
        try:
            score = await Faithfulness(form="expected").score(
                SampleAnalyses(sample(name, row), judge, None, SETTINGS))
        except JudgeFailedError as exc:
            out["outcome"], out["claims"] = f"failed: {exc}", []
        else:
            out["outcome"] = score.outcome.value
            out["claims"] = [{"claim": v.claim, "p": v.probability, "supported": v.supported,
                              "signals": dict(v.signals or {})} for v in score.evidence.claims]
        with ROWS.open("a", encoding="utf-8") as f:
            f.write(json.dumps(out) + "\n")
        print(f"  [{k}/{len(order)}] {name} {row['id'][-36:]}: {out['outcome']}, {len(out['claims'])} claims "
              f"({time.time() - t0:.0f} s)", file=sys.stderr, flush=True)


def claim_ps(row: dict[str, Any], contexts: Sequence[str], guard: bool) -> list[float]:
    """Each claim's P(supported) recomputed from its saved judge P(Yes) and signals, with or
    without the conflict guard (the signals' ``says_otherwise`` recomputed from the claim and the
    contexts, so rows saved before the guard existed read the same)."""
    out = []
    for c in row["claims"]:
        sig = dict(c["signals"])
        j = sig.get("judge_yes")
        if j is None:
            out.append(float(c["p"]))
            continue
        sig.update({k: v for k, v in compute_signals(c["claim"], list(contexts)).items() if k.startswith("says_otherwise")})
        out.append(combine(j, sig, conflict_guard=guard))
    return out


CANDIDATES: dict[str, tuple[Callable[[list[float]], float], float]] = {
    "expected (mean P)": (lambda ps: sum(ps) / len(ps), 0.5),
    "share": (lambda ps: sum(p >= CLAIM_THRESHOLD for p in ps) / len(ps), 0.5),
    "share, all": (lambda ps: sum(p >= CLAIM_THRESHOLD for p in ps) / len(ps), 1.0),
}


def balanced(scores: list[float], labels: list[int], t: float) -> float:
    m = threshold_metrics(scores, labels, t)
    return ((m.recall or 0.0) + (m.specificity or 0.0)) / 2


def report(out: Callable[[str], None] = print) -> None:
    saved = done_rows()
    contexts: dict[str, Sequence[str]] = {}
    for name in SETS:
        for r in rows_of(name):
            contexts[r["id"]] = r["contexts"]
    ba_mean: dict[tuple[str, bool], list[float]] = {}
    for name in SETS:
        rows = [r for r in saved.values() if r["set"] == name]
        scored = [r for r in rows if r["outcome"] == "scored" and r["claims"]]
        n_claims = sum(len(r["claims"]) for r in scored)
        y = [int(r["label"]) for r in scored]
        out(f"\n{name}: {len(rows)} rows run, {len(scored)} scored ({sum(y)} labelled positive), "
            f"{n_claims} claims; left out: {sum(str(r['outcome']).startswith('failed') for r in rows)} failed, "
            f"{sum(r['outcome'] == 'undetermined' for r in rows)} undetermined")
        if not scored or len(set(y)) < 2:
            out("  one class only: no figure")
            continue
        for guard in (False, True):
            ps = [claim_ps(r, contexts[r["id"]], guard) for r in scored]
            out(f"  {'with' if guard else 'without'} the conflict guard:")
            for cand, (fn, t) in CANDIDATES.items():
                vals = [fn(p) for p in ps]
                a = auroc(vals, y)
                ba = balanced(vals, y, t)
                ba_mean.setdefault((cand, guard), []).append(ba)
                passing = sum(v >= t for v in vals)
                out(f"    {cand:<20} fails below {t:g}: AUROC {a:.3f}  balanced accuracy {ba:.3f} "
                    f"({passing} of {len(vals)} pass)")
            lowest = [min(p) for p in ps]
            out(f"    {'lowest P (ranking)':<20} AUROC {auroc(lowest, y):.3f}")
    out("\nmean balanced accuracy over the sets with figures:")
    for (cand, guard), bas in ba_mean.items():
        out(f"  {cand:<20} {'with' if guard else 'without'} guard: {sum(bas) / len(bas):.3f} ({len(bas)} sets)")


def main(argv: Sequence[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    sub = ap.add_subparsers(dest="cmd", required=True)
    r = sub.add_parser("run", help="score rows with the embedded judge (slow)")
    r.add_argument("--rows", type=int, default=20, help="rows of each set")
    sub.add_parser("report", help="the figures from the saved rows (no model call)")
    args = ap.parse_args(argv)
    if args.cmd == "run":
        asyncio.run(run(args.rows))
    else:
        report()
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
