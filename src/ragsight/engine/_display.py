"""Showing a run's :class:`Progress` while it goes: a rich progress bar on a terminal and in
Jupyter (rich renders there through ipywidgets), a plain text line that rewrites itself where
rich cannot draw (a notebook without ipywidgets), nothing when the output goes to a file."""

from __future__ import annotations

import importlib.util
import sys
import time
from typing import Any, TextIO

from rich.console import Console

from .._terminal import guard
from ._engine import Progress

__all__ = ["ProgressDisplay", "display_mode", "progress_text"]

_TEXT_EVERY_S = 0.5


def display_mode(console: Console) -> str:
    """"bar" where rich can draw a live bar (a terminal; Jupyter with ipywidgets), "text" in a
    notebook without ipywidgets, "off" otherwise (output to a file or a pipe)."""
    if console.is_jupyter:
        return "bar" if importlib.util.find_spec("ipywidgets") is not None else "text"
    if console.is_terminal and not console.is_dumb_terminal:
        return "bar"
    return "off"


def progress_text(p: Progress) -> str:
    """What the progress line says after the bar: outcomes, the judge's spend, and its calls in
    flight against the limit in effect (the limit adapts; see docs/scale.md)."""
    st = p.judge_stats
    o = p.outcomes
    text = f"failed {o['failed']}  skipped {o['skipped']}"
    if st is not None:
        text += f"  {st.calls} calls, {st.prompt_tokens:,} prompt tok"
        lim = getattr(st, "limiter", None)
        if lim is not None and lim.ceiling > 1:
            text += f"  in flight {lim.in_flight}/{lim.limit}"
    return text


class ProgressDisplay:
    """A context manager that shows ``progress`` until it exits.

    ``mode``: "bar", "text", "off", or None to choose with :func:`display_mode` for
    ``console`` (default: a console on standard error). The display reads the counters through
    ``progress.on_update``, which the engine calls after every finished sample."""

    def __init__(self, progress: Progress, mode: str | None = None, *,
                 console: Console | None = None, stream: TextIO | None = None) -> None:
        if mode not in (None, "bar", "text", "off"):
            raise ValueError(f"progress display mode must be bar, text or off, not {mode!r}")
        self.progress = progress
        self.console = console or guard(Console(stderr=True, highlight=False))
        self.mode = mode or display_mode(self.console)
        self._stream = stream
        self._bar: Any = None
        self._task: Any = None
        self._last_text = 0.0
        self._wrote_text = False

    def __enter__(self) -> ProgressDisplay:
        if self.mode == "bar":
            from rich.progress import BarColumn, MofNCompleteColumn, TextColumn, TimeElapsedColumn
            from rich.progress import Progress as RichProgress

            self._bar = RichProgress(TextColumn("[bold]evaluating"), BarColumn(), MofNCompleteColumn(),
                                     TimeElapsedColumn(), TextColumn("{task.description}"),
                                     console=self.console, transient=True)
            self._bar.__enter__()
            self._task = self._bar.add_task("", total=None)
            self.progress.on_update = self._update_bar
        elif self.mode == "text":
            self.progress.on_update = self._update_text
        return self

    def _update_bar(self, p: Progress) -> None:
        self._bar.update(self._task, completed=p.done, total=p.total, description=progress_text(p))

    def _line(self, p: Progress) -> str:
        o = p.outcomes
        st = p.judge_stats
        spend = f", {st.calls} calls, {st.prompt_tokens:,} prompt tok" if st is not None else ""
        return f"evaluating: {p.done}/{p.total} samples, failed {o['failed']}, skipped {o['skipped']}{spend}"

    def _update_text(self, p: Progress, force: bool = False) -> None:
        now = time.monotonic()
        if not force and p.done < p.total and now - self._last_text < _TEXT_EVERY_S:
            return
        self._last_text = now
        stream = self._stream or sys.stderr
        stream.write("\r" + self._line(p))
        stream.flush()
        self._wrote_text = True

    def __exit__(self, *exc: object) -> None:
        self.progress.on_update = None
        if self._bar is not None:
            self._bar.__exit__(None, None, None)
            self._bar = None
        elif self.mode == "text" and self._wrote_text:
            self._update_text(self.progress, force=True)
            (self._stream or sys.stderr).write("\n")
