"""Sub-command ``import-traces``: production traces to a data set ``evaluate`` reads."""

from __future__ import annotations

import argparse
from pathlib import Path
from typing import Any

from rich.console import Console

from .._terminal import guard
from ..errors import InputError
from ..integrations import TRACE_FORMATS, import_traces
from ._common import EXIT_OK, EXIT_USAGE

__all__ = ["register"]

err = guard(Console(stderr=True, highlight=False, soft_wrap=True))
out = guard(Console(highlight=False, soft_wrap=True))

EPILOG = """examples:
  ragsight import-traces spans.jsonl --out samples.jsonl
  ragsight import-traces otlp-export.json                  (writes otlp-export.samples.jsonl)
  ragsight import-traces langfuse-traces.json --format langfuse
  ragsight import-traces spans.parquet                     (a Phoenix spans DataFrame, df.to_parquet)
then: ragsight evaluate samples.jsonl
reads: OpenTelemetry spans in the OpenInference conventions (OTLP JSON as the file exporter,
Phoenix, Arize and OpenLLMetry write it; or one span per line; or a Phoenix spans DataFrame
saved as Parquet) and Langfuse trace exports.
One sample per trace: question, retrieved documents (text, id, score), answer, latency; the
trace and span ids go to the sample's metadata."""

_FORMAT_NAMES = {"otlp": "OTLP JSON", "spans": "OpenInference spans", "langfuse": "Langfuse export"}


def register(sub: Any) -> None:
    p = sub.add_parser("import-traces", help="turn OpenTelemetry/OpenInference or Langfuse traces into samples",
                       epilog=EPILOG, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("file", help="the trace export: .json, .jsonl or .parquet")
    p.add_argument("--out", help="the samples file to write (default: FILE's name with .samples.jsonl)")
    p.add_argument("--format", choices=TRACE_FORMATS, default="auto",
                   help="the export's format (default: recognised from its fields)")
    p.set_defaults(func=cmd_import_traces)


def _plural(n: int, word: str) -> str:
    return f"{n} {word}" if n == 1 else f"{n} {word}s"


def cmd_import_traces(args: argparse.Namespace) -> int:
    src = Path(args.file)
    target = Path(args.out) if args.out else src.with_name(src.name.split(".")[0] + ".samples.jsonl")
    if target.resolve() == src.resolve():
        raise InputError(f"--out {target} is the trace file itself; give another name")
    result = import_traces(src, args.format)
    out.print(f"Read {_plural(result.traces, 'trace')} from {src} ({_FORMAT_NAMES[result.format]}).",
              markup=False)
    skipped = sum(result.skipped.values())
    if skipped:
        out.print(f"Skipped {_plural(skipped, 'trace')}:", markup=False)
        for reason, n in result.skipped.most_common():
            out.print(f"  {n} x {reason}", markup=False)
    if result.problems:
        err.print(f"Problems ({len(result.problems)}):", markup=False)
        for problem in result.problems[:50]:
            err.print(f"  {problem}", markup=False)
        if len(result.problems) > 50:
            err.print(f"  ... and {len(result.problems) - 50} more", markup=False)
    if not result.rows:
        err.print("error: no trace became a sample; nothing written.", markup=False)
        return EXIT_USAGE
    result.write_jsonl(target)
    out.print(f"{_plural(len(result.rows), 'sample')} written to {target}.", markup=False)
    if result.conversations:
        out.print(f"  {_plural(result.conversations, 'conversation')} among them: the traces of one session, "
                  "each trace a turn.", markup=False)
    out.print(f"Next: ragsight evaluate {target}", markup=False)
    return EXIT_OK
