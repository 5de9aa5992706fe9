"""What a judge step leaves behind: each call (:class:`JudgeCall`), the step's :class:`Answer`,
the errors of a step that found no answer, the judge cache's protocol, the run's counters
(:class:`JudgeStats`), and :func:`record_calls`, which routes the calls of one sample's work to
its trail."""

from __future__ import annotations

import contextlib
import contextvars
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass, field
from typing import Any, Generic, Protocol, TypeVar

from ..calls import LimiterStats
from ..errors import JudgeError, JudgeUnavailableError
from ._protocol import Message

__all__ = [
    "Answer",
    "CallCache",
    "CallSink",
    "JudgeCall",
    "JudgeFailedError",
    "JudgeRejectedError",
    "JudgeStats",
    "MemoryCallCache",
    "current_recorder",
    "record_calls",
]

T = TypeVar("T")

@dataclass(frozen=True)
class JudgeCall:
    """One round trip to the model (or one cache hit), as recorded in the store.

    ``step`` is the cache key of the logical step the call belongs to; a step may take several
    calls (retries after transport errors, re-asks after unusable output). ``attempt`` numbers
    them from 1.
    """

    step: str
    attempt: int
    prompt_id: str
    prompt_version: str
    prompt_hash: str
    judge: str
    model: str
    messages: tuple[Message, ...]
    raw_output: str | None
    parsed: Any
    prompt_tokens: int
    completion_tokens: int
    latency_s: float
    cached: bool
    error: str | None
    started_at: float
    structured: str = ""
    kind: str = "json"  # "json" | "choices"

    def to_dict(self) -> dict[str, Any]:
        return {
            "step": self.step,
            "attempt": self.attempt,
            "prompt_id": self.prompt_id,
            "prompt_version": self.prompt_version,
            "prompt_hash": self.prompt_hash,
            "judge": self.judge,
            "model": self.model,
            "messages": [{"role": m.role, "content": m.content} for m in self.messages],
            "raw_output": self.raw_output,
            "parsed": self.parsed,
            "prompt_tokens": self.prompt_tokens,
            "completion_tokens": self.completion_tokens,
            "latency_s": self.latency_s,
            "cached": self.cached,
            "error": self.error,
            "started_at": self.started_at,
            "structured": self.structured,
            "kind": self.kind,
        }


@dataclass(frozen=True)
class Answer(Generic[T]):
    value: T
    step: str
    calls: tuple[JudgeCall, ...]
    prompt_id: str
    prompt_version: str

    @property
    def cached(self) -> bool:
        return bool(self.calls) and all(c.cached for c in self.calls)


class JudgeFailedError(JudgeError):
    """A judge step produced no usable result after its retries and re-asks."""

    def __init__(self, message: str, step: str, calls: Sequence[JudgeCall]) -> None:
        super().__init__(message)
        self.step = step
        self.calls = tuple(calls)


class JudgeRejectedError(JudgeFailedError, JudgeUnavailableError):
    """A judge call met a failure no retry or wait can help: the key is rejected (HTTP 401/403),
    the model is unknown (404), the quota is exhausted, the host does not resolve. It stops the
    run at once, as the preflight would have (finished samples are saved; ``--resume``
    continues once it is fixed); the Judge sends no further call. A JudgeFailedError for the
    step that met it (``step``, ``calls``), and a JudgeUnavailableError for the run."""


class CallCache(Protocol):
    """Content-addressed store of finished judge steps: key -> (parsed value, raw output, calls).

    Async, so that a cache across processes (the Ray backend's cache actor) is awaited like any
    other I/O and the Judge needs no subclass to prefetch from it."""

    async def get(self, key: str) -> dict[str, Any] | None: ...

    async def put(self, key: str, entry: dict[str, Any]) -> None: ...


class MemoryCallCache:
    """An in-process cache (for tests and one-off use)."""

    def __init__(self) -> None:
        self._d: dict[str, dict[str, Any]] = {}

    async def get(self, key: str) -> dict[str, Any] | None:
        return self._d.get(key)

    async def put(self, key: str, entry: dict[str, Any]) -> None:
        self._d[key] = entry

    def __len__(self) -> int:
        return len(self._d)


CallSink = Callable[[JudgeCall], None]

# Where the calls made in the current task go besides the Judge's own sink: set by
# :func:`record_calls` around one sample's work, so each call lands in that sample's trail while
# one Judge serves every sample of a run. Tasks started inside inherit it (contextvars).
_recorder: contextvars.ContextVar[CallSink | None] = contextvars.ContextVar("ragsight_calls", default=None)


@contextlib.contextmanager
def record_calls(sink: CallSink) -> Iterator[None]:
    """Send every judge call made inside the block (and in tasks it starts) to ``sink``."""
    token = _recorder.set(sink)
    try:
        yield
    finally:
        _recorder.reset(token)



def current_recorder() -> CallSink | None:
    """Where :func:`record_calls` sends the calls made in the current task, or None."""
    return _recorder.get()


@dataclass
class JudgeStats:
    steps: int = 0
    calls: int = 0
    cache_hits: int = 0
    retries: int = 0
    reasks: int = 0
    failed_steps: int = 0
    answers_too_large: int = 0  # answers cut at the provider's size cap and not used
    prompt_tokens: int = 0
    completion_tokens: int = 0
    latency_s: float = 0.0
    by_prompt: dict[str, int] = field(default_factory=dict)
    # the concurrency limit's figures (ragsight._limiter), live: the progress line reads them
    limiter: LimiterStats | None = None

    def to_dict(self) -> dict[str, Any]:
        extra = {"concurrency": self.limiter.to_dict()} if self.limiter is not None else {}
        return {
            "steps": self.steps,
            "calls": self.calls,
            "cache_hits": self.cache_hits,
            "retries": self.retries,
            "reasks": self.reasks,
            "failed_steps": self.failed_steps,
            "answers_too_large": self.answers_too_large,
            "prompt_tokens": self.prompt_tokens,
            "completion_tokens": self.completion_tokens,
            "latency_s": round(self.latency_s, 3),
            "by_prompt": dict(self.by_prompt),
            **extra,
        }
