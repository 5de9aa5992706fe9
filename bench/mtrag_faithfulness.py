"""Per-turn faithfulness on multi-turn RAG against human labels (MTRAG).

Rows: ``mtrag_meta_dev.jsonl`` of the shared meta-evaluation sets (the development half; see its
``.md``), the responses to the last user turn of a conversation, with contexts (faithfulness of
a row without contexts is ill-defined). Each row is scored by

- ``faithfulness`` with the embedded judge, the turn read **with its history** (the earlier
  turns: references resolved through them, restatements of the user not counted);
- the same judge **without history** (the row as a single-turn sample);
- model-free **word overlap**: the share of the response's content words found in the contexts
  (and in the contexts plus the history).

and each score is compared with ``label_faithful`` and ``label_faithful_strict``: AUROC, and
balanced accuracy (the judge at its threshold, score >= 0.5; word overlap at its best threshold
on these rows, which flatters it). Judge outputs are cached on disk (a JSONL file under
``$RAGSIGHT_VALIDITY_CACHE``), so a second run, or a run over more conversations, repeats no
model call. The claims and their verdicts against the contexts alone are shared by the two judge
variants (the same cached calls); "with history" adds only the calls that read the conversation.

    .venv/bin/python bench/mtrag_faithfulness.py --conversations 3
    .venv/bin/python bench/mtrag_faithfulness.py --matched 5

``--matched N`` takes the first N turns that have a response the annotators judged unfaithful,
with all three responses of each (the same question, contexts and history): a judge must tell
the responses of one turn apart, so the figure is not carried by differences between turns, and
the few unfaithful rows (22 of the 216 with contexts) are reached in few model calls.
"""

from __future__ import annotations

import argparse
import asyncio
import sys
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "src"))
sys.path.insert(0, str(Path(__file__).resolve().parent))

import validity  # noqa: E402
from _data import read_jsonl  # noqa: E402

from ragsight import Outcome  # noqa: E402
from ragsight._stats import auroc, best_threshold, threshold_metrics  # noqa: E402
from ragsight.analyses import AnalysisSettings, SampleAnalyses, content_words  # noqa: E402
from ragsight.conversation import Turn  # noqa: E402
from ragsight.judge import Judge, JudgeFailedError, RetryPolicy  # noqa: E402
from ragsight.metrics import Faithfulness  # noqa: E402
from ragsight.sample import Sample  # noqa: E402

DATA = validity.METAEVAL / "mtrag_meta_dev.jsonl"
SETTINGS = AnalysisSettings(verify_response_vs_contexts=True, explain="none")


def load(conversations: int | None, matched: int | None) -> list[dict[str, Any]]:
    """Rows with contexts: of the first ``conversations`` conversations, or every response of the
    first ``matched`` turns (in file order) that have a response labelled unfaithful."""
    rows = read_jsonl(DATA)
    rows = [r for r in rows if r["contexts"]]
    if matched is not None:
        turns: dict[str, list[dict[str, Any]]] = {}
        for r in rows:
            turns.setdefault(r["task_id"], []).append(r)
        chosen = [t for t, rs in turns.items() if any(not r["label_faithful"] for r in rs)][:matched]
        return [r for t in chosen for r in turns[t]]
    order = list(dict.fromkeys(r["conversation_id"] for r in rows))[:conversations]
    return [r for r in rows if r["conversation_id"] in set(order)]


def sample(row: dict[str, Any], with_history: bool) -> Sample:
    history = tuple(Turn(t["role"], t["content"]) for t in row["turns"][:-1])
    return Sample(id=row["id"], question=row["question"], response=row["response"],
                  contexts=tuple(row["contexts"]), conversation_id=row["conversation_id"],
                  turn=row["turn"] - 1, history=history if with_history and history else None)


def overlap(row: dict[str, Any], with_history: bool) -> float:
    words = set(content_words(row["response"]))
    if not words:
        return 1.0
    source = " ".join(row["contexts"])
    if with_history:
        source += " " + " ".join(t["content"] for t in row["turns"][:-1])
    found = set(content_words(source))
    return len(words & found) / len(words)


async def judge_rows(rows: list[dict[str, Any]]) -> dict[str, dict[str, Any]]:
    cache = validity.JsonlCache(validity.CACHE_DIR / "mtrag_calls.jsonl")
    # a shared, loaded machine: a generation may take minutes; the default 120 s cut rows short
    base = validity.make_judge(cache)
    judge = Judge(base.provider, cache=cache, sink=base.sink,
                  policy=RetryPolicy(call_timeout_s=900.0, step_deadline_s=3600.0))
    out: dict[str, dict[str, Any]] = {}
    for i, row in enumerate(rows, start=1):
        t0 = time.time()
        got: dict[str, Any] = {"resolved": 0, "restates_user": 0}
        for variant, hist in (("without", False), ("with", True)):
            try:
                score = await Faithfulness().score(SampleAnalyses(sample(row, hist), judge, None, SETTINGS))
            except JudgeFailedError as exc:  # counted as failed, the run goes on
                got[variant], got[variant + "_outcome"] = None, f"failed: {exc}"
                continue
            got[variant] = score.value if score.outcome is Outcome.SCORED else None
            got[variant + "_outcome"] = score.outcome.value
            if hist:
                got["resolved"] = len(score.evidence.details.get("resolved", []))
                got["restates_user"] = score.evidence.details.get("restates_user", 0)
        out[row["id"]] = got
        print(f"  [{i}/{len(rows)}] {row['id'][-40:]}: without {got['without']}, with {got['with']} "
              f"({time.time() - t0:.0f} s)", file=sys.stderr, flush=True)
    return out


