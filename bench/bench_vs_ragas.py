"""ragsight against ragas 0.4.3 on the same work, in one run, on a local OpenAI-compatible mock.

    .venv/bin/python bench/bench_vs_ragas.py                      # core4 and seven, 0 and 300 ms
    .venv/bin/python bench/bench_vs_ragas.py --suite core4 --latencies 300 --repeat 3
    .venv/bin/python bench/bench_vs_ragas.py --broken-rate 0.2    # reliability: broken outputs
    .venv/bin/python bench/bench_vs_ragas.py --mock-url http://127.0.0.1:8765 --mock-log-dir DIR

This benchmark reads the shared kit in ``../shared/bench`` (beside the repository; ``--kit`` to
point elsewhere): the mock server ``mock_openai.py``, the data ``airline_20.jsonl`` and
``ragas_driver.py``. The product never reads it. ragas runs in its own virtual environment
(``--ragas-python``, default ``.venv-ragas/bin/python``; see bench/README.md for its set-up).

For each suite (``core4``: faithfulness, answer_relevancy, context_precision, context_recall;
``seven``: those and factual_correctness, noise_sensitivity, context_entity_recall) and each
latency (applied to chat completions and to embeddings alike), it

1. resets the mock (``POST /control``), runs ragsight in this process through
   ``ragsight.evaluate(..., judge=JudgeSpec("openai:gpt-4o-mini", base_url=<mock>/v1),
   embedder="openai:text-embedding-3-small", store=<fresh SQLite file>,
   options=RunOptions(cache=False))`` and reads ``GET /stats``;
2. runs ragas through ``ragas_driver.py`` in a subprocess (same metrics, same latency, its
   default 16 workers), which resets the mock and records its own ``/stats``.

Counts come from the mock (what the server saw), not from either tool. Claims, verdicts and judge
steps are read from the mock's request log (``<log dir>/<run>.jsonl``: every request with its
messages and the mock's output), the same way for both tools, so "claims per sample" shows whether
the two did the same work (the mock splits the decomposed text into sentences).

One correction is applied to ragsight by default (``--questions-shim off`` to see without it): the
mock answers every question-generation request with the same fixed question, so ragsight's
``generate_questions`` step, which asks for N *different* questions in one call (the spec requires
distinct questions), would reject the reply, re-ask twice and fail answer_relevancy. A real judge
writes distinct questions; the shim (a thin provider wrapper around ragsight's own OpenAIProvider)
makes repeated questions in that step's reply distinct before ragsight parses them. It changes no
request, token count or timing. ragas asks for n=3 choices; the langchain client gets one choice
back from the mock and ragas carries on with one question ("LLM returned 1 generations instead of
requested 3").

ragsight runs with its defaults otherwise, including its preflight ping (one extra call per run,
counted by the mock and included in the wall time). Before the timed runs, one untimed ragsight run
on one sample does the lazy imports and the first TLS set-up, as ragas_driver imports ragas and
builds its clients before starting its clock. Wall times are the median of ``--repeat`` runs; the
1-minute load average (``os.getloadavg``) is printed beside each, since other jobs share the CPU.

Other modes: ``--broken-rate P`` (reliability: extra calls, scores lost and scores silently
altered, against a clean run of the same tool), ``--depth-probe`` (one sample, each metric alone:
wall / latency = round trips made one after another), ``--variants`` (ragsight only: what its
defaults cost: preflight, samples in flight, embedding calls in flight).
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import re
import statistics
import subprocess
import sys
import tempfile
import time
from collections import Counter, defaultdict
from pathlib import Path
from typing import Any

from _call_log import Classifier, critical_path, schema_tokens
from _data import SEVEN, read_jsonl, write_json
from _mock import Mock, started_mock
from _providers import DistinctQuestions
from _ragas_report import SUITES, check_targets, fmt, median_run, report_suite
from _table import print_table

REPO = Path(__file__).resolve().parents[1]
DEFAULT_KIT = REPO.parent / "shared" / "bench"
DEFAULT_RAGAS_PY = REPO / ".venv-ragas" / "bin" / "python"


# Targets: suite -> list of (label, check(rs, rg) -> (ok, shown))
TARGETS_TEXT = {
    "core4": ["prompt tokens <= 0.5 x ragas", "wall @300ms <= 1/3 ragas"],
    "seven": ["<= 10 judge calls/sample", "<= 8,000 prompt tokens/sample", "wall @300ms <= 1/4 ragas"],
}


# ----------------------------------------------------------------------------- ragsight side

def run_ragsight(mock: Mock, rows: list[dict[str, Any]], metrics: list[Any], latency: float, run: str,
                 shim: bool, broken_rate: float = 0.0, broken_kind: str = "truncate",
                 seed: int = 0, variant: dict[str, Any] | None = None) -> dict[str, Any]:
    """One ragsight run. ``variant`` (the --variants experiment only) changes public knobs:
    ``preflight`` (bool), ``concurrency`` (samples in flight), ``embed_concurrency``."""
    import ragsight
    from ragsight.judge._openai import OpenAIProvider

    variant = variant or {}
    judge: Any = "openai:gpt-4o-mini"
    if shim:
        judge = DistinctQuestions(OpenAIProvider("gpt-4o-mini", base_url=mock.url + "/v1"))
    if "fixed_limit" in variant:  # the limit before the adaptive one: a fixed number of calls in flight
        from ragsight.judge import Judge

        inner = OpenAIProvider("gpt-4o-mini", base_url=mock.url + "/v1", max_concurrency=variant["fixed_limit"])
        judge = Judge(DistinctQuestions(inner) if shim else inner, adaptive=False)
    embedder: Any = "openai:text-embedding-3-small"
    if "embed_concurrency" in variant:
        from ragsight.embed._openai import OpenAIEmbedder

        embedder = OpenAIEmbedder("text-embedding-3-small", base_url=mock.url + "/v1",
                                  max_concurrency=variant["embed_concurrency"])
    extra = {k: variant[k] for k in ("preflight", "concurrency") if k in variant}  # run options
    with tempfile.TemporaryDirectory(prefix="ragsight-bench-") as tmp:
        store = os.path.join(tmp, "bench.db")
        mock.reset(run, latency, broken_rate, broken_kind, seed)
        load = os.getloadavg()[0]
        t0 = time.perf_counter()
        res = ragsight.evaluate(rows, metrics, embedder=embedder, store=store,
                                judge=ragsight.JudgeSpec(judge, base_url=mock.url + "/v1"),
                                options=ragsight.RunOptions(cache=False, **extra))
        wall = time.perf_counter() - t0
        stats = mock.get("/stats")
    outcomes: Counter[str] = Counter()
    values: dict[str, list[float | None]] = defaultdict(list)
    fail_reasons: Counter[str] = Counter()
    for s in res.samples:
        for k in res.metric_keys:
            sc = res.scores[s.id][k]
            outcomes[sc.outcome.value] += 1
            values[k].append(sc.value)
            if sc.outcome.value == "failed":
                fail_reasons[f"{k}: {sc.reason[:90]}"] += 1
    return {"tool": "ragsight", "run": run, "wall_s": wall, "load1": load, "server": stats,
            "judge_stats": res.judge_stats, "outcomes": dict(outcomes), "values": dict(values),
            "fail_reasons": dict(fail_reasons),
            "means": {k: res.summary[k].mean for k in res.metric_keys}}


# ----------------------------------------------------------------------------- ragas side

def run_ragas(mock: Mock, kit: Path, python: Path, metrics: list[str], latency: float, run: str,
              n: int, tiktoken_dir: str, broken_rate: float = 0.0, broken_kind: str = "truncate",
              seed: int = 0) -> dict[str, Any]:
    with tempfile.TemporaryDirectory(prefix="ragas-bench-") as tmp:
        env = dict(os.environ, MOCK_BASE=mock.url, RESULTS_DIR=tmp, RAGAS_DO_NOT_TRACK="true",
                   TIKTOKEN_CACHE_DIR=tiktoken_dir, OPENAI_API_KEY="sk-local-mock")
        cmd = [str(python), str(kit / "ragas_driver.py"), "--metrics", ",".join(metrics),
               "--latency", str(latency), "--embed-latency", str(latency), "--n", str(n),
               "--run", run, "--seed", str(seed)]
        if broken_rate:
            cmd += ["--broken-rate", str(broken_rate), "--broken-kind", broken_kind]
        load = os.getloadavg()[0]
        p = subprocess.run(cmd, env=env, capture_output=True, text=True, timeout=3600)
        out_path = Path(tmp) / f"{run}.json"
        if p.returncode != 0 or not out_path.is_file():
            raise RuntimeError(f"ragas_driver failed ({p.returncode}):\n{p.stderr[-3000:]}")
        out = json.loads(out_path.read_text())
    if out.get("error"):
        raise RuntimeError(f"ragas failed: {out['error']}")
    nan = sum(v["nan"] for v in out.get("scores", {}).values())
    total = sum(len(v["values"]) for v in out.get("scores", {}).values())
    return {"tool": "ragas", "run": run, "wall_s": out["wall_s"], "load1": load, "server": out["server"],
            "nan": nan, "n_scores": total,
            "values": {k: v["values"] for k, v in out.get("scores", {}).items()},
            "means": {k: v["mean"] for k, v in out.get("scores", {}).items()}}


# ----------------------------------------------------------------------------- printing
def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0],
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--suite", choices=["core4", "seven", "both"], default="both")
    ap.add_argument("--latencies", default="0,300", help="ms, for chat and embeddings (default 0,300)")
    ap.add_argument("--n", type=int, default=20, help="samples of airline_20.jsonl (default 20)")
    ap.add_argument("--repeat", type=int, default=1, help="timed runs per tool and setting; median wall")
    ap.add_argument("--kit", type=Path, default=DEFAULT_KIT)
    ap.add_argument("--ragas-python", type=Path, default=DEFAULT_RAGAS_PY)
    ap.add_argument("--mock-url", default=None, help="use a running mock instead of starting one")
    ap.add_argument("--mock-log-dir", type=Path, default=None,
                    help="with --mock-url: its MOCK_LOG_DIR, to count claims and verdicts")
    ap.add_argument("--tiktoken-cache", default=os.environ.get("TIKTOKEN_CACHE_DIR"))
    ap.add_argument("--questions-shim", choices=["on", "off"], default="on")
    ap.add_argument("--broken-rate", type=float, default=0.0,
                    help="reliability mode: share of mock outputs broken (e.g. 0.2), at 0 ms")
    ap.add_argument("--broken-kinds", default="truncate,refusal")
    ap.add_argument("--seeds", default="0", help="reliability mode: mock seeds, comma-separated")
    ap.add_argument("--no-ragas", action="store_true", help="ragsight only (no ratios, no targets)")
    ap.add_argument("--variants", action="store_true",
                    help="ragsight only: wall time with public knobs changed (no preflight, all samples "
                         "in flight, 16 embedding calls in flight), to measure what the defaults cost")
    ap.add_argument("--depth-probe", action="store_true",
                    help="one sample at a time, each metric alone and each suite: sequential round trips "
                         "(wall / latency), ragsight without its preflight ping")
    ap.add_argument("--capacity", default=None, metavar="N,N",
                    help="ragsight only: against the mock behind limited_mock.py (HTTP 429 beyond N calls in "
                         "flight), for each N: the adaptive default against a fixed limit (--fixed-limit)")
    ap.add_argument("--fixed-limit", type=int, default=16,
                    help="with --capacity: the fixed limit to compare with (default 16, the limit before the adaptive one)")
    ap.add_argument("--json", type=Path, default=None, help="write all figures here")
    args = ap.parse_args(argv)

    kit = args.kit.resolve()
    data = kit / "airline_20.jsonl"
    rows = read_jsonl(data)[: args.n]
    n = len(rows)
    tk = args.tiktoken_cache or str(kit / "tiktoken_cache")
    suites = ["core4", "seven"] if args.suite == "both" else [args.suite]
    latencies = [float(x) for x in args.latencies.split(",") if x.strip()]
    shim = args.questions_shim == "on"
    stamp = time.strftime("%H%M%S")

    # import what evaluate() would import lazily, as ragas_driver imports ragas before timing
    import ragsight
    import ragsight._stats
    import ragsight.embed._openai
    import ragsight.judge._openai

    cpu = next((ln.split(":", 1)[1].strip() for ln in Path("/proc/cpuinfo").read_text().splitlines()
                if ln.startswith("model name")), "?")
    try:
        rev = subprocess.run(["git", "-C", str(Path(ragsight.__file__).parent), "describe", "--always", "--dirty"],
                             capture_output=True, text=True, timeout=10).stdout.strip() or "?"
    except OSError:
        rev = "?"
    try:
        rg_ver = subprocess.run([str(args.ragas_python), "-c", "import ragas; print(ragas.__version__)"],
                                capture_output=True, text=True, timeout=120,
                                env=dict(os.environ, RAGAS_DO_NOT_TRACK="true")).stdout.strip() or "?"
    except OSError:
        rg_ver = "?"
    print(f"ragsight {ragsight.__version__} ({Path(ragsight.__file__).parent}, git {rev}) vs ragas {rg_ver} "
          f"(driver: {kit / 'ragas_driver.py'}), {n} samples; {os.cpu_count()} cores, {cpu}; "
          f"load now {os.getloadavg()[0]:.2f}")
    cls = Classifier(rows)
    results: dict[str, Any] = {"n": n, "date": time.strftime("%Y-%m-%d %H:%M:%S"), "shim": shim,
                               "cpu": cpu, "cores": os.cpu_count(), "ragsight_git": rev, "ragas": rg_ver,
                               "suites": {}, "broken": {}}

    if args.capacity:
        return capacity(args, kit, rows, suites, latencies, shim, tk, stamp, results)
    with contextlib.ExitStack() as stack:
        if args.mock_url:
            mock = Mock(args.mock_url, args.mock_log_dir)
        else:
            log_dir = Path(stack.enter_context(tempfile.TemporaryDirectory(prefix="mock-logs-")))
            mock = stack.enter_context(started_mock(kit, args.ragas_python, log_dir, tk))
        # one untimed run first, so that ragsight's lazy imports and first TLS-context set-up are
        # done before timing, as ragas_driver imports ragas and builds its clients before its clock
        run_ragsight(mock, rows[:1], ["context_precision", "answer_relevancy"], 0, f"warmup-{stamp}", shim)
        if args.broken_rate > 0:
            return reliability(args, mock, kit, rows, suites, shim, tk, stamp, cls, results)
        if args.variants:
            return variants(args, mock, rows, suites, latencies, shim, stamp, results)
        if args.depth_probe:
            return depth_probe(args, mock, kit, rows, suites, latencies, shim, tk, stamp, cls, results)
        for suite in suites:
            metrics = SUITES[suite]
            per_lat: dict[float, dict[str, Any]] = {}
            for lat in latencies:
                rs_runs, rg_runs = [], []
                for rep in range(args.repeat):
                    name = f"{stamp}-{suite}-{int(lat)}-r{rep}"
                    rs_runs.append(run_ragsight(mock, rows, metrics, lat, "rs-" + name, shim))
                    if not args.no_ragas:
                        rg_runs.append(run_ragas(mock, kit, args.ragas_python, metrics, lat, "rg-" + name,
                                                 n, tk))
                rs = median_run(rs_runs)
                rg = median_run(rg_runs) if rg_runs else None
                for r in (rs, rg):
                    if r is None:
                        continue
                    log = mock.log(r["run"])
                    if log is not None:
                        summ = cls.summarise(log, n)
                        st = schema_tokens(log, args.ragas_python, tk)
                        summ["schema_tokens_per_sample"] = st / n if st is not None else None
                        cp = critical_path(summ.pop("_per_sample"), lat / 1000)
                        summ["critical_path"] = cp
                        r["log"] = summ
                per_lat[lat] = {"ragsight": rs, "ragas": rg}
            results["suites"][suite] = per_lat
            report_suite(suite, per_lat, n)
    check_targets(results, n)
    write_json(args.json, results, say=True)
    return 0


# ----------------------------------------------------------------------------- depth probe

def depth_probe(args: argparse.Namespace, mock: Mock, kit: Path, rows: list[dict[str, Any]], suites: list[str],
                latencies: list[float], shim: bool, tk: str, stamp: str, cls: Classifier,
                results: dict[str, Any]) -> int:
    """With one sample nothing queues, so wall / latency is the number of round trips made one
    after another (the dependency depth plus any needless waits)."""
    lat = max(latencies)
    one = rows[:1]
    cases: list[tuple[str, list[Any], bool]] = [(m, [m], True) for m in SEVEN] + [(s, SUITES[s], True) for s in suites]
    cases += [(f"{m} [analyses together, experiment]", prefetching([m]), False)
              for m in ("factual_correctness", "noise_sensitivity", "context_entity_recall")]
    if "seven" in suites:
        cases.append(("seven [analyses together, experiment]", prefetching(SEVEN), False))
    table = []
    results["depth"] = {}
    for name, metrics, with_ragas in cases:
        tag = re.sub(r"[^a-z0-9]+", "", name)[:24]
        rs = run_ragsight(mock, one, metrics, lat, f"rd-{stamp}-{tag}", shim, variant={"preflight": False})
        row = [name, f"{rs['wall_s']:.2f}", f"{rs['wall_s'] * 1000 / lat:.1f}", str(rs["server"]["chat_calls"]),
               str(rs["server"]["embed_calls"])]
        entry = {"ragsight": {"wall_s": rs["wall_s"], "server": rs["server"]}}
        if not args.no_ragas and not with_ragas:
            row += ["-", "-", "-", "-"]
        elif not args.no_ragas:
            rg = run_ragas(mock, kit, args.ragas_python, metrics, lat, f"gd-{stamp}-{tag}", 1, tk)
            row += [f"{rg['wall_s']:.2f}", f"{rg['wall_s'] * 1000 / lat:.1f}", str(rg["server"]["chat_calls"]),
                    str(rg["server"]["embed_calls"])]
            entry["ragas"] = {"wall_s": rg["wall_s"], "server": rg["server"]}
        table.append(row)
        results["depth"][name] = entry
    header = ["metrics", "ragsight s", "rs round trips", "rs calls", "rs emb"]
    if not args.no_ragas:
        header += ["ragas s", "rg round trips", "rg calls", "rg emb"]
    print_table(f"one sample at {int(lat)} ms (chat and embeddings): wall and wall / latency "
                f"(ragsight with preflight=False)", header, table)
    write_json(args.json, results)
    return 0


# ----------------------------------------------------------------------------- variants mode

def prefetching(names: list[str]) -> list[Any]:
    """Bench-only experiment, not a change to the library: the same metrics, except that
    factual_correctness, noise_sensitivity and context_entity_recall start all the shared
    analyses they need at once before computing (the shipped ones await them one after another;
    the analyses are memoised per sample, so the result and the calls are the same)."""
    import asyncio

    from ragsight.metrics.context_entity_recall import ContextEntityRecall
    from ragsight.metrics.factual_correctness import FactualCorrectness
    from ragsight.metrics.noise_sensitivity import NoiseSensitivity

    class FC(FactualCorrectness):
        async def compute(self, ctx: Any) -> Any:
            await asyncio.gather(ctx.response_vs_reference(), ctx.reference_vs_response(),
                                 return_exceptions=True)
            return await super().compute(ctx)

    class NS(NoiseSensitivity):
        async def compute(self, ctx: Any) -> Any:
            await asyncio.gather(ctx.response_claims(), ctx.reference_claims(), ctx.response_vs_contexts(),
                                 ctx.response_vs_reference(), return_exceptions=True)
            return await super().compute(ctx)

    class CER(ContextEntityRecall):
        async def compute(self, ctx: Any) -> Any:
            await asyncio.gather(ctx.entities("reference"), ctx.entities("contexts"), return_exceptions=True)
            return await super().compute(ctx)

    swap = {"factual_correctness": FC, "noise_sensitivity": NS, "context_entity_recall": CER}
    return [swap[m]() if m in swap else m for m in names]


def variants(args: argparse.Namespace, mock: Mock, rows: list[dict[str, Any]], suites: list[str],
             latencies: list[float], shim: bool, stamp: str, results: dict[str, Any]) -> int:
    """Wall time of ragsight with its defaults against the same run with one public knob changed,
    interleaved (default, A, B, ..., default, A, B, ...) so that load drifts hit all alike."""
    n = len(rows)
    var = {
        "default": {},
        "preflight=False": {"preflight": False},
        f"concurrency={n} (all samples)": {"concurrency": n},
        "embedder max_concurrency=16": {"embed_concurrency": 16},
        "all three": {"preflight": False, "concurrency": n, "embed_concurrency": 16},
    }
    if "seven" in suites:
        var["analyses started together (experiment)"] = {"prefetch": True}
        var["all three + analyses together"] = {"preflight": False, "concurrency": n, "embed_concurrency": 16,
                                                "prefetch": True}
    results["variants"] = {}
    for suite in suites:
        for lat in latencies:
            walls: dict[str, list[float]] = defaultdict(list)
            loads: dict[str, list[float]] = defaultdict(list)
            calls: dict[str, int] = {}
            for rep in range(args.repeat):
                for name, v in var.items():
                    if v.get("prefetch") and suite != "seven":
                        continue
                    tag = re.sub(r"[^a-z0-9]+", "", name.lower())[:16]
                    mets = prefetching(SUITES[suite]) if v.get("prefetch") else SUITES[suite]
                    r = run_ragsight(mock, rows, mets, lat, f"rv-{stamp}-{suite}-{int(lat)}-{tag}-{rep}",
                                     shim, variant=v)
                    walls[name].append(r["wall_s"])
                    loads[name].append(r["load1"])
                    calls[name] = r["server"]["chat_calls"]
            base = statistics.median(walls["default"])
            rows_out = []
            for name in var:
                if name not in walls:
                    continue
                med = statistics.median(walls[name])
                rows_out.append([name, f"{med:.2f} s", f"{med - base:+.2f} s ({100 * (med / base - 1):+.0f}%)",
                                 str([round(w, 2) for w in walls[name]]), str([round(x, 1) for x in loads[name]]),
                                 str(calls[name])])
            print_table(f"ragsight {suite} @ {int(lat)} ms: wall time by variant (median of {args.repeat})",
                        ["variant", "median wall", "vs default", "runs", "load1 at start", "chat calls"], rows_out)
            results["variants"][f"{suite}@{int(lat)}"] = {k: {"walls": walls[k], "loads": loads[k]} for k in walls}
    write_json(args.json, results)
    return 0


# ----------------------------------------------------------------------------- capacity mode

def capacity(args: argparse.Namespace, kit: Path, rows: list[dict[str, Any]], suites: list[str],
             latencies: list[float], shim: bool, tk: str, stamp: str, results: dict[str, Any]) -> int:
    """Against a mock that refuses (HTTP 429) any call beyond N in flight: ragsight's defaults (the
    adaptive limit) and a fixed limit, interleaved, median of --repeat. Targets: with
    N = 64 the seven metrics in <= 1.5 s at 300 ms; with N = 8 no more 429s than the fixed limit."""
    caps = [int(x) for x in args.capacity.split(",") if x.strip()]
    results["capacity"] = {}
    targets: list[tuple[str, bool, str]] = []
    for cap in caps:
        with tempfile.TemporaryDirectory(prefix="mock-logs-") as log_dir, \
                started_mock(kit, args.ragas_python, Path(log_dir), tk, capacity=cap) as mock:
            run_ragsight(mock, rows[:1], ["context_precision", "answer_relevancy"], 0, f"warmup-{stamp}", shim)
            for suite in suites:
                for lat in latencies:
                    out: dict[str, list[dict[str, Any]]] = {"adaptive (default)": [], f"fixed {args.fixed_limit}": []}
                    for rep in range(args.repeat):
                        for name in out:
                            v = {} if name.startswith("adaptive") else {"fixed_limit": args.fixed_limit}
                            r = run_ragsight(mock, rows, SUITES[suite], lat,
                                             f"cap{cap}-{stamp}-{suite}-{int(lat)}-{name[:5]}-{rep}", shim, variant=v)
                            out[name].append(r)
                    table = []
                    summary: dict[str, Any] = {}
                    for name, runs in out.items():
                        walls = [r["wall_s"] for r in runs]
                        refused = [r["server"].get("refused", 0) for r in runs]
                        conc = runs[-1]["judge_stats"].get("concurrency", {})
                        failed = sum(r["outcomes"].get("failed", 0) for r in runs)
                        summary[name] = {"walls": walls, "refused": refused, "concurrency": conc,
                                         "peak": [r["server"]["max_inflight"] for r in runs],
                                         "failed": failed, "loads": [r["load1"] for r in runs]}
                        table.append([name, f"{statistics.median(walls):.2f} s", str([round(w, 2) for w in walls]),
                                      f"{statistics.median(refused):.0f}", str(refused),
                                      str([r["server"]["max_inflight"] for r in runs]),
                                      f"{conc.get('min_limit', '-')}-{conc.get('max_limit', '-')}" if conc else "-",
                                      str(failed), str([round(r["load1"], 1) for r in runs])])
                    print_table(f"{suite} @ {int(lat)} ms against a mock that takes {cap} calls at once "
                                f"({len(rows)} samples, median of {args.repeat})",
                                ["judge limit", "median wall", "runs", "median 429s", "429s per run",
                                 "peak in flight", "limit range (last run)", "failed scores", "load1"], table)
                    results["capacity"][f"{cap}/{suite}@{int(lat)}"] = summary
                    ad, fx = summary["adaptive (default)"], summary[f"fixed {args.fixed_limit}"]
                    if cap >= 64 and suite == "seven" and lat == 300:
                        w = statistics.median(ad["walls"])
                        targets.append((f"N={cap}: seven metrics @300 ms <= 1.5 s", w <= 1.5, f"{w:.2f} s"))
                    if cap <= 8:
                        a, f = statistics.median(ad["refused"]), statistics.median(fx["refused"])
                        targets.append((f"N={cap}: 429s <= fixed {args.fixed_limit} ({suite} @{int(lat)} ms)",
                                        a <= f, f"{a:.0f} vs {f:.0f}"))
    print("\ntargets (adaptive limit)")
    for label, ok, shown in targets:
        print(f"  {'PASS' if ok else 'FAIL'}  {label}: {shown}")
    results["capacity_targets"] = [{"target": t, "pass": ok, "value": v} for t, ok, v in targets]
    write_json(args.json, results)
    return 0


# ----------------------------------------------------------------------------- reliability mode

def changed(vals: list[Any], clean: list[Any]) -> int:
    """Scores present in both runs whose value differs (silently altered by a broken output)."""
    k = 0
    for a, b in zip(vals, clean):
        if a is None or b is None or (isinstance(a, float) and a != a) or (isinstance(b, float) and b != b):
            continue
        if abs(float(a) - float(b)) > 1e-9:
            k += 1
    return k


def reliability(args: argparse.Namespace, mock: Mock, kit: Path, rows: list[dict[str, Any]],
                suites: list[str], shim: bool, tk: str, stamp: str, cls: Classifier,
                results: dict[str, Any]) -> int:
    n = len(rows)
    kinds = [k for k in args.broken_kinds.split(",") if k]
    seeds = [int(s) for s in args.seeds.split(",") if s.strip()]
    print(f"\nreliability: {args.broken_rate:.0%} of the mock's outputs broken, kinds {kinds}, seeds {seeds}, "
          "latency 0 ms; each compared with a clean run of the same tool")
    table = []
    for suite in suites:
        metrics = SUITES[suite]
        clean_rs = run_ragsight(mock, rows, metrics, 0, f"rs-{stamp}-{suite}-clean", shim)
        clean_rg = None if args.no_ragas else run_ragas(mock, kit, args.ragas_python, metrics, 0,
                                                        f"rg-{stamp}-{suite}-clean", n, tk)
        n_scores = n * len(metrics)
        for kind in kinds:
            for seed in seeds:
                tag = f"{stamp}-{suite}-{kind}-s{seed}"
                rs = run_ragsight(mock, rows, metrics, 0, "rs-" + tag, shim, args.broken_rate, kind, seed)
                extra_rs = (rs["server"]["chat_calls"] - clean_rs["server"]["chat_calls"]) / n
                failed = rs["outcomes"].get("failed", 0)
                alt_rs = sum(changed(rs["values"][k], clean_rs["values"][k]) for k in rs["values"])
                row = [suite, kind, str(seed), "ragsight", fmt(extra_rs),
                       f"{100 * (rs['server']['chat_calls'] / clean_rs['server']['chat_calls'] - 1):.0f}%",
                       str(rs["server"]["broken"]),
                       f"{failed} failed ({100 * failed / n_scores:.1f}%)", str(alt_rs)]
                table.append(row)
                entry = {"ragsight": rs, "ragsight_clean_calls": clean_rs["server"]["chat_calls"]}
                if clean_rg is not None:
                    rg = run_ragas(mock, kit, args.ragas_python, metrics, 0, "rg-" + tag, n, tk,
                                   args.broken_rate, kind, seed)
                    extra_rg = (rg["server"]["chat_calls"] - clean_rg["server"]["chat_calls"]) / n
                    alt_rg = sum(changed(rg["values"][k], clean_rg["values"][k]) for k in rg["values"])
                    table.append([suite, kind, str(seed), "ragas", fmt(extra_rg),
                                  f"{100 * (rg['server']['chat_calls'] / clean_rg['server']['chat_calls'] - 1):.0f}%",
                                  str(rg["server"]["broken"]),
                                  f"{rg['nan']} NaN ({100 * rg['nan'] / rg['n_scores']:.1f}%)", str(alt_rg)])
                    entry["ragas"] = rg
                    entry["ragas_clean_calls"] = clean_rg["server"]["chat_calls"]
                results["broken"][tag] = entry
                if rs["fail_reasons"]:
                    print(f"  ragsight failures ({tag}):", rs["fail_reasons"])
    print_table(f"broken outputs ({args.broken_rate:.0%}), {n} samples; 'altered' = scores present in both runs "
                "whose value differs from the clean run (silently wrong)",
                ["suite", "kind", "seed", "tool", "extra calls/sample", "extra calls", "broken outputs",
                 "scores lost", "altered"], table)
    print("  (scores per run: core4 = 80, seven = 140)")
    write_json(args.json, results, say=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
