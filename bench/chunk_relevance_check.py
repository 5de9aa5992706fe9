"""Chunk relevance: rank sensitivity and agreement with passage relevance labels.

    RAGSIGHT_THREADS=1 nice -n 5 .venv/bin/python bench/chunk_relevance_check.py --n 12
    RAGSIGHT_THREADS=1 nice -n 5 .venv/bin/python bench/chunk_relevance_check.py --n 4 --ranks 2 --json r2.json
    .venv/bin/python bench/chunk_relevance_check.py --combine r1.json r2.json r3.json

Runs whatever ``ragsight`` is importable, so the same command measures the code before a change
(``PYTHONPATH=<old tree>/src``) and after it.

The set (labels by construction; no human labelled these passages one by one): MTRAG development
(``mtrag_meta_dev.jsonl`` of the human-labelled sets, Apache-2.0, Katsis et al. 2025), one row per
answerable turn with passages and a reference answer, turns taken in the order of sha256(task_id).
Each sample has three chunks:

- ``needed``: the turn's own passage (one MTRAG gave the answerer) sharing the most content
  words with the reference; labelled relevant;
- ``same_conversation``: a passage of another turn of the same conversation that is not one of
  this turn's passages: on the same topic, usually not holding this answer; labelled not
  relevant (by construction: a few may hold part of the answer, so this label is the noisier);
- ``other_conversation``: a passage of another conversation of the same collection (same
  domain); labelled not relevant.

The needed chunk is put at rank 1, 2 and 3 (the other two keep their order); each ranking is one
``ragsight.evaluate(..., ["context_precision"], judge=<the embedded judge>, store=<a fresh
temporary store>)``, the three sharing that store's judge cache: a call whose prompt is the same
in two rankings is answered once (with the change, every chunk call is; before it, none is).
The cost is read from the first ranking, where nothing is cached. Printed:

- rank sensitivity: mean context_precision per rank of the needed chunk, and the share of samples
  where it falls from rank 1 to 2 and from 2 to 3 (it must fall whenever the needed chunk is
  judged relevant and some chunk is judged not relevant);
- consistency: the share of chunks whose verdict is the same in the three rankings (a verdict
  that moves with its neighbours or its place is not a property of the chunk);
- agreement with the labels, pooled over the three rankings: accuracy, Cohen's kappa, the share
  judged relevant per kind of chunk, AUROC of P(Yes); and, as a floor with no model, the AUROC of
  the share of the reference's content words found in the chunk;
- cost: judge calls, prompt tokens evaluated (after prefix reuse) and seconds per sample, per
  prompt id; how many verdicts got a reason.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import os
import re
import sys
import time
from collections import Counter, defaultdict
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))
from _data import read_jsonl
from _where import metaeval

KINDS = ("needed", "same_conversation", "other_conversation")
STOP = frozenset({
    "a", "an", "the", "of", "to", "in", "on", "at", "for", "and", "or", "but", "is", "are", "was",
    "were", "be", "been", "it", "its", "this", "that", "these", "those", "with", "by", "as", "from",
    "into", "than", "then", "there", "their", "they", "you", "your", "we", "our", "can", "could",
    "would", "should", "will", "not", "no", "do", "does", "did", "have", "has", "had", "which",
    "who", "what", "when", "where", "how", "why", "if", "so", "such", "also", "more", "most",
})


def words(text: str) -> set[str]:
    return {w for w in re.findall(r"[a-z0-9]+", text.lower()) if w not in STOP and len(w) > 1}


def overlap(reference: str, chunk: str) -> float:
    ref = words(reference)
    return len(ref & words(chunk)) / len(ref) if ref else 0.0


def _h(text: str) -> str:
    return hashlib.sha256(text.encode("utf-8")).hexdigest()


def candidates(t: dict[str, Any], pool: list[dict[str, Any]], same: bool) -> list[str]:
    """Passages of the other turns in ``pool`` (of the same conversation when ``same``, else of
    other conversations) that are not among turn ``t``'s passages, in an order fixed by a hash."""
    own_ids, own_texts = set(t["context_ids"]), set(t["contexts"])
    found = {}
    for u in pool:
        if (u["conversation_id"] == t["conversation_id"]) != same or u["task_id"] == t["task_id"]:
            continue
        for cid, text in zip(u["context_ids"], u["contexts"]):
            if cid not in own_ids and text not in own_texts:
                found[cid] = text
    return [found[k] for k in sorted(found, key=lambda k: _h(t["task_id"] + k))]


