"""Sub-command ``export``: a run's per-sample results as JSONL, CSV or Parquet."""

from __future__ import annotations

import argparse
from typing import Any

from ..result import load_result
from ..store import FORMATS
from ._common import EXIT_OK, checked_output, out, writing_output
from ._common import add_store as _add_store
from ._common import open_existing as _open_existing

__all__ = ["register"]


def register(sub: Any) -> None:
    ex = sub.add_parser("export", help="export a run's per-sample results",
                        epilog="examples:\n  ragsight export last --format csv --out results.csv",
                        formatter_class=argparse.RawDescriptionHelpFormatter)
    ex.add_argument("run", help="run id or 'last'")
    ex.add_argument("--format", choices=FORMATS, default="jsonl")
    ex.add_argument("--out", help="output file (default: <run id>.<format>)")
    _add_store(ex)
    ex.set_defaults(func=cmd_export)


def cmd_export(args: argparse.Namespace) -> int:
    """Write the run's rows through ``EvaluationResult.write``, as ``evaluate --out`` writes them."""
    with _open_existing(args.store) as store:
        run_id = store.resolve_run(args.run)
        target = args.out or f"{run_id}.{args.format}"
        path = checked_output(target, "export file", store=args.store)
        result = load_result(store, run_id)
        try:
            with writing_output(target, "export file"):
                result.write(path, args.format)
        finally:
            result.close()
    out.print(f"wrote {path}")
    return EXIT_OK
