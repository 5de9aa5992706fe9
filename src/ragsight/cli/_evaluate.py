"""Sub-command ``evaluate``: score a data set (or continue a run), print its summary, apply the
gate; ``--dry-run`` estimates the calls and dollars, ``--repeats`` measures the run-to-run spread."""

from __future__ import annotations

import argparse
import importlib.util
import json
import os
import signal
import warnings
from collections.abc import Sequence
from importlib import resources
from typing import Any

from rich.text import Text

from ..analyses import AnalysisSettings
from ..calls import format_limit, format_usd, parse_price_flags, prices_from_config
from ..embed import EmbedderSpec
from ..engine import Progress, ProgressDisplay
from ..errors import (
    BudgetExceededError,
    ConfigError,
    JudgeUnavailableError,
    MissingExtraError,
    RagsightError,
)
from ..judge import JudgeSpec, RetryPolicy
from ..report import count_noun as _count
from ..report import print_repeats
from ..result import EvaluationResult
from ..run import (
    RepeatsBudgetExceeded,
    RunInterrupted,
    RunOptions,
    aestimate,
    aevaluate,
    check_store_path,
    evaluate_repeats,
    new_run_id,
    run_sync,
)
from ..store import Store
from ._common import (
    DEFAULT_STORE,
    EXIT_BUDGET,
    EXIT_FAILED,
    EXIT_INTERRUPTED,
    EXIT_OK,
    EXIT_TERMINATED,
    EXIT_USAGE,
    checked_output,
    err,
    out,
    say,
    shell_command,
    show_warning,
)
from ._common import add_store as _add_store
from ._gate import Threshold, check_gate, check_resumed_gate, gate_metrics, gate_thresholds
from ._labels import aligned_settings
from ._rubrics import register_cli_rubrics
from ._summary import print_evidence_hint, print_summary
from ._tools_from import TOOLS_FROM_HELP, with_tools_from

__all__ = ["example_path", "register"]

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


def register(sub: Any) -> None:
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
    ev.add_argument("--tools-from", action="append", default=[], metavar="SPEC", help=TOOLS_FROM_HELP)
    ev.set_defaults(func=cmd_evaluate)


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


