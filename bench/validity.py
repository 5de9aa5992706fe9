"""Validity of claim verdicts and answer correctness against human labels.

Every model output is cached on disk (``$RAGSIGHT_VALIDITY_CACHE``, default
``../cache/validity/calls.jsonl`` beside the repository), keyed by the judge's own step key (a hash of the model,
the prompt and the rendered messages), so re-running any measurement or any combination of
signals never repeats a model call.

    # model passes (slow; run in the background, resumable):
    .venv/bin/python bench/validity.py run wice --split dev --probes bare,details,extra,best,prior
    .venv/bin/python bench/validity.py run evouna --split dev --probes answer
    # figures (fast, cached only):
    .venv/bin/python bench/validity.py report            # dev figures (cross-validated)
    .venv/bin/python bench/validity.py report --final    # held-out figures (the acceptance ones)
    .venv/bin/python bench/validity.py fit               # refit the shipped coefficients on dev
    # a faithfulness run of WiCE claims (bench/metaeval_calibrate.py --wice) against the
    # claim-level verdicts of this cache, on the same claims:
    .venv/bin/python bench/validity.py trail RUN --store /tmp/ragsight-metaeval/metaeval.db --split dev

Splits: a row is held out when ``int(sha256(id), 16) % 3 == 0`` (about a third of each set);
everything else is the development split. Coefficients, prompt choices and thresholds are
fitted or chosen on the development split only; the held-out part is used for the final figures.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import sys
import time
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "src"))
sys.path.insert(0, str(Path(__file__).resolve().parent))

from _fit import (  # noqa: E402  (validity.X names, read by other bench scripts)
    _fmt,
    accuracy_threshold,
    auroc_ci,
    auroc_gain,
    cv_scores,
    fit_logistic,
    paired_accuracy_gain,
)
from _providers import JsonlCache  # noqa: E402
from _validity_calls import (  # noqa: E402
    CACHE_DIR,
    METAEVAL,
    SETS,
    cached_cost,
    cached_p,
    label_of,
    load_prompt,
    load_set,
    make_judge,
    order_rows,
    probe_calls,
)

from ragsight.analyses import contexts_block  # noqa: E402
from ragsight.judge import Judge  # noqa: E402

__all__ = [
    "CACHE_DIR",
    "CLAIM_FEATURES",
    "METAEVAL",
    "JsonlCache",
    "auroc_ci",
    "auroc_gain",
    "cached_p",
    "cv_scores",
    "feature_table",
    "label_of",
    "load_prompt",
    "load_set",
    "make_judge",
    "order_rows",
    "probe_calls",
]
"""What the other bench scripts read of this one (bench/number_guard.py, lodo.py, validity_pmi.py,
mtrag_faithfulness.py): its helpers live in bench/_validity_calls.py and bench/_fit.py."""


async def run(name: str, split: str, probes: Sequence[str], limit: int | None = None) -> None:
    cache = JsonlCache(CACHE_DIR / "calls.jsonl")
    judge = make_judge(cache)
    rows = order_rows(name, load_set(name, split))[:limit]
    t0 = time.monotonic()
    for done, row in enumerate(rows, start=1):
        for probe in probes:
            for prompt_id, values in probe_calls(name, row, probe):
                await judge.choose(load_prompt(prompt_id), values)
        if done % 10 == 0 or done == len(rows):
            el = time.monotonic() - t0
            print(f"{name} {split} {done}/{len(rows)} rows, {el:.0f} s, calls {judge.stats.calls}, "
                  f"cached {judge.stats.cache_hits}", flush=True)


# ---- feature tables ------------------------------------------------------------------------

# The P(Yes) of each probe enters as a log-odds column named "<probe>_logit".
CLAIM_PROBES = ("bare", "details", "prior", "best", "fewshot", "fewshot_prior", "focus")


def feature_table(
    name: str, split: str, probes: Sequence[str], need: Sequence[str] = ()
) -> tuple[list[dict[str, Any]], Any, dict[str, Any]]:
    """(rows, labels, columns) for the rows of a split whose probes in ``need`` are all cached.

    Columns: the deterministic signals (claim sets) or alias signals (EVOUNA), and
    ``<probe>_p`` / ``<probe>_logit`` for each cached probe (NaN where a call is missing).
    """
    import numpy as np

    from ragsight.analyses._calibrated import logit
    from ragsight.analyses._signals import alias_signals, compute_signals

    cache = JsonlCache(CACHE_DIR / "calls.jsonl")
    judge = make_judge(cache)
    rows = load_set(name, split)
    cols: dict[str, list[float]] = {}
    kept = []
    for row in rows:
        ps: dict[str, float] = {}
        for probe in probes:
            calls = probe_calls(name, row, probe)
            if not calls:
                continue
            p = cached_p(judge, cache, calls[0])
            if p is not None:
                ps[probe] = p
        if any(n not in ps for n in need):
            continue
        if name == "evouna":
            sig = alias_signals(row["answer"], row.get("reference_all") or [row["reference"]])
        else:
            sig = compute_signals(row["answer"], row["contexts"])
        feats = dict(sig)
        for probe in probes:
            p = ps.get(probe, float("nan"))
            feats[f"{probe}_p"] = p
            feats[f"{probe}_logit"] = logit(p) if p == p else float("nan")
        kept.append(row)
        for k, v in feats.items():
            cols.setdefault(k, []).append(v)
    y = np.array([label_of(name, r) for r in kept])
    return kept, y, {k: np.array(v, float) for k, v in cols.items()}


def cost_per_row(name: str, rows: Sequence[dict[str, Any]], probes: Sequence[str]) -> dict[str, float]:
    """Mean recorded latency and evaluated prompt tokens per row for the given probes."""
    import numpy as np

    cache = JsonlCache(CACHE_DIR / "calls.jsonl")
    judge = make_judge(cache)
    lat, tok = [], []
    for row in rows:
        la = to = 0.0
        ok = True
        for probe in probes:
            for call in probe_calls(name, row, probe):
                c = cached_cost(judge, cache, call)
                if c is None:
                    ok = False
                    continue
                la += c["latency_s"]
                to += c["tokens_evaluated"]
        if ok:
            lat.append(la)
            tok.append(to)
    return {"rows": float(len(lat)), "latency_s": float(np.mean(lat)) if lat else float("nan"),
            "tokens": float(np.mean(tok)) if tok else float("nan")}


# ---- the shipped models: fit (development split) and evaluate (held-out split) --------------

# Chosen on the development split (cross-validated comparison printed by `report`); the
# claim verdicts now use MEAN_JUDGE instead (bench/lodo.py), and the prior is not asked.
MEAN_JUDGE = {
    "form": "mean",
    "features": ["judge_p", "overlap"],
    "threshold": 0.5,
    "fitted_on": "nothing fitted: chosen by leave-one-dataset-out over WiCE, ExpertQA, EVOUNA-TQ and "
                 "RAGChecker pairs (bench/lodo.py)",
}
CLAIM_PROBES_USED = ("bare", "prior")
CLAIM_FEATURES = ("judge_logit", "prior_logit", "overlap_best", "missing", "numbers", "entities")
CLAIM_SIGNAL_FEATURES = ("overlap", "numbers", "entities")
ANSWER_FEATURES = ("judge_logit", "alias_contained", "alias_recall")
ANSWER_SIGNAL_FEATURES = ("alias_contained", "alias_recall")
L2 = 10.0
CALIBRATED = ROOT / "src" / "ragsight" / "analyses" / "_calibrated.py"


def shipped_signals(
    name: str, cols: dict[str, Any], i: int, probes: Sequence[str] = CLAIM_PROBES_USED
) -> tuple[float | None, dict[str, float]]:
    """(judge_p, signals) of row i exactly as production passes them to combine(); the extra
    judge probabilities of ``probes`` (other than 'bare') enter as signals ``judge_<probe>``."""
    import math

    judge_key = "answer_p" if name == "evouna" else "bare_p"
    skip = {f"{p}_{s}" for p in (*CLAIM_PROBES, "answer") for s in ("p", "logit")}
    signals = {k: float(v[i]) for k, v in cols.items() if k not in skip}
    if name != "evouna":
        for probe in probes:
            if probe != "bare" and f"{probe}_p" in cols and not math.isnan(cols[f"{probe}_p"][i]):
                signals[f"judge_{probe}"] = float(cols[f"{probe}_p"][i])
    jp = cols.get(judge_key)
    judge_p = None if jp is None or math.isnan(jp[i]) else float(jp[i])
    return judge_p, signals


def design(name: str, cols: dict[str, Any], features: Sequence[str],
           probes: Sequence[str] = CLAIM_PROBES_USED) -> Any:
    """The feature matrix under the shipped feature names."""
    import numpy as np

    from ragsight.analyses._calibrated import feature_values

    n = len(next(iter(cols.values())))
    out = np.zeros((n, len(features)))
    for i in range(n):
        judge_p, signals = shipped_signals(name, cols, i, probes)
        fv = feature_values(judge_p, signals)
        out[i] = [fv.get(f, float("nan")) for f in features]
    return out


def _entry(features: Sequence[str], fitted: tuple[Any, Any, Any, float], threshold: float,
           fitted_on: str) -> dict[str, Any]:
    mean, scale, coef, b = fitted
    return {"features": list(features), "mean": [round(float(x), 6) for x in mean],
            "scale": [round(float(x), 6) for x in scale], "coef": [round(float(x), 6) for x in coef],
            "intercept": round(float(b), 6), "threshold": round(float(threshold), 6),
            "fitted_on": fitted_on}


def fit_all() -> dict[str, dict[str, dict[str, Any]]]:
    """Fit the four shipped models on the development splits and rewrite the constant."""
    import numpy as np

    from ragsight.analyses._calibrated import DEFAULT_MODEL

    table: dict[str, dict[str, dict[str, Any]]] = {DEFAULT_MODEL: {}, "*": {}}
    # claims: now the mean of the judge's P(Yes) and word overlap, nothing fitted,
    # chosen by leave-one-dataset-out (bench/lodo.py)
    table[DEFAULT_MODEL]["judge"] = dict(MEAN_JUDGE)
    rows_s, y_s, cols_s = feature_table("wice", "dev", ())
    x = design("wice", cols_s, CLAIM_SIGNAL_FEATURES)
    table["*"]["signals"] = _entry(CLAIM_SIGNAL_FEATURES, fit_logistic(x, y_s, l2=L2), 0.5,
                                   f"WiCE dev split, {len(y_s)} claims ({int(y_s.sum())} supported)")
    # short answers: EVOUNA-TQ development rows. Not class-balanced: P(correct) is calibrated
    # to the share of correct answers there (84%), so the mean of answer_correctness estimates
    # accuracy, and 0.5 is the threshold.
    rows, y, cols = feature_table("evouna", "dev", ("answer",), need=("answer",))
    x = design("evouna", cols, ANSWER_FEATURES)
    fitted = fit_logistic(x, y, l2=L2, balanced=False, nonneg=[ANSWER_FEATURES.index("judge_logit")])
    table[DEFAULT_MODEL]["answer"] = _entry(ANSWER_FEATURES, fitted, 0.5,
                                            f"EVOUNA-TQ dev split, {len(y)} answers ({int(y.sum())} correct)")
    rows_s, y_s, cols_s = feature_table("evouna", "dev", ())
    x = design("evouna", cols_s, ANSWER_SIGNAL_FEATURES)
    fitted = fit_logistic(x, y_s, l2=L2, balanced=False)
    table["*"]["answer_signals"] = _entry(ANSWER_SIGNAL_FEATURES, fitted, 0.5,
                                          f"EVOUNA-TQ dev split, {len(y_s)} answers ({int(y_s.sum())} correct)")
    del rows, rows_s
    text = CALIBRATED.read_text("utf-8")
    begin = text.index("# BEGIN COEFFICIENTS")
    end = text.index("# END COEFFICIENTS")
    header = text[begin:text.index("\n", begin) + 1]
    body = "COEFFICIENTS: dict[str, dict[str, dict[str, Any]]] = " + _pyrepr(table) + "\n"
    CALIBRATED.write_text(text[:begin] + header + body + text[end:], "utf-8")
    np.set_printoptions(precision=4)
    return table


def _pyrepr(obj: Any, indent: int = 0) -> str:
    pad = "    " * (indent + 1)
    if isinstance(obj, dict):
        items = [f"{pad}{json.dumps(k)}: {_pyrepr(v, indent + 1)}," for k, v in obj.items()]
        return "{\n" + "\n".join(items) + "\n" + "    " * indent + "}"
    return json.dumps(obj)


# ---- reports ---------------------------------------------------------------------------------

CANDIDATES: dict[str, tuple[str, ...]] = {
    "judge": ("judge_logit",),
    "overlap": ("overlap",),
    "judge+overlap": ("judge_logit", "overlap"),
    "signals (overlap, numbers, entities)": ("overlap", "numbers", "entities"),
    "judge+signals": ("judge_logit", "overlap", "numbers", "entities"),
    "judge+prior+signals": ("judge_logit", "prior_logit", "overlap", "numbers", "entities"),
    "judge+details+signals": ("judge_logit", "details_logit", "overlap", "numbers", "entities"),
    "judge+details+prior+signals": ("judge_logit", "details_logit", "prior_logit", "overlap",
                                    "numbers", "entities"),
    "details+prior+signals": ("details_logit", "prior_logit", "overlap", "numbers", "entities"),
    "judge+prior+all signals": ("judge_logit", "prior_logit", "overlap", "overlap_best",
                                "bigram_overlap", "numbers", "entities", "missing", "n_content"),
    "judge+prior+best-sentence signals": ("judge_logit", "prior_logit", "overlap_best", "missing",
                                          "numbers", "entities"),
    "judge+prior+signals+best-sentence": ("judge_logit", "prior_logit", "overlap", "overlap_best",
                                          "missing", "numbers", "entities"),
}


def report_dev(out: Callable[[str], None] = print) -> None:
    """Development-split figures: each signal alone and 10-fold cross-validated combinations."""
    import numpy as np

    from ragsight._stats import auroc

    rows, y, cols = feature_table("wice", "dev", CLAIM_PROBES, need=("bare", "prior"))
    ids = [r["id"] for r in rows]
    out(f"## WiCE development split: {len(y)} claims with bare and prior cached "
        f"({int(y.sum())} supported)")
    for k in ("bare_p", "details_p", "prior_p", "best_p", "overlap", "overlap_best", "bigram_overlap",
              "numbers", "entities"):
        v = cols.get(k)
        if v is None or np.isnan(v).all():
            continue
        ok = ~np.isnan(v)
        a = auroc(v[ok], y[ok])
        if a is not None:
            out(f"- {k} alone: AUROC {a:.3f} (n={int(ok.sum())})")
    for l2 in (1.0, 10.0, 30.0):
        out(f"### 10-fold CV AUROC, L2 = {l2}")
        for label, feats in CANDIDATES.items():
            x = design("wice", cols, feats, CLAIM_PROBES)
            if np.isnan(x).any():
                continue
            p = cv_scores(ids, x, y, l2=l2)
            out(f"- {label}: {auroc(p, y):.3f}")
    rows, y, cols = feature_table("evouna", "dev", ("answer",), need=("answer",))
    ids = [r["id"] for r in rows]
    c = cols["alias_contained"]
    out(f"## EVOUNA-TQ development split: {len(y)} answers with the judge cached ({int(y.sum())} correct)")
    out(f"- containment: accuracy {np.mean((c > 0.5) == (y > 0)):.3f}, AUROC {auroc(c, y):.3f}")
    out(f"- alias recall: AUROC {auroc(cols['alias_recall'], y):.3f}")
    out(f"- judge alone: AUROC {auroc(cols['answer_p'], y):.3f}, accuracy at 0.5 "
        f"{np.mean((cols['answer_p'] >= 0.5) == (y > 0)):.3f}")
    for label, feats in (("judge+contained", ("judge_logit", "alias_contained")),
                         ("judge+contained+recall", ("judge_logit", "alias_contained", "alias_recall")),
                         ("contained+recall", ("alias_contained", "alias_recall"))):
        x = design("evouna", cols, feats)
        p = cv_scores(ids, x, y, l2=L2, balanced=False)
        # threshold chosen inside each fold would be stricter; this is the accuracy at the
        # accuracy-maximising threshold over the CV scores (optimistic) and at 0.5
        out(f"- {label}: CV AUROC {auroc(p, y):.3f}, accuracy at 0.5 {np.mean((p >= 0.5) == (y > 0)):.3f}, "
            f"best accuracy {np.mean((p >= accuracy_threshold(p, y)) == (y > 0)):.3f}")


def report_focus(out: Callable[[str], None] = print) -> None:
    """The 'focus' probe (verify_claim_focus: the claim's words missing from the text named in
    the question) on the development split: alone, and added to the shipped inputs, 10-fold CV.
    Claims with no missing word make no focus call; their focus value is the bare P(Yes)."""
    import numpy as np

    from ragsight._stats import auroc
    from ragsight.analyses._calibrated import logit

    rows, y, cols = feature_table("wice", "dev", CLAIM_PROBES, need=("bare", "prior"))
    focus = np.where(cols["missing"] == 0, cols["bare_p"], cols["focus_p"])
    ok = ~np.isnan(focus)
    ids = [r["id"] for r, k in zip(rows, ok) if k]
    y = y[ok]
    cols = {k: v[ok] for k, v in cols.items()}
    focus = focus[ok]
    n_calls = int(np.sum(cols["missing"] > 0))
    out(f"## WiCE development split, focus probe: {len(y)} claims ({int(y.sum())} supported; "
        f"{n_calls} with missing words, so a focus call)")
    out(f"- bare P(Yes) alone: {auroc(cols['bare_p'], y):.3f}; focus P(Yes) alone: {auroc(focus, y):.3f}")
    base = design("wice", cols, CLAIM_FEATURES)
    fl = np.array([logit(float(p)) for p in focus])[:, None]
    for l2 in (1.0, 10.0, 30.0):
        shipped = cv_scores(ids, base, y, l2=l2)
        plus = cv_scores(ids, np.hstack([base, fl]), y, l2=l2)
        swap = cv_scores(ids, np.hstack([np.delete(base, 0, axis=1), fl]), y, l2=l2)
        out(f"- L2 = {l2}: shipped inputs {auroc(shipped, y):.3f}; + focus {auroc(plus, y):.3f}; "
            f"focus instead of the bare judge {auroc(swap, y):.3f}")


def report_final(out: Callable[[str], None] = print, expertqa_limit: int | None = None) -> None:
    """Held-out figures with the SHIPPED coefficients (combine / combine_answer)."""
    import numpy as np

    from ragsight.analyses._calibrated import combine, combine_answer, get_model

    rows, y, cols = feature_table("wice", "heldout", CLAIM_PROBES, need=CLAIM_PROBES_USED)
    combined = np.array([combine(*shipped_signals("wice", cols, i)) for i in range(len(y))])
    sig_only = np.array([combine(None, shipped_signals("wice", cols, i)[1]) for i in range(len(y))])
    out(f"## WiCE held-out part: {len(y)} claims ({int(y.sum())} supported); AUROC [95% bootstrap CI]")
    out(f"- shipped combination (judge + signals): {_fmt(auroc_ci(combined, y))}")
    out(f"- bare judge P(Yes): {_fmt(auroc_ci(cols['bare_p'], y))}")
    out(f"- word overlap: {_fmt(auroc_ci(cols['overlap'], y))}")
    out(f"- signals-only model (no judge probability): {_fmt(auroc_ci(sig_only, y))}")
    out(f"- gain over the bare judge (paired bootstrap): {_fmt(auroc_gain(cols['bare_p'], combined, y))}")
    out(f"- gain over word overlap (paired bootstrap): {_fmt(auroc_gain(cols['overlap'], combined, y))}")
    thr = 0.5
    out(f"- accuracy at {thr}: combination {np.mean((combined >= thr) == (y > 0)):.3f}, "
        f"bare judge {np.mean((cols['bare_p'] >= thr) == (y > 0)):.3f}")
    cost = cost_per_row("wice", rows, CLAIM_PROBES_USED)
    out(f"- recorded cost per claim (probes {', '.join(CLAIM_PROBES_USED)}): {cost['latency_s']:.1f} s, "
        f"{cost['tokens']:.0f} prompt tokens evaluated (n={cost['rows']:.0f})")

    rows, y, cols = feature_table("evouna", "heldout", ("answer",), need=("answer",))
    p = np.array([combine_answer(*shipped_signals("evouna", cols, i)) for i in range(len(y))])
    fitted = get_model("answer")
    assert fitted is not None
    thr = fitted.threshold
    c = cols["alias_contained"]
    out(f"## EVOUNA-TQ held-out part: {len(y)} answers ({int(y.sum())} correct)")
    out(f"- shipped answer model: AUROC {_fmt(auroc_ci(p, y))}; accuracy at its threshold {thr:.3f}: "
        f"{np.mean((p >= thr) == (y > 0)):.3f}")
    out(f"- string containment: accuracy {np.mean((c > 0.5) == (y > 0)):.3f}; AUROC {_fmt(auroc_ci(c, y))}")
    out(f"- judge alone: AUROC {_fmt(auroc_ci(cols['answer_p'], y))}")
    acc_gain = paired_accuracy_gain((c > 0.5) == (y > 0), (p >= thr) == (y > 0))
    out(f"- accuracy gain over containment (paired bootstrap): {_fmt(acc_gain)}")

    rows, y, cols = feature_table("expertqa", "heldout", CLAIM_PROBES, need=CLAIM_PROBES_USED)
    if len(y):
        combined = np.array([combine(*shipped_signals("expertqa", cols, i)) for i in range(len(y))])
        out(f"## ExpertQA held-out part (stress test): {len(y)} claims ({int(y.sum())} supported)")
        out(f"- shipped combination: {_fmt(auroc_ci(combined, y))}")
        out(f"- bare judge: {_fmt(auroc_ci(cols['bare_p'], y))}")
        out(f"- word overlap: {_fmt(auroc_ci(cols['overlap'], y))}")
        out(f"- gain over the bare judge: {_fmt(auroc_gain(cols['bare_p'], combined, y))}")


def report_before(out: Callable[[str], None] = print) -> None:
    """The bare embedded judge's claim-level AUROC, on every row that has it cached."""
    for name in ("wice", "expertqa"):
        _rows, y, cols = feature_table(name, "all", ("bare",), need=("bare",))
        if len(y):
            out(f"- {name}: bare judge AUROC {_fmt(auroc_ci(cols['bare_p'], y))} on {len(y)} claims "
                f"({int(y.sum())} supported); word overlap on the same claims "
                f"{_fmt(auroc_ci(cols['overlap'], y))}")