def figures(name: str, scores: list[float], labels: list[int], threshold: float | None) -> str:
    a = auroc(scores, labels)
    t = threshold if threshold is not None else best_threshold(scores, labels)
    if a is None or t is None:
        return f"  {name:<30} one class only"
    m = threshold_metrics(scores, labels, t)
    ba = ((m.recall or 0.0) + (m.specificity or 0.0)) / 2
    how = "" if threshold is not None else " (best threshold, in-sample)"
    return f"  {name:<30} AUROC {a:.3f}   balanced accuracy {ba:.3f} at {t:.2f}{how}"


def auroc_gap(a: list[float], b: list[float], labels: list[int], n: int = 2000) -> str:
    """AUROC(a) - AUROC(b) on the same rows with a paired bootstrap 95% interval (rows resampled,
    seed 0): whether the two rank the rows differently beyond what 45 rows can tell."""
    import random

    rng = random.Random(0)
    base = auroc(a, labels)
    other = auroc(b, labels)
    assert base is not None and other is not None
    gaps = []
    idx = range(len(labels))
    for _ in range(n):
        pick = [rng.choice(idx) for _ in idx]
        y = [labels[i] for i in pick]
        ga, gb = auroc([a[i] for i in pick], y), auroc([b[i] for i in pick], y)
        if ga is not None and gb is not None:
            gaps.append(ga - gb)
    gaps.sort()
    lo, hi = gaps[int(0.025 * len(gaps))], gaps[int(0.975 * len(gaps)) - 1]
    return f"{base - other:+.3f} (95% CI {lo:+.3f} to {hi:+.3f}, paired bootstrap of rows)"


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    pick = ap.add_mutually_exclusive_group()
    pick.add_argument("--conversations", type=int, default=None, help="the first N conversations of the file")
    pick.add_argument("--matched", type=int, default=None,
                      help="every response of the first N turns with a response labelled unfaithful "
                           "(matched: same question, contexts and history, different responses)")
    args = ap.parse_args()
    if args.conversations is None and args.matched is None:
        args.conversations = 3
    rows = load(args.conversations, args.matched)
    what = (f"first {args.conversations} conversations" if args.matched is None
            else f"every response of the first {args.matched} turns with an unfaithful one")
    judged = asyncio.run(judge_rows(rows))
    both = [r for r in rows if judged[r["id"]]["with"] is not None and judged[r["id"]]["without"] is not None]
    failed = sum(any(str(judged[r["id"]][v + "_outcome"]).startswith("failed") for v in ("with", "without"))
                 for r in rows)
    print(f"MTRAG development half, {what}: {len(rows)} rows with "
          f"contexts; {len(both)} scored by both judge variants (left out: {failed} failed, "
          f"{len(rows) - len(both) - failed} undetermined: no factual claim)")
    resolved = sum(judged[r["id"]]["resolved"] > 0 for r in both)
    restated = sum(judged[r["id"]]["restates_user"] > 0 for r in both)
    print(f"with history: {resolved} rows had a claim resolved through an earlier turn, "
          f"{restated} a claim restating the user")
    every = load(10**6, None)
    for label in ("label_faithful", "label_faithful_strict"):
        y_all = [int(r[label]) for r in every]
        print(f"{label}, all {len(every)} rows with contexts (no model): {sum(y_all)} positive")
        print(figures("word overlap, contexts", [overlap(r, False) for r in every], y_all, None))
        print(figures("word overlap, contexts+history", [overlap(r, True) for r in every], y_all, None))
        y = [int(r[label]) for r in both]
        print(f"{label}: {sum(y)} of {len(y)} positive")
        print(figures("judge, with history", [judged[r["id"]]["with"] for r in both], y, 0.5))
        print(figures("judge, without history", [judged[r["id"]]["without"] for r in both], y, 0.5))
        print(figures("word overlap, contexts", [overlap(r, False) for r in both], y, None))
        print(figures("word overlap, contexts+history", [overlap(r, True) for r in both], y, None))
        print("  AUROC judge with history - word overlap, contexts: " + auroc_gap(
            [judged[r["id"]]["with"] for r in both], [overlap(r, False) for r in both], y))


if __name__ == "__main__":
    main()
