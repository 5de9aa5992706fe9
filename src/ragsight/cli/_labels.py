"""Sub-command ``labels``: human labels in and out of the store (``import``, ``export``)."""

from __future__ import annotations

import argparse
from pathlib import Path
from typing import Any

from rich.text import Text

from ..errors import ConfigError
from ..report import export_labels, import_labels
from ..store import Store
from ._common import EXIT_OK, err, out
from ._common import add_store as _add_store

__all__ = ["register"]

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
    return Store(path)


def cmd_import(args: argparse.Namespace) -> int:
    with _open(args.store) as store:
        done = import_labels(store, args.file, args.label, args.run, metric=args.metric, who=args.who)
    out.print(Text(f"{done.written} label(s) '{done.field}' from {done.source} written to {args.store} "
                   f"({done.rows} row(s) read)."))
    if done.skipped:
        err.print(Text(f"WARNING: {len(done.skipped)} row(s) left out:", style="bold red"))
        for n, why in done.skipped[:10]:
            err.print(Text(f"  row {n}: {why}"))
        if len(done.skipped) > 10:
            err.print(Text(f"  and {len(done.skipped) - 10} more"))
    return EXIT_OK


def cmd_export(args: argparse.Namespace) -> int:
    with _open(args.store) as store:
        n = export_labels(store, args.out, args.run)
    if args.out:
        out.print(Text(f"{n} label(s) written to {args.out}"))
    return EXIT_OK


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
