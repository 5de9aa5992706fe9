"""Sub-commands ``report``, ``compare`` and ``calibrate``."""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path
from typing import Any

from ..errors import ConfigError, StoreError
from ..report import (
    calibrate,
    calibrate_pairs,
    compare,
    is_pair_labels,
    load_runs,
    print_calibration,
    print_comparison,
    print_pair_calibration,
    render_report,
    save_html,
)
from ..result import load_result
from ..store import Store
from ._common import EXIT_OK, checked_output, out, piped_at_80, writing_output
from ._common import add_store as _add_store
from ._summary import print_summary

__all__ = ["register"]

REPORT_EPILOG = """examples:
  ragsight report last --out report.html
  ragsight report 20260101-120000-ab12cd 20260102-090000-cd34ef --out compare.html
The file is self-contained: it opens offline and reads with JavaScript off."""

COMPARE_EPILOG = """examples:
  ragsight compare RUN_A RUN_B
  ragsight compare baseline-run run-2 run-3 --alpha 0.01
The first run is the baseline; every other run is compared with it on the samples both scored.
p-values are Holm-adjusted over all the comparisons shown."""

CALIBRATE_EPILOG = """examples:
  ragsight calibrate last --label correct       # the labels in the store ('ragsight labels import')
  ragsight calibrate last --labels labels.jsonl --label correct
  ragsight calibrate last --labels labels.csv --label correct --metric faithfulness --threshold 0.7
  ragsight calibrate last --labels grades.csv --label grade --label-threshold 4 --json
  ragsight calibrate last --labels pairs.jsonl --label overall
The labels file (.jsonl, .json or .csv) has an 'id' column (the sample id) and the label field:
true/false, yes/no, correct/wrong, 1/0, or a graded number. A file whose rows have 'id_1' and
'id_2' holds preferences between two samples (positive: the second is better; a list of numbers
for several annotators), correlated with each metric's difference as RAGChecker does."""


POOR_PAIRING_HELP = (
    "compare even when a run pairs fewer than 80%% of its samples with the baseline "
    "(the differences then speak for the paired part only)"
)


def _open_store(path: str) -> Store:
    if path != ":memory:" and not Path(path).exists():
        raise StoreError(f"no store at {path}; run 'ragsight evaluate' first or pass --store PATH")
    return Store(path, create=False)


def _floats_pair(text: str, flag: str) -> tuple[float, float]:
    parts = [p.strip() for p in text.split(",")]
    try:
        values = [float(p) for p in parts]
    except ValueError:
        raise ConfigError(
            f"{flag} takes a number or two separated by a comma, not '{text}'"
        ) from None
    if len(values) == 1:
        return values[0], values[0]
    if len(values) == 2:
        return values[0], values[1]
    raise ConfigError(f"{flag} takes a number or two separated by a comma, not '{text}'")


def cmd_report(args: argparse.Namespace) -> int:
    path = checked_output(args.out, "report file", store=args.store)  # before the work, not after it
    with _open_store(args.store) as store:
        runs = load_runs(store, args.runs)
    text = render_report(runs, title=args.title, allow_poor_pairing=args.allow_poor_pairing)
    with writing_output(path, "report file"):
        save_html(text, path)
    for run in runs:
        print_summary(run.result)
    what = "comparison of " + ", ".join(r.run_id for r in runs) if len(runs) > 1 else runs[0].run_id
    out.print(f"Report ({what}) written to {path} ({len(text.encode()) // 1024 + 1} KB).")
    return EXIT_OK


def cmd_compare(args: argparse.Namespace) -> int:

    if len(args.runs) < 2:
        raise ConfigError("compare needs at least two runs: ragsight compare RUN_A RUN_B")
    with _open_store(args.store) as store:
        runs = load_runs(store, args.runs)
    cmp = compare(runs, alpha=args.alpha, seed=args.seed, allow_poor_pairing=args.allow_poor_pairing)
    with piped_at_80(out):
        print_comparison(cmp, out)
    return EXIT_OK