async def timing(n: int) -> None:
    """Seconds per claim of the shipped verdict (prior + claim against its evidence + signals),
    uncached, on the first ``n`` held-out WiCE claims in a random (hash) order, one claim after
    another as the metrics run them; the model load is not counted."""
    from ragsight.analyses import AnalysisSettings, SampleAnalyses
    from ragsight.judge._local import LocalProvider
    from ragsight.sample import Sample

    provider = LocalProvider(None, progress=False)
    judge = Judge(provider)
    await provider.preflight()
    rows = order_rows("wice", load_set("wice", "heldout"))[:n]
    t0 = time.monotonic()
    tok0 = provider.tokens_evaluated
    for row in rows:
        ctx = SampleAnalyses(Sample(id=row["id"], contexts=tuple(row["contexts"]), response=row["answer"]), judge,
                            None, AnalysisSettings(explain="none", use_cache=False))
        await ctx.verify([row["answer"]], "contexts", contexts_block(row["contexts"]))
    el = time.monotonic() - t0
    print(f"{len(rows)} WiCE held-out claims: {el / len(rows):.1f} s per claim, "
          f"{(provider.tokens_evaluated - tok0) / len(rows):.0f} prompt tokens evaluated per claim "
          f"(load average {os.getloadavg()[0]:.2f} at the end)")


