"""Answer relevancy with one generated question against three, the embedded judge.

    RAGSIGHT_THREADS=1 nice -n 5 .venv/bin/python bench/questions_check.py --n 12

ragsight has no human labels of answer relevancy; the labelled set used here is
``bench/nonanswer_set.jsonl`` (real answers against non-answers and declines, in four
languages), the rows picked as ``bench/nonanswer_check.py`` picks them (a spread over label, kind
and language). The decline detector is turned off (``AnalysisSettings(nonanswers=False)``), so
the score comes from the judge's generated questions and its noncommittal flag alone, the part
that changes. Each row is scored with ``embedded_questions=3`` (before) and ``=1``
(shipped), with the embedded judge and the default local embedder, no cache. Printed for each:
AUROC of answer_relevancy, answers (positive) against non-answers, with a 95% percentile
bootstrap interval (2,000 resamples of the rows, seed 0), the judge's calls, generated tokens and seconds
(all ``generate_questions``); then the largest per-row difference between the two.
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))
sys.path.insert(0, str(HERE.parent / "src"))

import nonanswer_check  # noqa: E402


def bootstrap_auroc(values: list[float], labels: list[bool], n_boot: int = 2000,
                    seed: int = 0) -> tuple[float | None, float | None, float | None]:
    import numpy as np
    from _stats import resampled

    from ragsight._stats import auroc

    point = auroc(values, labels)
    v, y = np.asarray(values), np.asarray(labels)

    def both_classes_auroc(idx: Any) -> float | None:
        if y[idx].all() or not y[idx].any():
            return None
        return auroc(v[idx].tolist(), y[idx].tolist())

    boots = resampled(both_classes_auroc, len(v), n_boot, seed)
    if not boots:
        return point, None, None
    return point, float(np.percentile(boots, 2.5)), float(np.percentile(boots, 97.5))


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--n", type=int, default=12, help="rows (default 12)")
    args = ap.parse_args(argv)

    import ragsight
    from ragsight import Outcome
    from ragsight.analyses import AnalysisSettings
    from ragsight.embed import make_embedder
    from ragsight.judge import make_judge

    rows = nonanswer_check.pick(nonanswer_check.load(), args.n)
    data = [{"id": r["id"], "question": r["question"], "response": r["response"]} for r in rows]
    label = {r["id"]: r["label"] == "answer" for r in rows}
    judge = make_judge("local")
    embedder = make_embedder(None)
    print(f"judge {judge.name}; {len(rows)} rows: {sum(label.values())} answers, "
          f"{len(rows) - sum(label.values())} non-answers; decline detector off")
    values: dict[int, dict[str, float]] = {}
    for k in (3, 1):
        t0 = time.monotonic()
        res = ragsight.evaluate(data, ["answer_relevancy"], judge=judge, embedder=embedder,
                                options=ragsight.RunOptions(cache=False, settings=AnalysisSettings(nonanswers=False, embedded_questions=k), show_progress=False))
        wall = time.monotonic() - t0
        scores = {sid: s["answer_relevancy"] for sid, s in res.scores.items()}
        values[k] = {sid: float(s.value) for sid, s in scores.items()
                     if s.outcome is Outcome.SCORED and s.value is not None}
        ids = sorted(values[k])
        point, lo, hi = bootstrap_auroc([values[k][i] for i in ids], [label[i] for i in ids])
        st = res.judge_stats  # the run has only generate_questions calls
        ci = f"[{lo:.3f}, {hi:.3f}]" if lo is not None and hi is not None else "[-]"
        print(f"{k} question(s): AUROC {point if point is None else round(point, 3)} {ci}, scored {len(ids)} of "
              f"{len(rows)}; judge: {st['calls']} calls, {st['completion_tokens']} generated tokens, "
              f"{st['latency_s']:.1f} s "
              f"(wall {wall:.0f} s)")
    common = sorted(set(values[3]) & set(values[1]))
    diffs = sorted(((abs(values[3][i] - values[1][i]), i) for i in common), reverse=True)
    if diffs:
        print(f"per row |3 - 1|: mean {sum(d for d, _ in diffs) / len(diffs):.3f}, largest {diffs[0][0]:.3f} "
              f"({diffs[0][1]})")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
