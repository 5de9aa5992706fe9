"""The command line. Thin: parses, calls the library, prints.

Exit status (the same for every sub-command):

- 0: the command completed. For ``evaluate``: the run completed, met every threshold
  (``--fail-under``/``--fail-over``, or ``[tool.ragsight]`` in pyproject.toml), and every
  metric scored (or found undetermined) at least one sample. Counted failures of single
  samples do not change it.
- 1: ``evaluate`` ran, but a threshold was missed, a metric failed or was skipped on every
  sample, or input rows could not be used (unless ``--allow-bad-rows``); ``answer``: every call
  to the system under test failed; ``generate``: no question passed the filter.
- 2: the input or the configuration is unusable (bad flag, unknown metric, unreadable data,
  a preflight that failed: judge or embedder unreachable, missing package, store not
  writable); nothing was evaluated, and no store file was created.
- 3: ``evaluate --max-cost``: the run stopped before a judge call could take its spend past the
  limit. The finished samples are saved; the command to continue (``--resume RUN``) is printed.
- 130: interrupted (Ctrl-C). The finished samples are saved; the command to continue the run
  (``ragsight evaluate --resume RUN``) is printed.
"""

from __future__ import annotations

import argparse
import importlib.util
import json
import os
import signal
import sys
import warnings
from collections.abc import Sequence
from importlib import resources
from typing import Any

from rich.console import Console
from rich.text import Text

from .. import __version__
from ..analyses import AnalysisSettings, describe_signals
from ..calls import describe_cost, format_usd, parse_price_flags, prices_from_config
from ..dataset import group_problems
from ..embed import EmbedderSpec
from ..engine import Progress, ProgressDisplay
from ..engine import (
    progress_text as progress_text,  # the progress line (tests and tools read it here)
)
from ..errors import (
    BudgetExceededError,
    ConfigError,
    JudgeUnavailableError,
    MissingExtraError,
    RagsightError,
)
from ..judge import JudgeSpec, RetryPolicy
from ..report import compact_table, print_repeats
from ..report import count_noun as _count
from ..report import fmt as _fmt
from ..result import EvaluationResult, load_result, truncation_note
from ..run import (
    RunInterrupted,
    RunOptions,
    aestimate,
    aevaluate,
    check_store_path,
    evaluate_repeats,
    new_run_id,
    run_sync,
)
from ..store import FORMATS, Store, export_run
from . import _judges, _labels, _report, _sweep, _testset, _traces, _view
from ._common import (
    DEFAULT_STORE,
    EXIT_BUDGET,
    EXIT_FAILED,
    EXIT_INTERRUPTED,
    EXIT_OK,
    EXIT_TERMINATED,
    EXIT_USAGE,
    checked_output,
    close_name,
    err,
    out,
    piped_at_80,
    say,
    shell_command,
    show_warning,
    writing_output,
)
from ._common import add_store as _add_store
from ._gate import Threshold, check_gate, check_resumed_gate, gate_metrics, gate_thresholds
from ._labels import aligned_settings
from ._rubrics import register_cli_rubrics

__all__ = ["main"]



