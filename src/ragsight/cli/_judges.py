"""Sub-command ``judges``: the built-in judges and embedders with their size, speed and measured
agreement with people, and how to use a stronger judge."""

from __future__ import annotations

import argparse
import sys
import textwrap
from collections.abc import Iterable
from typing import Any

from ..judge import BUILTIN_EMBEDDERS, BUILTIN_JUDGES, STRONGER_JUDGE, BuiltinModel
from ._common import EXIT_OK

__all__ = ["format_catalogue", "register"]

WIDTH = 80


def _block(models: Iterable[BuiltinModel], flag: str) -> list[str]:
    lines: list[str] = []
    for m in models:
        lines.append(f"  {m.name}" + ("  (default)" if m.default else "") + f"   {flag}{m.name}")
        for label, text in (("size", m.size), ("speed", m.speed), ("agreement", m.agreement),
                            ("install", m.install)):
            lines.extend(textwrap.wrap(text, WIDTH, initial_indent=f"    {label:<10} ",
                                       subsequent_indent=" " * 15, break_on_hyphens=False))
    return lines


def format_catalogue() -> str:
    """The catalogue as printed by ``ragsight judges`` (at most 80 columns)."""
    lines = ["Built-in judges (run offline on this CPU; agreement from docs/validity.md):"]
    lines += _block(BUILTIN_JUDGES, "--judge local:")
    lines += ["", "Built-in embedders (docs/embedders.md):"]
    lines += _block(BUILTIN_EMBEDDERS, "--embedder local:")
    lines += ["", *textwrap.wrap(STRONGER_JUDGE, WIDTH, break_on_hyphens=False)]
    return "\n".join(lines)


def cmd_judges(args: argparse.Namespace) -> int:
    del args
    sys.stdout.write(format_catalogue() + "\n")
    return EXIT_OK


def register(sub: Any) -> None:
    j = sub.add_parser("judges", help="the built-in judges and embedders: size, speed, agreement with people")
    j.set_defaults(func=cmd_judges)