def _inputs(args: argparse.Namespace, data: Any) -> list[tuple[str, Any]]:
    """The files evaluate reads, which its --out must not replace (the store is checked apart)."""
    config = args.config or ("pyproject.toml" if os.path.isfile("pyproject.toml") else None)
    return [("the data file", data if isinstance(data, (str, os.PathLike)) else None),
            ("the --config file", config), ("the --alignment file", args.alignment),
            *(("a --rubric file", r) for r in args.rubric),
            *(("a --tools-from file", t) for t in args.tools_from if os.path.isfile(t))]


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
    _refuse_unused(args)
    if args.out:  # a missing folder, a folder or a read-only file is found now, not after the run
        checked_output(args.out, "--out file", store=args.store, reads=_inputs(args, data))
        if args.out.lower().endswith(".parquet"):
            for module in ("pandas", "pyarrow"):
                if importlib.util.find_spec(module) is None:
                    raise MissingExtraError("--out FILE.parquet", "parquet", module)
    data = with_tools_from(data, args.tools_from, args.resume, lambda t: say(err, t, markup=False))
    register_cli_rubrics(args.config, args.rubric)  # checked before any call; --metrics NAME finds them
    thresholds = gate_thresholds(args.fail_under, args.fail_over, args.config)
    if thresholds and args.repeats > 1:
        raise ConfigError("--fail-under/--fail-over (or the thresholds of the config file) gate one run; "
                          "leave out --repeats")
    metrics = _metric_specs(args.metrics)
    prices = {**prices_from_config(args.config), **parse_price_flags(args.price)}
    if args.max_cost is not None and not args.max_cost > 0:
        raise RagsightError(f"--max-cost must be a positive number of dollars, not {args.max_cost:g}")
    if not 0 <= args.threshold <= 1:  # NaN too: no P(Yes) would ever reach it
        raise ConfigError(f"--threshold must be a probability from 0 to 1, not {args.threshold:g}")
    if args.dry_run:
        with warnings.catch_warnings():  # what the data's reading guessed, as the run says it
            warnings.simplefilter("default")
            warnings.showwarning = show_warning
            return _dry_run(args, data, metrics, prices)
    if args.resume:
        _check_resume_gate(args.resume, args.store, thresholds)
    else:
        metrics, added = gate_metrics(metrics, thresholds)
        if added:
            err.print(f"The gate names {', '.join(added)}: evaluated besides the default metrics.",
                      markup=False)
    check_store_path(args.store)
    policy = RetryPolicy(max_attempts=args.max_retries + 1, call_timeout_s=args.timeout,
                         step_deadline_s=max(300.0, args.timeout * 3))
    settings = AnalysisSettings(explain=args.explain, support_threshold=args.threshold)
    if args.alignment:
        settings = aligned_settings(args.alignment, settings, metrics, notice=lambda t: say(err, t, markup=False))
    judge = JudgeSpec(args.judge, base_url=args.base_url, api_version=args.api_version,
                      concurrency=args.judge_concurrency, prices=prices)
    embedder = EmbedderSpec(args.embedder, base_url=args.embedder_base_url)

    def notice(text: str) -> None:
        say(err, text, markup=False)

    if args.repeats > 1:  # every option as a single run has it; the cost cap for all the runs together
        options = RunOptions(cache=False, concurrency=args.concurrency, settings=settings, policy=policy,
                             notice=notice, show_progress=False if args.quiet else None, backend=args.backend,
                             ray_address=args.ray_address, max_cost=args.max_cost)
        return _evaluate_repeats(args, data, metrics, judge, embedder, options)
    run_id = args.resume or new_run_id()
    progress = Progress()

    with warnings.catch_warnings():
        warnings.simplefilter("default")
        warnings.showwarning = show_warning
        try:
            # the store file is created only once the preflight passed (a path, not a Store)
            with ProgressDisplay(progress, "off" if args.quiet else None, console=err):
                result = run_sync(lambda: aevaluate(
                    data, metrics, store=args.store, resume=args.resume, metadata=_metadata(args.metadata),
                    run_id=None if args.resume else run_id, judge=judge, embedder=embedder,
                    options=RunOptions(cache=not args.no_cache, concurrency=args.concurrency,
                                       settings=settings, policy=policy, progress=progress, notice=notice,
                                       backend=args.backend, ray_address=args.ray_address,
                                       max_cost=args.max_cost),
                ), sigterm=True)
        except BudgetExceededError as stop:
            say(err, f"stopped before exceeding --max-cost {format_limit(stop.limit)}: {_spent(stop)}; "
                     f"{stop.done} of {stop.total} samples are saved in {args.store} (run "
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


def _spent(stop: BudgetExceededError) -> str:
    """What a stopped command spent, as the judge reported it, and the calls that reported nothing."""
    out = f"{format_usd(stop.spent)} spent by this command"
    if stop.unreported_calls:
        out += (f" (as the judge reported it; {_count(stop.unreported_calls, 'call')} cut off at the stop or "
                f"timed out reported no usage: up to {format_usd(stop.unreported)} more if the provider billed "
                f"{'it' if stop.unreported_calls == 1 else 'them'})")
    return out


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
            say(out, f"--max-cost {format_limit(args.max_cost)}: cannot be checked, the price is unknown",
                markup=False)
        elif usd > args.max_cost:
            say(out, Text(f"OVER BUDGET: the estimate {format_usd(usd)} is above --max-cost "
                          f"{format_limit(args.max_cost)}: the run would stop before its end", style="bold red"))
            return EXIT_BUDGET
        else:
            say(out, f"within --max-cost {format_limit(args.max_cost)}", markup=False)
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


def _failing_metric(result: EvaluationResult, thresholds: Sequence[Threshold]) -> str | None:
    """The first gated metric whose mean misses its threshold, else None."""
    for t in thresholds:
        s = result.summary.get(t.metric)
        if s is not None and s.mean is not None and not (s.mean >= t.value if t.kind == "under" else s.mean <= t.value):
            return t.metric
    return None


def _refuse_unused(args: argparse.Namespace) -> None:
    """An option the chosen mode cannot honour is refused before anything runs, never dropped."""
    if args.repeats > 1:
        # (--no-cache asks what repeated runs do anyway: they never read the cache)
        for given, flag, why in (
            (args.resume, "--resume", "repeated runs start afresh"),
            (args.out, "--out", "it writes one run's results; write each repeated run's with "
                                "'ragsight export RUN --out FILE'"),
        ):
            if given:
                raise ConfigError(f"{flag} cannot be combined with --repeats: {why}; leave out one of them")
    elif args.temperature is not None:
        raise ConfigError("--temperature sets the judge's sampling temperature of --repeats N; give --repeats "
                          "2 or more, or leave out --temperature")


def _evaluate_repeats(args: argparse.Namespace, data: Any, metrics: str | None, judge: JudgeSpec,
                      embedder: EmbedderSpec, options: RunOptions) -> int:
    try:
        with Store(args.store) as store:
            report = run_sync(lambda: evaluate_repeats(
                data, args.repeats, temperature=args.temperature, metrics=metrics, judge=judge, embedder=embedder,
                store=store, metadata=_metadata(args.metadata), options=options,
            ), sigterm=True)
    except RepeatsBudgetExceeded as stop:
        done = ", ".join(stop.finished) or "none"
        stopped = (f"; repeated run {stop.repeat} ({stop.run_id}) stopped with {stop.done} of {stop.total} "
                   "samples saved" if stop.run_id else "")
        say(err, f"stopped before exceeding --max-cost {format_limit(stop.limit)} for all {stop.repeats} repeated "
                 f"runs: {_spent(stop)}; {len(stop.finished)} of {stop.repeats} "
                 f"runs finished (in {args.store}: {done}){stopped}. No spread is reported from an unfinished "
                 "set of runs; give a larger --max-cost (--dry-run estimates one run).", markup=False)
        return EXIT_BUDGET
    print_repeats(report, out)
    bad = [p for r in report.results for p in r.problems if not p.message.startswith("warning:")]
    if bad and not args.allow_bad_rows:
        say(err, f"error: input rows could not be used and were not evaluated ({len(bad)} in all the runs); "
                 f"exit status {EXIT_FAILED}. Fix the rows, or pass --allow-bad-rows to accept the runs "
                 "without them.", markup=False)
        return EXIT_FAILED
    return EXIT_OK