EVALUATE_EPILOG = """examples:
  ragsight evaluate --example
  ragsight evaluate data.jsonl --metrics faithfulness,context_recall
  ragsight evaluate data.jsonl --judge openai:gpt-4o-mini --embedder openai:text-embedding-3-small
  ragsight evaluate data.csv --judge openai:qwen2.5-7b --base-url http://localhost:8000/v1 --out results.jsonl
  ragsight evaluate data.jsonl --judge anthropic:claude-3-5-haiku-latest
  ragsight evaluate data.jsonl --judge azure:my-gpt4o --base-url https://RES.openai.azure.com --api-version 2024-10-21
  ragsight evaluate data.jsonl --metrics retrieval,ir --store runs.db --metadata chunk_size=512 --metadata top_k=5
  ragsight evaluate data.jsonl --fail-under faithfulness=0.8 --fail-under context_recall=0.7
  ragsight evaluate --resume last
  ragsight evaluate data.jsonl --judge openai:gpt-4o-mini --dry-run     # calls, tokens, dollars; no call
  ragsight evaluate data.jsonl --judge openai:gpt-4o-mini --max-cost 2.50
  ragsight evaluate data.jsonl --judge openai:my-model --price my-model=0.20/0.80
gate (for CI): the run exits 1 when a metric mean is below a --fail-under threshold (above a
--fail-over one), or when a metric failed or was skipped on every sample; thresholds can also
live in pyproject.toml: [tool.ragsight] fail-under = { faithfulness = 0.8 }. Exit status: 0 met,
1 missed, 2 unusable input or configuration, 3 stopped at --max-cost, 130 interrupted.
metrics: names (faithfulness, answer_relevancy, context_precision, context_recall, ...), groups
(retrieval, generation, reference-free, lexical, ir) or all; parameters in brackets, e.g.
"factual_correctness(mode=recall)". Default: the core metrics the data's fields allow.
The API key is read from OPENAI_API_KEY (ANTHROPIC_API_KEY, GEMINI_API_KEY, AZURE_API_KEY, the AWS
credentials for bedrock:)."""


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
    ev.add_argument("--metrics", action="append",
                    help="comma-separated metric names or groups (default: core metrics); repeatable")
    ev.add_argument("--judge", help="openai:MODEL, local (default), local:qwen2.5-coder-0.5b, local:PATH.gguf; "
                    "anthropic:MODEL, gemini:MODEL, bedrock:MODEL, azure:DEPLOYMENT (pip install 'ragsight[litellm]')")
    ev.add_argument("--base-url", help="OpenAI-compatible base URL for the judge (and the embedder)")
    ev.add_argument("--api-version", help="Azure OpenAI API version for --judge azure:DEPLOYMENT, e.g. 2024-10-21 "
                    "(default: $AZURE_API_VERSION; the key is read from AZURE_API_KEY)")
    ev.add_argument("--embedder", help="openai:MODEL, local (default), local:e5-small or local:minilm")
    ev.add_argument("--embedder-base-url", help="base URL for the embedder, if not --base-url")
    _add_store(ev)
    ev.add_argument("--out", help="write per-sample results to this file: JSONL, or CSV / Parquet when "
                    "its name ends in .csv / .parquet (as 'ragsight export' writes them)")
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
                    help="the most calls in flight to a remote judge, for the whole run or cluster; "
                         "below it the limit adapts to what the judge accepts (default 256)")
    ev.add_argument("--timeout", type=float, default=120.0, help="seconds per judge call (default 120)")
    ev.add_argument("--max-retries", type=int, default=3, help="retries per judge call (default 3)")
    ev.add_argument("--explain", choices=["none", "unsupported", "all"], default="unsupported",
                    help="embedded judge: which verdicts get a written reason (default: unsupported "
                         "claims and borderline chunk verdicts)")
    ev.add_argument("--threshold", type=float, default=0.5,
                    help="embedded judge: P(Yes) at which a claim counts as supported (default 0.5)")
    ev.add_argument("--alignment", metavar="FILE",
                    help="judge claims with an alignment 'ragsight align' saved: its threshold and worked "
                         "examples (see docs/review.md)")
    ev.add_argument("--repeats", type=int, default=1, metavar="N",
                    help="evaluate N times with different judge seeds (no cache) and report the "
                         "run-to-run spread of each metric")
    ev.add_argument("--temperature", type=float,
                    help="judge sampling temperature for --repeats (default 0: only the seed varies)")
    ev.add_argument("--fail-under", action="append", default=[], metavar="METRIC=VALUE",
                    help="CI gate: exit 1 when the metric's mean is below VALUE; repeatable")
    ev.add_argument("--fail-over", action="append", default=[], metavar="METRIC=VALUE",
                    help="CI gate for a lower-is-better metric: exit 1 when its mean is above VALUE")
    ev.add_argument("--config", metavar="FILE",
                    help="TOML file with a [tool.ragsight] table of thresholds and rubrics (default: ./pyproject.toml)")
    ev.add_argument("--rubric", action="append", default=[], metavar="FILE.toml",
                    help="rubrics to use as metrics: [rubrics.NAME] tables (see docs/rubrics.md); repeatable")
    ev.add_argument("--allow-bad-rows", action="store_true",
                    help="exit 0 even when input rows could not be used (they are listed; default: exit 1)")
    ev.add_argument("--dry-run", action="store_true",
                    help="estimate the judge calls, tokens and dollars of the run, and how; call nothing")
    ev.add_argument("--max-cost", type=float, metavar="USD",
                    help="stop before a judge call could take this command's spend past USD dollars "
                         "(exit status 3; finished samples are kept, --resume continues)")
    ev.add_argument("--price", action="append", default=[], metavar="MODEL=IN/OUT",
                    help="a judge model's price in dollars per million input/output tokens, over the "
                         "shipped table and [tool.ragsight.prices], e.g. gpt-4o-mini=0.15/0.60; repeatable")
    ev.add_argument("--quiet", action="store_true", help="no progress bar")
    ev.set_defaults(func=cmd_evaluate)

    sh = sub.add_parser("show", help="show a run's summary, or a sample's evidence trail",
                        epilog="examples:\n  ragsight show last\n  ragsight show last --sample ex-2\n"
                               "  ragsight show 20260101-120000-ab12cd --sample ex-2 --calls\n"
                               "  ragsight show last --conversation support-17",
                        formatter_class=argparse.RawDescriptionHelpFormatter)
    sh.add_argument("run", help="run id or 'last'")
    sh.add_argument("--sample", help="sample id: print its evidence trail")
    sh.add_argument("--metric", help="only this metric: with --sample its evidence, else its score "
                                     "on every sample, worst first")
    sh.add_argument("--calls", action="store_true", help="also print the judge calls (prompts and raw outputs)")
    sh.add_argument("--full", action="store_true",
                    help=f"with --sample: print every text whole (contexts are cut at {ELIDE_CHARS} characters)")
    sh.add_argument("--conversation", metavar="ID", help="print a conversation turn by turn with each turn's "
                                                           "scores and evidence")
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
    _traces.register(sub)
    _sweep.register(sub)
    _judges.register(sub)
    _labels.register(sub)
    _view.register(sub)
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


