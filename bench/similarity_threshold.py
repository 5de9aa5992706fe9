"""Measure the default threshold of ``mrr_by_similarity`` for an embedder.

    .venv/bin/python bench/similarity_threshold.py                 # e5-small and MiniLM
    .venv/bin/python bench/similarity_threshold.py --only e5-small
    .venv/bin/python bench/similarity_threshold.py --data PATH.jsonl

``mrr_by_similarity`` calls a retrieved chunk relevant when the cosine similarity of its
embedding with the reference answer's is above a threshold. Similarity scales differ between
embedders (e5 packs almost everything into 0.7-1.0), so the threshold has to be measured per
embedder. This script measures it on labelled (reference, chunk) pairs:

- data: ``airline_20.jsonl`` of the shared kit (20 questions about a fictional airline, each
  with a reference answer and three retrieved chunks). Its generator
  (``airline_dataset.py``, ``contexts_for``) puts the paragraph the reference was written from
  first in ``retrieved_contexts``; the other two are other paragraphs of the same corpus.
- pairs: every reference against every distinct chunk of the file (the corpus: 10 paragraphs,
  all on the same airline, so every negative is on-topic). The reference's own paragraph is the
  positive (20 pairs); the other nine are negatives (180 pairs). The subset of the three chunks
  actually retrieved for the question (20 positives, 40 negatives) is reported as well.
- rule and threshold: relevant when cosine > t. The threshold maximises Youden's J (true-positive
  rate minus false-positive rate). Candidates lie midway between consecutive distinct scores;
  among those with the highest J the middle of the widest gap is taken (as ``bench/embedders.py``
  does), so the threshold sits between the groups rather than on one of their edges.
- embedding roles: e5 embeds a text as a ``query`` or a ``passage``. The three conventions are
  measured; reference and chunk both as ``query`` (e5's advice for symmetric comparisons)
  separates best (AUROC 0.997 against 0.989 for query/passage), so the metric uses it. MiniLM is
  symmetric and ignores ``kind``.
- a leave-one-question-out check: the threshold chosen on 19 questions, applied to the 20th
  question's pairs; the share of correctly classified held-out pairs is printed.

The printed thresholds are the defaults in ``ragsight/metrics/similarity_mrr.py`` (rounded to
three decimals). Twenty references are few: treat the numbers as a sensible default for
short factual answers against ~150-word chunks, not as a calibration for every corpus.
"""

from __future__ import annotations

import argparse
import asyncio
from pathlib import Path
from typing import Any

import _where
import numpy as np
from _data import read_jsonl
from _stats import auroc_pairs

DATA = _where.kit() / "airline_20.jsonl"
EMBEDDERS = ("e5-small", "minilm")
CONVENTIONS = (("query", "query"), ("query", "passage"), ("passage", "passage"))


def load_pairs(path: Path) -> tuple[list[str], list[str], list[int], list[list[int]]]:
    """(references, distinct chunks, gold chunk index per reference, retrieved indices)."""
    refs: list[str] = []
    chunks: list[str] = []
    index: dict[str, int] = {}
    gold: list[int] = []
    retrieved: list[list[int]] = []
    for row in read_jsonl(path):
        refs.append(row["reference"])
        ids = []
        for c in row["retrieved_contexts"]:
            if c not in index:
                index[c] = len(chunks)
                chunks.append(c)
            ids.append(index[c])
        gold.append(ids[0])  # the paragraph the reference was written from comes first
        retrieved.append(ids)
    return refs, chunks, gold, retrieved


def youden_threshold(pos: np.ndarray, neg: np.ndarray) -> dict[str, float]:
    """The threshold t maximising TPR - FPR for the rule ``score > t``, with TPR, FPR, J."""
    scores = np.unique(np.concatenate([pos, neg]))
    cands = np.concatenate([[scores[0] - 1e-3], (scores[:-1] + scores[1:]) / 2])
    gaps = np.concatenate([[0.0], scores[1:] - scores[:-1]])
    best: tuple[float, float, float] | None = None  # (J, gap, threshold)
    for t, gap in zip(cands, gaps, strict=True):
        j = float((pos > t).mean()) - float((neg > t).mean())
        key = (round(j, 9), float(gap), float(t))
        if best is None or key[:2] > (round(best[0], 9), best[1]):
            best = (j, float(gap), float(t))
    assert best is not None
    t = best[2]
    return {"threshold": t, "j": best[0], "tpr": float((pos > t).mean()),
            "fpr": float((neg > t).mean()), "default": round_within(t, pos, neg)}