# ---- entry point ----------------------------------------------------------------------------


def report_trail(run_ref: str, store_path: Path, split: str, out: Callable[[str], None] = print) -> None:
    """Faithfulness as the product computes it (claims extracted from each WiCE claim, each
    verified) against the claim-level shipped verdict of this cache, on the same claims."""
    import numpy as np

    from ragsight.analyses._calibrated import combine
    from ragsight.result import load_result
    from ragsight.store import Store

    rows, y, cols = feature_table("wice", split, CLAIM_PROBES, need=CLAIM_PROBES_USED)
    at = {r["id"]: i for i, r in enumerate(rows)}
    with Store(store_path) as store:
        res = load_result(store, run_ref)
    got: dict[str, list[float]] = {k: [] for k in ("faith", "pmin", "pmean", "claim", "bare", "overlap")}
    labels, n_claims = [], []
    for sid, scores in res.scores.items():
        sc = scores.get("faithfulness")
        if sc is None or sc.value is None or sid not in at:
            continue
        i = at[sid]
        probs = [c.probability if c.probability is not None else float(c.supported) for c in sc.evidence.claims]
        got["faith"].append(sc.value)
        got["pmin"].append(min(probs))
        got["pmean"].append(float(np.mean(probs)))
        got["claim"].append(combine(*shipped_signals("wice", cols, i)))
        got["bare"].append(float(cols["bare_p"][i]))
        got["overlap"].append(float(cols["overlap"][i]))
        labels.append(int(y[i]))
        n_claims.append(len(probs))
    ya = np.array(labels)
    out(f"## WiCE {split}, run {res.run_id}: {len(ya)} claims ({int(ya.sum())} supported), "
        f"{np.mean(n_claims):.2f} extracted claims each; AUROC [95% bootstrap CI]")
    names = {"faith": "faithfulness as shipped (share at P >= 0.5)", "pmin": "lowest P of the extracted claims",
             "pmean": "mean P of the extracted claims", "claim": "claim-level shipped verdict (no extraction)",
             "bare": "bare judge on the whole claim", "overlap": "word overlap of the whole claim"}
    for k, name in names.items():
        out(f"- {name}: {_fmt(auroc_ci(np.array(got[k]), ya))}")
    out(f"- gain of the lowest P over the claim-level verdict (paired bootstrap): "
        f"{_fmt(auroc_gain(np.array(got['claim']), np.array(got['pmin']), ya))}")


