"""``ragsight align`` on a human-labelled development set: held-out agreement before and after.

    .venv/bin/python bench/align_metaeval.py                          # 60 WiCE claims, embedded judge
    .venv/bin/python bench/align_metaeval.py --n 60 --examples 4      # also fit worked examples
    .venv/bin/python bench/align_metaeval.py --store /tmp/align.db    # keep (and reuse) the run

What it runs, through the product's own API: the WiCE development claims
(``../shared/metaeval/wice_claims_dev.jsonl``: a claim, the evidence the annotators judged it
against, their label supported / not), as samples with the evidence as ``contexts`` and the claim
as ``response``, scored by ``faithfulness`` with the embedded judge (``--judge``, default
``local``; explanations off). Only claims of one sentence of at most 25 words are taken (each is
then its own claim: no extraction call, and the sample label is the claim's label), the first
``--n`` of them in the order of a hash of their id (a fixed subset, both classes as they come).
The labels go into the store as sample labels (``labels import`` of a JSONL file), and
``align`` fits the verdict threshold (and, with ``--examples N``, N worked examples, re-asking the
judge on each held-out fold) with 5-fold cross-validation by sample. Printed: agreement (kappa,
accuracy) on the held-aside folds before and after, the fitted threshold, and whether ``align``
would save it. The run is kept in ``--store`` so a second call costs no judge time.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import os
import re
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "src"))
sys.path.insert(0, str(Path(__file__).resolve().parent))

import _where  # noqa: E402
from _data import read_jsonl  # noqa: E402

from ragsight import RunOptions, evaluate  # noqa: E402
from ragsight.analyses import AnalysisSettings  # noqa: E402
from ragsight.report import align, import_labels  # noqa: E402
from ragsight.store import Store  # noqa: E402

METAEVAL = _where.metaeval()


def one_claim(text: str) -> bool:
    return len(text.split()) <= 25 and len(re.findall(r"[.!?](\s|$)", text.strip())) <= 1


def subset(n: int) -> list[dict[str, Any]]:
    rows = read_jsonl(METAEVAL / "wice_claims_dev.jsonl")
    rows = [r for r in rows if r.get("label_supported") is not None and one_claim(r["answer"])]
    rows.sort(key=lambda r: hashlib.sha256(r["id"].encode()).hexdigest())
    return rows[:n]


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--n", type=int, default=60)
    ap.add_argument("--judge", default="local")
    ap.add_argument("--examples", type=int, default=0)
    ap.add_argument("--folds", type=int, default=5)
    ap.add_argument("--store", help="the store to keep the run in (default: a temporary one)")
    args = ap.parse_args()
    rows = subset(args.n)
    pos = sum(int(r["label_supported"]) for r in rows)
    print(f"WiCE dev: {len(rows)} one-sentence claims ({pos} supported, {len(rows) - pos} not); judge {args.judge}")
    tmp = tempfile.mkdtemp(prefix="ragsight-align-bench-")
    store_path = args.store or os.path.join(tmp, "align.db")
    data = [{"id": r["id"], "contexts": r["contexts"], "response": r["answer"]} for r in rows]
    run_id = None
    if Path(store_path).exists():
        with Store(store_path) as st:
            for info in st.runs():
                if info.status == "completed" and info.metadata.get("bench") == f"align_metaeval:{args.n}":
                    run_id = info.id
                    break
    if run_id is None:
        start = time.perf_counter()
        result = evaluate(data, ["faithfulness"], judge=args.judge, store=store_path,
                          metadata={"bench": f"align_metaeval:{args.n}"},
                          options=RunOptions(settings=AnalysisSettings(explain="none")))
        run_id = result.run_id
        print(f"evaluated in {time.perf_counter() - start:.0f} s: run {run_id}; faithfulness mean "
              f"{result.summary['faithfulness'].mean:.3f}")
    labels = Path(tmp) / "labels.jsonl"
    labels.write_text("".join(json.dumps({"id": r["id"], "supported": r["label_supported"]}) + "\n" for r in rows),
                      encoding="utf-8")
    with Store(store_path) as st:
        done = import_labels(st, labels, "supported", run_id, metric="faithfulness", who="wice")
        print(f"labels imported: {done.written}")
        start = time.perf_counter()
        a = align(st, run_id, "faithfulness", "supported", judge=args.judge if args.examples else None,
                  examples=args.examples, folds=args.folds)
    print(f"align ({args.folds}-fold by sample, {a.n_claims} labelled claims, "
          f"{time.perf_counter() - start:.0f} s):")
    for name, ag in (("before", a.before), ("after", a.after)):
        kappa = "–" if ag.kappa is None else f"{ag.kappa:.3f}"
        acc = "–" if ag.accuracy is None else f"{ag.accuracy:.3f}"
        print(f"  held-out {name:6}: kappa {kappa}, accuracy {acc} ({ag.n} claims)")
    thr = "not fitted" if a.threshold is None else f"{a.base_threshold:g} -> {a.threshold:.3f}"
    print(f"  fitted on all: threshold {thr}; {len(a.examples)} example(s); "
          f"{'would be saved' if a.improved else 'REFUSED: ' + a.reason}")
    for note in a.notes:
        print(f"  note: {note}")


if __name__ == "__main__":
    main()
