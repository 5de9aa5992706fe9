"""The command line. Thin: parses, calls the library, prints.

Exit status: 0 when the command completed (a run with counted failures completed too), 2 when
the input or configuration is unusable, 130 when interrupted (the partial run is saved; continue
it with --resume).
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import sys
import warnings
from collections.abc import Sequence
from importlib import resources
from typing import Any

from rich.console import Console
from rich.table import Table
from rich.text import Text

from .. import __version__
from .._evaluate import aevaluate, new_run_id
from .._repeats import evaluate_repeats
from ..analyses import AnalysisSettings, describe_signals
from ..engine import Progress
from ..errors import RagsightError
from ..judge import RetryPolicy
from ..report import fmt as _fmt
from ..report import print_repeats
from ..result import EvaluationResult, load_result
from ..store import FORMATS, Store, export_run
from . import _judges, _report, _testset
from ._common import EXIT_INTERRUPTED, EXIT_OK, EXIT_USAGE, err, out
from ._common import add_store as _add_store

__all__ = ["main"]


EVALUATE_EPILOG = """examples:
  ragsight evaluate --example
  ragsight evaluate data.jsonl --metrics faithfulness,context_recall
  ragsight evaluate data.jsonl --judge openai:gpt-4o-mini --embedder openai:text-embedding-3-small
  ragsight evaluate data.csv --judge openai:qwen2.5-7b --base-url http://localhost:8000/v1 --out results.jsonl
  ragsight evaluate data.jsonl --metrics retrieval,ir --store runs.db --metadata chunk_size=512 --metadata top_k=5
  ragsight evaluate --resume last