def _metric_specs(values: Sequence[str] | None) -> str | None:
    """--metrics given once or more: every value counts (joined), never only the last."""
    if not values:
        return None
    return ",".join(v for v in values if v.strip())


def cmd_evaluate(args: argparse.Namespace) -> int:
    if args.example:
        data = example_path()
    elif args.data:
        data = args.data
    elif not args.resume:
        say(err, "error: give a data file, --example, or --resume RUN (see 'ragsight evaluate --help')",
            markup=False)
        return EXIT_USAGE
    else:
        data = None
    for flag in ("concurrency", "judge_concurrency"):
        value = getattr(args, flag)
        if value is not None and value < 1:
            raise RagsightError(f"--{flag.replace('_', '-')} must be at least 1, not {value}")
    if args.repeats < 1:
        raise RagsightError(f"--repeats must be at least 1, not {args.repeats}")
    register_cli_rubrics(args.config, args.rubric)  # checked before any call; --metrics NAME finds them
    thresholds = gate_thresholds(args.fail_under, args.fail_over, args.config)
    metrics = _metric_specs(args.metrics)
    prices = {**prices_from_config(args.config), **parse_price_flags(args.price)}
    if args.max_cost is not None and not args.max_cost > 0:
        raise RagsightError(f"--max-cost must be a positive number of dollars, not {args.max_cost:g}")
    if args.dry_run:
        return _dry_run(args, data, metrics, prices)
    if args.resume:
        _check_resume_gate(args.resume, args.store, thresholds)
    else:
        metrics, added = gate_metrics(metrics, thresholds)
        if added:
            err.print(f"The gate names {', '.join(added)}: evaluated besides the default metrics.",
                      markup=False)
    if args.out:  # a missing folder, a folder or a read-only file is found now, not after the run
        checked_output(args.out, "--out file")
        if args.out.lower().endswith(".parquet"):
            for module in ("pandas", "pyarrow"):
                if importlib.util.find_spec(module) is None:
                    raise MissingExtraError("--out FILE.parquet", "parquet", module)
    if args.repeats > 1:
        if thresholds:
            raise ConfigError("--fail-under/--fail-over gate one run; leave out --repeats")
        return _evaluate_repeats(args, data, metrics)
    check_store_path(args.store)
    policy = RetryPolicy(max_attempts=args.max_retries + 1, call_timeout_s=args.timeout,
                         step_deadline_s=max(300.0, args.timeout * 3))
    settings = AnalysisSettings(explain=args.explain, support_threshold=args.threshold)
    if args.alignment:
        settings = aligned_settings(args.alignment, settings, metrics, notice=lambda t: say(err, t, markup=False))
    run_id = args.resume or new_run_id()
    progress = Progress()

    def notice(text: str) -> None:
        say(err, text, markup=False)

    with warnings.catch_warnings():
        warnings.simplefilter("default")
        warnings.showwarning = show_warning
        try:
            # the store file is created only once the preflight passed (a path, not a Store)
            with ProgressDisplay(progress, "off" if args.quiet else None, console=err):
                result = run_sync(lambda: aevaluate(
                    data, metrics, store=args.store, resume=args.resume, metadata=_metadata(args.metadata),
                    run_id=None if args.resume else run_id,
                    judge=JudgeSpec(args.judge, base_url=args.base_url, api_version=args.api_version,
                                    concurrency=args.judge_concurrency, prices=prices),
                    embedder=EmbedderSpec(args.embedder, base_url=args.embedder_base_url),
                    options=RunOptions(cache=not args.no_cache, concurrency=args.concurrency,
                                       settings=settings, policy=policy, progress=progress, notice=notice,
                                       backend=args.backend, ray_address=args.ray_address,
                                       max_cost=args.max_cost),
                ), sigterm=True)
        except BudgetExceededError as stop:
            say(err, f"stopped before exceeding --max-cost ${stop.limit:g}: {format_usd(stop.spent)} spent by "
                     f"this command; {stop.done} of {stop.total} samples are saved in {args.store} (run "
                     f"{stop.run_id}). Continue with a new budget (--dry-run estimates the rest):",
                markup=False)
            err.print(f"  {_resume_command(stop.run_id, args.store)} --max-cost USD", soft_wrap=True, markup=False)
            return EXIT_BUDGET
        except JudgeUnavailableError as gone:
            # a rejected key or a silent judge after the run began: its finished samples are saved
            if not progress.run_id:
                raise
            say(err, f"error: {gone}", markup=False)
            say(err, f"{progress.done} of {progress.total} samples are saved in {args.store}. Continue with:",
                markup=False)
            err.print(f"  {_resume_command(progress.run_id, args.store)}", soft_wrap=True, markup=False)
            return EXIT_USAGE
        except KeyboardInterrupt as stop:
            rid = progress.run_id or run_id
            terminated = isinstance(stop, RunInterrupted) and stop.signum == signal.SIGTERM
            what, code = ("terminated (SIGTERM)", EXIT_TERMINATED) if terminated else ("interrupted", EXIT_INTERRUPTED)
            if not progress.run_id:
                err.print(f"{what} before the run started; nothing was saved.", markup=False)
                return code
            say(err, f"{what}: {progress.done} of {progress.total} samples are saved in "
                     f"{args.store}. Continue with:", markup=False)
            err.print(f"  {_resume_command(rid, args.store)}", soft_wrap=True, markup=False)
            return code
    print_summary(result)
    if args.out:
        try:
            result.write(args.out)
        except OSError as exc:
            raise RagsightError(f"cannot write the --out file {args.out} ({exc}); the run is saved in "
                                f"{args.store}: 'ragsight export {result.run_id} --store {args.store}'") from None
        out.print(f"Per-sample results: {args.out}", soft_wrap=True)
    gate = check_gate(result, thresholds)
    print_evidence_hint(result, args.store, metric=_failing_metric(result, thresholds))
    if gate.lines:
        out.print(Text("gate:", style="bold"))
        for ok, line in gate.lines:
            say(out, Text.assemble(("  ok     " if ok else "  FAILED ", "green" if ok else "bold red"), line))
    if gate.failed:
        if thresholds:
            err.print(f"error: the run misses its gate (exit status {EXIT_FAILED})", markup=False)
        else:  # no threshold was set: say what failed, not a gate the user never gave
            err.print(f"error: a metric has no score on any sample (exit status {EXIT_FAILED}; "
                      "see FAILED above)", markup=False)
    dropped = [p for p in result.problems if not p.message.startswith("warning:")]
    bad_rows = bool(dropped) and not args.allow_bad_rows
    if bad_rows:
        say(err, f"error: {_count(len(dropped), 'input row')} could not be used and "
                 f"{'was' if len(dropped) == 1 else 'were'} not evaluated (listed above); exit status "
                 f"{EXIT_FAILED}. Fix the rows, or pass --allow-bad-rows to accept the run without them.",
            markup=False)
    return EXIT_FAILED if gate.failed or bad_rows else EXIT_OK