def round_within(t: float, pos: np.ndarray, neg: np.ndarray) -> float:
    """``t`` rounded to the fewest decimals (at least 3) that classify every pair as ``t`` does."""
    scores = np.concatenate([pos, neg])
    for decimals in range(3, 10):
        r = round(t, decimals)
        if np.array_equal(scores > r, scores > t):
            return r
    return t


def split(sims: np.ndarray, gold: list[int], rows: list[list[int]] | None = None) -> tuple[np.ndarray, np.ndarray]:
    pos: list[float] = []
    neg: list[float] = []
    for i, g in enumerate(gold):
        cols = rows[i] if rows is not None else range(sims.shape[1])
        for j in cols:
            (pos if j == g else neg).append(sims[i, j])
    return np.asarray(pos), np.asarray(neg)


def leave_one_out(sims: np.ndarray, gold: list[int]) -> float:
    """Share of held-out pairs classified right by the threshold chosen on the other questions."""
    right = total = 0
    for held in range(len(gold)):
        keep = [i for i in range(len(gold)) if i != held]
        pos, neg = split(sims[keep], [gold[i] for i in keep])
        t = youden_threshold(pos, neg)["threshold"]
        for j in range(sims.shape[1]):
            right += int((sims[held, j] > t) == (j == gold[held]))
            total += 1
    return right / total


async def measure(name: str, path: Path) -> dict[str, Any]:
    from ragsight.embed import local_embedder

    refs, chunks, gold, retrieved = load_pairs(path)
    emb = local_embedder(name)
    out: dict[str, Any] = {"embedder": emb.name, "references": len(refs), "chunks": len(chunks)}
    conventions = CONVENTIONS if not emb.symmetric else CONVENTIONS[:1]
    for ref_kind, chunk_kind in conventions:
        r = await emb.embed(refs, kind=ref_kind)
        c = await emb.embed(chunks, kind=chunk_kind)
        sims = np.asarray(r @ c.T, dtype=np.float64)
        pos, neg = split(sims, gold)
        pos_r, neg_r = split(sims, gold, retrieved)
        out[f"{ref_kind}/{chunk_kind}"] = {
            "pairs": [len(pos), len(neg)],
            "mean_pos": float(pos.mean()), "min_pos": float(pos.min()),
            "mean_neg": float(neg.mean()), "max_neg": float(neg.max()),
            "auroc": auroc_pairs(pos, neg),
            "youden": youden_threshold(pos, neg),
            "youden_retrieved_only": youden_threshold(pos_r, neg_r),
            "loo_accuracy": leave_one_out(sims, gold),
        }
    await emb.aclose()
    return out


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--only", choices=EMBEDDERS)
    ap.add_argument("--data", type=Path, default=DATA)
    args = ap.parse_args()
    for name in [args.only] if args.only else EMBEDDERS:
        try:
            res = asyncio.run(measure(name, args.data))
        except Exception as exc:  # an embedder whose extra is not installed
            print(f"{name}: not measured ({type(exc).__name__}: {exc})")
            continue
        print(f"== {res['embedder']}: {res['references']} references x {res['chunks']} chunks")
        for conv, r in res.items():
            if not isinstance(r, dict):
                continue
            y, yr = r["youden"], r["youden_retrieved_only"]
            print(f"  reference as {conv.split('/')[0]}, chunks as {conv.split('/')[1]}"
                  f"  ({r['pairs'][0]} positive / {r['pairs'][1]} negative pairs)")
            print(f"    cosine: positives mean {r['mean_pos']:.3f} (min {r['min_pos']:.3f}); "
                  f"negatives mean {r['mean_neg']:.3f} (max {r['max_neg']:.3f}); AUROC {r['auroc']:.3f}")
            print(f"    Youden threshold {y['threshold']:.6f} (default: {y['default']}): J {y['j']:.3f}, "
                  f"TPR {y['tpr']:.3f}, FPR {y['fpr']:.3f}")
            print(f"    retrieved chunks only: threshold {yr['threshold']:.3f}, J {yr['j']:.3f}")
            print(f"    leave-one-question-out accuracy {r['loo_accuracy']:.3f}")


if __name__ == "__main__":
    main()