def main(argv: Sequence[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    sub = ap.add_subparsers(dest="cmd", required=True)
    r = sub.add_parser("run", help="make (and cache) the judge calls")
    r.add_argument("set", choices=sorted(SETS))
    r.add_argument("--split", default="dev", choices=("dev", "heldout", "all"))
    r.add_argument("--probes", default="bare")
    r.add_argument("--limit", type=int)
    rep = sub.add_parser("report", help="figures from the cache (no model calls)")
    rep.add_argument("--final", action="store_true", help="the held-out figures (shipped model)")
    rep.add_argument("--before", action="store_true", help="the bare judge alone")
    rep.add_argument("--focus", action="store_true", help="the focus probe on the development split")
    sub.add_parser("fit", help="refit the shipped coefficients on the development splits")
    tm = sub.add_parser("timing", help="seconds per claim of the shipped verdict (uncached)")
    tm.add_argument("--n", type=int, default=10)
    tr = sub.add_parser("trail", help="a faithfulness run of WiCE claims against the claim-level verdicts")
    tr.add_argument("run")
    tr.add_argument("--store", type=Path, default=Path("/tmp/ragsight-metaeval/metaeval.db"))
    tr.add_argument("--split", default="dev", choices=("dev", "heldout"))
    args = ap.parse_args(argv)
    if args.cmd == "run":
        asyncio.run(run(args.set, args.split, args.probes.split(","), args.limit))
    elif args.cmd == "report":
        if args.before:
            report_before()
        elif args.focus:
            report_focus()
        elif args.final:
            report_final()
        else:
            report_dev()
    elif args.cmd == "timing":
        asyncio.run(timing(args.n))
    elif args.cmd == "trail":
        report_trail(args.run, args.store, args.split)
    elif args.cmd == "fit":
        print(_pyrepr(fit_all()))
    return 0


_: Callable[..., Any] = main

if __name__ == "__main__":
    raise SystemExit(main())
