"""`ragsight calibrate` with the embedded judge on the human-labelled sets in
``../shared/metaeval`` (read from there; nothing is copied into the package).

Writes ragsight input files and label files for the held-out part of each set (the rows whose
``int(sha256(id), 16) % 3 == 0``, the same part bench/validity.py keeps aside: the shipped
verdict models were fitted on the rest), then prints the commands to run:

    .venv/bin/python bench/metaeval_calibrate.py [--out /tmp/ragsight-metaeval] [--expertqa-limit 80]

- EVOUNA-TQ: question, response (a QA system's answer) and every gold alias as the reference;
  label ``label_correct``; metrics factual_correctness and answer_correctness.
- ExpertQA (validation claims, N/A skipped): the claim as the response and its cited evidence as
  the contexts; label ``label_supported``; metric faithfulness. A random subset (by a hash of the
  id) when ``--expertqa-limit`` is given, since each claim costs a claim extraction.
- WiCE (``--wice dev`` or ``--wice heldout``, ``--wice-limit N``): the claim as the response and
  its evidence sentences as the contexts; label ``label_supported``; metric faithfulness as the
  product computes it (the claim split into atomic claims by the judge, each verified). Writes
  ``wice_<split>.jsonl`` and its labels only.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import os
from pathlib import Path
from typing import Any

from _data import read_jsonl

ROOT = Path(__file__).resolve().parent.parent
METAEVAL = Path(os.environ.get("RAGSIGHT_METAEVAL", ROOT.parent / "shared" / "metaeval"))


def heldout(row_id: str) -> bool:
    return int(hashlib.sha256(row_id.encode("utf-8")).hexdigest(), 16) % 3 == 0


def read(name: str) -> list[dict[str, Any]]:
    return read_jsonl(METAEVAL / name)


def write(path: Path, rows: list[dict[str, Any]]) -> None:
    path.write_text("".join(json.dumps(r, ensure_ascii=False) + "\n" for r in rows), "utf-8")


def trail_figures(store_path: Path, run: str, labels_path: Path, label: str) -> None:
    """From the evidence trail of a faithfulness run: AUROC of the shipped faithfulness, and of
    faithfulness recomputed from the bare judge's P(Yes) recorded with each claim
    (``signals["judge_yes"] >= 0.5``) and from word overlap alone (mean of ``signals["overlap"]``),
    on the same samples. No model call."""
    import numpy as np
    from _stats import bootstrap_ci

    from ragsight._stats import auroc
    from ragsight.result import load_result
    from ragsight.store import Store

    labels = {r["id"]: bool(r[label]) for r in read_jsonl(labels_path)}
    with Store(store_path) as store:
        res = load_result(store, run)
    shipped, bare, overlap, y = [], [], [], []
    for sid, scores in res.scores.items():
        sc = scores.get("faithfulness")
        if sc is None or sid not in labels or sc.value is None:
            continue
        claims = sc.evidence.claims
        shipped.append(sc.value)
        bare.append(float(np.mean([c.signals["judge_yes"] >= 0.5 for c in claims])))
        overlap.append(float(np.mean([c.signals["overlap"] for c in claims])))
        y.append(labels[sid])
    print(f"{len(y)} scored samples ({sum(y)} labelled 1)")
    rng = np.random.default_rng(0)
    ya = np.array(y)
    for name, v in (("faithfulness (shipped verdicts)", shipped), ("faithfulness from bare P(Yes) >= 0.5", bare),
                    ("mean word overlap of the claims", overlap)):
        va = np.array(v)
        lo, hi = bootstrap_ci(lambda idx, va=va: auroc(va[idx], ya[idx]), len(ya), rng=rng)
        print(f"- {name}: AUROC {auroc(va, ya):.3f} [95% bootstrap CI {lo:.3f}, {hi:.3f}]")


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--out", type=Path, default=Path("/tmp/ragsight-metaeval"))
    ap.add_argument("--expertqa-limit", type=int, default=None)
    ap.add_argument("--trail", nargs=2, metavar=("RUN", "LABELS"),
                    help="figures from the evidence of a faithfulness run in OUT/metaeval.db")
    ap.add_argument("--label", default="label_supported")
    ap.add_argument("--wice", choices=("dev", "heldout"), help="write WiCE inputs for this split only")
    ap.add_argument("--wice-limit", type=int, default=None)
    args = ap.parse_args()
    if args.trail:
        trail_figures(args.out / "metaeval.db", args.trail[0], Path(args.trail[1]), args.label)
        return 0
    out: Path = args.out
    out.mkdir(parents=True, exist_ok=True)
    if args.wice:
        wi = [r for r in read("wice_claims_dev.jsonl") if heldout(r["id"]) == (args.wice == "heldout")]
        wi.sort(key=lambda r: hashlib.sha256(("pick:" + r["id"]).encode("utf-8")).hexdigest())
        wi = wi[:args.wice_limit] if args.wice_limit else wi
        name = f"wice_{args.wice}"
        write(out / f"{name}.jsonl", [{"id": r["id"], "response": r["answer"], "contexts": r["contexts"]}
                                      for r in wi])
        write(out / f"{name}_labels.jsonl", [{"id": r["id"], "label_supported": bool(r["label_supported"])}
                                             for r in wi])
        print(f"WiCE {args.wice}: {len(wi)} claims ({sum(bool(r['label_supported']) for r in wi)} supported)")
        print(f".venv/bin/ragsight evaluate {out / (name + '.jsonl')} --metrics faithfulness "
              f"--store {out / 'metaeval.db'} --metadata set={name}")
        # against the claim-level verdicts on the same claims (labels from the cache's own rows)
        print(f".venv/bin/python bench/validity.py trail last --store {out / 'metaeval.db'} --split {args.wice}")
        return 0

    ev = [r for r in read("evouna_tq.jsonl") if heldout(r["id"])]
    write(out / "evouna.jsonl", [{"id": r["id"], "question": r["question"], "response": r["answer"],
                                  "reference": r.get("reference_all") or [r["reference"]]} for r in ev])
    write(out / "evouna_labels.jsonl", [{"id": r["id"], "label_correct": bool(r["label_correct"])} for r in ev])

    eq = [r for r in read("expertqa_claims_val.jsonl")
          if r.get("label_supported") is not None and heldout(r["id"])]
    eq.sort(key=lambda r: hashlib.sha256(("pick:" + r["id"]).encode("utf-8")).hexdigest())
    if args.expertqa_limit:
        eq = eq[:args.expertqa_limit]
    write(out / "expertqa.jsonl", [{"id": r["id"], "question": r["question"], "response": r["answer"],
                                    "contexts": r["contexts"]} for r in eq])
    write(out / "expertqa_labels.jsonl", [{"id": r["id"], "label_supported": bool(r["label_supported"])}
                                          for r in eq])
    n_ev, n_eq = len(ev), len(eq)
    print(f"EVOUNA-TQ held-out: {n_ev} answers ({sum(r['label_correct'] for r in ev)} correct); "
          f"ExpertQA held-out: {n_eq} claims ({sum(bool(r['label_supported']) for r in eq)} supported)")
    store = out / "metaeval.db"
    print("\n# commands (embedded judge, default embedder):")
    print(f".venv/bin/ragsight evaluate {out / 'evouna.jsonl'} --metrics factual_correctness,answer_correctness "
          f"--store {store} --metadata set=evouna_tq_heldout")
    print(f".venv/bin/ragsight calibrate last --store {store} --labels {out / 'evouna_labels.jsonl'} "
          f"--label label_correct --pair factual_correctness,answer_correctness")
    print(f".venv/bin/ragsight evaluate {out / 'expertqa.jsonl'} --metrics faithfulness "
          f"--store {store} --metadata set=expertqa_heldout")
    print(f".venv/bin/ragsight calibrate last --store {store} --labels {out / 'expertqa_labels.jsonl'} "
          f"--label label_supported --metric faithfulness")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
