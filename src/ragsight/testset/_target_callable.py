"""The Python target: a function ``module:function`` (or any callable), sync or async, called with
the question (and the configuration as keyword arguments, the history for a conversation); a sync
callable runs in a thread of its own so it never blocks the others.

That thread is a daemon thread, not one of the event loop's pool: a call that never returns is
abandoned when its time-out ends the wait (Python cannot stop a thread), and neither the end of
the event loop nor the end of the process waits for it, so the run ends, its question or
conversation marked failed and its output written.
"""

from __future__ import annotations

import asyncio
import contextlib
import contextvars
import importlib
import inspect
import os
import sys
import threading
from collections.abc import Callable, Mapping, Sequence
from typing import Any

from ..errors import ConfigError
from ._reply import TargetError, TargetReply, reply_from

__all__ = ["CallableTarget", "in_daemon_thread"]


async def in_daemon_thread(fn: Callable[..., Any], *args: Any, **kwargs: Any) -> Any:
    """``fn(*args, **kwargs)`` in a daemon thread of its own (with the caller's context
    variables), awaited; cancelling the wait abandons the call (see the module docstring)."""
    loop = asyncio.get_running_loop()
    done: asyncio.Future[Any] = loop.create_future()
    ctx = contextvars.copy_context()

    def settle(ok: bool, value: Any) -> None:
        if done.done():  # the wait was cancelled (a time-out): the answer goes nowhere
            return
        if ok:
            done.set_result(value)
        else:
            done.set_exception(value)

    def work() -> None:
        try:
            value, ok = ctx.run(fn, *args, **kwargs), True
        except BaseException as exc:  # handed to the awaiting task as it is
            value, ok = exc, False
        with contextlib.suppress(RuntimeError):  # the event loop ended meanwhile
            loop.call_soon_threadsafe(settle, ok, value)

    threading.Thread(target=work, name=f"ragsight-target-{getattr(fn, '__name__', 'call')}", daemon=True).start()
    return await done


class CallableTarget:
    """A Python function ``module:function`` (or any callable)."""

    def __init__(
        self, fn: Callable[..., Any], name: str, config: Mapping[str, Any] | None = None
    ) -> None:
        self.fn = fn
        self.name = name
        self.config = dict(config or {})

    @classmethod
    def load(cls, spec: str) -> CallableTarget:
        module, _, attr = spec.partition(":")
        if not module or not attr:
            raise ConfigError(f"target '{spec}': use module:function, http(s)://URL or cmd:COMMAND")
        if os.getcwd() not in sys.path and "" not in sys.path:
            sys.path.insert(0, os.getcwd())  # like `python -m`: modules beside the user
        try:
            mod = importlib.import_module(module)
        except ImportError as exc:
            raise ConfigError(f"target '{spec}': cannot import module '{module}' ({exc})") from exc
        fn: Any = mod
        for part in attr.split("."):
            fn = getattr(fn, part, None)
            if fn is None:
                raise ConfigError(f"target '{spec}': module '{module}' has no '{attr}'")
        if not callable(fn):
            raise ConfigError(f"target '{spec}': '{attr}' is not callable")
        return cls(fn, spec)

    def _takes_history(self) -> bool:
        try:
            params = inspect.signature(self.fn).parameters
        except (TypeError, ValueError):
            return True
        return "history" in params or any(p.kind is inspect.Parameter.VAR_KEYWORD for p in params.values())

    async def __call__(self, question: str, history: Sequence[Mapping[str, Any]] | None = None) -> TargetReply:
        kwargs = dict(self.config)
        if history is not None:
            if not self._takes_history():
                raise TargetError(f"{self.name} takes no 'history' argument; a conversation's turns need it: "
                                  "def answer(question, history): ... (history: the earlier messages, each "
                                  "{'role', 'content'})", retryable=False)
            kwargs["history"] = [dict(m) for m in history]
        try:
            if inspect.iscoroutinefunction(self.fn):
                result = await self.fn(question, **kwargs)
            else:
                result = await in_daemon_thread(self.fn, question, **kwargs)
                if inspect.isawaitable(result):
                    result = await result
        except TargetError:
            raise
        except (Exception, SystemExit) as exc:  # sys.exit() in the user's code fails its question only
            raise TargetError(
                f"{self.name} raised {type(exc).__name__}: {exc}", retryable=False
            ) from exc
        return reply_from(result, where=self.name)