def build_set(path: Path, n: int) -> list[dict[str, Any]]:
    rows = read_jsonl(path)
    turns: dict[str, dict[str, Any]] = {}
    for r in rows:
        turns.setdefault(r["task_id"], r)
    by_conv: dict[str, list[dict[str, Any]]] = defaultdict(list)
    by_coll: dict[str, list[dict[str, Any]]] = defaultdict(list)
    for t in turns.values():
        by_conv[t["conversation_id"]].append(t)
        by_coll[t["collection"]].append(t)
    out = []
    for task_id in sorted(turns, key=_h):
        t = turns[task_id]
        if t["answerability"] != "ANSWERABLE" or not t["contexts"] or not (t["reference"] or "").strip():
            continue
        needed = max(t["contexts"], key=lambda c: (overlap(t["reference"], c), -t["contexts"].index(c)))

        same = candidates(t, by_conv[t["conversation_id"]], True)
        other = candidates(t, by_coll[t["collection"]], False)
        if not same or not other:
            continue
        out.append({"id": task_id, "question": t["question"], "reference": t["reference"],
                    "chunks": {"needed": needed, "same_conversation": same[0], "other_conversation": other[0]}})
        if len(out) == n:
            break
    return out


def ranking(item: dict[str, Any], rank: int) -> list[str]:
    rest = [item["chunks"]["same_conversation"], item["chunks"]["other_conversation"]]
    return [*rest[: rank - 1], item["chunks"]["needed"], *rest[rank - 1:]]


def auroc(scores: list[float], labels: list[int]) -> float | None:
    pos = [s for s, y in zip(scores, labels) if y]
    neg = [s for s, y in zip(scores, labels) if not y]
    if not pos or not neg:
        return None
    wins = sum((p > q) + 0.5 * (p == q) for p in pos for q in neg)
    return wins / (len(pos) * len(neg))


def kappa(pred: list[int], labels: list[int]) -> float:
    n = len(pred)
    po = sum(p == y for p, y in zip(pred, labels)) / n
    p1, y1 = sum(pred) / n, sum(labels) / n
    pe = p1 * y1 + (1 - p1) * (1 - y1)
    return (po - pe) / (1 - pe) if pe < 1 else 1.0


class Recorder:
    """The embedded provider, with calls, prompt tokens evaluated and seconds counted per prompt."""

    def __init__(self, inner: Any) -> None:
        self.inner = inner
        self.stats: dict[str, Counter[str]] = defaultdict(Counter)
        self.seconds: dict[str, float] = defaultdict(float)

    def __getattr__(self, name: str) -> Any:
        return getattr(self.inner, name)

    async def _timed(self, request: Any, call: Any) -> Any:
        e0 = self.inner.tokens_evaluated
        t0 = time.perf_counter()
        out = await call
        self.seconds[request.prompt_id] += time.perf_counter() - t0
        self.stats[request.prompt_id]["calls"] += 1
        self.stats[request.prompt_id]["evaluated"] += self.inner.tokens_evaluated - e0
        return out

    async def complete(self, request: Any) -> Any:
        return await self._timed(request, self.inner.complete(request))

    async def score_choices(self, request: Any, choices: Any) -> Any:
        return await self._timed(request, self.inner.score_choices(request, choices))


