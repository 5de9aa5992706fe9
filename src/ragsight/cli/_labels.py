"""Sub-commands ``labels`` (human labels in and out of the store: ``import``, ``export``) and
``align`` (fit a metric's alignment from them), and ``evaluate --alignment``'s settings."""

from __future__ import annotations

import argparse
from collections.abc import Callable
from contextlib import nullcontext
from pathlib import Path
from typing import Any

from rich.text import Text

from ..analyses import AnalysisSettings
from ..errors import ConfigError
from ..report import Alignment, align, export_labels, import_labels, load_alignment
from ..store import Store
from ._common import EXIT_FAILED, EXIT_OK, checked_output, err, out, writing_output
from ._common import add_store as _add_store

__all__ = ["aligned_settings", "register"]

ALIGN_EPILOG = """examples:
  ragsight align last --metric faithfulness --label correct --out faithfulness.align.json
  ragsight align last --metric faithfulness --label correct --examples 0     # the threshold only
  ragsight evaluate data.jsonl --alignment faithfulness.align.json
Fits, from the store's labels, the claim verdicts' threshold and worked examples chosen from the
claims where the judge and people disagreed, and measures agreement before and after on labels
not used for fitting (k-fold by sample). An alignment that does not improve there is not saved
(exit 1)."""

LABELS_EPILOG = """examples:
  ragsight labels import labels.csv --run last --label correct
  ragsight labels import grades.jsonl --run last --label grade --metric answer_correctness --who ana
  ragsight labels export --run last --out labels.jsonl
  ragsight labels import labels.jsonl --run last --label human      # an exported file reads back
A label file (.jsonl, .json or .csv) has one row per label: the sample's 'id' (or its 'question'),
and the label in the column FIELD (true/false, yes/no, 1/0 or a number). Optional columns:
'metric' (else the label judges the whole sample, for every metric), 'claim' (a claim's text:
a label of that claim's verdict), 'who', 'when', 'note'. Labels are kept in the store, keyed on the
sample's content, so they also apply to later runs of the same data."""


def _open(path: str) -> Store:
    if path != ":memory:" and not Path(path).exists():
        raise ConfigError(f"no store at {path}; give --store PATH (the file 'ragsight evaluate' wrote)")
    return Store(path, create=False)


def cmd_import(args: argparse.Namespace) -> int:
    with _open(args.store) as store:
        done = import_labels(store, args.file, args.label, args.run, metric=args.metric, who=args.who)
    twice = (f"; {done.duplicates} row(s) gave a label again (same sample, metric, claim and person): the "
             "last of each was kept" if done.duplicates else "")
    out.print(Text(f"{done.written} label(s) '{done.field}' from {done.source} written to {args.store} "
                   f"({done.rows} row(s) read{twice})."))
    if done.skipped:
        err.print(Text(f"WARNING: {len(done.skipped)} row(s) left out:", style="bold red"))
        for n, why in done.skipped[:10]:
            err.print(Text(f"  row {n}: {why}"))
        if len(done.skipped) > 10:
            err.print(Text(f"  and {len(done.skipped) - 10} more"))
    return EXIT_OK


def cmd_export(args: argparse.Namespace) -> int:
    if args.out:
        checked_output(args.out, "labels file", store=args.store)
    with _open(args.store) as store, writing_output(args.out, "labels file") if args.out else nullcontext():
        n = export_labels(store, args.out, args.run)
    if args.out:
        out.print(Text(f"{n} label(s) written to {args.out}"))
    return EXIT_OK


def _print_alignment(a: Alignment) -> None:
    def pct(x: float | None) -> str:
        return "–" if x is None else f"{x:.3f}"

    out.print(Text(f"Alignment of {a.metric} on run {a.run_id}, labels '{a.label_field}': {a.n_claims} labelled "
                   f"claim(s) on {a.n_samples} sample(s), {a.folds}-fold cross-validation by sample."))
    out.print(Text(f"held-out agreement before: kappa {pct(a.before.kappa)}, accuracy {pct(a.before.accuracy)} "
                   f"({a.before.n} claims)"))
    out.print(Text(f"held-out agreement after:  kappa {pct(a.after.kappa)}, accuracy {pct(a.after.accuracy)} "
                   f"({a.after.n} claims)"))
    thr = (f"threshold {a.base_threshold:g} -> {a.threshold:.3f}" if a.threshold is not None
           else f"threshold {a.base_threshold:g} (not fitted)")
    out.print(Text(f"fitted on all the labels: {thr}; {len(a.examples)} worked example(s); prompt variant "
                   f"{a.tag}"))
    for note in a.notes:
        out.print(Text(f"note: {note}", style="dim"))


