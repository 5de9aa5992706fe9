"""Sub-command ``diagnose``: why a run's samples fail, or which causes a change fixed and
introduced (two runs)."""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path
from typing import Any

from ..diagnosis import change_lines, diagnose, diagnose_change, diagnosis_lines, parse_thresholds
from ..errors import ConfigError, StoreError
from ..result import load_result
from ..store import Store
from ._common import EXIT_OK, out, say
from ._common import add_store as _add_store

__all__ = ["register"]

DIAGNOSE_EPILOG = """examples:
  ragsight diagnose last
  ragsight diagnose last --threshold faithfulness=0.8 --threshold context_recall=0.7
  ragsight diagnose last --json > causes.json
  ragsight diagnose RUN_A RUN_B          # which causes run B fixed, and which it introduced
causes: retrieval, unsupported, noise, incomplete, decline, tool, judge (see docs/diagnose.md).
A sample fails when a metric scored below its threshold (above, for a lower-is-better one), failed,
or has no value. Default thresholds: 0.5; noise_sensitivity fails above 0; the tool-call metrics
below 1. Nothing is sent to a judge: the causes are read from the evidence in the store."""


def _open_store(path: str) -> Store:
    if path != ":memory:" and not Path(path).exists():
        raise StoreError(f"no store at {path}; run 'ragsight evaluate' first or pass --store PATH")
    return Store(path, create=False)


def cmd_diagnose(args: argparse.Namespace) -> int:
    if len(args.runs) > 2:
        raise ConfigError("diagnose takes one run, or two to compare: ragsight diagnose RUN_A RUN_B")
    if not 0 <= args.seed < 2**32:
        raise ConfigError(f"--seed must be a whole number from 0 to {2**32 - 1}, not {args.seed}")
    if args.embedder_base_url and not args.embedder:
        raise ConfigError("--embedder-base-url is the server of --embedder openai:MODEL; give --embedder too")
    thresholds = parse_thresholds(args.threshold)
    with _open_store(args.store) as store:
        results = [load_result(store, ref) for ref in args.runs]
        if len(results) == 2 and results[0].run_id == results[1].run_id:
            raise ConfigError(f"run {results[0].run_id} is given twice; name two different runs")
        two = len(results) == 2
        found = [diagnose(r, thresholds=thresholds, topics=not two, embedder=args.embedder, seed=args.seed,
                          embedder_base_url=args.embedder_base_url) for r in results]
    payload: dict[str, Any]
    if two:
        change = diagnose_change(found[0], found[1], seed=args.seed, allow_poor_pairing=args.allow_poor_pairing)
        if args.json:
            payload = {**change.to_dict(), "diagnoses": [d.to_dict() for d in found]}
            sys.stdout.write(json.dumps(payload, indent=2, ensure_ascii=False, allow_nan=False) + "\n")
            return EXIT_OK
        lines = change_lines(change)
    else:
        if args.json:
            sys.stdout.write(json.dumps(found[0].to_dict(), indent=2, ensure_ascii=False, allow_nan=False) + "\n")
            return EXIT_OK
        lines = diagnosis_lines(found[0])
    for line in lines:
        say(out, line, markup=False)
    return EXIT_OK


def register(subparsers: Any) -> None:
    """Add ``diagnose`` to the ragsight command line."""
    dg = subparsers.add_parser("diagnose", help="why a run's samples fail: the cause of each, from its evidence",
                               epilog=DIAGNOSE_EPILOG, formatter_class=argparse.RawDescriptionHelpFormatter)
    dg.add_argument("runs", nargs="+", metavar="RUN",
                    help="a run id, id prefix or 'last'; a second run: what changed from the first")
    dg.add_argument("--threshold", action="append", default=[], metavar="METRIC=VALUE",
                    help="a metric fails below VALUE (above, for a lower-is-better one); by name or by key, "
                         "e.g. faithfulness=0.8; repeatable")
    dg.add_argument("--json", action="store_true", help="print the diagnosis as JSON (keys in docs/diagnose.md)")
    dg.add_argument("--embedder", metavar="SPEC",
                    help="groups the failing questions into topics: local, local:minilm, openai:MODEL, or words "
                         "(their words, no model); default: the run's local embedder, else local:e5-small")
    dg.add_argument("--embedder-base-url", metavar="URL",
                    help="the server of --embedder openai:MODEL (default: the run's, when it used that embedder)")
    dg.add_argument("--seed", type=int, default=0, help="seed of the bootstrap and permutation draws (default 0)")
    dg.add_argument("--allow-poor-pairing", action="store_true",
                    help="with two runs: compare even when fewer than 80%% of the samples pair")
    _add_store(dg)
    dg.set_defaults(func=cmd_diagnose)
