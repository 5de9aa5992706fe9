"""Leave-one-dataset-out selection of the embedded judge's verdict combination. Cached model
outputs only: no model call.

The development sets (``../shared/metaeval``, every row of each file) and what each gives:

- WiCE claims and ExpertQA claims: a claim, its evidence, a human label (supported or not);
  features: the judge's P(Yes) for the claim against the evidence (``verify_claim``), its P(Yes)
  against an empty text (the plausibility prior), and the deterministic signals
  (``analyses/_signals.py``). From ``bench/validity.py run wice|expertqa --probes bare,prior``.
- EVOUNA-TQ: a short answer, the gold aliases, a human label (correct or not); features: the
  judge's P(Yes) for ``verify_claim_answer`` and the alias signals, mapped onto the claim
  features (``overlap`` = ``overlap_best`` = the largest share of one alias's words in the
  answer, ``alias_contained`` kept); no prior. From ``bench/validity.py run evouna --probes answer``.
- RAGChecker pairs: no claim label; the claims and verdicts of every response against the
  reference and the reverse, as recorded in the evidence of ``bench/published.py run``; a
  candidate's per-claim probabilities give factual_correctness precision, recall and F1, which
  are correlated with the human preferences by RAGChecker's protocol (``bench/published.py``).

The rule, fixed before any figure was looked at (choose for generalisation):

1. Each candidate is fitted on the labelled sets other than the one left out (WiCE, ExpertQA,
   EVOUNA; RAGChecker is never fitted on, it has no claim labels) and scored on the left-out
   set. A fit weights every (set, class) cell equally; coefficients on the judge's log-odds and
   on word overlap are constrained >= 0 (monotone); L2 = 10 on standardised features; a missing
   feature is imputed with its training mean.
2. A candidate's margin on a left-out set: its AUROC minus word overlap's AUROC on that set
   (WiCE, ExpertQA, EVOUNA), and, on RAGChecker, the mean over the three aspects of (its
   Pearson - unigram F1's Pearson) / 100, with expected-value precision / recall / F1.
3. Chosen: the candidate with the largest mean margin among those whose margin is >= 0 on every
   left-out set; if none qualifies, the one with the largest smallest margin. Ties (within
   0.005) go to fewer features. The shipped combination is a reference row, not a candidate: its
   coefficients were fitted on part of WiCE and EVOUNA, so its figures there are partly
   in-sample (added after a smoke test on partial data showed it leading for that reason).
4. Balanced accuracy at a threshold chosen on the training sets (the one maximising the mean of
   the training sets' balanced accuracies) is reported beside AUROC; CIs are 95% percentile
   bootstrap intervals (2,000 resamples of the left-out set's rows, or of its pairs).

    .venv/bin/python bench/lodo.py            # the table (cached outputs only)
    .venv/bin/python bench/lodo.py --json out.json
"""

from __future__ import annotations

import argparse
import json
import math
import sys
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))
sys.path.insert(0, str(HERE.parent / "src"))

import published  # noqa: E402
import validity  # noqa: E402

LABELLED = ("wice", "expertqa", "evouna")
FEATURES = ("judge_logit", "prior_logit", "overlap", "overlap_best", "bigram_overlap", "missing",
            "numbers", "entities", "n_content", "alias_contained")
MONOTONE = ("judge_logit", "overlap", "overlap_best")
L2 = 10.0


# ---- data ------------------------------------------------------------------------------------


@dataclass
class ClaimSet:
    """Rows of one labelled set: the judge's probabilities and the signals, and the labels."""

    name: str
    y: Any  # 0/1 labels
    cols: dict[str, Any]  # feature name -> array (NaN where the feature does not exist)
    ids: list[str] = field(default_factory=list)


def load_labelled(name: str) -> ClaimSet:
    """Every row of the set with its judge probabilities cached (bench/validity.py run)."""
    import numpy as np

    if name == "evouna":
        rows, y, c = validity.feature_table("evouna", "all", ("answer",), need=("answer",))
        n = len(y)
        nan = np.full(n, np.nan)
        cols = {k: nan.copy() for k in FEATURES}
        cols["judge_p"] = c["answer_p"]
        cols["judge_logit"] = c["answer_logit"]
        cols["prior_p"] = nan.copy()
        cols["overlap"] = c["alias_recall"]
        cols["overlap_best"] = c["alias_recall"]
        cols["alias_contained"] = c["alias_contained"]
        return ClaimSet(name, y, cols, [r["id"] for r in rows])
    rows, y, c = validity.feature_table(name, "all", ("bare", "prior"), need=("bare", "prior"))
    cols = {k: c[k] for k in FEATURES if k in c}
    cols["judge_p"] = c["bare_p"]
    cols["judge_logit"] = c["bare_logit"]
    cols["prior_p"] = c["prior_p"]
    cols["prior_logit"] = c["prior_logit"]
    cols["alias_contained"] = np.full(len(y), np.nan)
    return ClaimSet(name, y, cols, [r["id"] for r in rows])


