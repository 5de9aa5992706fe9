"""Does answer_relevancy see an answer that does not respond to its question? 36 rows written for
this check (``bench/relevancy_set.jsonl``, from the gzip and xz manual pages): 12 questions, each
with a correct on-topic answer and an answer on the same subject that tells something else, and
6 follow-up turns of a conversation ("Can I keep the original too?"), each with an answer to the
follow-up and one that repeats or drifts from the earlier turn. The label is whether the answer
responds to its question, written with the rows, before any score.

    PYTHONPATH=src .venv/bin/python bench/relevancy_check.py            # the embedded judge
    PYTHONPATH=src .venv/bin/python bench/relevancy_check.py --n 4      # the first 4 of each kind

The code measured is the ``ragsight`` on PYTHONPATH (the code before a change: put its ``src``
there). The embedder is the local e5-small. Printed per row: the value, the mean cosine of the
generated questions with the (standalone) question, and the judged P(responds) when the code
judges it; then, for each of those, the AUROC of answers that respond against answers that do
not (pooled, and single-turn / follow-up apart), the mean of each group, and the pairs (the two
answers to one question) in which the answer that does not respond scores at least as high.
"""

from __future__ import annotations

import argparse
import sys
from collections import defaultdict
from collections.abc import Sequence
from pathlib import Path

import numpy as np

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))

from _data import read_jsonl  # noqa: E402
from _stats import auroc_pairs  # noqa: E402

SET = HERE / "relevancy_set.jsonl"


def report(name: str, rows: list[dict], values: dict[str, float]) -> None:
    have = [r for r in rows if r["id"] in values]
    for label, part in (("all", have), ("single-turn", [r for r in have if "history" not in r]),
                        ("follow-ups", [r for r in have if "history" in r])):
        pos = np.array([values[r["id"]] for r in part if r["metadata"]["addresses"]])
        neg = np.array([values[r["id"]] for r in part if not r["metadata"]["addresses"]])
        if len(pos) and len(neg):
            print(f"  {name:<16} {label:<12} AUROC {auroc_pairs(pos, neg):.3f}  mean responds {pos.mean():.3f} "
                  f"/ does not {neg.mean():.3f}  ({len(pos)}+{len(neg)})")
    pairs: dict[str, dict[bool, float]] = defaultdict(dict)
    for r in have:
        pairs[r["id"].rsplit("-", 1)[0]][r["metadata"]["addresses"]] = values[r["id"]]
    inverted = [k for k, v in pairs.items() if len(v) == 2 and v[False] >= v[True]]
    print(f"  {name:<16} pairs where the answer that does not respond scores at least as high: "
          f"{len(inverted)} of {sum(len(v) == 2 for v in pairs.values())} {inverted}")


