"""The claim's own likelihood as a support signal: how much more probable the embedded judge finds
the claim's tokens after the text than after an empty text (pointwise mutual information).

    .venv/bin/python bench/validity_pmi.py run --split dev       # model passes, resumable (~25 min)
    .venv/bin/python bench/validity_pmi.py report --split dev    # AUROC alone and in combination

The two calls are exactly the verify_claim prompts the product sends (the claim against its
evidence, and against an empty text for the plausibility prior), with logits kept for the claim's
tokens: log p(token | text) and log p(token | empty text) for each token of the claim, so the
signal would cost no extra call in the product. Per claim: ``pmi_mean`` (mean of the
differences), ``pmi_info_mean`` (the same over the tokens the empty-text call finds surprising,
log p < -2), ``pmi_min`` and a few more; P(Yes) of both calls is recorded too. Figures are
10-fold cross-validated logistic models on the development split (``bench/validity.py``'s
folds, L2 and balanced classes), so the held-out split stays untouched.

Reads ``../shared/metaeval/wice_claims_dev.jsonl`` (through bench/validity.py); writes
``$RAGSIGHT_VALIDITY_CACHE/pmi_<split>.jsonl``.
"""

from __future__ import annotations

import argparse
import json
import math
import sys
import time
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))

import validity as V
from _data import read_jsonl

from ragsight.analyses import contexts_block
from ragsight.analyses._calibrated import feature_values
from ragsight.analyses._signals import compute_signals
from ragsight.prompts import fence, load_prompt

SHIPPED = list(V.CLAIM_FEATURES)


def out_path(split: str) -> Path:
    return V.CACHE_DIR / f"pmi_{split}.jsonl"


class Probe:
    """The verify_claim prompt through the embedded judge, with the claim tokens' log-probs."""

    def __init__(self) -> None:
        from ragsight.judge._local import LocalProvider

        self.judge = LocalProvider(progress=False)
        self.llm = self.judge._load()
        self.prompt = load_prompt("verify_claim")
        self.yes = self.judge._choice_token_ids(self.llm, "Yes")
        self.no = self.judge._choice_token_ids(self.llm, "No")

    def _logprobs(self, i: int) -> Any:
        import llama_cpp
        import numpy as np

        lg = np.ctypeslib.as_array(llama_cpp.llama_get_logits_ith(self.llm._ctx.ctx, i),
                                   shape=(self.llm.n_vocab(),)).astype(np.float64)
        m = float(lg.max())
        return lg - (m + math.log(float(np.exp(lg - m).sum())))

    def __call__(self, source: str, claim: str) -> tuple[list[float], float]:
        """(log p of each claim token given the prompt before it, P(Yes))."""
        import numpy as np

        llm = self.llm
        text = self.judge.render(self.prompt.render(source=source, claim=fence("claim", claim)))
        fenced = fence("claim", claim)
        start_char = text.rindex(fenced) + fenced.index(claim)
        full = llm.tokenize(text.encode(), add_bos=True, special=True)
        before = llm.tokenize(text[:start_char].encode(), add_bos=True, special=True)
        through = llm.tokenize(text[:start_char + len(claim)].encode(), add_bos=True, special=True)
        c0 = len(before)
        while c0 > 0 and full[:c0] != before[:c0]:
            c0 -= 1
        c1 = len(through)
        start = min(self.judge._reuse_prefix(llm, full), c0 - 1)
        llm.n_tokens = start
        llm._ctx.kv_cache_seq_rm(0, start, -1)
        if start < c0 - 1:
            llm.eval(full[start:c0 - 1])
            start = c0 - 1
        toks = full[start:]
        if len(toks) > int(llm.n_batch):
            raise ValueError("claim tail longer than one batch")
        b = llm._batch.batch
        for i, t in enumerate(toks):
            b.token[i], b.pos[i], b.n_seq_id[i] = t, start + i, 1
            b.seq_id[i][0] = 0
            b.logits[i] = (c0 - 1 <= start + i < c1 - 1) or i == len(toks) - 1
        b.n_tokens = len(toks)
        llm._ctx.decode(llm._batch)
        llm.input_ids[start:start + len(toks)] = toks
        llm.n_tokens = start + len(toks)
        lps = [float(self._logprobs(i)[full[start + i + 1]])
               for i in range(len(toks)) if c0 - 1 <= start + i < c1 - 1]
        last = self._logprobs(len(toks) - 1)
        ly, ln = np.logaddexp.reduce(last[self.yes]), np.logaddexp.reduce(last[self.no])
        return lps, float(1.0 / (1.0 + math.exp(ln - ly)))