@dataclass
class RagCheckerClaims:
    """Per response (sample id): its claims' features against the reference (target
    'reference') and the reference's claims' features against it (target 'response')."""

    pairs: list[dict[str, Any]]
    resp: dict[str, dict[str, Any]]  # sample id -> feature columns of its response claims
    ref: dict[str, dict[str, Any]]  # sample id -> feature columns of the reference claims
    similarity: dict[str, float | None] = field(default_factory=dict)  # answer_similarity per sample
    resp_text: dict[str, list[str]] = field(default_factory=dict)  # the claims themselves
    ref_text: dict[str, list[str]] = field(default_factory=dict)


def _columns(verdicts: Sequence[Any]) -> dict[str, Any]:
    import numpy as np

    from ragsight.analyses._calibrated import logit

    cols: dict[str, list[float]] = {k: [] for k in (*FEATURES, "judge_p", "prior_p", "p_shipped")}
    for v in verdicts:
        s = v.signals
        jp = s.get("judge_yes", math.nan)
        pp = s.get("judge_prior", math.nan)
        row = {k: float(s.get(k, math.nan)) for k in FEATURES}
        row.update(judge_p=jp, prior_p=pp, judge_logit=logit(jp) if jp == jp else math.nan,
                   prior_logit=logit(pp) if pp == pp else math.nan,
                   p_shipped=float(s.get("p_combined", math.nan)))
        for k in cols:
            cols[k].append(row[k])
    return {k: np.array(v, float) for k, v in cols.items()}


def load_ragchecker(store: Path, run: str) -> RagCheckerClaims | None:
    """From the F1 evidence of a stored run of ``bench/published.py``: every response's claims
    against the reference and the reference's claims against the response."""
    if not store.exists():
        return None
    scores = published.run_scores(store, run)
    pairs = [p for p in published.load_pairs()
             if all(published.sample_id(p, s) in scores for s in (1, 2))]
    resp, ref = {}, {}
    resp_text: dict[str, list[str]] = {}
    ref_text: dict[str, list[str]] = {}
    similarity: dict[str, float | None] = {}
    for p in pairs:
        for s in (1, 2):
            sid = published.sample_id(p, s)
            sc = scores[sid].get("factual_correctness")
            if sc is None or sc.evidence is None:
                continue
            claims = sc.evidence.claims
            resp[sid] = _columns([v for v in claims if v.target == "reference"])
            ref[sid] = _columns([v for v in claims if v.target == "response"])
            resp_text[sid] = [v.claim for v in claims if v.target == "reference"]
            ref_text[sid] = [v.claim for v in claims if v.target == "response"]
            sim = scores[sid].get("answer_similarity")
            similarity[sid] = None if sim is None or sim.value is None else float(sim.value)
    return RagCheckerClaims(pairs, resp, ref, similarity, resp_text, ref_text)


# ---- fitting ---------------------------------------------------------------------------------


@dataclass
class Fitted:
    features: tuple[str, ...]
    fill: Any
    mean: Any
    scale: Any
    coef: Any
    intercept: float

    def predict(self, cols: Mapping[str, Any]) -> Any:
        import numpy as np

        x = np.column_stack([cols[f] for f in self.features]).astype(float)
        x = np.where(np.isnan(x), self.fill, x)
        t = self.intercept + ((x - self.mean) / self.scale) @ self.coef
        return 1 / (1 + np.exp(-t))


