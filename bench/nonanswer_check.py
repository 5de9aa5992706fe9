"""Non-answers and declines before and after ``AnalysisSettings.nonanswers``: does faithfulness
stay out of a decline, and does answer_relevancy rank every real answer above every non-answer?

    nice -n 10 .venv/bin/python bench/nonanswer_check.py --detector-only   # no model, every row
    nice -n 10 .venv/bin/python bench/nonanswer_check.py --n 8             # and 8 rows with the embedded judge

Data: ``bench/nonanswer_set.jsonl``, 48 hand-written rows on public topics (gzip, HTTP, git,
Python, the Eiffel Tower, SQLite), each with a question, its contexts, a response and a label:
``answer`` (19 plain answers, 4 hedged answers; English, German, French, Spanish) or
``nonanswer`` (16 declines, 6 "I don't know", 3 hedges that give no answer; 13 of them in German,
French or Spanish).

Detector part (every row, no model): how many non-answers the decline detector
(``ragsight.metrics.abstention.detect_declines``, the one the abstention metric uses) reads as
declines, per language, and how many answers it wrongly reads as declines.

Judge part (``--n`` rows, spread over the kinds and languages; the embedded judge and the default
local embedder): ``ragsight.evaluate(rows, ["faithfulness", "answer_relevancy"])`` twice, with
``AnalysisSettings(nonanswers=False)`` (the behaviour before) and the default (after), on one
cache (the second run re-uses the first's judge steps where they are the same). Printed per run:

- answer_relevancy AUROC, real answers (positive) against non-answers (negative);
- non-answers given a faithfulness score (they should be ``undetermined``), and how many of them
  are among the 5 lowest faithfulness scores;
- claims in the faithfulness evidence that are not made of the response's own words (the check
  of ``ragsight.analyses._claims.grounded``): invented claims.
"""

from __future__ import annotations

import argparse
import sys
import tempfile
import time
from collections import Counter
from pathlib import Path
from typing import Any

from _data import read_jsonl

REPO = Path(__file__).resolve().parents[1]
DATA = REPO / "bench" / "nonanswer_set.jsonl"


def load() -> list[dict[str, Any]]:
    return read_jsonl(DATA)


def detector_part(rows: list[dict[str, Any]]) -> None:
    from ragsight.metrics.abstention import detect_declines

    found: Counter[tuple[str, str]] = Counter()
    total: Counter[tuple[str, str]] = Counter()
    wrong: list[str] = []
    for r in rows:
        declines = detect_declines(r["response"]).verdict == "declines"
        total[(r["label"], r["lang"])] += 1
        found[(r["label"], r["lang"])] += declines
        if declines and r["label"] == "answer":
            wrong.append(f'{r["id"]}: {r["response"]}')
    print("decline detector (no model), rows read as declines:")
    for label in ("nonanswer", "answer"):
        for lang in ("en", "de", "fr", "es"):
            if total[(label, lang)]:
                print(f"  {label:9} {lang}: {found[(label, lang)]:2d} of {total[(label, lang)]:2d}")
        n = sum(v for (lab, _), v in total.items() if lab == label)
        k = sum(v for (lab, _), v in found.items() if lab == label)
        print(f"  {label:9} all: {k:2d} of {n:2d}")
    for w in wrong:
        print(f"  answer read as a decline: {w}")


def pick(rows: list[dict[str, Any]], n: int) -> list[dict[str, Any]]:
    """n rows, round-robin over (label, kind, language) groups in file order: a spread, not the head."""
    groups: dict[tuple[str, str, str], list[dict[str, Any]]] = {}
    for r in rows:
        groups.setdefault((r["label"], r["kind"], r["lang"]), []).append(r)
    out: list[dict[str, Any]] = []
    while len(out) < n and any(groups.values()):
        for g in list(groups):
            if groups[g] and len(out) < n:
                out.append(groups[g].pop(0))
    return out


def judge_part(rows: list[dict[str, Any]], judge_spec: str, store: str) -> None:
    import ragsight
    from ragsight import Outcome
    from ragsight._stats import auroc
    from ragsight.analyses import AnalysisSettings
    from ragsight.analyses._claims import grounded
    from ragsight.embed import make_embedder
    from ragsight.judge import make_judge

    data = [{"id": r["id"], "question": r["question"], "contexts": r["contexts"], "response": r["response"]}
            for r in rows]
    label = {r["id"]: r["label"] for r in rows}
    text = {r["id"]: r["response"] for r in rows}
    question = {r["id"]: r["question"] for r in rows}
    judge = make_judge(judge_spec)
    embedder = make_embedder(None)
    print(f"\njudge {judge.name}, {len(rows)} rows: "
          + ", ".join(f"{k}={v}" for k, v in sorted(Counter(label.values()).items())))
    for name, settings in (("before", AnalysisSettings(nonanswers=False)), ("after", AnalysisSettings())):
        t0 = time.monotonic()
        res = ragsight.evaluate(data, ["faithfulness", "answer_relevancy"], judge=judge, embedder=embedder,
                                store=store,
                                options=ragsight.RunOptions(settings=settings, show_progress=False))
        seconds = time.monotonic() - t0
        ar = {sid: s["answer_relevancy"] for sid, s in res.scores.items()}
        scored = [sid for sid, s in ar.items() if s.outcome is Outcome.SCORED and s.value is not None]
        auc = auroc([ar[s].value for s in scored], [label[s] == "answer" for s in scored])  # type: ignore[misc]
        faith = {sid: s["faithfulness"] for sid, s in res.scores.items()}
        f_scored = {sid: s.value for sid, s in faith.items() if s.outcome is Outcome.SCORED and s.value is not None}
        non = [sid for sid in label if label[sid] == "nonanswer"]
        lowest = sorted(f_scored, key=lambda s: (f_scored[s], s))[:5]
        invented = sum(1 for sid, s in faith.items() for v in s.evidence.claims
                       if not grounded(v.claim, text[sid], question[sid]))
        claims = sum(len(s.evidence.claims) for s in faith.values())
        print(f"{name}: answer_relevancy AUROC {auc if auc is None else round(auc, 3)} "
              f"(answers {sum(label[s] == 'answer' for s in scored)}, non-answers "
              f"{sum(label[s] == 'nonanswer' for s in scored)})")
        print("  answer_relevancy of non-answers: "
              + ", ".join(f"{ar[s].value:.2f}" for s in non if ar[s].value is not None))
        print(f"  faithfulness: non-answers scored {sum(s in f_scored for s in non)} of {len(non)}, "
              f"among the 5 lowest {sum(s in lowest for s in non)}; "
              f"claims not made of the response's words {invented} of {claims}; {seconds:.0f} s")


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--detector-only", action="store_true", help="no model: the detector part only")
    ap.add_argument("--n", type=int, default=8, help="rows for the judge part (default 8)")
    ap.add_argument("--judge", default="local", help="judge spec (default: the embedded judge)")
    ap.add_argument("--store", default=None, help="run store (default: a temporary file)")
    args = ap.parse_args(argv)
    rows = load()
    detector_part(rows)
    if args.detector_only:
        return 0
    with tempfile.TemporaryDirectory() as tmp:
        judge_part(pick(rows, args.n), args.judge, args.store or str(Path(tmp) / "nonanswer.db"))
    return 0


if __name__ == "__main__":
    sys.exit(main())
