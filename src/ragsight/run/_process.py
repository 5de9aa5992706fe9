"""Running the async core from synchronous code, and what Ctrl-C does to a run: the event loop
of :func:`run_sync` (in this thread, or in a worker thread when this thread already runs one, as in
Jupyter), the signal handlers that turn Ctrl-C and SIGTERM into a cancellation the run can save
from, and :class:`RunInterrupted`. Nothing here knows what a run is."""

from __future__ import annotations

import asyncio
import contextlib
import gc
import signal
import threading
import warnings
from collections.abc import Callable, Coroutine
from typing import Any, ClassVar, TypeVar

__all__ = ["CtrlC", "RunInterrupted", "run_sync"]

T = TypeVar("T")


class RunInterrupted(KeyboardInterrupt):
    """A run stopped by a signal (``signum``: SIGINT for Ctrl-C, SIGTERM) after its tasks
    unwound: the finished samples are saved and the run is marked interrupted."""

    __module__ = "ragsight.run"  # as a traceback prints it: where a user imports it from

    def __init__(self, signum: int, message: str | None = None) -> None:
        super().__init__(message or signal.Signals(signum).name)
        self.signum = signum


def run_sync(make: Callable[[], Coroutine[Any, Any, T]], *, sigterm: bool = False) -> T:
    """Run the coroutine ``make()`` to its end from synchronous code and return its result.

    With no event loop running in this thread, on a new loop here; Ctrl-C then cancels the
    coroutine (a run saves its finished samples and marks itself interrupted), waits for its
    tasks to unwind without printing the tracebacks of the calls that were in flight, and
    raises :class:`RunInterrupted` (a KeyboardInterrupt); a second Ctrl-C stops at once.
    ``sigterm``: SIGTERM does the same (the command line's choice; a library leaves SIGTERM
    alone). Inside a running loop (Jupyter, an async application), on a new loop in a worker
    thread while this thread waits: no ``nest_asyncio``, no patching of the running loop.
    """
    try:
        asyncio.get_running_loop()
    except RuntimeError:
        return _run_here(make(), sigterm=sigterm)
    return _run_in_thread(make)


def _run_here(coro: Coroutine[Any, Any, T], *, interrupted: threading.Event | None = None,
              on_loop: Callable[[Any, Any], None] | None = None, sigterm: bool = False) -> T:
    loop = asyncio.new_event_loop()
    interrupted = interrupted or threading.Event()
    stopped_by: list[int] = []
    main = loop.create_task(coro)
    if on_loop is not None:
        on_loop(loop, main)

    def on_signal(signum: int, frame: Any) -> None:
        if interrupted.is_set():
            raise KeyboardInterrupt  # the second one: stop now
        stopped_by.append(signum)
        interrupted.set()
        loop.call_soon_threadsafe(main.cancel)

    installed: dict[int, Any] = {}
    if threading.current_thread() is threading.main_thread():
        wanted: dict[int, Any] = {signal.SIGINT: signal.default_int_handler}
        if sigterm:
            wanted[signal.SIGTERM] = signal.SIG_DFL
        for signum, default in wanted.items():
            if signal.getsignal(signum) is default:  # an application's own handler stays
                installed[signum] = signal.signal(signum, on_signal)
    try:
        try:
            return loop.run_until_complete(main)
        except asyncio.CancelledError:
            if interrupted.is_set():
                raise RunInterrupted(stopped_by[0] if stopped_by else signal.SIGINT) from None
            raise
        except KeyboardInterrupt:
            interrupted.set()
            raise
    finally:
        for signum, previous in installed.items():
            signal.signal(signum, previous)
        if not interrupted.is_set():
            _shutdown(loop)
        else:
            # Calls in flight when the run was stopped end with their own errors (a closed
            # connection...) and the connection attempts not yet started are dropped unawaited:
            # nothing to report, the run already saved what it finished. They are collected
            # here, quietly, not at exit with a warning each.
            loop.set_exception_handler(lambda _loop, _context: None)
            with warnings.catch_warnings():
                warnings.filterwarnings("ignore", message="coroutine .* was never awaited",
                                        category=RuntimeWarning)
                _shutdown(loop)
                gc.collect()


def _shutdown(loop: asyncio.AbstractEventLoop) -> None:
    try:
        pending = [t for t in asyncio.all_tasks(loop) if not t.done()]
        for t in pending:
            t.cancel()
        if pending:
            loop.run_until_complete(asyncio.gather(*pending, return_exceptions=True))
        for t in pending:
            if not t.cancelled() and t.exception() is not None:
                loop.call_exception_handler({"message": "unhandled exception during shutdown",
                                             "exception": t.exception(), "task": t})
        loop.run_until_complete(loop.shutdown_asyncgens())
        loop.run_until_complete(loop.shutdown_default_executor())
    finally:
        asyncio.set_event_loop(None)
        loop.close()


@contextlib.contextmanager
def _ctrl_c_interrupts_the_wait() -> Any:
    """Under ``asyncio.run`` (Python 3.11+), SIGINT's handler is the runner's, which only cancels
    its main task, and that task is blocked in this very wait: the first Ctrl-C did nothing.
    While the wait lasts, Ctrl-C raises KeyboardInterrupt here, as it does outside asyncio.
    An application's own handler is left alone."""
    handler = signal.getsignal(signal.SIGINT) if threading.current_thread() is threading.main_thread() else None
    if not _runners(handler):
        yield
        return
    signal.signal(signal.SIGINT, signal.default_int_handler)
    try:
        yield
    finally:
        signal.signal(signal.SIGINT, handler)


