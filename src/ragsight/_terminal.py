"""Text for a terminal with its control characters made visible: the one rule for everything
ragsight prints (ids, questions, answers, imported traces, run metadata, error messages).

Text under evaluation comes from anywhere, production traces included; printed raw, an escape
sequence in it could retitle the window, clear the screen, move the cursor over earlier output or
forge a hyperlink, and a bidirectional override could show a line other than the one stored. So
every control character except newline and tab is shown, not obeyed: C0 controls and DEL as
their Unicode control pictures (ESC as ``␛``, BEL as ``␇``), C1 controls and bidirectional
controls as ``<U+XXXX>``. The text in the store is never changed; only what is printed.

:func:`visible` does it to a string; :func:`guard` makes a rich Console do it to everything it
prints (strings, Text, tables), after its own styling, so its own colours still work.
"""

from __future__ import annotations

import re
from typing import Any

from rich.console import Console, ConsoleOptions, RenderableType, RenderHook, RenderResult
from rich.segment import Segment

__all__ = ["guard", "visible"]

_CONTROL = re.compile("[\x00-\x08\x0b-\x1f\x7f-\x9f\u061c\u200e\u200f\u202a-\u202e\u2066-\u2069]")


def _show(match: re.Match[str]) -> str:
    code = ord(match.group())
    if code < 0x20:
        return chr(0x2400 + code)
    if code == 0x7F:
        return "\u2421"
    return f"<U+{code:04X}>"


def visible(text: str) -> str:
    """``text`` with every control character but newline and tab made visible."""
    return _CONTROL.sub(_show, text) if _CONTROL.search(text) else text


class _Visible:
    """A renderable whose text segments are made visible once laid out."""

    def __init__(self, inner: RenderableType) -> None:
        self.inner = inner

    def __rich_console__(self, console: Console, options: ConsoleOptions) -> RenderResult:
        for segment in console.render(self.inner, options):
            if segment.control or not _CONTROL.search(segment.text):
                yield segment
            else:
                yield Segment(visible(segment.text), segment.style)


class _Hook(RenderHook):
    def process_renderables(self, renderables: list[Any]) -> list[Any]:
        return [_Visible(r) for r in renderables]


def guard(console: Console) -> Console:
    """``console``, made to show every control character in what it prints (see the module
    docstring); returned for use at its creation: ``out = guard(Console())``."""
    if not getattr(console, "_ragsight_guarded", False):
        console.push_render_hook(_Hook())
        console._ragsight_guarded = True  # type: ignore[attr-defined]
    return console