def run(split: str, limit: int | None) -> None:
    path = out_path(split)
    path.parent.mkdir(parents=True, exist_ok=True)
    done = {json.loads(line)["id"] for line in path.read_text().splitlines()} if path.exists() else set()
    probe = Probe()
    rows = V.order_rows("wice", V.load_set("wice", split))[:limit]
    t0 = time.monotonic()
    with path.open("a") as f:
        for i, row in enumerate(rows, start=1):
            if row["id"] in done:
                continue
            claim = row["answer"]
            lp_prior, p_prior = probe(contexts_block([""]), claim)
            lp_ctx, p_yes = probe(contexts_block(row["contexts"]), claim)
            f.write(json.dumps({"id": row["id"], "label": V.label_of("wice", row), "lp_ctx": lp_ctx,
                                "lp_prior": lp_prior, "p_yes": p_yes, "p_prior": p_prior}) + "\n")
            f.flush()
            if i % 10 == 0 or i == len(rows):
                print(f"{i}/{len(rows)} rows, {time.monotonic() - t0:.0f} s", flush=True)


def features(rec: dict[str, Any], row: dict[str, Any]) -> dict[str, float]:
    import numpy as np

    a, b = np.array(rec["lp_ctx"]), np.array(rec["lp_prior"])
    d = a - b
    info = b < -2
    fv = feature_values(rec["p_yes"], {**compute_signals(row["answer"], row["contexts"]),
                                        "judge_prior": rec["p_prior"]})
    out = {k: float(fv[k]) for k in SHIPPED}
    out.update({
        "pmi_mean": float(d.mean()), "pmi_min": float(d.min()), "pmi_sum": float(d.sum()),
        "lp_ctx_mean": float(a.mean()),
        "pmi_info_mean": float(d[info].mean()) if info.any() else 0.0,
        "lp_ctx_info_min": float(a[info].min()) if info.any() else 0.0,
        "n_unraised": float(((a < -3) & (d < 1)).sum()),
    })
    return out


def report(split: str) -> None:
    import numpy as np

    rows = {r["id"]: r for r in V.load_set("wice", split)}
    recs = read_jsonl(out_path(split))
    ids = [r["id"] for r in recs]
    y = np.array([r["label"] for r in recs])
    table = [features(r, rows[r["id"]]) for r in recs]
    cols = {k: np.array([t[k] for t in table]) for k in table[0]}
    print(f"WiCE {split}: {len(y)} claims, {int(y.sum())} supported\n")
    print("| signal alone | AUROC [95% CI] |\n|---|---|")
    for k in ("judge_logit", "prior_logit", "overlap_best", "pmi_mean", "pmi_info_mean", "pmi_min",
              "lp_ctx_mean", "lp_ctx_info_min", "n_unraised"):
        a, lo, hi = V.auroc_ci(cols[k], y)
        print(f"| {k} | {a:.3f} [{lo:.3f}, {hi:.3f}] |")

    def cv(feats: list[str]) -> Any:
        return V.cv_scores(ids, np.column_stack([cols[f] for f in feats]), y, l2=V.L2)

    base = cv(SHIPPED)
    no_prior = [f for f in SHIPPED if f != "prior_logit"]
    print("\n| 10-fold CV (L2 = 10) | AUROC | gain over the shipped inputs [95% CI] |\n|---|---|---|")
    print(f"| shipped inputs | {V.auroc_ci(base, y)[0]:.3f} | - |")
    for name, feats in [("shipped without the prior", no_prior),
                        *[(f"shipped + {e}", [*SHIPPED, e]) for e in
                          ("pmi_mean", "pmi_info_mean", "pmi_min", "lp_ctx_info_min", "n_unraised")],
                        ("shipped without the prior + pmi_info_mean", [*no_prior, "pmi_info_mean"])]:
        s = cv(feats)
        g, lo, hi = V.auroc_gain(base, s, y)
        print(f"| {name} | {V.auroc_ci(s, y)[0]:.3f} | {g:+.3f} [{lo:+.3f}, {hi:+.3f}] |")


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("command", choices=["run", "report"])
    ap.add_argument("--split", choices=["dev"], default="dev",
                    help="development split only: the held-out split is kept for the final figures")
    ap.add_argument("--limit", type=int, default=None)
    args = ap.parse_args()
    if args.command == "run":
        run(args.split, args.limit)
    else:
        report(args.split)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