def fit(features: Sequence[str], sets: Sequence[ClaimSet], l2: float = L2) -> Fitted:
    """Logistic regression on the pooled sets, each (set, class) cell weighted equally; the
    coefficients of MONOTONE features >= 0."""
    import numpy as np
    from scipy.optimize import minimize

    xs, ys, ws = [], [], []
    for s in sets:
        x = np.column_stack([s.cols[f] for f in features]).astype(float)
        y = np.asarray(s.y, float)
        w = np.where(y > 0, 0.5 / max(y.sum(), 1), 0.5 / max((1 - y).sum(), 1)) / len(sets)
        xs.append(x)
        ys.append(y)
        ws.append(w)
    x, y, w = np.vstack(xs), np.concatenate(ys), np.concatenate(ws)
    fill = np.array([np.nanmean(x[:, j]) if not np.isnan(x[:, j]).all() else 0.0 for j in range(x.shape[1])])
    x = np.where(np.isnan(x), fill, x)
    mean, scale = x.mean(axis=0), x.std(axis=0)
    scale[scale < 1e-9] = 1.0
    z = (x - mean) / scale
    k = z.shape[1]
    n_eff = len(y)

    def loss(theta: Any) -> tuple[float, Any]:
        b, c = theta[0], theta[1:]
        t = b + z @ c
        m = np.where(y > 0, -t, t)
        f = float(np.sum(w * np.logaddexp(0, m)) + 0.5 * l2 * np.sum(c * c) / n_eff)
        g_t = w * np.where(y > 0, -1.0, 1.0) / (1 + np.exp(-m))
        return f, np.concatenate([[g_t.sum()], z.T @ g_t + l2 * c / n_eff])

    bounds = [(None, None)] + [((0.0, None) if f in MONOTONE else (None, None)) for f in features]
    res = minimize(loss, np.zeros(k + 1), jac=True, method="L-BFGS-B", bounds=bounds)
    return Fitted(tuple(features), fill, mean, scale, res.x[1:], float(res.x[0]))


# ---- candidates ------------------------------------------------------------------------------

Scorer = Callable[[Mapping[str, Any]], Any]


@dataclass
class Candidate:
    name: str
    features: tuple[str, ...] = ()  # fitted on the training sets when non-empty
    fixed: Scorer | None = None  # a fixed score (no fit)

    def train(self, sets: Sequence[ClaimSet]) -> Scorer:
        if self.fixed is not None:
            return self.fixed
        fitted = fit(self.features, sets)
        return fitted.predict

    @property
    def n_features(self) -> int:
        return len(self.features) if self.features else 1


# The claim model shipped before the mean (analyses/_calibrated.py at e0f2e61), kept here so that
# the reference row does not change when the product's combination does.
OLD_JUDGE_MODEL = {
    "features": ["judge_logit", "prior_logit", "overlap_best", "missing", "numbers", "entities"],
    "mean": [-0.407464, -0.902759, 0.565938, 5.86087, 0.759819, 0.774716],
    "scale": [0.891341, 0.345689, 0.222407, 4.011694, 0.379837, 0.310773],
    "coef": [0.610164, -0.47196, 0.54288, -0.462483, 0.38624, 0.42189],
    "intercept": -0.572769,
}


def _old_combine(judge_p: float, signals: Mapping[str, float]) -> float:
    from ragsight.analyses._calibrated import CombinationModel, feature_values

    return CombinationModel.from_dict(OLD_JUDGE_MODEL).predict(feature_values(judge_p, signals))


def _shipped(cols: Mapping[str, Any]) -> Any:
    """The combination shipped before the mean (fitted on 230 WiCE claims) on claim rows; on
    EVOUNA rows (no prior) the shipped answer model."""
    import numpy as np

    from ragsight.analyses._calibrated import combine_answer

    out = []
    for i in range(len(cols["judge_p"])):
        jp = float(cols["judge_p"][i])
        if math.isnan(cols["prior_p"][i]) and not math.isnan(cols["alias_contained"][i]):
            out.append(combine_answer(jp, {"alias_contained": float(cols["alias_contained"][i]),
                                           "alias_recall": float(cols["overlap"][i])}))
            continue
        sig = {k: float(cols[k][i]) for k in FEATURES if k in cols and not math.isnan(cols[k][i])}
        sig["judge_prior"] = float(cols["prior_p"][i])
        out.append(_old_combine(jp, sig))
    return np.array(out)


