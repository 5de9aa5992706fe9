"""Seconds per sample of the embedded judge (llama.cpp, CPU) on the four core metrics.

    .venv/bin/python bench/bench_local.py                       # 5 samples, explain=unsupported
    .venv/bin/python bench/bench_local.py --n 3 --explain none
    .venv/bin/python bench/bench_local.py --n 1 --explain none --calls   # each call's prompt tokens
    .venv/bin/python bench/bench_local.py --n 0 --compare 2      # only the before/after comparison
    .venv/bin/python bench/bench_local.py --wait-load 1.5        # start when the machine is quiet
    RAGSIGHT_THREADS=1 .venv/bin/python bench/bench_local.py --n 3 --ab 2   # before/after, interleaved

``--ab K``: the main run 2K times in one process, alternating the earlier settings
(``AnalysisSettings(embedded_questions=3)``: three generated questions) and the shipped
ones (one question) (A, B, A, B, ...), on the same samples with the model loaded once, then a
table of seconds per sample, calls, generated tokens and metric means of each run and the ratio
of the medians (after / before). ``--sentences`` also turns on claims from sentences
(``sentence_claims=True``, not shipped) on the after side.

This benchmark reads the data of the shared kit, ``../shared/bench/airline_20.jsonl`` (beside the
repository; ``--data`` to point elsewhere). The product never reads it.

Main run: ``ragsight.evaluate(data[:n], [faithfulness, answer_relevancy, context_precision,
context_recall], judge=<the embedded judge>, embedder=<the default local embedder>,
options=RunOptions(cache=False, settings=AnalysisSettings(explain=...)))``. The one-time preparation is measured apart and not
counted: finding/joining/verifying the model file (``ensure_model``; ``--cold-join`` joins it
again into a temporary directory to time a first run), loading it into llama.cpp, and loading the
embedder. The judge is ``make_judge("local")`` with its provider wrapped by a recorder that times
every call and reads ``LocalProvider.tokens_prompted`` / ``tokens_evaluated`` before and after it
(calls run one at a time, so the differences belong to that call): per prompt id, calls, prompt
tokens sent, prompt tokens actually evaluated after prefix reuse, generated tokens, seconds.

Comparison (``--compare K``, on the first K samples): the claim verdicts of faithfulness and
context recall (response claims and reference claims against the joined contexts; the claims are
those of the main run, or extracted first when the main run is skipped), done four ways with the
same model:

- A "before": one JSON verdict per claim (``judge.ask(load_prompt("verify_claims"), ...)`` with
  one claim, grammar-constrained generation with a reason), KV cache reset before each call;
- B: one yes/no log-probability verdict per claim (``judge.choose(load_prompt("verify_claim"))``),
  KV cache reset before each call (log-probabilities without prefix reuse);
- C "after": as B, back to back without reset, so the contexts stay in the KV cache (what
  ragsight does);
- D: all claims in one JSON call (the remote-judge path), KV cache reset first.

The reset is ``provider._llm.reset()`` (llama-cpp-python: forget the evaluated tokens). Each
sample's verdicts are compared with C's (agreement). Timing is only meaningful on a quiet machine:
the 1-minute load average is printed at every step; ``--wait-load X`` waits (up to
``--wait-max`` seconds) until it is below X before each timed part.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import sys
import tempfile
import time
from collections import defaultdict
from collections.abc import Sequence
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO / "bench"))
import _where  # noqa: E402
from _data import CORE4, write_json  # noqa: E402
from _machine import load1, wait_for_quiet  # noqa: E402
from _providers import Forwarding  # noqa: E402
from _table import print_table  # noqa: E402

DEFAULT_DATA = _where.kit() / "airline_20.jsonl"  # the shared kit beside the repository (or its worktree)
TARGET_S = 25.0
# LocalProvider counters of generation (absent in older versions): forward passes, prompt-lookup draft
# tokens evaluated in them, and drafts kept.
GEN_COUNTERS = ("decode_passes", "tokens_drafted", "drafts_accepted")


class Recorder(Forwarding):
    """A JudgeProvider that forwards to a LocalProvider and records each call."""

    def __init__(self, inner: Any) -> None:
        super().__init__(inner)
        self.calls: list[dict[str, Any]] = []

    def _sample(self) -> str | None:
        try:
            from ragsight.engine._engine import _current_sample
        except ImportError:
            return None
        return _current_sample.get()

    async def _timed(self, kind: str, request: Any, coro: Any) -> Any:
        p0, e0 = self.inner.tokens_prompted, self.inner.tokens_evaluated
        x0 = {k: getattr(self.inner, k, 0) for k in GEN_COUNTERS}
        t0 = time.perf_counter()
        start = time.time()
        out, error = None, None
        try:
            out = await coro
            return out
        except BaseException as exc:  # a timed-out or failed call is recorded too
            error = f"{type(exc).__name__}: {exc}"[:200]
            raise
        finally:
            dt = time.perf_counter() - t0
            gen = getattr(out, "completion_tokens", 0) if kind == "json" and out is not None else 0
            self.calls.append({"prompt_id": request.prompt_id, "kind": kind, "seconds": dt, "start": start,
                               "prompted": self.inner.tokens_prompted - p0,
                               "evaluated": self.inner.tokens_evaluated - e0, "generated": gen,
                               "sample": self._sample(), "error": error,
                               **{k: getattr(self.inner, k, 0) - v for k, v in x0.items()}})

    async def complete(self, request: Any) -> Any:
        return await self._timed("json", request, self.inner.complete(request))

    async def score_choices(self, request: Any, choices: Sequence[str]) -> Any:
        return await self._timed("choices", request, self.inner.score_choices(request, choices))


# ----------------------------------------------------------------------------- preparation

def prepare(args: argparse.Namespace) -> dict[str, Any]:
    from ragsight.judge._local import LocalProvider
    from ragsight.judge._model_files import DEFAULT_MODEL, MODELS, resolve_model

    spec = args.model or DEFAULT_MODEL
    out: dict[str, Any] = {}
    if args.cold_join and spec in MODELS:
        with tempfile.TemporaryDirectory(prefix="ragsight-join-") as tmp:
            t0 = time.perf_counter()
            resolve_model(spec, cache_dir=tmp, progress=False)
            out["cold_join_s"] = time.perf_counter() - t0
    t0 = time.perf_counter()
    path = resolve_model(spec, progress=False)
    out["resolve_s"] = time.perf_counter() - t0
    out["model_path"] = str(path)
    provider = LocalProvider(args.model)
    t0 = time.perf_counter()
    asyncio.run(provider.preflight())  # loads the GGUF into llama.cpp (once per process)
    out["load_s"] = time.perf_counter() - t0
    out["n_threads"] = provider.n_threads
    from ragsight.embed import make_embedder

    emb = make_embedder(None)
    t0 = time.perf_counter()

    async def warm() -> None:
        await emb.embed(["warm-up"], kind="query")

    asyncio.run(warm())
    out["embedder_load_s"] = time.perf_counter() - t0
    out["embedder"] = getattr(emb, "name", type(emb).__name__)
    out["provider"] = provider
    out["embedder_obj"] = emb
    return out


# ----------------------------------------------------------------------------- calibration

# Speeds of this model on these machines when quiet (docs/LOCAL_JUDGE facts, 2 threads):
QUIET_PROMPT_TPS = 68.0  # prompt processing, tokens/s (66-71 measured)
QUIET_GEN_TPS = 11.0  # generation under a JSON grammar, tokens/s (13.5-13.9 without)


def calibrate(provider: Any) -> dict[str, float]:
    """This machine's llama.cpp speed right now: prompt tokens/s over a fresh ~600-token prompt and
    generated tokens/s over 48 free tokens. Under load both drop; the ratio to the quiet speeds
    above says how much the timings of this run are inflated."""
    llm = provider._llm
    text = " ".join(f"Item {i} of the list is a short sentence about airline baggage rules." for i in range(45))
    toks = llm.tokenize(text.encode(), add_bos=True, special=False)
    llm.reset()
    t0 = time.perf_counter()
    llm.eval(toks)
    pp = len(toks) / (time.perf_counter() - t0)
    llm.reset()
    t0 = time.perf_counter()
    out = llm.create_completion(prompt="Write a long story about a pilot:", max_tokens=48, temperature=0.0,
                                top_k=1, seed=0)
    n_gen = int((out.get("usage") or {}).get("completion_tokens", 48))
    tg = n_gen / (time.perf_counter() - t0)
    llm.reset()
    return {"prompt_tps": pp, "gen_tps": tg, "load1": load1()}


# ----------------------------------------------------------------------------- main run

def main_run(args: argparse.Namespace, rows: list[dict[str, Any]], prep: dict[str, Any]) -> dict[str, Any]:
    import ragsight
    from ragsight.analyses import AnalysisSettings
    from ragsight.judge import Judge, RetryPolicy

    rec = Recorder(prep["provider"])
    # Under load a call can pass the default 120 s timeout; a timed-out call still runs to its end
    # in the worker thread and its retry is counted again, which distorts the token accounting.
    judge = Judge(rec, policy=RetryPolicy(call_timeout_s=args.timeout, step_deadline_s=3 * args.timeout))
    settings = AnalysisSettings(explain=args.explain, **getattr(args, "overrides", {}))
    ld = wait_for_quiet(args.wait_load, args.wait_max)
    cal0 = calibrate(prep["provider"])
    print(f"\ncalibration before: prompt {cal0['prompt_tps']:.1f} tok/s, generation {cal0['gen_tps']:.1f} tok/s "
          f"(quiet: {QUIET_PROMPT_TPS:.0f} and 13.5-13.9; load1 {cal0['load1']:.2f})")
    t0 = time.perf_counter()
    res = ragsight.evaluate(rows, CORE4, judge=judge, embedder=prep["embedder_obj"],
                            options=ragsight.RunOptions(cache=False, settings=settings))
    wall = time.perf_counter() - t0
    ld_end = load1()
    cal1 = calibrate(prep["provider"])
    print(f"calibration after: prompt {cal1['prompt_tps']:.1f} tok/s, generation {cal1['gen_tps']:.1f} tok/s "
          f"(load1 {cal1['load1']:.2f})")
    n = len(rows)
    print(f"\nmain run: {n} samples, explain={args.explain}, wall {wall:.1f} s = {wall / n:.1f} s/sample "
          f"(load1 {ld:.2f} at start, {ld_end:.2f} at end; target <= {TARGET_S:.0f} s/sample: "
          f"{'PASS' if wall / n <= TARGET_S else 'FAIL'})")
    per: dict[str, dict[str, float]] = defaultdict(lambda: defaultdict(float))
    for c in rec.calls:
        p = per[c["prompt_id"]]
        p["calls"] += 1
        for k in ("prompted", "evaluated", "generated", "seconds", *GEN_COUNTERS):
            p[k] += c.get(k, 0)
    tot = defaultdict(float)
    table = []
    for pid, p in sorted(per.items(), key=lambda kv: -kv[1]["seconds"]):
        table.append([pid, f"{p['calls'] / n:.2f}", f"{p['prompted'] / n:,.0f}", f"{p['evaluated'] / n:,.0f}",
                      f"{100 * (1 - p['evaluated'] / p['prompted']):.0f}%" if p["prompted"] else "-",
                      f"{p['generated'] / n:,.0f}", f"{p['decode_passes'] / n:,.0f}",
                      f"{p['tokens_drafted'] / n:,.0f}", f"{p['seconds'] / n:.1f}",
                      f"{p['seconds'] / p['calls']:.2f}"])
        for k, v in p.items():
            tot[k] += v
    errors = [c for c in rec.calls if c.get("error")]
    if errors:
        print(f"  {len(errors)} judge call(s) failed or timed out, e.g. {errors[0]['prompt_id']}: {errors[0]['error']}")
    table.append(["total", f"{tot['calls'] / n:.2f}", f"{tot['prompted'] / n:,.0f}", f"{tot['evaluated'] / n:,.0f}",
                  f"{100 * (1 - tot['evaluated'] / tot['prompted']):.0f}%" if tot["prompted"] else "-",
                  f"{tot['generated'] / n:,.0f}", f"{tot['decode_passes'] / n:,.0f}",
                  f"{tot['tokens_drafted'] / n:,.0f}", f"{tot['seconds'] / n:.1f}", "-"])
    print_table("per prompt id, per sample (prompt tokens sent vs evaluated after prefix reuse)",
                ["prompt id", "calls", "prompt tok sent", "prompt tok evaluated", "reused", "generated tok",
                 "gen passes", "draft tok", "judge s", "s/call"], table)
    # per sample
    by_sample: dict[str, list[dict[str, Any]]] = defaultdict(list)
    for c in rec.calls:
        by_sample[str(c["sample"])].append(c)
    srows = []
    for sid, cs in by_sample.items():
        span = max(c["start"] + c["seconds"] for c in cs) - min(c["start"] for c in cs)
        srows.append([sid, str(len(cs)), f"{sum(c['seconds'] for c in cs):.1f}", f"{span:.1f}"])
    print_table("per sample", ["sample", "judge calls", "judge s", "span s (first call to last)"], srows)
    if args.calls:
        print_table("each call in order (prompt tokens sent, kept from a cached prefix, evaluated)",
                    ["sample", "prompt id", "sent", "kept", "evaluated"],
                    [[str(c["sample"]), c["prompt_id"], str(c["prompted"]), str(c["prompted"] - c["evaluated"]),
                      str(c["evaluated"])] for c in rec.calls])
    outcomes: dict[str, int] = defaultdict(int)
    for s in res.samples:
        for k in res.metric_keys:
            outcomes[res.scores[s.id][k].outcome.value] += 1
    print("  outcomes:", dict(outcomes), " means:",
          {k: (round(res.summary[k].mean, 3) if res.summary[k].mean is not None else None) for k in res.metric_keys})
    print("  judge_stats:", {k: v for k, v in res.judge_stats.items() if k != "by_prompt"})
    judge_s = tot["seconds"]
    print(f"  time outside judge calls (embeddings, scheduling, store): {wall - judge_s:.1f} s in all")
    est = (tot["evaluated"] / QUIET_PROMPT_TPS + tot["generated"] / QUIET_GEN_TPS) / n
    print(f"  estimate for a quiet machine (tokens evaluated / {QUIET_PROMPT_TPS:.0f} tok/s + tokens generated / "
          f"{QUIET_GEN_TPS:.0f} tok/s, judge only): {est:.1f} s/sample -> target "
          f"{'met' if est <= TARGET_S else 'not met'} (an estimate, not a measurement)")
    # With prompt-lookup drafts a pass can yield several tokens: count passes (one decode step each,
    # at the generation speed) and the draft tokens checked in them (at the prompt speed).
    passes = tot["decode_passes"] or tot["generated"]
    est_p = ((tot["evaluated"] + tot["tokens_drafted"]) / QUIET_PROMPT_TPS + passes / QUIET_GEN_TPS) / n
    print(f"  estimate by passes ((tokens evaluated + draft tokens) / {QUIET_PROMPT_TPS:.0f} + generation passes / "
          f"{QUIET_GEN_TPS:.0f}): {est_p:.1f} s/sample -> target {'met' if est_p <= TARGET_S else 'not met'}; "
          f"{tot['drafts_accepted']:.0f} of {tot['tokens_drafted']:.0f} draft tokens kept")
    claims = {}
    for s in res.samples:
        f = res.scores[s.id]["faithfulness"].evidence
        r = res.scores[s.id]["context_recall"].evidence
        claims[s.id] = ([v.claim for v in f.claims], [v.claim for v in r.claims],
                        [v.supported for v in f.claims] + [v.supported for v in r.claims])
    means = {k: (round(res.summary[k].mean, 3) if res.summary[k].mean is not None else None)
             for k in res.metric_keys}
    return {"wall_s": wall, "s_per_sample": wall / n, "load_start": ld, "load_end": ld_end, "means": means,
            "calibration": [cal0, cal1], "quiet_estimate_s_per_sample": est,
            "quiet_estimate_by_passes_s_per_sample": est_p,
            "calls": [{k: c.get(k) for k in ("prompt_id", "sample", "prompted", "evaluated", "generated", "seconds",
                                             "error", *GEN_COUNTERS)} for c in rec.calls],
            "per_prompt": {k: dict(v) for k, v in per.items()}, "claims": claims,
            "outcomes": dict(outcomes), "judge_stats": res.judge_stats, "explain": args.explain, "n": n}


# ----------------------------------------------------------------------------- comparison

async def compare(args: argparse.Namespace, rows: list[dict[str, Any]], prep: dict[str, Any],
                  claims: dict[str, Any] | None) -> dict[str, Any]:
    from ragsight.analyses import SampleAnalyses, contexts_block, numbered
    from ragsight.analyses._types import lenient_bool as _bool
    from ragsight.analyses._types import verdict_items as _verdict_items
    from ragsight.judge import Judge
    from ragsight.prompts import fence, load_prompt
    from ragsight.sample import Dataset

    provider = prep["provider"]
    llm = provider._llm
    judge = Judge(provider)
    ds = Dataset.load(rows)
    results: dict[str, Any] = {}
    agg: dict[str, dict[str, float]] = defaultdict(lambda: defaultdict(float))
    n_claims_total = 0

    async def logprob_verdicts(cl: list[str], source: str, reset: bool) -> list[bool]:
        """One yes/no log-probability verdict per claim; with ``reset``, the KV cache reset
        before each."""
        vs: list[bool] = []
        for c in cl:
            if reset:
                llm.reset()
            a2 = await judge.choose(load_prompt("verify_claim"),
                                    {"source": source, "claim": fence("claim", c), "claim_text": c,
                                     "target": "contexts"}, use_cache=False)
            vs.append(a2.value["Yes"] >= 0.5)
        return vs

    for s in ds.samples:
        if claims and claims.get(s.id) and (claims[s.id][0] or claims[s.id][1]):
            resp, ref = claims[s.id][0], claims[s.id][1]
        else:
            ctx = SampleAnalyses(s, judge, None)
            resp = list((await ctx.response_claims()).claims)
            ref = list((await ctx.reference_claims()).claims)
        cl = resp + ref
        if not cl:
            print(f"  sample {s.id}: no claims, skipped")
            continue
        n_claims_total += len(cl)
        source = contexts_block(list(s.contexts or ()))
        wait_for_quiet(args.wait_load, args.wait_max)
        per: dict[str, dict[str, Any]] = {}

        def snap() -> tuple[int, int, float]:
            return provider.tokens_prompted, provider.tokens_evaluated, time.perf_counter()

        def done(per: dict[str, dict[str, Any]], name: str, start: tuple[int, int, float], gen: int,
                 verdicts: list[bool]) -> None:
            p1, e1, t1 = snap()
            per[name] = {"seconds": t1 - start[2], "prompted": p1 - start[0], "evaluated": e1 - start[1],
                         "generated": gen, "verdicts": verdicts, "load": load1()}

        def validator(count: int) -> Any:
            def validate(d: dict[str, Any]) -> list[bool]:
                return [_bool(it.get("supported"), "supported") for it in _verdict_items(d, count, "claim")]
            return validate

        # A: JSON per claim, KV reset
        st = snap()
        gen, vs = 0, []
        for c in cl:
            llm.reset()
            a = await judge.ask(load_prompt("verify_claims"),
                                {"source": source, "claims": numbered("claims", [c]), "claim_list": [c],
                                 "target": "contexts"}, validator(1), count=1, max_tokens=64 + 60, use_cache=False)
            gen += sum(x.completion_tokens for x in a.calls)
            vs.append(a.value[0])
        done(per, "A json/claim, no reuse", st, gen, vs)
        # B: log-prob per claim, KV reset
        st = snap()
        done(per, "B logprob/claim, no reuse", st, 0, await logprob_verdicts(cl, source, reset=True))
        # C: log-prob per claim, prefix reuse (ragsight); first call starts cold
        llm.reset()
        st = snap()
        done(per, "C logprob/claim, prefix reuse", st, 0, await logprob_verdicts(cl, source, reset=False))
        # D: one JSON call, all claims
        llm.reset()
        st = snap()
        a = await judge.ask(load_prompt("verify_claims"),
                            {"source": source, "claims": numbered("claims", cl), "claim_list": cl,
                             "target": "contexts"}, validator(len(cl)), count=len(cl), max_tokens=64 + 60 * len(cl),
                            use_cache=False)
        done(per, "D one JSON call, all claims", st, sum(x.completion_tokens for x in a.calls), list(a.value))
        ref_v = per["C logprob/claim, prefix reuse"]["verdicts"]
        for name, p in per.items():
            p["agree_with_C"] = sum(x == y for x, y in zip(p["verdicts"], ref_v))
            for k in ("seconds", "prompted", "evaluated", "generated", "agree_with_C"):
                agg[name][k] += p[k]
        results[s.id] = {"claims": len(cl), "methods": per}
        print(f"  sample {s.id}: {len(cl)} claims; " + "; ".join(f"{k.split()[0]} {v['seconds']:.1f} s"
                                                               for k, v in per.items()) + f"; load {load1():.2f}")
    k = len(ds.samples)
    n_claims_total = max(n_claims_total, 1)
    table = []
    base = agg["C logprob/claim, prefix reuse"]["seconds"] if "C logprob/claim, prefix reuse" in agg else 0.0
    for name, a in agg.items():
        table.append([name, f"{a['seconds'] / k:.1f}", f"{a['seconds'] / n_claims_total:.2f}",
                      f"{a['prompted'] / k:,.0f}", f"{a['evaluated'] / k:,.0f}", f"{a['generated'] / k:,.0f}",
                      f"{a['seconds'] / base:.1f} x" if base else "-",
                      f"{int(a['agree_with_C'])}/{n_claims_total}"])
    print_table(f"claim verdicts against the contexts, {k} samples, {n_claims_total} claims "
                f"(per sample unless stated)",
                ["method", "s/sample", "s/claim", "prompt tok sent", "prompt tok evaluated", "generated tok",
                 "time vs C", "same verdict as C"], table)
    return {"samples": results, "aggregate": {k2: dict(v) for k2, v in agg.items()}, "claims": n_claims_total}


BEFORE_29 = {"embedded_questions": 3}


def ab_runs(args: argparse.Namespace, rows: list[dict[str, Any]], prep: dict[str, Any]) -> dict[str, Any]:
    """``--ab K``: the main run with the earlier settings (three questions) and the shipped ones, alternating."""
    import statistics

    runs: list[dict[str, Any]] = []
    for i in range(2 * args.ab):
        side = "before" if i % 2 == 0 else "after"
        print(f"\n===== run {i + 1} of {2 * args.ab}: {side} =====")
        args.overrides = BEFORE_29 if side == "before" else ({"sentence_claims": True} if args.sentences else {})
        m = main_run(args, rows, prep)
        gen = sum(c["generated"] for c in m["calls"]) / m["n"]
        runs.append({"side": side, "s_per_sample": m["s_per_sample"], "calls": len(m["calls"]) / m["n"],
                     "generated": gen, "means": m["means"], "claims": m["claims"],
                     "calibration": m["calibration"]})
    table = [[str(i + 1), r["side"], f"{r['s_per_sample']:.1f}", f"{r['calls']:.1f}", f"{r['generated']:.0f}",
              f"{r['calibration'][0]['prompt_tps']:.0f}/{r['calibration'][0]['gen_tps']:.0f}",
              " ".join(f"{k[:12]}={v}" for k, v in r["means"].items())] for i, r in enumerate(runs)]
    print_table(f"before (three questions)/after, interleaved, {len(rows)} samples each",
                ["run", "side", "s/sample", "calls/sample", "generated tok/sample", "calib prompt/gen tok/s",
                 "means"], table)
    med = {side: statistics.median(r["s_per_sample"] for r in runs if r["side"] == side)
           for side in ("before", "after")}
    print(f"median s/sample: before {med['before']:.1f}, after {med['after']:.1f}, "
          f"ratio {med['after'] / med['before']:.2f} (goal <= 0.55)")
    return {"runs": runs, "median": med, "ratio": med["after"] / med["before"]}


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0],
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--n", type=int, default=5, help="samples for the main run (default 5; 0 skips it)")
    ap.add_argument("--explain", choices=["none", "unsupported"], default="unsupported")
    ap.add_argument("--compare", type=int, default=0, metavar="K",
                    help="also compare verdict methods on the first K samples (2-3 is plenty)")
    ap.add_argument("--data", type=Path, default=DEFAULT_DATA)
    ap.add_argument("--model", default=None,
                    help="embedded model (default: ragsight's default, qwen2.5-coder-1.5b); "
                         "smollm2-135m for a quick test of the plumbing")
    ap.add_argument("--cold-join", action="store_true",
                    help="also time joining the model parts into a temporary directory (writes 1.1 GB)")
    ap.add_argument("--wait-load", type=float, default=None, help="wait until load1 is below this")
    ap.add_argument("--wait-max", type=float, default=1800.0)
    ap.add_argument("--json", type=Path, default=None)
    ap.add_argument("--ab", type=int, default=0, metavar="K",
                    help="before (three questions)/after, interleaved: K runs of each, alternating (see above)")
    ap.add_argument("--sentences", action="store_true", help="with --ab: claims from sentences on the after side")
    ap.add_argument("--calls", action="store_true", help="also list each call of the main run with its prompt tokens")
    ap.add_argument("--timeout", type=float, default=900.0,
                    help="seconds per judge call in the main run (default 900: token counts stay "
                         "comparable on a busy machine)")
    args = ap.parse_args(argv)

    rows = [json.loads(x) for x in args.data.read_text("utf-8").splitlines() if x.strip()]
    import ragsight

    cpu = next((ln.split(":", 1)[1].strip() for ln in Path("/proc/cpuinfo").read_text().splitlines()
                if ln.startswith("model name")), "?")
    print(f"ragsight {ragsight.__version__} ({Path(ragsight.__file__).parent}); {os.cpu_count()} cores, {cpu}; "
          f"load1 {load1():.2f}")
    prep = prepare(args)
    print("preparation (not counted): " + ", ".join(
        f"{k} {v:.2f} s" for k, v in prep.items() if k.endswith("_s")) +
        f"; model {prep['model_path']}; n_threads {prep['n_threads']}; embedder {prep['embedder']}")
    out: dict[str, Any] = {"date": time.strftime("%Y-%m-%d %H:%M:%S"), "cpu": cpu, "cores": os.cpu_count(),
                           "prep": {k: v for k, v in prep.items() if not k.endswith("obj") and k != "provider"}}
    claims = None
    if args.ab > 0:
        out["ab"] = ab_runs(args, rows[: args.n], prep)
    elif args.n > 0:
        m = main_run(args, rows[: args.n], prep)
        claims = m.pop("claims")
        out["main"] = m
    if args.compare > 0:
        print(f"\ncomparison on {args.compare} samples (method in the docstring)")
        out["compare"] = asyncio.run(compare(args, rows[: args.compare], prep, claims))
    write_json(args.json, out, say=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