def _dry_run(args: argparse.Namespace, data: Any, metrics: str | None, prices: dict[str, Any]) -> int:
    """``evaluate --dry-run``: the estimate, its basis, and whether it fits --max-cost."""
    if args.repeats > 1:
        raise ConfigError("--dry-run estimates one run; leave out --repeats (N runs cost about N times it)")
    settings = AnalysisSettings(explain=args.explain, support_threshold=args.threshold)
    est = run_sync(lambda: aestimate(
        data, metrics, store=args.store, resume=args.resume,
        judge=JudgeSpec(args.judge, base_url=args.base_url, api_version=args.api_version, prices=prices),
        options=RunOptions(cache=not args.no_cache, settings=None if args.resume else settings,
                           concurrency=args.concurrency or 16)))
    out.print("Estimate (dry run: no judge or embedder was called, nothing was written)", markup=False)
    for line in est.lines():
        out.print(line, markup=False)
    if args.max_cost is not None:
        usd = est.usd
        if usd is None:
            say(out, f"--max-cost ${args.max_cost:g}: cannot be checked, the price is unknown", markup=False)
        elif usd > args.max_cost:
            say(out, Text(f"OVER BUDGET: the estimate {format_usd(usd)} is above --max-cost "
                          f"${args.max_cost:g}: the run would stop before its end", style="bold red"))
        else:
            say(out, f"within --max-cost ${args.max_cost:g}", markup=False)
    return EXIT_OK


def _check_resume_gate(resume: str, store_path: str, thresholds: Sequence[Threshold]) -> None:
    if not thresholds or not os.path.exists(store_path):
        return  # no store: the resume itself says so
    with Store(store_path) as store:
        run_id = store.resolve_run(resume)
        check_resumed_gate(run_id, store.run(run_id).metric_keys, thresholds)