def run(args: argparse.Namespace) -> dict[str, Any]:
    """Judge the set's rankings named in ``args.ranks``; the verdicts, values and cost."""
    import asyncio
    import tempfile

    import ragsight
    from ragsight.analyses import AnalysisSettings
    from ragsight.judge import Judge, RetryPolicy, make_judge

    items = build_set(args.data, args.n)
    provider = make_judge("local").provider
    rec = Recorder(provider)
    # a busy machine makes one embedded call take minutes: the default timeout would fail them
    judge = Judge(rec, policy=RetryPolicy(call_timeout_s=args.timeout,  # type: ignore[arg-type]
                                          step_deadline_s=3 * args.timeout))
    settings = AnalysisSettings(explain=args.explain)
    t0 = time.perf_counter()
    asyncio.run(provider.preflight())  # the model loaded once, not counted in the cost
    print(f"model loaded in {time.perf_counter() - t0:.0f} s (not counted)")
    print(f"set: {len(items)} MTRAG development turns, 3 chunks each; chunk_relevant prompt "
          f"v{ragsight.prompts.load_prompt('chunk_relevant').version}; threads "
          f"{os.environ.get('RAGSIGHT_THREADS', 'default')}; load {os.getloadavg()[0]:.1f}", flush=True)
    store = Path(tempfile.mkdtemp(prefix="ragsight-chunks-")) / "runs.db"
    out: dict[str, Any] = {"items": items, "verdicts": [], "precision": {}, "cost": None}
    for rank in args.ranks:
        samples = [{"id": it["id"], "question": it["question"], "reference": it["reference"],
                    "contexts": ranking(it, rank)} for it in items]
        t0 = time.perf_counter()
        before = {k: Counter(v) for k, v in rec.stats.items()}
        res = ragsight.evaluate(samples, ["context_precision"], judge=judge, store=store,
                                options=ragsight.RunOptions(settings=settings))
        made = {pid: st["calls"] - before.get(pid, Counter())["calls"] for pid, st in rec.stats.items()}
        if out["cost"] is None:  # the first ranking judged: nothing cached yet
            out["cost"] = {"seconds": time.perf_counter() - t0, "rank": rank,
                           "by_prompt": {pid: {**st, "seconds": rec.seconds[pid]} for pid, st in rec.stats.items()}}
        out["precision"][str(rank)] = {}
        for it in items:
            score = res.scores[it["id"]]["context_precision"]
            if score.value is None:
                print(f"  {it['id']} rank {rank}: {score.outcome.value} {score.reason}")
                continue
            out["precision"][str(rank)][it["id"]] = score.value
            texts = ranking(it, rank)
            for c in score.evidence.details["chunks"]:
                kind = next(k for k in KINDS if it["chunks"][k] == texts[c["rank"] - 1])
                out["verdicts"].append({"id": it["id"], "kind": kind, "rank": rank, "relevant": c["relevant"],
                                        "probability": c["probability"], "reason": c.get("reason") or ""})
        print(f"  needed chunk at rank {rank}: {time.perf_counter() - t0:.0f} s, calls made {made}, "
              f"load {os.getloadavg()[0]:.1f}", flush=True)
    return out


def report(parts: list[dict[str, Any]]) -> None:
    """The figures of one run, or of several runs of the same set that judged different rankings."""
    items = parts[0]["items"]
    n = len(items)
    precision: dict[int, dict[str, float]] = {r: {} for r in (1, 2, 3)}
    verdicts: dict[tuple[str, str, int], tuple[bool, float | None, str]] = {}
    for part in parts:
        for r, values in part["precision"].items():
            precision[int(r)].update(values)
        for v in part["verdicts"]:
            verdicts[(v["id"], v["kind"], v["rank"])] = (v["relevant"], v["probability"], v["reason"])
    print("\nrank sensitivity (context_precision with the needed chunk at rank 1 / 2 / 3):")
    means = [f"{sum(precision[r].values()) / len(precision[r]):.3f}" if precision[r] else "-" for r in (1, 2, 3)]
    print(f"  mean {' / '.join(means)} (-: not judged, or every sample failed)")
    both = [i for i in precision[1] if i in precision[2] and i in precision[3]]
    fall12 = sum(precision[2][i] < precision[1][i] for i in both)
    fall23 = sum(precision[3][i] < precision[2][i] for i in both)
    flat = sum(precision[1][i] == precision[2][i] == precision[3][i] for i in both)
    print(f"  falls from rank 1 to 2 on {fall12} of {len(both)} samples, from 2 to 3 on {fall23}; "
          f"the same at all three ranks on {flat}")

    same = sum(len({verdicts[(it["id"], k, r)][0] for r in (1, 2, 3) if (it["id"], k, r) in verdicts}) == 1
               for it in items for k in KINDS)
    print(f"\nconsistency: {same} of {3 * n} chunks keep their verdict in the rankings judged")

    keys = sorted(verdicts)
    if not keys:
        print("\nno chunk verdict: every sample failed (see above)")
        return
    labels = [int(k[1] == "needed") for k in keys]
    pred = [int(verdicts[k][0]) for k in keys]
    acc = sum(p == y for p, y in zip(pred, labels)) / len(keys)
    print(f"\nagreement with the labels by construction ({len(keys)} verdicts, rankings pooled):")
    print(f"  accuracy {acc:.3f}, Cohen's kappa {kappa(pred, labels):.3f}")
    for kind in KINDS:
        ks = [k for k in keys if k[1] == kind]
        print(f"  {kind:<19} judged relevant {sum(verdicts[k][0] for k in ks):>3} of {len(ks)}")
    probs = [verdicts[k][1] for k in keys]
    if all(p is not None for p in probs):
        a = auroc([float(p) for p in probs if p is not None], labels)
        print(f"  AUROC of P(Yes): {a:.3f}" if a is not None else "  AUROC of P(Yes): n/a")
    floor = auroc([overlap(it["reference"], it["chunks"][k]) for it in items for k in KINDS],
                  [int(k == "needed") for _ in items for k in KINDS])
    print(f"  floor, no model (share of the reference's content words in the chunk): AUROC {floor:.3f}")
    reasons = sum(1 for v in verdicts.values() if v[2])
    print(f"  verdicts with a reason: {reasons} of {len(verdicts)}")

    for part in parts:
        cost = part["cost"]
        if not cost:
            continue
        print(f"\ncost, first ranking judged (rank {cost['rank']}, nothing cached; {n} samples of 3 chunks): "
              f"{cost['seconds']:.0f} s, {cost['seconds'] / n:.1f} s per sample")
        for pid, st in sorted(cost["by_prompt"].items()):
            print(f"  {pid:<16} {st['calls'] / n:.2f} calls, {st['evaluated'] / n:.0f} prompt tokens "
                  f"evaluated, {st['seconds'] / n:.2f} s per sample")