def cmd_calibrate(args: argparse.Namespace) -> int:

    metrics = [m.strip() for spec in args.metric or [] for m in spec.split(",") if m.strip()]
    pair: tuple[str, str] | None = None
    if args.pair:
        names = [p.strip() for p in args.pair.split(",")]
        if len(names) != 2 or not all(names):
            raise ConfigError(
                f"--pair takes two metric names separated by a comma, not '{args.pair}'"
            )
        pair = (names[0], names[1])
    with _open_store(args.store) as store:
        result = load_result(store, args.run)
    if args.labels is not None and is_pair_labels(args.labels):  # rows with id_1 and id_2: preferences between two samples
        pairs = calibrate_pairs(result, args.labels, args.label, metrics or None)
        if args.json:
            sys.stdout.write(json.dumps(pairs.to_dict(), indent=2, ensure_ascii=False) + "\n")
        else:
            print_pair_calibration(pairs, out)
        return EXIT_OK
    report = calibrate(
        result,
        args.labels,
        args.label,
        metrics or None,
        threshold=args.threshold,
        pair=pair,
        t_high=_floats_pair(args.t_high, "--t-high"),
        t_low=_floats_pair(args.t_low, "--t-low"),
        label_threshold=args.label_threshold,
        allow_poor_pairing=args.allow_poor_pairing,
    )
    if args.json:
        sys.stdout.write(json.dumps(report.to_dict(), indent=2, ensure_ascii=False) + "\n")
    else:
        print_calibration(report, out)
    return EXIT_OK


def register(subparsers: Any) -> None:
    """Add ``report``, ``compare`` and ``calibrate`` to the ragsight command line."""

    raw = argparse.RawDescriptionHelpFormatter
    rp = subparsers.add_parser(
        "report",
        help="write a self-contained HTML report of one or more runs",
        epilog=REPORT_EPILOG,
        formatter_class=raw,
    )
    rp.add_argument("runs", nargs="+", metavar="RUN", help="run ids, id prefixes or 'last'")
    rp.add_argument("--out", default="report.html", help="output file (default: report.html)")
    rp.add_argument("--title", help="the report's title")
    rp.add_argument("--allow-poor-pairing", action="store_true", help=POOR_PAIRING_HELP)
    _add_store(rp)
    rp.set_defaults(func=cmd_report)

    cp = subparsers.add_parser(
        "compare",
        help="compare runs: configurations, paired differences, significance",
        epilog=COMPARE_EPILOG,
        formatter_class=raw,
    )
    cp.add_argument(
        "runs", nargs="+", metavar="RUN", help="two or more runs; the first is the baseline"
    )
    cp.add_argument(
        "--alpha",
        type=float,
        default=0.05,
        help="significance level for the verdicts, after Holm adjustment (default 0.05)",
    )
    cp.add_argument(
        "--seed", type=int, default=0, help="seed of the bootstrap and permutation draws"
    )
    cp.add_argument("--allow-poor-pairing", action="store_true", help=POOR_PAIRING_HELP)
    _add_store(cp)
    cp.set_defaults(func=cmd_compare)

    ca = subparsers.add_parser(
        "calibrate",
        help="agreement of a run's scores with human labels",
        epilog=CALIBRATE_EPILOG,
        formatter_class=raw,
    )
    ca.add_argument("run", help="run id or 'last'")
    ca.add_argument(
        "--labels", metavar="FILE",
        help="labels file: .jsonl, .json or .csv (default: the labels kept in the store)",
    )
    ca.add_argument("--label", required=True, metavar="FIELD",
                    help="the label field (in the file, or of the store's labels)")
    ca.add_argument(
        "--metric",
        action="append",
        metavar="M",
        help="metric to check (repeatable or comma-separated; default: all)",
    )
    ca.add_argument(
        "--threshold",
        type=float,
        default=0.5,
        help="score >= THRESHOLD predicts label 1 (default 0.5)",
    )
    ca.add_argument(
        "--pair",
        metavar="M1,M2",
        help="metrics of the concordance table (default faithfulness,factual_correctness)",
    )
    ca.add_argument(
        "--t-high",
        default="0.7",
        metavar="T[,T2]",
        help="concordance: P(label 1 | m > T) (default 0.7)",
    )
    ca.add_argument(
        "--t-low",
        default="0.3",
        metavar="T[,T2]",
        help="concordance: P(label 0 | m < T) (default 0.3)",
    )
    ca.add_argument(
        "--label-threshold", type=float, metavar="X", help="graded labels: label >= X counts as 1"
    )
    ca.add_argument(
        "--allow-poor-pairing",
        action="store_true",
        help="measure even when fewer than 80%% of the labels pair with a sample of the run",
    )
    ca.add_argument("--json", action="store_true", help="print the report as JSON")
    _add_store(ca)
    ca.set_defaults(func=cmd_calibrate)
