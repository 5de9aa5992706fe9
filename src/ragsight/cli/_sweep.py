"""Sub-command ``sweep``: run a pipeline in many configurations on one test set; ``sweep report``
reads the result."""

from __future__ import annotations

import argparse
import asyncio
import os
import time
import warnings
from typing import Any

from rich.console import Console

from .._terminal import guard
from ..errors import ConfigError, InputError
from ..store import Store
from ..sweep import (
    ConfigRun,
    SweepSpec,
    asweep,
    build_report,
    example_spec,
    load_sweep,
    plan_sweep,
    print_sweep_report,
    write_sweep_html,
)
from ..testset import read_testset
from ._common import (
    EXIT_FAILED,
    EXIT_INTERRUPTED,
    EXIT_OK,
    add_store,
    checked_output,
    shell_command,
    show_warning,
    writing_output,
)

__all__ = ["register"]

err = guard(Console(stderr=True, highlight=False, soft_wrap=True))
out = guard(Console(highlight=False, width=80))

EPILOG = """examples:
  ragsight sweep --example                       # the bundled handbook, 8 configurations
  ragsight sweep --example --dry-run             # what it would cost, without running it
  ragsight sweep handbook.toml --report sweep.html
  ragsight sweep mine.toml --target my_rag:answer        # fn(question, **config)
  ragsight sweep report                          # the most recent sweep in the store
  ragsight sweep report handbook --html sweep.html --quality span_recall
A sweep file (TOML or YAML) names the documents, the test set, the grid or list of
configurations, the baseline and the metrics; see docs/sweep.md. Running a sweep again reuses
every finished configuration, continues an interrupted one, and runs only what is new."""


