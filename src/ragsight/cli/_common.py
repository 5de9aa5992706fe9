"""What every sub-command shares: exit codes, the two consoles, the --store option."""

from __future__ import annotations

import argparse
import os
import sys

from rich.console import Console

__all__ = ["EXIT_INTERRUPTED", "EXIT_OK", "EXIT_USAGE", "add_store", "err", "out"]

EXIT_OK = 0
EXIT_USAGE = 2
EXIT_INTERRUPTED = 130

err = Console(stderr=True, highlight=False)
out = Console(highlight=False, width=None if sys.stdout.isatty() else 120)


def add_store(p: argparse.ArgumentParser) -> None:
    p.add_argument("--store", default=os.environ.get("RAGSIGHT_STORE", "ragsight.db"),
                   help="SQLite file holding runs, evidence and the judge cache (default: ./ragsight.db)")