CANDIDATES = (
    Candidate("bare judge P(Yes)", fixed=lambda c: c["judge_p"]),
    Candidate("word overlap", fixed=lambda c: c["overlap"]),
    Candidate("old combination (as shipped)", fixed=_shipped),
    Candidate("old features, refitted", ("judge_logit", "prior_logit", "overlap_best", "missing",
                                          "numbers", "entities")),
    Candidate("judge + overlap", ("judge_logit", "overlap")),
    Candidate("judge + prior + overlap", ("judge_logit", "prior_logit", "overlap")),
    Candidate("judge + overlap + numbers + names", ("judge_logit", "overlap", "numbers", "entities")),
    Candidate("mean of P(Yes) and overlap (no fit)", fixed=lambda c: (c["judge_p"] + c["overlap"]) / 2),
)
# Reference rows, not selectable: the two single signals, and the shipped combination, whose
# coefficients were fitted on 230 of the WiCE claims and on EVOUNA's development split (so its
# figures on those sets are partly in-sample; "old features, refitted" is its honest version).
BASELINES = ("bare judge P(Yes)", "word overlap", "old combination (as shipped)")


# ---- statistics ------------------------------------------------------------------------------


def balanced_accuracy(p: Any, y: Any, t: float) -> float:
    import numpy as np

    y = np.asarray(y, bool)
    pred = np.asarray(p) >= t
    return float((np.mean(pred[y]) + np.mean(~pred[~y])) / 2)


def train_threshold(scorer: Scorer, sets: Sequence[ClaimSet]) -> float:
    """The threshold maximising the mean of the training sets' balanced accuracies."""
    import numpy as np

    preds = [(scorer(s.cols), s.y) for s in sets]
    cands = np.unique(np.concatenate([np.round(p, 4) for p, _ in preds]))
    if len(cands) > 400:
        cands = np.quantile(np.concatenate([p for p, _ in preds]), np.linspace(0.01, 0.99, 197))
    best_t, best = 0.5, -1.0
    for t in cands:
        v = float(np.mean([balanced_accuracy(p, y, t) for p, y in preds]))
        if v > best:
            best_t, best = float(t), v
    return best_t


def ci(stat: Callable[[Any], float], n: int, n_boot: int = 2000, seed: int = 0) -> tuple[float, float]:
    """The bootstrap 95% interval of ``stat``, resamples where it is NaN left out."""
    from _stats import bootstrap_ci

    def defined(idx: Any) -> float | None:
        v = stat(idx)
        return v if v == v else None

    return bootstrap_ci(defined, n, n_boot, seed)


def claim_figures(p: Any, y: Any, t: float) -> dict[str, Any]:
    import numpy as np

    from ragsight._stats import auroc

    p, y = np.asarray(p, float), np.asarray(y, int)

    def au(idx: Any) -> float:
        a = auroc(p[idx], y[idx])
        return math.nan if a is None else a

    def ba(idx: Any) -> float:
        yy = y[idx]
        return balanced_accuracy(p[idx], yy, t) if 0 < yy.sum() < len(yy) else math.nan

    everything = np.arange(len(y))
    return {"auroc": au(everything), "auroc_ci": ci(au, len(y)), "ba": ba(everything), "ba_ci": ci(ba, len(y)),
            "threshold": t, "ba_at_half": balanced_accuracy(p, y, 0.5), "n": len(y), "pos": int(y.sum())}


def rag_metric(claims: RagCheckerClaims, scorer: Scorer, form: str = "expected",
               threshold: float = 0.5) -> dict[str, dict[str, float | None]]:
    """factual_correctness precision, recall, F1 per response from the candidate's per-claim
    probabilities: expected counts (``expected``) or counts at the threshold (``count``)."""
    out: dict[str, dict[str, float | None]] = {"precision": {}, "recall": {}, "f1": {}}
    for sid, rc in claims.resp.items():
        refc = claims.ref[sid]
        pr = scorer(rc) if len(rc["judge_p"]) else []
        pf = scorer(refc) if len(refc["judge_p"]) else []
        if form == "count":
            pr = [float(x >= threshold) for x in pr]
            pf = [float(x >= threshold) for x in pf]
        tp = float(sum(pr))
        fp = float(len(pr) - tp)
        fn = float(sum(1 - x for x in pf))
        out["precision"][sid] = tp / (tp + fp) if tp + fp else None
        out["recall"][sid] = tp / (tp + fn) if tp + fn else None
        d = 2 * tp + fp + fn
        out["f1"][sid] = 2 * tp / d if d else None
    return out


def dedup_mask(texts: Sequence[str], threshold: float = 0.8) -> list[bool]:
    """Keep a claim unless its content words overlap an earlier kept claim's by Jaccard >= threshold."""
    from ragsight.analyses import content_words

    kept: list[set[str]] = []
    out = []
    for t in texts:
        w = set(content_words(t))
        dup = any(w and k and len(w & k) / len(w | k) >= threshold for k in kept)
        out.append(not dup)
        if not dup:
            kept.append(w)
    return out