def _resume_command(run_id: str, store: str) -> str:
    args = ["ragsight", "evaluate", "--resume", run_id]
    if store != DEFAULT_STORE:
        args += ["--store", store]
    return shell_command(args)


def print_evidence_hint(result: EvaluationResult, store: str, console: Console | None = None,
                        metric: str | None = None) -> None:
    """Where the run is saved, and the command that shows the evidence of its lowest score (of
    ``metric`` when given: the metric that failed the gate). The command is printed whole on a
    line of its own (never wrapped by the printer)."""
    c = console or out
    c.print(f"Run {result.run_id} saved in {store}.", soft_wrap=True, markup=False)
    worst = result.worst() if metric is None else _worst_of(result, metric)
    if worst is None:
        return
    sid, metric, value = worst
    cmd = ["ragsight", "show", result.run_id, "--sample", sid]
    if store != DEFAULT_STORE:
        cmd += ["--store", store]
    c.print(f"Evidence of the lowest score ({metric} {value:.3f} on sample {sid}):",
            soft_wrap=True, markup=False)
    c.print(f"  {shell_command(cmd)}", soft_wrap=True, markup=False)


def _worst_of(result: EvaluationResult, metric: str) -> tuple[str, str, float] | None:
    """The sample with the worst score of one metric (the highest of a lower-is-better one)."""
    values = result.scored_values(metric)
    if not values:
        return result.worst()
    lower = result.summary[metric].lower_is_better if metric in result.summary else False
    order = [s.id for s in result.samples if s.id in values]
    sid = (max if lower else min)(order, key=lambda i: values[i])
    return sid, metric, values[sid]


def _failing_metric(result: EvaluationResult, thresholds: Sequence[Threshold]) -> str | None:
    """The first gated metric whose mean misses its threshold, else None."""
    for t in thresholds:
        s = result.summary.get(t.metric)
        if s is not None and s.mean is not None and not (s.mean >= t.value if t.kind == "under" else s.mean <= t.value):
            return t.metric
    return None


def _evaluate_repeats(args: argparse.Namespace, data: Any, metrics: str | None) -> int:

    if args.resume:
        raise RagsightError("--repeats cannot be combined with --resume")
    check_store_path(args.store)
    with Store(args.store) as store:
        report = run_sync(lambda: evaluate_repeats(
            data, args.repeats, temperature=args.temperature, metrics=metrics,
            judge=JudgeSpec(args.judge, base_url=args.base_url),
            embedder=EmbedderSpec(args.embedder, base_url=args.embedder_base_url), store=store,
            metadata=_metadata(args.metadata), options=RunOptions(cache=False, concurrency=args.concurrency),
        ))
    print_repeats(report, out)
    return EXIT_OK


def _open_existing(path: str) -> Store:
    if path != ":memory:" and not os.path.exists(path):
        raise RagsightError(f"no store at {path}; give the --store file that 'ragsight evaluate' wrote")
    return Store(path)


def _ci(low: float | None, high: float | None) -> str:
    return "–" if low is None or high is None else f"{low:.3f}–{high:.3f}"


REASONS_SHOWN = 3
"""Distinct failure reasons printed per metric (the rest are counted; 'ragsight show RUN
--metric M' lists every sample)."""


def concurrency_note(stats: dict[str, Any]) -> str | None:
    """One line when the judge refused or dropped calls (HTTP 429/503, time-outs): what the
    limit did about it. None when nothing happened."""
    c = stats.get("concurrency") if stats else None
    if not isinstance(c, dict) or not (c.get("overloads") or c.get("timeouts")):
        return None
    lo, hi, ceiling = c.get("min_limit"), c.get("max_limit"), c.get("ceiling")
    at_once = _count(int(hi), 'call') if lo == hi and hi is not None else f"{lo} to {hi} calls"
    text = (f"judge: {c.get('overloads', 0)} refused as overloaded, {c.get('timeouts', 0)} timed out; "
            f"{at_once} at once (of {ceiling})")
    if c.get("paused_s"):
        text += f", paused {c['paused_s']:.1f} s as asked"
    return text