metrics: names (faithfulness, answer_relevancy, context_precision, context_recall, ...), groups
(retrieval, generation, reference-free, lexical, ir) or all; parameters in brackets, e.g.
"factual_correctness(mode=recall)". Default: the core metrics the data's fields allow.
The API key is read from OPENAI_API_KEY."""


def _parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(
        prog="ragsight",
        description="Evaluate retrieval-augmented generation, with the evidence behind every score.",
        epilog="Run 'ragsight COMMAND --help' for a command's options and examples.",
    )
    p.add_argument("--version", action="version", version=f"ragsight {__version__}")
    sub = p.add_subparsers(dest="command", metavar="COMMAND")

    ev = sub.add_parser("evaluate", help="evaluate a data set", epilog=EVALUATE_EPILOG,
                        formatter_class=argparse.RawDescriptionHelpFormatter)
    ev.add_argument("data", nargs="?", help="data file: .jsonl, .json, .csv or .parquet")
    ev.add_argument("--example", action="store_true", help="evaluate the bundled example data set")
    ev.add_argument("--metrics", help="comma-separated metric names or groups (default: core metrics)")
    ev.add_argument("--judge", help="openai:MODEL, local (default), local:qwen2.5-coder-0.5b or local:PATH.gguf")
    ev.add_argument("--base-url", help="OpenAI-compatible base URL for the judge (and the embedder)")
    ev.add_argument("--embedder", help="openai:MODEL, local (default), local:e5-small or local:minilm")
    ev.add_argument("--embedder-base-url", help="base URL for the embedder, if not --base-url")
    _add_store(ev)
    ev.add_argument("--out", help="write per-sample results to this JSONL file")
    ev.add_argument("--no-cache", action="store_true", help="do not read or write the judge-call cache")
    ev.add_argument("--resume", metavar="RUN", help="continue an interrupted run (run id or 'last')")
    ev.add_argument("--concurrency", type=int, help="samples in flight (default: 16 remote, 1 embedded)")
    ev.add_argument("--backend", choices=["local", "ray"], default="local",
                    help="where samples run: this process (default) or a Ray cluster (pip install 'ragsight[ray]')")
    ev.add_argument("--ray-address", metavar="ADDRESS",
                    help="Ray cluster for --backend ray: auto or HOST:PORT (default: $RAY_ADDRESS, else one "
                         "started with 'ray start' here, else a new local one); see docs/scale.md")
    ev.add_argument("--metadata", action="append", default=[], metavar="KEY=VALUE",
                    help="run metadata (configuration), e.g. chunk_size=512; repeatable")
    ev.add_argument("--judge-concurrency", type=int, metavar="N",
                    help="calls in flight to a remote judge, for the whole run or cluster (default 16)")
    ev.add_argument("--timeout", type=float, default=120.0, help="seconds per judge call (default 120)")
    ev.add_argument("--max-retries", type=int, default=3, help="retries per judge call (default 3)")
    ev.add_argument("--explain", choices=["none", "unsupported", "all"], default="unsupported",
                    help="embedded judge: which verdicts get a written reason (default: unsupported)")
    ev.add_argument("--threshold", type=float, default=0.5,
                    help="embedded judge: P(Yes) at which a claim counts as supported (default 0.5)")
    ev.add_argument("--repeats", type=int, default=1, metavar="N",
                    help="evaluate N times with different judge seeds (no cache) and report the "
                         "run-to-run spread of each metric")
    ev.add_argument("--temperature", type=float,
                    help="judge sampling temperature for --repeats (default 0: only the seed varies)")
    ev.add_argument("--quiet", action="store_true", help="no progress bar")
    ev.set_defaults(func=cmd_evaluate)

    sh = sub.add_parser("show", help="show a run's summary, or a sample's evidence trail",
                        epilog="examples:\n  ragsight show last\n  ragsight show last --sample ex-2\n"
                               "  ragsight show 20260101-120000-ab12cd --sample ex-2 --calls",
                        formatter_class=argparse.RawDescriptionHelpFormatter)
    sh.add_argument("run", help="run id or 'last'")
    sh.add_argument("--sample", help="sample id: print its evidence trail")
    sh.add_argument("--metric", help="only this metric")
    sh.add_argument("--calls", action="store_true", help="also print the judge calls (prompts and raw outputs)")
    _add_store(sh)
    sh.set_defaults(func=cmd_show)

    rs = sub.add_parser("runs", help="list the runs in the store")
    _add_store(rs)
    rs.set_defaults(func=cmd_runs)

    ex = sub.add_parser("export", help="export a run's per-sample results",
                        epilog="examples:\n  ragsight export last --format csv --out results.csv",
                        formatter_class=argparse.RawDescriptionHelpFormatter)
    ex.add_argument("run", help="run id or 'last'")
    ex.add_argument("--format", choices=FORMATS, default="jsonl")
    ex.add_argument("--out", help="output file (default: <run id>.<format>)")
    _add_store(ex)
    ex.set_defaults(func=cmd_export)

    _report.register(sub)
    _testset.register(sub)
    _judges.register(sub)
    return p


# ---- evaluate ---------------------------------------------------------------------------------


def _metadata(pairs: Sequence[str]) -> dict[str, Any]:
    meta: dict[str, Any] = {}
    for pair in pairs:
        if "=" not in pair:
            raise RagsightError(f"--metadata '{pair}' needs the form KEY=VALUE, e.g. chunk_size=512")
        k, _, v = pair.partition("=")
        try:
            meta[k.strip()] = json.loads(v)
        except json.JSONDecodeError:
            meta[k.strip()] = v
    return meta


def example_path() -> str:
    return str(resources.files("ragsight").joinpath("data").joinpath("example.jsonl"))


def cmd_evaluate(args: argparse.Namespace) -> int:
    if args.example:
        data = example_path()
    elif args.data:
        data = args.data
    elif not args.resume:
        err.print("error: give a data file, --example, or --resume RUN (see 'ragsight evaluate --help')",
                  soft_wrap=True, markup=False)
        return EXIT_USAGE
    else:
        data = None
    for flag in ("concurrency", "judge_concurrency"):
        value = getattr(args, flag)
        if value is not None and value < 1:
            raise RagsightError(f"--{flag.replace('_', '-')} must be at least 1, not {value}")
    if args.repeats < 1:
        raise RagsightError(f"--repeats must be at least 1, not {args.repeats}")
    if args.repeats > 1:
        return _evaluate_repeats(args, data)
    store = Store(args.store)
    policy = RetryPolicy(max_attempts=args.max_retries + 1, call_timeout_s=args.timeout,
                         step_deadline_s=max(300.0, args.timeout * 3))
    settings = AnalysisSettings(explain=args.explain, support_threshold=args.threshold)
    run_id = args.resume or new_run_id()
    progress = Progress()
    bar = _ProgressBar(progress, enabled=not args.quiet and err.is_terminal)

    def notice(text: str) -> None:
        err.print(text, soft_wrap=True, markup=False)

    with warnings.catch_warnings():
        warnings.simplefilter("default")
        warnings.showwarning = _show_warning
        try:
            with bar:
                result = asyncio.run(aevaluate(
                    data, args.metrics, judge=args.judge, embedder=args.embedder, store=store,
                    cache=not args.no_cache, resume=args.resume, concurrency=args.concurrency,
                    settings=settings, policy=policy, metadata=_metadata(args.metadata),
                    base_url=args.base_url, embedder_base_url=args.embedder_base_url,
                    progress=progress, notice=notice, run_id=None if args.resume else run_id,
                    backend=args.backend, ray_address=args.ray_address,
                    judge_concurrency=args.judge_concurrency,
                ))
        except KeyboardInterrupt:
            rid = progress.run_id or run_id
            err.print(f"\ninterrupted. Finished samples are saved in {args.store}; continue with:\n"
                      f"  ragsight evaluate --resume {rid} --store {args.store}")
            return EXIT_INTERRUPTED
        finally:
            store.close()
    print_summary(result)
    if args.out:
        result.write_jsonl(args.out)
        out.print(f"Per-sample results: {args.out}")
    out.print(f"Run {result.run_id} saved in {args.store}. Evidence: "
              f"ragsight show {result.run_id} --sample {result.samples[0].id} --store {args.store}")
    return EXIT_OK


def _evaluate_repeats(args: argparse.Namespace, data: Any) -> int:

    if args.resume:
        raise RagsightError("--repeats cannot be combined with --resume")
    with Store(args.store) as store:
        report = asyncio.run(evaluate_repeats(
            data, args.repeats, temperature=args.temperature, metrics=args.metrics, judge=args.judge,
            embedder=args.embedder, store=store, base_url=args.base_url,
            embedder_base_url=args.embedder_base_url, metadata=_metadata(args.metadata),
            concurrency=args.concurrency,
        ))
    print_repeats(report, out)
    return EXIT_OK


def _open_existing(path: str) -> Store:
    if path != ":memory:" and not os.path.exists(path):
        raise RagsightError(f"no store at {path}; give the --store file that 'ragsight evaluate' wrote")
    return Store(path)


def _show_warning(message: Warning | str, category: type[Warning], *rest: Any, **kw: Any) -> None:
    err.print(f"warning: {message}", soft_wrap=True, markup=False)


class _ProgressBar:
    def __init__(self, progress: Progress, enabled: bool) -> None:
        self.progress = progress
        self.enabled = enabled
        self._bar: Any = None
        self._task: Any = None

    def __enter__(self) -> _ProgressBar:
        if self.enabled:
            from rich.progress import BarColumn, MofNCompleteColumn, TextColumn, TimeElapsedColumn
            from rich.progress import Progress as RichProgress

            self._bar = RichProgress(TextColumn("[bold]evaluating"), BarColumn(), MofNCompleteColumn(),
                                     TimeElapsedColumn(), TextColumn("{task.description}"),
                                     console=err, transient=True)
            self._bar.__enter__()
            self._task = self._bar.add_task("", total=None)
            self.progress.on_update = self._update
        return self

    def _update(self, p: Progress) -> None:
        st = p.judge_stats
        spend = f"{st.calls} calls, {st.prompt_tokens:,} prompt tok" if st is not None else ""
        o = p.outcomes
        desc = f"failed {o['failed']}  skipped {o['skipped']}  {spend}"
        self._bar.update(self._task, completed=p.done, total=p.total, description=desc)

    def __exit__(self, *exc: object) -> None:
        if self._bar is not None:
            self._bar.__exit__(None, None, None)


def print_summary(result: EvaluationResult, console: Console | None = None) -> None:
    c = console or out
    table = Table(title=f"run {result.run_id}  ({len(result.samples)} samples, {result.status})")
    for col in ("metric", "mean", "95% CI", "sd", "scored", "undet.", "failed", "skipped"):
        table.add_column(col, justify="left" if col == "metric" else "right", no_wrap=True)
    for key, s in result.summary.items():
        arrow = " ↓" if s.lower_is_better else ""
        ci = "–" if s.ci_low is None else f"[{s.ci_low:.3f}, {s.ci_high:.3f}]"
        table.add_row(key + arrow, _fmt(s.mean), ci, _fmt(s.sd), str(s.counts["scored"]),
                      str(s.counts["undetermined"]), str(s.counts["failed"]), str(s.counts["skipped"]))
    c.print(table)
    overall = result.overall
    if overall is not None and len(result.summary) > 1:
        c.print(f"overall (harmonic mean of metric means; ↓ metrics as 1 - mean): {overall:.3f}")
    st = result.judge_stats
    if st:
        c.print(f"judge: {st.get('calls', 0)} calls, {st.get('prompt_tokens', 0):,} prompt + "
                f"{st.get('completion_tokens', 0):,} completion tokens, {st.get('cache_hits', 0)} cache hits, "
                f"{st.get('retries', 0)} retries, {st.get('reasks', 0)} re-asks, {st.get('failed_steps', 0)} failed steps")
    for key, s in result.summary.items():
        for reason, n in s.skip_reasons.items():
            c.print(f"skipped {key} on {n} sample(s): {reason}", markup=False)
        for reason, n in s.fail_reasons.items():
            c.print(Text.assemble(("failed", "red"), f" {key} on {n} sample(s): {reason}"))
    if result.problems:
        errors = [p for p in result.problems if not p.message.startswith("warning:")]
        if errors:
            c.print(f"[yellow]{len(errors)} input row(s) could not be used and were not evaluated:[/yellow]")
            for p in errors[:20]:
                c.print(f"  {p}", markup=False, soft_wrap=True)
            if len(errors) > 20:
                c.print(f"  ... and {len(errors) - 20} more (ragsight show {result.run_id})")


# ---- show / runs / export ---------------------------------------------------------------------


def cmd_show(args: argparse.Namespace) -> int:
    with _open_existing(args.store) as store:
        result = load_result(store, args.run)
        if not args.sample:
            print_summary(result)
            return EXIT_OK
        sample = next((s for s in result.samples if s.id == args.sample), None)
        if sample is None:
            ids = ", ".join(s.id for s in result.samples[:10])
            raise RagsightError(f"run {result.run_id} has no sample '{args.sample}'; its samples: {ids}...")
        print_trail(store, result, sample.id, args.metric, args.calls)
    return EXIT_OK


def print_trail(store: Store, result: EvaluationResult, sample_id: str, metric: str | None, calls: bool) -> None:
    s = next(x for x in result.samples if x.id == sample_id)
    out.rule(f"sample {s.id}  (run {result.run_id})")
    if s.question:
        out.print(Text.assemble(("question: ", "bold"), s.question))
    for i, c in enumerate(s.contexts or (), start=1):
        out.print(Text.assemble((f"context {i}: ", "bold"), c))
    if s.response:
        out.print(Text.assemble(("response: ", "bold"), s.response))
    if s.reference:
        out.print(Text.assemble(("reference: ", "bold"), s.reference_text or ""))
    for key, score in result.scores.get(s.id, {}).items():
        if metric and key != metric:
            continue
        out.rule(f"{key}")
        value = "–" if score.value is None else f"{score.value:.3f}"
        out.print(Text.assemble(("value: ", "bold"), value, ("  outcome: ", "bold"), score.outcome.value,
                                ("  reason: ", "bold"), score.reason))
        for cv in score.evidence.claims:
            mark, style = ("✓ supported", "green") if cv.supported else ("✗ not supported", "red")
            prob = f" P={cv.probability:.2f}" if cv.probability is not None else ""
            line = Text.assemble((f"  {mark}", style), (f" [{cv.target}]{prob} ", "dim"), cv.claim)
            out.print(line)
            if cv.reason:
                out.print(Text("      " + cv.reason, style="dim"))
            if cv.signals:
                out.print(Text("      signals: " + describe_signals(cv.signals), style="dim"))
        if score.evidence.details:
            out.print(Text("  details: " + json.dumps(score.evidence.details, ensure_ascii=False)[:2000], style="dim"))
        for ref in score.evidence.calls:
            tag = " (cache)" if ref.cached else ""
            out.print(Text(f"  judge step {ref.prompt_id} v{ref.prompt_version}{tag}  key {ref.key[:12]}", style="dim"))
    if calls:
        out.rule("judge calls")
        for row in store.judge_calls(result.run_id, sample_id=s.id):
            out.print(Text(f"{row['prompt_id']} v{row['prompt_version']} attempt {row['attempt']} "
                           f"{row['prompt_tokens']}+{row['completion_tokens']} tok {row['latency_s']:.2f}s"
                           f"{' cached' if row['cached'] else ''}{' ERROR ' + row['error'] if row['error'] else ''}",
                           style="bold"))
            for m in row["messages"]:
                out.print(Text(f"[{m['role']}] {m['content']}", style="dim"))
            out.print(Text(f"[output] {row['raw_output']}"))


def cmd_runs(args: argparse.Namespace) -> int:
    import datetime as dt

    with _open_existing(args.store) as store:
        table = Table(title=f"runs in {args.store}")
        for col in ("run", "created", "status", "samples", "judge", "metrics", "metadata"):
            table.add_column(col, no_wrap=col in ("run", "created", "status"))
        for r in store.runs():
            n = store.conn.execute("SELECT COUNT(*) FROM samples WHERE run_id=?", (r.id,)).fetchone()[0]
            created = dt.datetime.fromtimestamp(r.created_at).strftime("%Y-%m-%d %H:%M")
            table.add_row(r.id, created, r.status, str(n), r.judge or "–", ", ".join(r.metric_keys),
                          json.dumps(r.metadata) if r.metadata else "")
        out.print(table)
    return EXIT_OK


def cmd_export(args: argparse.Namespace) -> int:
    with _open_existing(args.store) as store:
        run_id = store.resolve_run(args.run)
        path = export_run(store, run_id, args.format, args.out or f"{run_id}.{args.format}")
    out.print(f"wrote {path}")
    return EXIT_OK


# Old sub-command names that still work but are not listed: `run` read like `runs`.
HIDDEN_ALIASES = {"run": "answer"}


def main(argv: Sequence[str] | None = None) -> int:
    parser = _parser()
    argv = list(sys.argv[1:] if argv is None else argv)
    if argv and argv[0] in HIDDEN_ALIASES:
        argv[0] = HIDDEN_ALIASES[argv[0]]
    args = parser.parse_args(argv)
    if not getattr(args, "func", None):
        parser.print_help()
        return EXIT_USAGE
    try:
        return int(args.func(args))
    except RagsightError as exc:
        err.print(f"error: {exc}", soft_wrap=True, markup=False)
        return EXIT_USAGE
    except KeyboardInterrupt:
        err.print("interrupted")
        return EXIT_INTERRUPTED