def rag_variants(claims: RagCheckerClaims, scorer: Scorer, threshold: float) -> dict[str, dict[str, Any]]:
    """The aggregation choices for one candidate, from the recorded evidence:
    {variant: {precision|recall|f1: per sample}}."""
    import numpy as np

    out: dict[str, dict[str, Any]] = {
        "expected counts": rag_metric(claims, scorer),
        "counts at the threshold": rag_metric(claims, scorer, "count", threshold),
    }
    # near-duplicate claims dropped (content-word Jaccard >= 0.8 with an earlier claim)
    dd = RagCheckerClaims(claims.pairs, {}, {})
    for sid in claims.resp:
        mr = np.array(dedup_mask(claims.resp_text.get(sid, [])), bool)
        mf = np.array(dedup_mask(claims.ref_text.get(sid, [])), bool)
        dd.resp[sid] = {k: v[mr] if len(mr) == len(v) else v for k, v in claims.resp[sid].items()}
        dd.ref[sid] = {k: v[mf] if len(mf) == len(v) else v for k, v in claims.ref[sid].items()}
    out["expected counts, near-duplicate claims dropped"] = rag_metric(dd, scorer)
    # recall as RAGChecker defines it: the mean P of the reference claims (not the spec's TP / (TP + FN))
    exp = out["expected counts"]
    rc: dict[str, float | None] = {}
    for sid, refc in claims.ref.items():
        rc[sid] = float(np.mean(scorer(refc))) if len(refc["judge_p"]) else None
    f1 = {}
    for sid in claims.resp:
        p, r = exp["precision"].get(sid), rc.get(sid)
        f1[sid] = None if p is None or r is None else (2 * p * r / (p + r) if p + r else 0.0)
    out["expected, recall = mean P of the reference claims (RAGChecker's)"] = {
        "precision": exp["precision"], "recall": rc, "f1": f1}
    # answer_correctness = 0.75 F1 + 0.25 similarity, F1 in the expected form
    ac = {sid: (None if exp["f1"].get(sid) is None or claims.similarity.get(sid) is None
                else 0.75 * exp["f1"][sid] + 0.25 * max(0.0, claims.similarity[sid])) for sid in claims.resp}
    out["answer_correctness (expected F1) on every aspect"] = {"precision": ac, "recall": ac, "f1": ac}
    return out


def rag_figures(claims: RagCheckerClaims, per: Mapping[str, Mapping[str, float | None]]) -> dict[str, Any]:
    pairs = claims.pairs
    res = {}
    for aspect, mode in zip(published.ASPECTS, ("precision", "recall", "f1")):
        res[aspect] = published.protocol_ci(pairs, published.pair_scores(pairs, per[mode]), aspect)
    return res


# ---- the table -------------------------------------------------------------------------------


def lodo(sets: Mapping[str, ClaimSet], rag: RagCheckerClaims | None) -> dict[str, dict[str, Any]]:
    """{candidate: {left-out set: figures}}."""
    out: dict[str, dict[str, Any]] = {}
    for cand in CANDIDATES:
        res: dict[str, Any] = {}
        for left in sets:
            train = [s for k, s in sets.items() if k != left]
            scorer = cand.train(train)
            t = train_threshold(scorer, train)
            res[left] = claim_figures(scorer(sets[left].cols), sets[left].y, t)
        if rag is not None:
            scorer = cand.train(list(sets.values()))
            res["ragchecker"] = rag_figures(rag, rag_metric(rag, scorer))
            res["ragchecker_count"] = rag_figures(rag, rag_metric(rag, scorer, "count",
                                                                  train_threshold(scorer, list(sets.values()))))
        out[cand.name] = res
    return out


def margins(table: Mapping[str, Mapping[str, Any]], floor_rag: Mapping[str, float] | None) -> dict[str, list[float]]:
    out = {}
    for name, res in table.items():
        m = [res[k]["auroc"] - table["word overlap"][k]["auroc"] for k in LABELLED if k in res]
        if "ragchecker" in res and floor_rag is not None:
            m.append(sum(res["ragchecker"][a]["pearson"][0] - floor_rag[a] for a in published.ASPECTS) / 300)
        out[name] = m
    return out