def cmd_align(args: argparse.Namespace) -> int:
    if args.examples < 0 or args.folds < 2:
        raise ConfigError("--examples must be 0 or more and --folds at least 2")
    if args.out:  # the alignment is saved after its judge calls: the path is checked first
        checked_output(args.out, "alignment file", store=args.store)
    with _open(args.store) as store:
        run_id = store.resolve_run(args.run)
        judge = (args.judge or store.run(run_id).config.get("judge_spec")) if args.examples else None
        a = align(store, run_id, args.metric, args.label, judge=judge, examples=args.examples, folds=args.folds,
                  base_url=args.base_url)
    _print_alignment(a)
    if not a.improved:
        err.print(Text(f"NOT SAVED: {a.reason}. An alignment must agree better with the labels it was not "
                       "fitted on; label more claims, or keep the metric as it is.", style="bold red"))
        return EXIT_FAILED
    if args.out:
        with writing_output(args.out, "alignment file", "; run the command again with another --out"):
            a.save(args.out)
        out.print(Text(f"Alignment saved to {args.out}; use it with "
                       f"'ragsight evaluate DATA --alignment {args.out}'."))
    else:
        out.print(Text("(not saved: give --out FILE to keep it)"))
    return EXIT_OK


def aligned_settings(path: str, settings: AnalysisSettings, metrics: str | None,
                     notice: Callable[[str], None]) -> AnalysisSettings:
    """``evaluate --alignment FILE``: the settings with the alignment's threshold and examples."""
    a = load_alignment(path)
    if metrics is not None and a.metric not in metrics:
        notice(f"The alignment was fitted for {a.metric}, which --metrics does not name; it changes the "
               "claim verdicts of the metrics that have some.")
    notice(f"Alignment {a.name} ({Path(path).name}): claim threshold "
           f"{a.threshold if a.threshold is not None else settings.support_threshold:g}, "
           f"{len(a.examples)} worked example(s) in the claim-verdict prompts.")
    return a.settings(settings)


def register(subparsers: Any) -> None:
    """Add ``labels import`` and ``labels export`` to the ragsight command line."""
    raw = argparse.RawDescriptionHelpFormatter
    lp = subparsers.add_parser("labels", help="import or export human labels (kept in the store)",
                               epilog=LABELS_EPILOG, formatter_class=raw)
    sub = lp.add_subparsers(dest="labels_command", metavar="{import,export}", required=True)
    im = sub.add_parser("import", help="read a label file into the store", epilog=LABELS_EPILOG,
                        formatter_class=raw)
    im.add_argument("file", metavar="FILE", help="labels: .jsonl, .json or .csv")
    im.add_argument("--run", metavar="RUN",
                    help="the run whose samples the rows name by id or question (id, prefix or 'last')")
    im.add_argument("--label", required=True, metavar="FIELD", help="the label column (and the labels' name)")
    im.add_argument("--metric", metavar="M", help="the metric of rows without a 'metric' column "
                    "(default: the whole sample, every metric)")
    im.add_argument("--who", help="who gave the labels, for rows without a 'who' column")
    _add_store(im)
    im.set_defaults(func=cmd_import)
    ex = sub.add_parser("export", help="write the store's labels as JSONL", epilog=LABELS_EPILOG,
                        formatter_class=raw)
    ex.add_argument("--run", metavar="RUN", help="only the labels of this run's samples, named by its ids")
    ex.add_argument("--out", metavar="FILE", help="output file (default: standard output)")
    _add_store(ex)
    ex.set_defaults(func=cmd_export)

    al = subparsers.add_parser("align", help="fit a metric's claim verdicts to the stored labels (threshold, "
                               "worked examples), checked on held-out labels", epilog=ALIGN_EPILOG,
                               formatter_class=raw)
    al.add_argument("run", metavar="RUN", help="the run whose labelled samples to fit on (id, prefix or 'last')")
    al.add_argument("--metric", required=True, metavar="M", help="a claim-based metric, e.g. faithfulness")
    al.add_argument("--label", required=True, metavar="FIELD", help="the labels to fit to")
    al.add_argument("--out", metavar="FILE", help="where to save the alignment (only when it improves)")
    al.add_argument("--examples", type=int, default=4, metavar="N",
                    help="worked examples to fit (default 4; 0: the threshold only, no judge call)")
    al.add_argument("--folds", type=int, default=5, metavar="K", help="cross-validation folds (default 5)")
    al.add_argument("--judge", help="the judge that re-judges held-out claims with the examples "
                    "(default: the run's)")
    al.add_argument("--base-url", help="the server the judge is asked again at (default: the one the run "
                    "stored for its judge; a run that stored none needs this flag)")
    _add_store(al)
    al.set_defaults(func=cmd_align)