def words_only(items: list[dict[str, Any]]) -> None:
    """The rule that makes a chunk relevant without the judge (analyses/_chunks.py,
    states_the_answer) on every chunk of the set, per kind of chunk and per threshold."""
    from ragsight.analyses import _chunks
    from ragsight.analyses._calibrated import combine
    from ragsight.analyses._signals import compute_signals

    kinds = ["needed", "same_conversation", "other_conversation"]
    print(f"{len(items)} turns; chunks called relevant by their words alone (reference of "
          f">= {_chunks.STATED_MIN_WORDS} content words, signals-only P(supported) >= threshold):")
    for thr in (0.5, 0.6, 0.7, 0.8):
        counts = []
        for k in kinds:
            n = 0
            for it in items:
                sig = compute_signals(it["reference"], it["chunks"][k])
                n += sig["n_content"] >= _chunks.STATED_MIN_WORDS and combine(None, sig) >= thr
            counts.append(f"{k} {n} of {len(items)}")
        mark = "  <- the threshold used" if thr == _chunks.STATES_THE_ANSWER else ""
        print(f"  {thr:.1f}: " + ", ".join(counts) + mark)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--n", type=int, default=12, help="turns (samples) to judge (default 12)")
    ap.add_argument("--data", type=Path, default=metaeval() / "mtrag_meta_dev.jsonl")
    ap.add_argument("--explain", default="unsupported", choices=["none", "unsupported", "all"])
    ap.add_argument("--ranks", type=lambda v: [int(x) for x in v.split(",")], default=[1, 2, 3],
                    help="the rankings to judge, e.g. 2,3 (default 1,2,3)")
    ap.add_argument("--timeout", type=float, default=1800.0, help="seconds per judge call (default 1800)")
    ap.add_argument("--json", type=Path, help="write the verdicts, values and cost here")
    ap.add_argument("--combine", type=Path, nargs="+", metavar="JSON",
                    help="judge nothing: print the figures of runs written with --json (e.g. one per ranking)")
    ap.add_argument("--words-only", action="store_true",
                    help="judge nothing: how many chunks of each kind the word rule alone calls relevant "
                         "(a chunk that states the reference nearly word for word; use --n 200 for every turn)")
    args = ap.parse_args()
    if args.words_only:
        words_only(build_set(args.data, args.n))
        return
    if args.combine:
        report([json.loads(p.read_text(encoding="utf-8")) for p in args.combine])
        return
    out = run(args)
    if args.json:
        args.json.write_text(json.dumps(out, indent=1) + "\n", encoding="utf-8")
        print(f"wrote {args.json}")
    report([out])


if __name__ == "__main__":
    main()