def main(argv: Sequence[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--judge", default="local", help="the judge (default: the embedded one)")
    ap.add_argument("--n", type=int, default=0, help="the first N questions of each kind (default: all)")
    ap.add_argument("--timeout", type=float, default=300.0, help="seconds per judge call (default 300)")
    ap.add_argument("--store", default=None,
                    help="a store file whose judge cache the run reads and writes (default: none, no cache); "
                         "the before and after runs share the generated questions through it")
    ap.add_argument("--ids", default="", help="comma-separated row ids (default: all)")
    ap.add_argument("--load", default=None,
                    help="print the figures of a run already in --store (its id) instead of running: a run "
                         "stopped part way has its finished rows there")
    ap.add_argument("--explain", default="unsupported", choices=["none", "unsupported", "all"],
                    help="which verdicts get a reason (default: the No verdicts; none saves their generation)")
    ap.add_argument("--fit", action="store_true",
                    help="after the figures, the scale of the judged P by the rule of docs/validity.md "
                         "(#answer-relevancy-scale): Platt scaling fitted on the development pairs, checked "
                         "on the others, balanced accuracy at 0.5 before and after (from the judge's own P, "
                         "so a run made before or after the map was shipped gives the same fit)")
    args = ap.parse_args(argv)

    import ragsight
    from ragsight.analyses import AnalysisSettings
    from ragsight.judge import RetryPolicy

    rows = read_jsonl(SET)
    if args.n:
        singles = sorted({r["id"].rsplit("-", 1)[0] for r in rows if "history" not in r})[: args.n]
        follows = sorted({r["id"].rsplit("-", 1)[0] for r in rows if "history" in r})[: args.n]
        keep = set(singles) | set(follows)
        rows = [r for r in rows if r["id"].rsplit("-", 1)[0] in keep]
    if args.ids:
        wanted = set(args.ids.split(","))
        rows = [r for r in rows if r["id"] in wanted]
    data = [{k: v for k, v in r.items()} for r in rows]
    policy = RetryPolicy(call_timeout_s=args.timeout, step_deadline_s=2 * args.timeout)
    if args.load:
        from ragsight.result import load_result

        result = load_result(ragsight.Store(args.store), args.load)
        rows = [r for r in rows if r["id"] in result.scores]
    else:
        result = ragsight.evaluate(data, ["answer_relevancy"], judge=args.judge, embedder="local", store=args.store,
                                   options=ragsight.RunOptions(cache=args.store is not None, policy=policy,
                                                               settings=AnalysisSettings(explain=args.explain),
                                                               show_progress=False))
    value: dict[str, float] = {}
    cosine: dict[str, float] = {}
    judged: dict[str, float] = {}
    for r in rows:
        per = result.scores.get(r["id"]) or {}
        sc = per.get("answer_relevancy")
        if sc is None or sc.value is None:
            print(f"{r['id']}: {sc.outcome.value if sc else 'missing'}: {sc.reason if sc else ''}")
            continue
        d = sc.evidence.details
        value[r["id"]] = sc.value
        sims = [q["similarity"] for q in d.get("questions") or ()]
        if sims:
            cosine[r["id"]] = float(np.mean(sims))
        addresses = d.get("addresses")
        if addresses:  # the judge's own P (kept as judge_p once a map of it is the value)
            judged[r["id"]] = float(addresses.get("judge_p", addresses["probability"]))
        qs = " | ".join(q["question"] for q in d.get("questions") or ())
        p = f" P {judged[r['id']]:.3f}" if r["id"] in judged else ""
        why = f" ({addresses['reason']})" if addresses and addresses.get("reason") else ""
        print(f"{r['id']:<40} responds={r['metadata']['addresses']!s:<5} value {sc.value:.3f} "
              f"cosine {cosine.get(r['id'], float('nan')):.3f}{p}{why}  [{qs}]")
    print()
    report("value", rows, value)
    report("cosine", rows, cosine)
    if judged:
        report("judged P", rows, judged)
    if args.fit:
        fit_scale(read_jsonl(SET), judged)
    return 0


def split_pairs(rows: list[dict]) -> tuple[set[str], set[str]]:
    """The rule's split: the pairs (the two answers to one question), single-turn and follow-ups
    apart, in the order of the file, alternately development (1st, 3rd, ...) and check."""
    dev: set[str] = set()
    check: set[str] = set()
    for follow in (False, True):
        keys = list(dict.fromkeys(r["id"].rsplit("-", 1)[0] for r in rows if ("history" in r) == follow))
        for i, k in enumerate(keys):
            (dev if i % 2 == 0 else check).add(k)
    return dev, check


def platt(p: np.ndarray, y: np.ndarray) -> tuple[float, float]:
    """(a, b) of P' = sigmoid(a * logit(P) + b) by maximum likelihood with Platt's targets
    ((N+ + 1) / (N+ + 2) for a positive row, 1 / (N- + 2) for a negative one)."""
    from scipy.optimize import minimize

    from ragsight.analyses._calibrated import logit

    x = np.array([logit(v) for v in p])
    n_pos, n_neg = int(y.sum()), int(len(y) - y.sum())
    t = np.where(y == 1, (n_pos + 1) / (n_pos + 2), 1 / (n_neg + 2))

    def loss(ab: np.ndarray) -> float:
        z = ab[0] * x + ab[1]
        return float(np.sum(np.logaddexp(0, z) - t * z))  # -sum(t log s(z) + (1 - t) log(1 - s(z)))

    got = minimize(loss, np.array([1.0, 0.0]), method="BFGS")
    return float(got.x[0]), float(got.x[1])


def _read_at(name: str, p: np.ndarray, y: np.ndarray) -> str:
    yes = p >= 0.5
    tpr, tnr = float(yes[y == 1].mean()), float((~yes[y == 0]).mean())
    return (f"{name:<9} balanced accuracy at 0.5 {(tpr + tnr) / 2:.3f}  responds read right {int(yes[y == 1].sum())} "
            f"of {int((y == 1).sum())}, does not {int((~yes[y == 0]).sum())} of {int((y == 0).sum())}  "
            f"AUROC {auroc_pairs(p[y == 1], p[y == 0]):.3f}  range responds {p[y == 1].min():.2f}-{p[y == 1].max():.2f}"
            f", does not {p[y == 0].min():.2f}-{p[y == 0].max():.2f}")


def fit_scale(rows: list[dict], judged: dict[str, float]) -> None:
    """The rule of docs/validity.md#answer-relevancy-scale, applied and reported."""
    dev, _ = split_pairs(rows)
    part = {r["id"]: ("dev" if r["id"].rsplit("-", 1)[0] in dev else "check") for r in rows}
    label = {r["id"]: int(bool(r["metadata"]["addresses"])) for r in rows}
    have = [r["id"] for r in rows if r["id"] in judged]
    missing = [r["id"] for r in rows if r["id"] not in judged]
    print(f"\nscale (rule: docs/validity.md#answer-relevancy-scale): {len(have)} rows with a judged P"
          + (f"; without one: {', '.join(missing)}" if missing else ""))
    ids = {k: [i for i in have if part[i] == k] for k in ("dev", "check")}
    ids["all"] = have
    p = {k: np.array([judged[i] for i in v]) for k, v in ids.items()}
    y = {k: np.array([label[i] for i in v]) for k, v in ids.items()}
    a, b = platt(p["dev"], y["dev"])
    print(f"  Platt on the development rows ({len(ids['dev'])}): P' = sigmoid({a:.6f} * logit(P) + {b:.6f})"
          f"{'' if a > 0 else '  (a <= 0: not monotone increasing, cannot ship)'}")

    from ragsight.analyses._calibrated import logit

    def mapped(v: np.ndarray) -> np.ndarray:
        return np.array([1 / (1 + np.exp(-(a * logit(x) + b))) for x in v])

    for k in ("dev", "check", "all"):
        print(f"  {k} ({len(ids[k])} rows)")
        print("    " + _read_at("P", p[k], y[k]))
        print("    " + _read_at("P'", mapped(p[k]), y[k]))
    pc, yc = p["check"], y["check"]
    q = mapped(pc)

    def bal(v: np.ndarray) -> float:
        return float(((v[yc == 1] >= 0.5).mean() + (v[yc == 0] < 0.5).mean()) / 2)

    ships = (a > 0 and bal(q) > bal(pc) and (q[yc == 1] >= 0.5).mean() > 0.5 and (q[yc == 0] < 0.5).mean() > 0.5)
    print(f"  by the rule: {'ships' if ships else 'does not ship'} (check rows: balanced accuracy "
          f"{bal(pc):.3f} -> {bal(q):.3f})")


if __name__ == "__main__":
    raise SystemExit(main())