def print_summary(result: EvaluationResult, console: Console | None = None) -> None:
    """The run's summary, laid out for 80 columns: the table of metrics, the overall score
    with what it leaves out, judge spend, and every reason for a failure or a skip, whole."""
    c = console or out
    table = compact_table(f"run {result.run_id}  ({result.describe_shape()}, {result.status})")
    table.add_column("metric", overflow="fold", min_width=12)
    for col in ("mean", "95% CI", "sd", "scored", "undet.", "failed", "skipped"):
        table.add_column(col, justify="right", no_wrap=True)
    for key, s in result.summary.items():
        arrow = " ↓" if s.lower_is_better else ""
        table.add_row(key + arrow, _fmt(s.mean), _ci(s.ci_low, s.ci_high), _fmt(s.sd),
                      str(s.counts["scored"]), str(s.counts["undetermined"]), str(s.counts["failed"]),
                      str(s.counts["skipped"]))
    c.print(table)
    if result.conversations:
        _print_conversation_summary(result, c)
    ov = result.overall_detail
    if ov.mean is not None and len(result.summary) > 1:
        clamped = f"; clamped to [0, 1]: {', '.join(ov.clamped)}" if ov.clamped else ""
        inverted = any(result.summary[k].lower_is_better for k in ov.entries if k in result.summary)
        c.print(f"overall {ov.mean:.3f}: mean of {len(ov.entries)} metric means"
                f"{' (↓ as 1 - mean)' if inverted else ''}, harmonic mean {_fmt(ov.harmonic)}{clamped}")
    for key, why in ov.left_out.items():
        if len(result.summary) > 1:
            say(c, Text(f"LEFT OUT of the overall: {key}: {why}", style="bold red"))
    st = result.judge_stats
    if st:
        # without a cache, a step asked again in the run is answered from its memory: not a cache hit
        hits = ("repeat answered from memory" if result.config.get("cache") is False else "cache hit")
        c.print(f"judge: {_count(st.get('calls', 0), 'call')}, {_count(st.get('cache_hits', 0), hits)}, "
                f"{st.get('prompt_tokens', 0):,} prompt + {st.get('completion_tokens', 0):,} completion tokens")
        c.print(f"       {_count(st.get('retries', 0), 'retry')}, {_count(st.get('reasks', 0), 're-ask')}, "
                f"{_count(st.get('failed_steps', 0), 'failed step')}")
        note = concurrency_note(st)
        if note is not None:
            c.print(note, markup=False)
        for line in describe_cost(result.cost):
            if line:
                c.print(line, markup=False)
    cut = truncation_note(result)
    if cut is not None:
        say(c, Text(cut, style="yellow"))
    for key, s in result.summary.items():
        for reason, n in s.skip_reasons.items():
            c.print(f"skipped {key} on {_count(n, 'sample')}: {reason}", markup=False)
        shown = sorted(s.fail_reasons.items(), key=lambda kv: -kv[1])
        for reason, n in shown[:REASONS_SHOWN]:
            c.print(Text.assemble(("failed", "red"), f" {key} on {_count(n, 'sample')}: {reason}"))
        if len(shown) > REASONS_SHOWN:
            rest = sum(n for _, n in shown[REASONS_SHOWN:])
            c.print(f"failed {key} on {rest} more sample(s) for {len(shown) - REASONS_SHOWN} other "
                    f"reason(s): ragsight show {result.run_id} --metric {key}", markup=False)
    if result.problems:
        errors = [p for p in result.problems if not p.message.startswith("warning:")]
        if errors:
            c.print(f"[yellow]{len(errors)} input row(s) could not be used and were not evaluated:[/yellow]")
            groups = group_problems(errors)  # one line per kind of problem, with its count
            for g in groups[:20]:
                say(c, f"  {g.line()}", markup=False)
            if len(groups) > 20:
                c.print(f"  ... and {len(groups) - 20} more kinds (ragsight show {result.run_id})")


def _print_conversation_summary(result: EvaluationResult, c: Console) -> None:
    """The turn metrics per conversation: the mean of each conversation's scored turns, then
    the mean over conversations (a long conversation counts once), with the four outcomes."""
    sh = result.shape
    say(c, f"Per conversation ({sh['conversations']}): each one's mean over its scored turns, where the "
        f"table above counts each of the {sh['turns']} assistant turns once:", markup=False)
    table = compact_table(None)
    table.add_column("metric", overflow="fold", min_width=12)
    for col in ("mean", "95% CI", "scored", "undet.", "failed", "skipped"):
        table.add_column(col, justify="right", no_wrap=True)
    for key, s in result.conversation_summary.items():
        if not sum(s.counts.values()):
            continue
        table.add_row(key, _fmt(s.mean), _ci(s.ci_low, s.ci_high), str(s.counts["scored"]),
                      str(s.counts["undetermined"]), str(s.counts["failed"]), str(s.counts["skipped"]))
    c.print(table)
    c.print(f"each conversation: ragsight show {result.run_id} --conversation ID", markup=False)


# ---- show / runs / export ---------------------------------------------------------------------


