"""The command line. Thin: parses, calls the library, prints.

Exit status (the same for every sub-command):

- 0: the command completed. For ``evaluate``: the run completed, met every threshold
  (``--fail-under``/``--fail-over``, or ``[tool.ragsight]`` in pyproject.toml), and every
  metric scored (or found undetermined) at least one sample. Counted failures of single
  samples do not change it.
- 1: ``evaluate`` ran, but a threshold was missed, a metric failed or was skipped on every
  sample, or input rows could not be used (unless ``--allow-bad-rows``); ``answer``: every call
  to the system under test failed; ``generate``: no question passed the filter; ``simulate``: no
  conversation got past a failure, or scenario rows could not be used.
- 2: the input or the configuration is unusable (bad flag, unknown metric, unreadable data,
  a preflight that failed: judge or embedder unreachable, missing package, store not
  writable); nothing was evaluated, and no store file was created.
- 3: ``evaluate --max-cost``: the run stopped before a judge call could take its spend past the
  limit. The finished samples are saved; the command to continue (``--resume RUN``) is printed.
  With ``--dry-run``: the estimate is over the limit.
- 130: interrupted (Ctrl-C). The finished samples are saved; the command to continue the run
  (``ragsight evaluate --resume RUN``) is printed.
"""

from __future__ import annotations

import argparse
import re
import sys
from collections.abc import Sequence
from typing import Any

from .. import __version__
from ..engine import (
    progress_text as progress_text,  # the progress line (tests and tools read it here)
)
from ..errors import RagsightError
from . import (
    _diagnose,
    _evaluate,
    _export,
    _judges,
    _labels,
    _monitor,
    _report,
    _runs,
    _show,
    _simulate,
    _sweep,
    _testset,
    _traces,
    _view,
)
from ._common import EXIT_INTERRUPTED, EXIT_USAGE, err, say
from ._evaluate import example_path as example_path
from ._summary import print_summary as print_summary

__all__ = ["main"]


# A value that begins with '-' is a negative number, not an option, when Python reads it as one:
# "-inf", "-1e3", "-nan" too (argparse knows only "-1" and "-.5" and says "expected one argument",
# so `--max-cost -inf` never reached the check that names the option).
_NEGATIVE_NUMBER = re.compile(r"^-(?:(?:\d+\.?\d*|\.\d+)(?:[eE][+-]?\d+)?|inf(?:inity)?|nan)$", re.IGNORECASE)


class _Parser(argparse.ArgumentParser):
    """argparse's parser, its sub-commands' too, reading every negative number as a value."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self._negative_number_matcher = _NEGATIVE_NUMBER


def _parser() -> argparse.ArgumentParser:
    p = _Parser(
        prog="ragsight",
        description="Evaluate retrieval-augmented generation, with the evidence behind every score.",
        epilog="Run 'ragsight COMMAND --help' for a command's options and examples.",
    )
    p.add_argument("--version", action="version", version=f"ragsight {__version__}")
    sub = p.add_subparsers(dest="command", metavar="COMMAND")

    _evaluate.register(sub)
    _show.register(sub)
    _runs.register(sub)
    _export.register(sub)
    _report.register(sub)
    _diagnose.register(sub)
    _testset.register(sub)
    _simulate.register(sub)
    _traces.register(sub)
    _sweep.register(sub)
    _judges.register(sub)
    _labels.register(sub)
    _view.register(sub)
    _monitor.register(sub)
    return p


# Old sub-command names that still work but are not listed: `run` read like `runs`.
HIDDEN_ALIASES = {"run": "answer"}


def main(argv: Sequence[str] | None = None) -> int:
    parser = _parser()
    argv = list(sys.argv[1:] if argv is None else argv)
    if argv and argv[0] in HIDDEN_ALIASES:
        argv[0] = HIDDEN_ALIASES[argv[0]]
    args = parser.parse_args(argv)
    if not getattr(args, "func", None):
        parser.print_help()
        return EXIT_USAGE
    try:
        return int(args.func(args))
    except RagsightError as exc:
        say(err, f"error: {exc}", markup=False)
        return EXIT_USAGE
    except KeyboardInterrupt:
        err.print("interrupted")
        return EXIT_INTERRUPTED

