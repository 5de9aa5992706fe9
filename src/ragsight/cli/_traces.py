"""Sub-command ``import-traces``: production traces to a data set ``evaluate`` reads."""

from __future__ import annotations

import argparse
import os
import stat
from pathlib import Path
from typing import Any

from rich.console import Console

from .._terminal import guard
from ..dataset import check_writable_target
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

# a name for the file's layout, not its conventions: OpenInference, OpenLLMetry and Langfuse spans
# all come as OTLP JSON or as span records (one a line, or a spans DataFrame)
_FORMAT_NAMES = {"otlp": "OTLP JSON", "spans": "span records", "langfuse": "Langfuse export"}


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


def _shown(path: Path | str) -> str:
    # a file name that is not UTF-8 (its bytes escaped as lone surrogates) printed readably
    return str(path).encode("utf-8", "replace").decode("utf-8")


def _check_target(target: Path, src: Path, given: bool) -> None:
    """Refuse, before reading anything, a samples file that cannot be written: its folder
    missing, not a folder or not writable, the name a folder or another kind of file (a device,
    a pipe: it would be replaced by a plain file), or the trace file itself."""
    what = "--out file" if given else "samples file (FILE's name with .samples.jsonl; choose one with --out)"
    try:
        check_writable_target(target, what)
    except OSError as exc:
        raise InputError(_shown(str(exc))) from None
    folder = target.parent if str(target.parent) else Path(".")
    if not os.access(folder, os.W_OK | os.X_OK):
        raise InputError(f"the {what} {_shown(target)} cannot be written: no permission to write in "
                         f"{_shown(folder)}")
    try:
        info = target.stat()
    except FileNotFoundError:
        return
    except OSError as exc:
        raise InputError(f"the {what} {_shown(target)} cannot be checked ({exc.strerror})") from None
    if not stat.S_ISREG(info.st_mode):
        raise InputError(f"the {what} {_shown(target)} exists and is not a regular file (a device, a pipe "
                         "or a socket); give a file name")
    if src.exists() and os.path.samefile(target, src):
        raise InputError(f"--out {_shown(target)} is the trace file itself; give another name")


def cmd_import_traces(args: argparse.Namespace) -> int:
    src = Path(args.file)
    if args.out is not None and not args.out.strip():
        raise InputError("--out is empty; give the samples file to write (e.g. --out samples.jsonl)")
    target = Path(args.out) if args.out is not None else src.with_name(src.name.split(".")[0] + ".samples.jsonl")
    try:
        same = target.resolve() == src.resolve()
    except (OSError, RuntimeError) as exc:  # a symbolic link that loops
        raise InputError(f"--out {_shown(target)} or {_shown(src)} cannot be resolved ({exc})") from None
    if same:
        raise InputError(f"--out {_shown(target)} is the trace file itself; give another name")
    _check_target(target, src, given=args.out is not None)
    result = import_traces(src, args.format)
    out.print(f"Read {_plural(result.traces, 'trace')} from {_shown(src)} ({_FORMAT_NAMES[result.format]}).",
              markup=False)
    skipped = sum(result.skipped.values())
    if skipped:
        out.print(f"Skipped {_plural(skipped, 'trace')}:", markup=False)
        for reason, n in result.skipped.most_common():
            out.print(f"  {n} x {reason}", markup=False)
    for kind, n in result.repaired.most_common():
        out.print(f"Repaired {n} x {kind} (each listed under problems).", markup=False)
    if result.problems:
        err.print(f"Problems ({len(result.problems)}):", markup=False)
        for problem in result.problems[:50]:
            err.print(f"  {problem}", markup=False)
        if len(result.problems) > 50:
            err.print(f"  ... and {len(result.problems) - 50} more", markup=False)
    if not result.rows:
        err.print("error: no trace became a sample; nothing written.", markup=False)
        return EXIT_USAGE
    try:
        result.write_jsonl(target)  # atomically: a failure leaves a previous file as it was
    except OSError as exc:
        raise InputError(f"cannot write {_shown(target)} ({exc.strerror or exc}); a previous file there "
                         "is unchanged") from None
    out.print(f"{_plural(len(result.rows), 'sample')} written to {_shown(target)}.", markup=False)
    if result.conversations:
        out.print(f"  {_plural(result.conversations, 'conversation')} among them: the traces of one session, "
                  "each trace a turn.", markup=False)
    out.print(f"Next: ragsight evaluate {_shown(target)}", markup=False)
    return EXIT_OK
