"""ragsight beside published tables: RAGChecker's human-preference meta-evaluation.

RAGChecker (Ru et al., NeurIPS 2024, section 4.2 and Table 5) correlates each framework's
answer metric with two annotators' preferences between two responses to one question, per aspect
(correctness, completeness, overall), by a fixed protocol (``data/meta_evaluation/meta_eval.py``
of amazon-science/RAGChecker):

- for a metric E, delta = E(response_2) - E(response_1) for each pair (positive: response 2
  better, as the human labels);
- a missing delta takes the median of the deltas; deltas are min-max rescaled to [-2, 2];
- each delta is repeated for both annotators; Pearson and Spearman (x100, rounded to 2
  decimals) against the human labels, per aspect. RAGChecker pairs its own claim precision with
  correctness, claim recall with completeness and claim F1 with overall; every other metric is
  correlated with all three.

This script reads the development half, ``../shared/metaeval/ragchecker_meta_dev.jsonl`` (131
pairs; the other half is held out and never read here), and prints:

    .venv/bin/python bench/published.py protocol       # no model: the protocol check and the
                                                       # model-free rows beside the published rows
    .venv/bin/python bench/published.py run            # the embedded judge through ragsight.evaluate
                                                       # (slow, resumable: every call cached)
    .venv/bin/python bench/published.py report         # ragsight's rows (from the stored run; no model)
    .venv/bin/python bench/published.py labels OUT     # the pair labels for `ragsight calibrate`

The protocol check: RAGChecker's own scores shipped with the pairs (``ragchecker_scores``) go
through this script's protocol and through a literal transcription of ``meta_eval.py``'s steps
(its array layout, numpy/scipy calls and rounding); the two must agree exactly. The annotators'
agreement with each other is printed beside the paper's.

Cache: ``$RAGSIGHT_VALIDITY_CACHE`` (default: ``cache/validity`` beside the shared kit) holds the store of the
ragsight runs (``published.db``: runs, evidence and the judge-call cache keyed on everything that
changes an answer), so a re-run or a report repeats no model call.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import math
import sys
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "src"))
sys.path.insert(0, str(Path(__file__).resolve().parent))

import _where  # noqa: E402
from _data import read_jsonl  # noqa: E402

METAEVAL = _where.metaeval()
CACHE_DIR = _where.cache("validity")
DEV_FILE = "ragchecker_meta_dev.jsonl"
ASPECTS = ("correctness", "completeness", "overall")

# Table 5 of the paper, all 280 pairs: (Pearson, Spearman) x100 for correctness, completeness,
# overall; and the annotators' agreement with each other.
PUBLISHED: dict[str, tuple[tuple[float, float], ...]] = {
    "RAGChecker claim P / R / F1 (Llama-3-70B)": ((49.66, 46.95), (60.67, 58.11), (61.93, 60.90)),
    "RAGAS answer correctness": ((39.11, 36.30), (36.42, 36.04), (38.01, 37.14)),
    "RAGAS answer similarity": ((41.07, 43.21), (53.16, 61.35), (48.31, 57.23)),
    "BLEU": ((38.89, 35.32), (32.13, 21.85), (35.14, 29.42)),
    "ROUGE-L": ((31.75, 31.72), (47.88, 45.67), (43.10, 43.21)),
}
PUBLISHED_HUMAN = ((64, 59), (72, 68), (70, 69))
RAGCHECKER_KEYS = {"correctness": "correctness_label", "completeness": "completeness_label",
                   "overall": "overall_label"}


# ---- data ------------------------------------------------------------------------------------


def load_pairs(path: Path | None = None) -> list[dict[str, Any]]:
    p = path or METAEVAL / DEV_FILE
    return read_jsonl(p)


def sample_id(pair: Mapping[str, Any], side: int) -> str:
    return f"{pair['id']}/{side}"


# ---- the protocol --------------------------------------------------------------------------

# Per pair, the metric's value for response 1 and response 2 (None when not scored).
PairScores = Sequence[tuple[float | None, float | None]]


def protocol_deltas(scores: PairScores) -> Any:
    """The rescaled deltas of one metric, one per pair (RAGChecker's steps 1-3)."""
    import numpy as np

    delta = np.array([math.nan if a is None or b is None else float(b) - float(a) for a, b in scores])
    if np.isnan(delta).all():
        return np.zeros(len(delta))
    mini, maxi, median = np.nanmin(delta), np.nanmax(delta), np.nanmedian(delta)
    delta = np.where(np.isnan(delta), median, delta)
    return ((delta - mini) / (maxi - mini) - 0.5) * 4 if maxi - mini != 0 else delta


def human_labels(pairs: Sequence[Mapping[str, Any]], aspect: str) -> Any:
    """The annotators' labels, annotator 1 then 2 for each pair in turn."""
    import numpy as np

    return np.array([float(v) for p in pairs for v in p["human"][aspect]])


def correlate(deltas: Any, labels: Any) -> tuple[float, float]:
    """(Pearson, Spearman) x100 of the deltas, each repeated for both annotators, against the
    labels."""
    import numpy as np
    from scipy import stats

    x = np.repeat(np.asarray(deltas, float), 2)
    y = np.asarray(labels, float)
    if np.ptp(x) == 0:
        return math.nan, math.nan
    return float(stats.pearsonr(x, y)[0]) * 100, float(stats.spearmanr(x, y)[0]) * 100


def protocol(pairs: Sequence[Mapping[str, Any]], scores: PairScores, aspect: str) -> tuple[float, float]:
    return correlate(protocol_deltas(scores), human_labels(pairs, aspect))


def protocol_ci(
    pairs: Sequence[Mapping[str, Any]], scores: PairScores, aspect: str, n_boot: int = 2000, seed: int = 0
) -> dict[str, tuple[float, float, float]]:
    """Pearson and Spearman with 95% percentile bootstrap CIs (pairs resampled, both annotators
    of a pair kept together; the whole protocol re-run on each resample)."""
    import numpy as np

    point = protocol(pairs, scores, aspect)
    rng = np.random.default_rng(seed)
    n = len(pairs)
    deltas = protocol_deltas(scores)
    labels = human_labels(pairs, aspect).reshape(n, 2)
    boots: list[tuple[float, float]] = []
    for _ in range(n_boot):
        idx = rng.integers(0, n, n)
        # min-max rescaling and median filling are affine or per-pair: re-running them on the
        # resample changes no correlation, so the resampled deltas are used as they are.
        r = correlate(deltas[idx], labels[idx].reshape(-1))
        if not math.isnan(r[0]):
            boots.append(r)
    arr = np.array(boots)
    out = {}
    for k, name in enumerate(("pearson", "spearman")):
        lo, hi = np.percentile(arr[:, k], [2.5, 97.5])
        out[name] = (point[k], float(lo), float(hi))
    return out


def meta_eval_transcription(pairs: Sequence[Mapping[str, Any]]) -> dict[str, tuple[float, float]]:
    """RAGChecker's ``meta_eval.py`` on the ``ragchecker`` baseline, step by step as written there
    (human labels as 2N rows, the baseline as N rows, ``delta_norm[idx // 2]`` copied to both
    annotators, ``round(stats.pearsonr(a, b)[0] * 100, 2)``), for the protocol check."""
    import numpy as np
    from scipy import stats

    human_rows = []  # human_labeled_data.json: one row per (pair, annotator)
    for p in pairs:
        for k in range(2):
            human_rows.append({RAGCHECKER_KEYS[a]: p["human"][a][k] for a in ASPECTS})
    baseline_rows = [{"model1": {"ragchecker": p["ragchecker_scores"]["model_1"]},
                      "model2": {"ragchecker": p["ragchecker_scores"]["model_2"]}} for p in pairs]
    out = {}
    for aspect in ASPECTS:
        metric = RAGCHECKER_KEYS[aspect]
        delta = np.array([d["model2"]["ragchecker"][metric] - d["model1"]["ragchecker"][metric]
                          for d in baseline_rows])
        mini, maxi, median = np.nanmin(delta), np.nanmax(delta), np.nanmedian(delta)
        for idx in range(len(delta)):
            if np.isnan(delta[idx]):
                delta[idx] = median
        delta_norm = ((delta - mini) / (maxi - mini) - 0.5) * 4 if maxi - mini != 0 else delta
        sample = dict(enumerate(delta_norm))
        human = {idx: row[metric] for idx, row in enumerate(human_rows)}
        x = np.array([sample[idx // 2] for idx in human])
        y = np.array(list(human.values()))
        out[aspect] = (round(stats.pearsonr(x, y)[0] * 100, 2), round(stats.spearmanr(x, y)[0] * 100, 2))
    return out


def annotator_agreement(pairs: Sequence[Mapping[str, Any]], aspect: str) -> tuple[float, float]:
    import numpy as np
    from scipy import stats

    a = np.array([p["human"][aspect][0] for p in pairs], float)
    b = np.array([p["human"][aspect][1] for p in pairs], float)
    return float(stats.pearsonr(a, b)[0]) * 100, float(stats.spearmanr(a, b)[0]) * 100


# ---- model-free metrics --------------------------------------------------------------------


def _unigram_prf(response: str, reference: str) -> tuple[float, float, float]:
    """Bag-of-tokens precision, recall and F1 after SQuAD normalisation (ragsight's token_f1)."""
    from collections import Counter

    from ragsight.metrics._lexical import _squad_tokens

    pred, ref = _squad_tokens(response), _squad_tokens(reference)
    common = sum((Counter(pred) & Counter(ref)).values())
    if not pred or not ref or not common:
        return 0.0, 0.0, 0.0
    p, r = common / len(pred), common / len(ref)
    return p, r, 2 * p * r / (p + r)


def model_free(pairs: Sequence[Mapping[str, Any]]) -> dict[str, PairScores]:
    """Per pair, (response 1, response 2) values of each model-free metric (ragsight's lexical
    metrics against the reference)."""
    from ragsight.metrics._lexical import bleu, rouge_l, token_f1

    fns: dict[str, Callable[[str, str], float]] = {
        "unigram F1 (token_f1)": token_f1,
        "unigram precision": lambda a, r: _unigram_prf(a, r)[0],
        "unigram recall": lambda a, r: _unigram_prf(a, r)[1],
        "BLEU (ragsight bleu)": bleu,
        "ROUGE-L (ragsight rouge_l)": rouge_l,
    }
    return {name: [(fn(p["response_1"], p["reference"]), fn(p["response_2"], p["reference"])) for p in pairs]
            for name, fn in fns.items()}


def ragchecker_shipped(pairs: Sequence[Mapping[str, Any]], aspect: str) -> PairScores:
    key = RAGCHECKER_KEYS[aspect]
    return [(p["ragchecker_scores"]["model_1"][key], p["ragchecker_scores"]["model_2"][key]) for p in pairs]


# ---- printing --------------------------------------------------------------------------------


def _cell(ci: Mapping[str, tuple[float, float, float]]) -> str:
    p, s = ci["pearson"], ci["spearman"]
    return f"{p[0]:5.1f} [{p[1]:4.1f}, {p[2]:4.1f}] / {s[0]:5.1f}"


def _pub_cell(ps: tuple[float, float]) -> str:
    return f"{ps[0]:5.1f} / {ps[1]:5.1f}"


def print_rows(pairs: Sequence[Mapping[str, Any]], rows: Mapping[str, Mapping[str, PairScores] | PairScores],
               out: Callable[[str], None] = print) -> None:
    """One line per metric: Pearson [95% CI] / Spearman per aspect. A row given as a mapping
    from aspect to scores uses a different metric per aspect (RAGChecker's pairing)."""
    out(f"| metric (development half, {len(pairs)} pairs) | correctness | completeness | overall |")
    out("|---|---|---|---|")
    for name, scores in rows.items():
        cells = []
        for aspect in ASPECTS:
            sc = scores[aspect] if isinstance(scores, Mapping) else scores
            cells.append(_cell(protocol_ci(pairs, sc, aspect)))
        out(f"| {name} | " + " | ".join(cells) + " |")


def cmd_protocol(out: Callable[[str], None] = print) -> int:
    pairs = load_pairs()
    out(f"# RAGChecker meta-evaluation protocol, development half: {len(pairs)} pairs, "
        f"{2 * len(pairs)} human labels per aspect")
    out("")
    out("## Protocol check (RAGChecker's shipped scores, claim P / R / F1 paired with the aspects)")
    ours = {a: protocol(pairs, ragchecker_shipped(pairs, a), a) for a in ASPECTS}
    theirs = meta_eval_transcription(pairs)
    worst = 0.0
    for a in ASPECTS:
        rounded = (round(ours[a][0], 2), round(ours[a][1], 2))
        diff = max(abs(rounded[0] - theirs[a][0]), abs(rounded[1] - theirs[a][1]))
        worst = max(worst, diff)
        out(f"- {a}: this protocol {rounded[0]:.2f} / {rounded[1]:.2f}; meta_eval.py's steps "
            f"{theirs[a][0]:.2f} / {theirs[a][1]:.2f}")
    status = "PASS" if worst == 0.0 else "FAIL"
    out(f"- protocol check: {status} (largest difference {worst:.2f}, Pearson / Spearman x100)")
    out("")
    out("## The annotators against each other (Pearson / Spearman x100)")
    for a, pub in zip(ASPECTS, PUBLISHED_HUMAN):
        pr, sp = annotator_agreement(pairs, a)
        out(f"- {a}: development half {pr:.1f} / {sp:.1f}; paper, all 280 pairs, about {pub[0]} / {pub[1]}")
    out("")
    out("## Published rows (Table 5, all 280 pairs; Pearson / Spearman x100)")
    out("| metric | correctness | completeness | overall |")
    out("|---|---|---|---|")
    for name, cells in PUBLISHED.items():
        out(f"| {name} | " + " | ".join(_pub_cell(c) for c in cells) + " |")
    out("")
    out("## The same protocol on the development half: Pearson [95% bootstrap CI] / Spearman x100")
    rows: dict[str, Any] = {"RAGChecker's shipped scores (P / R / F1)":
                            {a: ragchecker_shipped(pairs, a) for a in ASPECTS}}
    rows.update(model_free(pairs))
    print_rows(pairs, rows, out)
    return 0 if status == "PASS" else 1


# ---- ragsight through the product ------------------------------------------------------------

METRICS = ("factual_correctness(mode=precision)", "factual_correctness(mode=recall)", "factual_correctness",
           "answer_correctness", "answer_similarity")


def samples_for(pairs: Sequence[Mapping[str, Any]]) -> list[dict[str, Any]]:
    """One sample per response (two per pair), the pair's two responses back to back so that the
    judge reuses the reference's prefix."""
    out = []
    for p in pairs:
        for side in (1, 2):
            out.append({"id": sample_id(p, side), "question": p["question"], "response": p[f"response_{side}"],
                        "reference": p["reference"],
                        "metadata": {"set": "ragchecker_meta_dev", "dataset": p["dataset"],
                                     "system": p[f"model_{side}"]}})
    return out


def order_pairs(pairs: Sequence[dict[str, Any]]) -> list[dict[str, Any]]:
    """A random (hash) order, so that any prefix of a run is a random subset of the pairs."""
    return sorted(pairs, key=lambda p: hashlib.sha256(("order:" + p["id"]).encode("utf-8")).hexdigest())


def cmd_run(limit: int | None, store: Path, explain: str) -> int:
    import ragsight
    from ragsight.analyses import AnalysisSettings
    from ragsight.judge import RetryPolicy

    pairs = order_pairs(load_pairs())[:limit]
    store.parent.mkdir(parents=True, exist_ok=True)
    # A loaded 2-core machine: generous timeouts, so no call times out and is asked again.
    policy = RetryPolicy(call_timeout_s=1800.0, step_deadline_s=3600.0)
    res = ragsight.evaluate(samples_for(pairs), list(METRICS), judge="local", store=store,
                            metadata={"set": "ragchecker_meta_dev", "pairs": len(pairs)},
                            options=ragsight.RunOptions(settings=AnalysisSettings(explain=explain), policy=policy))
    print(f"run {res.run_id}: {len(res.samples)} responses of {len(pairs)} pairs; judge stats {res.judge_stats}")
    return 0


def run_scores(store: Path, run_ref: str) -> dict[str, dict[str, Any]]:
    """{sample id: {metric key: Score}} of a stored run."""
    from ragsight.result import load_result
    from ragsight.store import Store

    with Store(store) as st:
        res = load_result(st, run_ref)
    return res.scores


def pair_scores(pairs: Sequence[Mapping[str, Any]], per_sample: Mapping[str, float | None]) -> PairScores:
    return [(per_sample.get(sample_id(p, 1)), per_sample.get(sample_id(p, 2))) for p in pairs]


def metric_values(scores: Mapping[str, Mapping[str, Any]], key: str) -> dict[str, float | None]:
    out: dict[str, float | None] = {}
    for sid, per in scores.items():
        sc = per.get(key)
        out[sid] = None if sc is None or sc.value is None else float(sc.value)
    return out


def cmd_report(store: Path, run_ref: str, out: Callable[[str], None] = print) -> int:
    pairs = load_pairs()
    scores = run_scores(store, run_ref)
    have = [p for p in pairs if sample_id(p, 1) in scores and sample_id(p, 2) in scores]
    missing = sum(1 for p in have for s in (1, 2) for k in METRICS
                  if scores[sample_id(p, s)].get(k) is None or scores[sample_id(p, s)][k].value is None)
    out(f"# ragsight on the RAGChecker development half: {len(have)} of {len(pairs)} pairs in run {run_ref} "
        f"({missing} response-metric values not scored; the protocol fills a missing delta with the median)")
    vals = {k: metric_values(scores, k) for k in METRICS}
    rows: dict[str, Any] = {
        "ragsight factual_correctness P / R / F1 (RAGChecker's pairing)": {
            "correctness": pair_scores(have, vals["factual_correctness(mode=precision)"]),
            "completeness": pair_scores(have, vals["factual_correctness(mode=recall)"]),
            "overall": pair_scores(have, vals["factual_correctness"]),
        },
        "ragsight answer_correctness": pair_scores(have, vals["answer_correctness"]),
        "ragsight answer_similarity": pair_scores(have, vals["answer_similarity"]),
        "RAGChecker's shipped scores (P / R / F1), same pairs": {a: ragchecker_shipped(have, a) for a in ASPECTS},
        "unigram F1 (token_f1), same pairs": model_free(have)["unigram F1 (token_f1)"],
    }
    print_rows(have, rows, out)
    return 0


def cmd_labels(out_dir: Path) -> int:
    """Pair labels for ``ragsight calibrate --pairs``: one row per pair and aspect."""
    pairs = load_pairs()
    out_dir.mkdir(parents=True, exist_ok=True)
    path = out_dir / "ragchecker_pairs.jsonl"
    with path.open("w", encoding="utf-8") as f:
        for p in pairs:
            row = {"id_1": sample_id(p, 1), "id_2": sample_id(p, 2)}
            row.update({a: list(p["human"][a]) for a in ASPECTS})
            f.write(json.dumps(row) + "\n")
    print(f"wrote {path} ({len(pairs)} pairs)")
    return 0


def main(argv: Sequence[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    sub = ap.add_subparsers(dest="cmd", required=True)
    sub.add_parser("protocol", help="the protocol check and the model-free rows (no model)")
    r = sub.add_parser("run", help="score every response with the embedded judge (slow, cached)")
    r.add_argument("--limit", type=int, help="only the first N pairs (in a fixed random order)")
    r.add_argument("--store", type=Path, default=CACHE_DIR / "published.db")
    r.add_argument("--explain", default="none", choices=("none", "unsupported", "all"))
    rep = sub.add_parser("report", help="ragsight's rows from a stored run (no model)")
    rep.add_argument("--run", default="last")
    rep.add_argument("--store", type=Path, default=CACHE_DIR / "published.db")
    lab = sub.add_parser("labels", help="write the pair labels for `ragsight calibrate`")
    lab.add_argument("out", type=Path)
    args = ap.parse_args(argv)
    if args.cmd == "protocol":
        return cmd_protocol()
    if args.cmd == "run":
        return cmd_run(args.limit, args.store, args.explain)
    if args.cmd == "report":
        return cmd_report(args.store, args.run)
    return cmd_labels(args.out)


if __name__ == "__main__":
    raise SystemExit(main())
