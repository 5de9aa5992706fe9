"""Are answers in one language over documents in another judged? 16 rows written for this check
(``bench/cross_language_set.jsonl``): 8 questions in German or French about the gzip and xz
tools, each over two English chunks from their manual pages (the first holds the answer), with a
correct answer, a wrong one (a fact the chunk contradicts or does not hold) and a correct
reference in the question's language.

    PYTHONPATH=src .venv/bin/python bench/cross_language_check.py            # the embedded judge
    PYTHONPATH=src .venv/bin/python bench/cross_language_check.py --n 2      # 2 questions per language

The code measured is the ``ragsight`` on PYTHONPATH (the code before a change: put its ``src``
there). Printed per row: faithfulness, context_recall and context_precision, and whether the run
marked the sample as judged across languages; then faithfulness of the correct answers against
the wrong ones (means, AUROC, how many pass at 0.5), and the means of context recall and context
precision (the reference is correct and the first chunk holds it: 1.0 is right for both).
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Sequence
from pathlib import Path

import numpy as np

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))

from _data import read_jsonl  # noqa: E402
from _stats import auroc_pairs  # noqa: E402

SET = HERE / "cross_language_set.jsonl"
METRICS = ["faithfulness", "context_recall", "context_precision"]


def main(argv: Sequence[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--judge", default="local", help="the judge (default: the embedded one)")
    ap.add_argument("--n", type=int, default=0, help="the first N questions of each language (default: all)")
    ap.add_argument("--timeout", type=float, default=300.0, help="seconds per judge call (default 300)")
    ap.add_argument("--store", default=None,
                    help="a store file whose judge cache the run reads and writes (default: in memory); the "
                         "change asks the judge nothing new, so a run after one with the code before it "
                         "reads every verdict from the cache and differs only in how they are combined")
    ap.add_argument("--explain", default="none", choices=["none", "unsupported", "all"],
                    help="which verdicts get a reason (default none: the figures need none, and they cost "
                         "a generation each)")
    args = ap.parse_args(argv)

    import ragsight
    from ragsight.analyses import AnalysisSettings
    from ragsight.judge import RetryPolicy

    rows = read_jsonl(SET)
    if args.n:
        keep: set[str] = set()
        for lang in sorted({r["metadata"]["lang"] for r in rows}):
            groups = list(dict.fromkeys(r["id"].rsplit("-", 1)[0] for r in rows if r["metadata"]["lang"] == lang))
            keep.update(groups[: args.n])
        rows = [r for r in rows if r["id"].rsplit("-", 1)[0] in keep]
    policy = RetryPolicy(call_timeout_s=args.timeout, step_deadline_s=2 * args.timeout)
    result = ragsight.evaluate(rows, METRICS, judge=args.judge, store=args.store,
                               options=ragsight.RunOptions(policy=policy, show_progress=False,
                                                           settings=AnalysisSettings(explain=args.explain)))
    got: dict[str, dict[str, float]] = {m: {} for m in METRICS}
    marked = 0
    for r in rows:
        per = result.scores.get(r["id"]) or {}
        cells = []
        apart = False
        for m in METRICS:
            sc = per.get(m)
            if sc is not None and sc.value is not None:
                got[m][r["id"]] = sc.value
                cells.append(f"{m} {sc.value:.2f}")
            else:
                cells.append(f"{m} {sc.outcome.value if sc else '-'}")
            apart = apart or bool(sc is not None and sc.evidence.details.get("across_languages"))
        marked += apart
        print(f"{r['id']:<24} {'  '.join(cells)}  across languages: {'yes' if apart else 'no'}")
    print()
    faith = got["faithfulness"]
    pos = np.array([faith[r["id"]] for r in rows if r["metadata"]["correct"] and r["id"] in faith])
    neg = np.array([faith[r["id"]] for r in rows if not r["metadata"]["correct"] and r["id"] in faith])
    if len(pos) and len(neg):
        print(f"faithfulness: correct mean {pos.mean():.3f}, wrong mean {neg.mean():.3f}, AUROC {auroc_pairs(pos, neg):.3f}; "
              f"pass at 0.5: correct {int((pos >= 0.5).sum())} of {len(pos)}, wrong {int((neg >= 0.5).sum())} of {len(neg)}")
    for m in ("context_recall", "context_precision"):
        vals = [got[m][r["id"]] for r in rows if r["metadata"]["correct"] and r["id"] in got[m]]
        if vals:
            print(f"{m}: mean {np.mean(vals):.3f} over {len(vals)} questions (1.0 is right)")
    print(f"samples marked as judged across languages: {marked} of {len(rows)}")
    import ragsight.result as results

    note = getattr(results, "languages_note", None)  # the code before the change has none
    print(f"run note: {note(result) if note else None}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