def cmd_show(args: argparse.Namespace) -> int:
    with _open_existing(args.store) as store:
        result = load_result(store, args.run)
        metric = _run_metric(result, args.metric) if args.metric else None
        if args.conversation and not args.sample:
            from ._conversation import print_conversation

            print_conversation(result, args.conversation, metric, out)
            return EXIT_OK
        if not args.sample:
            if metric is not None:
                print_metric_scores(result, metric)
            else:
                print_summary(result)
            return EXIT_OK
        sample = next((s for s in result.samples if s.id == args.sample), None)
        if sample is None:
            ids = [s.id for s in result.samples]
            raise RagsightError(f"run {result.run_id} has no sample '{args.sample}'"
                                f"{close_name(args.sample, ids)}; its samples: {', '.join(ids[:10])}"
                                + ("..." if len(ids) > 10 else ""))
        print_trail(store, result, sample.id, metric, args.calls, full=args.full)
    return EXIT_OK


def _run_metric(result: EvaluationResult, name: str) -> str:
    """The run's metric called ``name`` (case-insensitive), else a ConfigError with the close
    name and the run's metrics."""
    for key in result.metric_keys:
        if key == name or key.lower() == name.strip().lower():
            return key
    raise ConfigError(f"run {result.run_id} has no metric '{name}'{close_name(name, result.metric_keys)}; "
                      f"its metrics: {', '.join(result.metric_keys)}")


def print_metric_scores(result: EvaluationResult, metric: str, console: Console | None = None) -> None:
    """One metric on every sample of a run: failures first, then scores worst first."""
    c = console or out
    s = result.summary[metric]
    level = result.levels.get(metric, "turn")
    total = sum(1 for x in result.samples if (x.conversation_id is not None and x.turn is None) == (level != "turn"))
    what = "samples" if not result.conversations else ("conversations" if level != "turn" else "samples and turns")
    c.print(f"{metric}{' ↓' if s.lower_is_better else ''} in run {result.run_id}: mean {_fmt(s.mean)} "
            f"over {s.n} scored of {total} {what}; failures first, then worst first",
            markup=False)
    table = compact_table()
    table.expand = True
    table.add_column("sample", overflow="fold", min_width=8)
    table.add_column("value", justify="right", no_wrap=True)
    table.add_column("outcome", no_wrap=True)
    table.add_column("reason", overflow="fold", ratio=1)
    order = {"failed": 0, "skipped": 1, "undetermined": 2, "scored": 3}
    rows = []
    for smp in result.samples:
        score = result.scores.get(smp.id, {}).get(metric)
        if score is None:
            continue
        v = score.value
        oriented = (1.0 - v if s.lower_is_better else v) if v is not None else 0.0
        rows.append((order[score.outcome.value], oriented, smp.id, score))
    for _, _, sid, score in sorted(rows, key=lambda r: (r[0], r[1])):
        table.add_row(Text(sid), _fmt(score.value), score.outcome.value, Text(score.reason or ""))
    c.print(table)
    c.print("Evidence of one sample:", markup=False)
    c.print("  " + shell_command(["ragsight", "show", result.run_id, "--sample", "ID", "--metric", metric]),
            soft_wrap=True, markup=False)


ELIDE_CHARS = 300
"""``show --sample`` prints a context (or a long response) up to this many characters; ``--full``
prints it whole."""


def _elided(text: str, full: bool) -> str:
    if full or len(text) <= ELIDE_CHARS:
        return text
    cut = text[:ELIDE_CHARS].rsplit(" ", 1)[0]
    return f"{cut} … ({len(text) - len(cut):,} more characters; --full shows them)"


def print_trail(store: Store, result: EvaluationResult, sample_id: str, metric: str | None, calls: bool,
                full: bool = False) -> None:
    """A sample's evidence: the question, each metric's verdicts, then the texts (contexts and a
    long response cut at ELIDE_CHARS characters unless ``full``), then the judge calls."""
    s = next(x for x in result.samples if x.id == sample_id)
    out.rule(f"sample {s.id}  (run {result.run_id})")
    if s.conversation_id is not None:
        from ._conversation import print_history

        print_history(s, result.run_id, out)
    if s.question:
        out.print(Text.assemble(("question: ", "bold"), s.question))
    _print_scores(result, s.id, metric)
    out.rule("texts")
    if s.response:
        out.print(Text.assemble(("response: ", "bold"), _elided(s.response, full)))
    if s.reference:
        out.print(Text.assemble(("reference: ", "bold"), _elided(s.reference_text or "", full)))
    for i, c in enumerate(s.contexts or (), start=1):
        out.print(Text.assemble((f"context {i}: ", "bold"), _elided(c, full)))
    if calls:
        _print_calls(store, result, s.id)