def register(sub: Any) -> None:
    p = sub.add_parser("sweep", help="evaluate a RAG pipeline in many configurations and find the best one",
                       epilog=EPILOG, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("spec", nargs="?", help="the sweep file (.toml, .yaml), or 'report'")
    p.add_argument("name", nargs="?", help="with 'report': the sweep's name or file (default: the latest)")
    p.add_argument("--example", action="store_true", help="sweep the bundled handbook example")
    p.add_argument("--dry-run", action="store_true",
                   help="print the configurations, questions, calls and tokens expected; run nothing")
    p.add_argument("--target", help="sweep this target instead of the file's pipeline: module:function "
                                    "(called as fn(question, **config)), http(s)://URL or cmd:COMMAND")
    p.add_argument("--judge", help="judge for the judge metrics (default: the file's, else the embedded one)")
    p.add_argument("--embedder", help="embedder for the judge metrics (default: the file's, else local)")
    p.add_argument("--judge-questions", type=int, metavar="N",
                   help="judge metrics on the first N questions of each kind (default: the file's, else all)")
    p.add_argument("--backend", choices=["local", "ray"], default="local",
                   help="where each configuration's samples are evaluated (see docs/scale.md)")
    p.add_argument("--ray-address", metavar="ADDRESS", help="Ray cluster for --backend ray")
    p.add_argument("--report", "--html", dest="html", metavar="FILE.html",
                   help="write the HTML report here (default for --example: ragsight-sweep-example.html)")
    p.add_argument("--quality", metavar="METRIC",
                   help="the trade-off's quality axis (default: the overall score)")
    p.add_argument("--quiet", action="store_true", help="no per-configuration progress lines")
    add_store(p)
    p.set_defaults(func=cmd_sweep)


def _spec(args: argparse.Namespace) -> SweepSpec:
    if args.example:
        data = example_spec()
        if args.judge_questions is not None:
            data["judge_questions"] = args.judge_questions
        return load_sweep(data)
    if not args.spec:
        raise ConfigError("give a sweep file (ragsight sweep SWEEP.toml), or --example")
    spec = load_sweep(args.spec)
    if args.judge_questions is not None:
        spec = load_sweep(SweepSpec(**{**spec.__dict__, "judge_questions": args.judge_questions}))
    if args.target:
        spec = SweepSpec(**{**spec.__dict__, "target": args.target})
    return spec


def _report(args: argparse.Namespace) -> int:
    name = args.name
    if name and (name.endswith((".toml", ".yaml", ".yml")) or os.path.isfile(name)):
        name = load_sweep(name).name
    if args.example and not name:
        name = example_spec()["name"]
    if args.html:
        checked_output(args.html, "--report file", store=args.store)
    with Store(args.store) as st:
        rep = build_report(st, name, quality=args.quality)
    print_sweep_report(rep, out)
    if args.html:
        with writing_output(args.html, "--report file"):
            path = write_sweep_html(rep, args.html)
        err.print(f"HTML report: {path}")
    return EXIT_OK


def cmd_sweep(args: argparse.Namespace) -> int:
    if args.spec == "report":
        return _report(args)
    spec = _spec(args)
    if args.dry_run:
        return _dry_run(spec, args)
    html = args.html or ("ragsight-sweep-example.html" if args.example else None)
    if html:  # checked before the sweep pays for anything, not after it ran
        checked_output(html, "--report file", store=args.store, reads=[
            ("the sweep file", None if args.example else args.spec),
            ("the test set", spec.path(spec.testset) if spec.testset else None)])

    def progress(event: str, run: ConfigRun, i: int, total: int) -> None:
        if args.quiet:
            return
        label = run.config.label
        if event == "start":
            err.print(f"[{i + 1}/{total}] {label} ...")
        else:
            how = {"reused": "already in the store", "completed": "done"}.get(run.status, run.status)
            extra = ""
            if run.status != "reused":
                calls = f"{run.generator_calls} generator calls" if spec.reference else f"{run.target_calls} target calls"
                extra = f": {run.answered} answered, {run.failed} failed, {calls}, {run.seconds:.1f} s"
            err.print(f"[{i + 1}/{total}] {label}: {how}{extra}")

    t0 = time.monotonic()
    with warnings.catch_warnings():
        warnings.simplefilter("once")
        warnings.showwarning = show_warning
        try:
            result = asyncio.run(asweep(spec, store=args.store, judge=args.judge, embedder=args.embedder,
                                        backend=args.backend, ray_address=args.ray_address,
                                        progress=progress, notice=lambda m: err.print(m)))
        except KeyboardInterrupt:
            again = shell_command(["ragsight", "sweep", *(["--example"] if args.example else [args.spec]),
                                   "--store", args.store])
            err.print(f"interrupted: the finished configurations and samples are saved in {args.store}. "
                      "The same command continues the sweep (finished work is reused):", markup=False)
            err.print(f"  {again}", soft_wrap=True, markup=False)
            return EXIT_INTERRUPTED
    err.print(f"sweep '{spec.name}': {len(result.runs)} configurations in {time.monotonic() - t0:.1f} s; "
              f"store {result.store_path}")
    with Store(args.store) as st:
        rep = build_report(st, spec.name, run_ids=result.run_ids, quality=args.quality,
                           baseline=result.runs[spec.baseline_index].run_id)
    print_sweep_report(rep, out)
    if html:
        again = shell_command(["ragsight", "sweep", "report", spec.name, "--store", args.store, "--html", "FILE"])
        with writing_output(html, "--report file", f". The sweep is saved; write its report with: {again}"):
            path = write_sweep_html(rep, html)
        err.print(f"HTML report: {path}")
    dead = [r for r in result.runs if r.status != "reused" and r.answered == 0 and r.failed > 0]
    if dead:
        first = next(iter(dead[0].errors), "") if dead[0].errors else ""
        err.print(f"error: the system under test failed on every question of {len(dead)} of "
                  f"{len(result.runs)} configuration(s) ({', '.join(r.config.label for r in dead[:5])}"
                  f"{', ...' if len(dead) > 5 else ''}){f': {first}' if first else ''} "
                  f"(exit status {EXIT_FAILED})", markup=False)
        return EXIT_FAILED
    return EXIT_OK


def _dry_run(spec: SweepSpec, args: argparse.Namespace) -> int:
    for doc in spec.documents:  # the run would stop here: so does its rehearsal
        if not os.path.exists(spec.path(doc)):
            raise InputError(f"{spec.path(doc)}: no such file or folder (the sweep's documents).")
    path = spec.path(spec.testset) if spec.testset else None
    if path is not None and not os.path.isfile(path) and spec.generate is None:
        # the run would stop here (nothing says how to generate one): so does its rehearsal
        raise InputError(f"{path}: no such test set; give an existing file or [generate] settings")
    if path is None or not os.path.isfile(path):
        size = spec.generate.size if spec.generate else 0
        out.print(f"The test set {path} does not exist yet: it will be generated first ({size} questions "
                  "from the documents); run 'ragsight generate' yourself to see that step's cost.")
        return EXIT_OK
    rows = read_testset(path)
    with Store(args.store) as st:
        plan = plan_sweep(spec, rows, st, judge=args.judge, embedder=args.embedder)
    out.print(f"Sweep '{spec.name}' (dry run: nothing is called)")
    for line in plan.lines():
        out.print("  " + line, markup=False)
    for c in spec.configurations:
        tag = "  (baseline)" if c is spec.baseline else ""
        out.print(f"    {c.label}{tag}", markup=False)
    return EXIT_OK
