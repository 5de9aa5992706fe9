"""What every sub-command shares: exit codes, the two consoles, the --store option, and the
small helpers of its messages."""

from __future__ import annotations

import argparse
import contextlib
import difflib
import os
import shlex
import sys
from collections.abc import Iterable, Iterator, Sequence
from pathlib import Path
from typing import Any, TypeAlias

from rich.console import Console
from rich.text import Text

from .._terminal import guard
from ..dataset import check_writable_target, write_failure
from ..errors import ConfigError, RagsightError
from ..store import Store

__all__ = [
    "DEFAULT_STORE",
    "EXIT_BUDGET",
    "EXIT_FAILED",
    "EXIT_INTERRUPTED",
    "EXIT_OK",
    "EXIT_TERMINATED",
    "EXIT_USAGE",
    "add_store",
    "checked_output",
    "close_name",
    "err",
    "open_existing",
    "out",
    "piped_at_80",
    "say",
    "shell_command",
    "store_files",
    "writing_output",
]

EXIT_OK = 0
EXIT_FAILED = 1  # ran, but a threshold was missed or nothing worked (see the cli docstring)
EXIT_USAGE = 2
EXIT_BUDGET = 3  # evaluate --max-cost: stopped before the limit; finished samples saved
EXIT_INTERRUPTED = 130
EXIT_TERMINATED = 143  # 128 + SIGTERM, as a shell reports a process ended by it

DEFAULT_STORE = "ragsight.db"


def _width() -> int | None:
    # A terminal's own width; $COLUMNS when set (rich reads it); else 120 for logs and pipes.
    return None if sys.stdout.isatty() or os.environ.get("COLUMNS", "").isdigit() else 120


err = guard(Console(stderr=True, highlight=False))
out = guard(Console(highlight=False, width=_width()))

PIPED_TABLE_WIDTH = 80  # what 'runs' and 'compare' are laid out for in a pipe or a log


@contextlib.contextmanager
def piped_at_80(console: Console | None = None) -> Iterator[None]:
    """Lay out for 80 columns while a table-shaped output goes to a pipe or a file (a terminal
    keeps its own width, and $COLUMNS is obeyed): 'ragsight runs | less' reads like the screen."""
    c = console or out
    if c.is_terminal or os.environ.get("COLUMNS", "").isdigit() or c.width <= PIPED_TABLE_WIDTH:
        yield
        return
    before = c.width
    c.width = PIPED_TABLE_WIDTH
    try:
        yield
    finally:
        c.width = before


def add_store(p: argparse.ArgumentParser) -> None:
    p.add_argument("--store", default=os.environ.get("RAGSIGHT_STORE", DEFAULT_STORE),
                   help="SQLite file holding runs, evidence and the judge cache (default: ./ragsight.db)")


def close_name(name: str, known: Iterable[str]) -> str:
    """" (did you mean 'x'?)" for the closest known name, or ""."""
    close = difflib.get_close_matches(name, list(known), n=1)
    return f" (did you mean '{close[0]}'?)" if close else ""


def shell_command(args: Sequence[str]) -> str:
    """A command line that can be pasted into a shell as it is (arguments quoted as needed)."""
    return " ".join(shlex.quote(a) for a in args)


def show_warning(message: Warning | str, *rest: Any, **kw: Any) -> None:
    """``warnings.showwarning`` for a person: ``warning: message``, no source path or code line."""
    say(err, f"warning: {message}", markup=False)


def say(console: Console, text: str | Text, **kw: Any) -> None:
    """Prose for a person (a notice, a warning, an error, a reason): on a terminal wrapped at
    spaces to its width, so no word is cut at the edge; in a log or a pipe one whole line, which
    grep finds. (A command to copy is printed whole either way, with ``soft_wrap=True``.)"""
    console.print(text, soft_wrap=not console.is_terminal, **kw)


PathName: TypeAlias = "str | os.PathLike[str] | None"


def store_files(store: PathName) -> list[tuple[str, PathName]]:
    """The files of a SQLite store, as ``checked_output(reads=...)`` takes them: the store and the
    journal files SQLite keeps beside it (an output written over any of them loses the store)."""
    if store is None or str(store) in ("", ":memory:"):
        return []
    return [("the store", store), *((f"the store's {kind} file", f"{store}{suffix}") for kind, suffix in
                                    (("write-ahead log", "-wal"), ("shared-memory", "-shm"),
                                     ("journal", "-journal")))]


def checked_output(path: str | os.PathLike[str], what: str, *, store: PathName = None,
                   reads: Iterable[tuple[str, PathName]] = ()) -> Path:
    """A file the user named for output, checked before the work (see ``check_writable_target``):
    a ConfigError (exit 2, one line) when it cannot be written, or when it is the ``store`` (or
    one of its journal files) or one of the files the command reads, ``reads`` (pairs of what the
    file is and its path), which writing there would replace. Every command that writes a file
    the user names calls this before anything is written."""
    try:
        return check_writable_target(path, what, [*store_files(store), *reads])
    except OSError as exc:
        raise ConfigError(str(exc)) from None


@contextlib.contextmanager
def writing_output(path: str | os.PathLike[str], what: str, after: str = "") -> Iterator[None]:
    """Turn an OSError of writing ``path`` (after the check passed: a full disk, a folder removed
    meanwhile) into a one-line error; ``after`` says where the work is kept."""
    try:
        yield
    except OSError as exc:
        raise RagsightError(write_failure(path, exc, what) + after) from None


def open_existing(path: str) -> Store:
    if path != ":memory:" and not os.path.exists(path):
        raise RagsightError(f"no store at {path}; give the --store file that 'ragsight evaluate' wrote")
    return Store(path, create=False)