def _print_scores(result: EvaluationResult, sample_id: str, metric: str | None) -> None:
    for key, score in result.scores.get(sample_id, {}).items():
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
            if cv.signals and (read := describe_signals(cv.signals)):
                out.print(Text("      signals: " + read, style="dim"))
        details = dict(score.evidence.details)
        for name, what in _SET_APART:
            texts = details.pop(name, None)
            if isinstance(texts, list) and all(isinstance(t, str) for t in texts):
                for text in texts:
                    out.print(Text.assemble(("  – ", "yellow"), (f"{what} ", "dim"), text))
            elif texts is not None:
                details[name] = texts
        chunks = details.pop("chunks", None)
        if _is_chunk_list(chunks):  # chunk verdicts (context precision): one line each, like claims
            for c in chunks:
                mark, style = ("✓ relevant", "green") if c["relevant"] else ("✗ not relevant", "red")
                prob = f" P={c['probability']:.2f}" if isinstance(c.get("probability"), float) else ""
                out.print(Text.assemble((f"  {mark}", style), (f" [chunk {c['rank']}]{prob}", "dim")))
                if c.get("reason"):
                    out.print(Text("      " + str(c["reason"]), style="dim"))
        elif chunks is not None:
            details["chunks"] = chunks
        if details:
            out.print(Text("  details: " + json.dumps(details, ensure_ascii=False)[:2000], style="dim"))
        for ref in score.evidence.calls:
            tag = " (cache)" if ref.cached else ""
            out.print(Text(f"  judge step {ref.prompt_id} v{ref.prompt_version}{tag}  key {ref.key[:12]}", style="dim"))


# Claims a metric kept out of its count, each printed on its own line under the claims.
_SET_APART = (
    ("about_the_documents", "set aside, says what the documents do not contain:"),
    ("dropped_claims", "dropped, not in the response's own words:"),
)


def _is_chunk_list(chunks: Any) -> bool:
    return isinstance(chunks, list) and all(
        isinstance(c, dict) and isinstance(c.get("rank"), int) and isinstance(c.get("relevant"), bool)
        for c in chunks)


def _print_calls(store: Store, result: EvaluationResult, sample_id: str) -> None:
    out.rule("judge calls")
    for row in store.judge_calls(result.run_id, sample_id=sample_id):
        out.print(Text(f"{row['prompt_id']} v{row['prompt_version']} attempt {row['attempt']} "
                       f"{row['prompt_tokens']}+{row['completion_tokens']} tok {row['latency_s']:.2f}s"
                       f"{' cached' if row['cached'] else ''}{' ERROR ' + row['error'] if row['error'] else ''}",
                       style="bold"))
        for m in row["messages"]:
            out.print(Text(f"[{m['role']}] {m['content']}", style="dim"))
        out.print(Text(f"[output] {row['raw_output']}"))


def cmd_runs(args: argparse.Namespace) -> int:
    """The runs of a store, newest first, each a block that reads at 80 columns: a line of
    fixed-width fields, then its judge and metrics, then its metadata (wrapped at spaces)."""
    import datetime as dt

    from rich.padding import Padding

    with _open_existing(args.store) as store, piped_at_80(out):
        runs = store.runs()
        out.print(f"{_count(len(runs), 'run')} in {args.store}, newest first:", markup=False)
        for r in runs:
            n = store.conn.execute("SELECT COUNT(*) FROM samples WHERE run_id=?", (r.id,)).fetchone()[0]
            created = dt.datetime.fromtimestamp(r.created_at).strftime("%Y-%m-%d %H:%M")
            out.print(Text.assemble((r.id, "bold"), f"  {r.status:<11}  {n:>5} samples  created {created}"))
            cost = r.stats.get("cost") if isinstance(r.stats, dict) else None
            paid = f"; cost {format_usd(cost.get('usd'))}" if isinstance(cost, dict) else ""
            what = f"judge {r.judge or '–'}; {len(r.metric_keys)} metrics: {', '.join(r.metric_keys)}{paid}"
            out.print(Padding(Text(what), (0, 0, 0, 2)))
            if r.metadata:
                meta = " ".join(f"{k}={_fmt_meta(v)}" for k, v in r.metadata.items())
                out.print(Padding(Text(meta, style="dim"), (0, 0, 0, 2)))
    return EXIT_OK


def _fmt_meta(value: Any) -> str:
    return value if isinstance(value, str) else json.dumps(value, ensure_ascii=False)


def cmd_export(args: argparse.Namespace) -> int:
    with _open_existing(args.store) as store:
        run_id = store.resolve_run(args.run)
        target = args.out or f"{run_id}.{args.format}"
        with writing_output(target, "export file"):
            path = export_run(store, run_id, args.format, target)
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
        say(err, f"error: {exc}", markup=False)
        return EXIT_USAGE
    except KeyboardInterrupt:
        err.print("interrupted")
        return EXIT_INTERRUPTED