class CtrlC:
    """Ctrl-C during ``await aevaluate(...)`` in the main thread: the run is cancelled (so it saves
    what it finished) and knows that a signal, not the caller's code, cancelled it.

    Under ``asyncio.run`` the runner's SIGINT handler cancels the main task, and the run cannot
    tell that from a time-out of the caller's; under a bare ``loop.run_until_complete`` Ctrl-C
    raises KeyboardInterrupt wherever the loop happens to be, and nothing is saved in order. While
    one or more ``aevaluate`` calls run, one handler of ours takes SIGINT instead (only in place of
    the default or the runner's; an application's own handler stays): the first Ctrl-C cancels
    every such call, a second one raises KeyboardInterrupt at once. A Ctrl-C that came when the
    call was ending anyway is passed on to the handler it replaced."""

    active: ClassVar[dict[asyncio.Task[Any], CtrlC]] = {}
    previous: ClassVar[Any] = None
    installed: ClassVar[bool] = False
    hits: ClassVar[int] = 0
    stopped: ClassVar[bool] = False  # a call was stopped by the Ctrl-C

    def __init__(self, task: asyncio.Task[Any] | None) -> None:
        self.task = task
        self.fired = False

    @classmethod
    def watch(cls) -> CtrlC:
        task = asyncio.current_task() if threading.current_thread() is threading.main_thread() else None
        return cls(task)

    def __enter__(self) -> CtrlC:
        cls = type(self)
        if self.task is None:
            return self
        if not cls.active and _replaceable(signal.getsignal(signal.SIGINT)):
            cls.previous = signal.signal(signal.SIGINT, cls._on_sigint)
            cls.installed, cls.hits, cls.stopped = True, 0, False
        if cls.installed:
            cls.active[self.task] = self
        return self

    def __exit__(self, kind: Any, exc: Any, tb: Any) -> None:
        cls = type(self)
        if self.task is None or cls.active.pop(self.task, None) is None:
            return
        if self.fired and kind is not None:
            uncancel = getattr(self.task, "uncancel", None)  # the cancel was ours; now said otherwise
            if uncancel is not None:
                uncancel()
            cls.stopped = True
        if cls.active or not cls.installed:
            return
        cls.installed = False
        if signal.getsignal(signal.SIGINT) == cls._on_sigint:
            signal.signal(signal.SIGINT, cls.previous)
        if cls.hits and not cls.stopped:
            signal.raise_signal(signal.SIGINT)  # the calls ended anyway: the Ctrl-C goes where it went

    @classmethod
    def _on_sigint(cls, signum: int, frame: Any) -> None:
        cls.hits += 1
        if cls.hits > 1:
            raise KeyboardInterrupt  # the second one: stop now
        for task, watch in list(cls.active.items()):
            watch.fired = True
            with contextlib.suppress(RuntimeError):  # its loop closed meanwhile
                task.get_loop().call_soon_threadsafe(task.cancel)


def _replaceable(handler: Any) -> bool:
    """SIGINT's handler is Python's default or an asyncio runner's (``asyncio.run``)."""
    return handler is signal.default_int_handler or _runners(handler)


def _runners(handler: Any) -> bool:
    """The handler is an asyncio runner's (Python 3.11+ ``asyncio.run``: a partial of
    ``Runner._on_sigint``)."""
    runner = getattr(asyncio, "Runner", None)
    owner = getattr(getattr(handler, "func", handler), "__self__", None)
    return runner is not None and isinstance(owner, runner)


def _run_in_thread(make: Callable[[], Coroutine[Any, Any, T]]) -> T:
    box: dict[str, Any] = {}
    ready = threading.Event()
    finished = threading.Event()
    interrupted = threading.Event()

    def on_loop(loop: Any, main: Any) -> None:
        box["loop"], box["main"] = loop, main
        ready.set()

    def work() -> None:
        try:
            box["result"] = _run_here(make(), interrupted=interrupted, on_loop=on_loop)
        except BaseException as exc:
            box["error"] = exc
        finally:
            ready.set()
            finished.set()

    thread = threading.Thread(target=work, name="ragsight-evaluate", daemon=True)
    thread.start()
    # Waited for with an Event, not Thread.join(): a KeyboardInterrupt that lands inside join()
    # can leave the thread marked stopped while it still runs (CPython, bpo-45274's fix).
    try:
        with _ctrl_c_interrupts_the_wait():
            finished.wait()
    except KeyboardInterrupt:
        # Interrupting the notebook's kernel: stop the run the way Ctrl-C does in a terminal,
        # and wait for it to save what it finished (a second interrupt stops waiting).
        ready.wait()
        main, loop = box.get("main"), box.get("loop")
        if main is not None and loop is not None and not finished.is_set():
            interrupted.set()
            with contextlib.suppress(RuntimeError):  # the loop closed meanwhile: nothing to stop
                loop.call_soon_threadsafe(main.cancel)
        finished.wait()
        raise KeyboardInterrupt from None
    if "error" in box:
        raise box["error"]
    result: T = box["result"]
    return result