def choose(table: Mapping[str, Mapping[str, Any]], floor_rag: Mapping[str, float] | None) -> str:
    m = margins(table, floor_rag)
    cands = {c.name: c for c in CANDIDATES if c.name not in BASELINES}
    ok = [n for n in cands if min(m[n]) >= 0]

    def key_mean(n: str) -> tuple[float, int]:
        return (round(sum(m[n]) / len(m[n]) / 0.005), -cands[n].n_features)

    def key_min(n: str) -> tuple[float, int]:
        return (round(min(m[n]) / 0.005), -cands[n].n_features)

    return max(ok, key=key_mean) if ok else max(cands, key=key_min)


def print_table(table: Mapping[str, Mapping[str, Any]], floor_rag: Mapping[str, float] | None,
                out: Callable[[str], None] = print) -> None:
    sets = [k for k in LABELLED if k in next(iter(table.values()))]
    out("## Claim-level sets, left out one at a time: AUROC [95% CI] / balanced accuracy [95% CI] "
        "at the threshold chosen on the other sets")
    out("| candidate | " + " | ".join(sets) + " |")
    out("|---|" + "---|" * len(sets))
    for name, res in table.items():
        cells = [f"{res[k]['auroc']:.3f} [{res[k]['auroc_ci'][0]:.3f}, {res[k]['auroc_ci'][1]:.3f}] / "
                 f"{res[k]['ba']:.3f} [{res[k]['ba_ci'][0]:.3f}, {res[k]['ba_ci'][1]:.3f}] (t {res[k]['threshold']:.2f}; "
                 f"at 0.5: {res[k]['ba_at_half']:.3f})"
                 for k in sets]
        out(f"| {name} | " + " | ".join(cells) + " |")
    if "ragchecker" in next(iter(table.values())):
        for form in ("ragchecker", "ragchecker_count"):
            what = "expected counts" if form == "ragchecker" else "counts at the threshold"
            out("")
            out(f"## RAGChecker pairs (fitted on all labelled sets): factual_correctness P / R / F1 from {what}, "
                "Pearson [95% CI] / Spearman x100")
            out("| candidate | correctness | completeness | overall |")
            out("|---|---|---|---|")
            for name, res in table.items():
                out(f"| {name} | " + " | ".join(published._cell(res[form][a]) for a in published.ASPECTS) + " |")
        if floor_rag is not None:
            out("(unigram F1 floor, same pairs: " + ", ".join(f"{floor_rag[a]:.1f}" for a in published.ASPECTS) + ")")
    m = margins(table, floor_rag)
    out("")
    out("## Margins over the best model-free signal of each left-out set (AUROC; RAGChecker: mean Pearson / 100)")
    for name in table:
        out(f"- {name}: " + ", ".join(f"{x:+.3f}" for x in m[name]))
    out(f"- chosen by the rule: **{choose(table, floor_rag)}**")


def main(argv: Sequence[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--store", type=Path, default=published.CACHE_DIR / "published.db")
    ap.add_argument("--run", default="last")
    ap.add_argument("--sets", default=",".join(LABELLED))
    ap.add_argument("--json", type=Path)
    args = ap.parse_args(argv)
    sets = {k: load_labelled(k) for k in args.sets.split(",")}
    for k, s in sets.items():
        print(f"- {k}: {len(s.y)} rows with the judge cached ({int(s.y.sum())} positive)")
    rag = load_ragchecker(args.store, args.run)
    floor_rag = None
    if rag is not None:
        mf = published.model_free(rag.pairs)["unigram F1 (token_f1)"]
        floor_rag = {a: published.protocol(rag.pairs, mf, a)[0] for a in published.ASPECTS}
        print(f"- ragchecker: {len(rag.pairs)} pairs with both responses scored")
    table = lodo(sets, rag)
    print_table(table, floor_rag)
    if rag is not None:
        chosen = choose(table, floor_rag)
        print("")
        print("## RAGChecker pairs: aggregation choices (Pearson [95% CI] / Spearman x100)")
        print("| candidate, aggregation | correctness | completeness | overall |")
        print("|---|---|---|---|")
        for cand in CANDIDATES:
            if cand.name not in (chosen, "bare judge P(Yes)", "old combination (as shipped)"):
                continue
            scorer = cand.train(list(sets.values()))
            t = train_threshold(scorer, list(sets.values()))
            for variant, per in rag_variants(rag, scorer, t).items():
                figs = rag_figures(rag, per)
                print(f"| {cand.name}, {variant} | " + " | ".join(published._cell(figs[a]) for a in published.ASPECTS)
                      + " |")
    if args.json:
        args.json.write_text(json.dumps(table, default=str, indent=1), "utf-8")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
