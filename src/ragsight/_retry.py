"""One retry rule for every remote call: the judge, the embedder, the preflight ping and the
system under test.

A failure is classified once (:class:`Failure`: retryable or not, fatal or not, the server's
requested wait); the wait before the next attempt is :meth:`Backoff.delay`: the server's
Retry-After when it gave one (bounded), else exponential from ``base_s``, capped at ``max_s``,
with jitter so that many callers do not retry in step. :func:`retry` runs the loop for callers
that only need the answer; the Judge, which records every attempt, uses the same two pieces.
"""

from __future__ import annotations

import asyncio
import random
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import TypeVar

from .errors import ProviderError

__all__ = ["Backoff", "Failure", "RetryExhaustedError", "classify", "retry"]

T = TypeVar("T")


@dataclass(frozen=True)
class Failure:
    """One failed attempt, classified: what to say, whether another attempt can succeed, whether
    no later call can (bad key, unknown model), and the server's requested wait in seconds."""

    message: str
    retryable: bool
    retry_after: float | None = None
    fatal: bool = False
    exc: BaseException | None = None


def classify(exc: BaseException) -> Failure | None:
    """The common cases: a :class:`ProviderError` as it says, a time-out and a connection error
    retryable; None for anything else (not a transport failure: let it propagate)."""
    if isinstance(exc, ProviderError):
        return Failure(str(exc), exc.retryable, exc.retry_after, exc.fatal, exc)
    if isinstance(exc, asyncio.TimeoutError):
        return Failure("timed out", True, None, False, exc)
    if isinstance(exc, OSError):
        return Failure(f"{type(exc).__name__}: {exc}", True, None, False, exc)
    return None


@dataclass(frozen=True)
class Backoff:
    """The wait before attempt ``n + 1`` after attempt ``n`` failed.

    ``jitter``: the exponential wait is multiplied by a random factor in ``[1 - jitter, 1)``
    (0 for none). ``retry_after_cap_s``: the most a server's Retry-After is honoured for."""

    base_s: float = 0.5
    max_s: float = 20.0
    jitter: float = 0.5
    retry_after_cap_s: float = 60.0

    def delay(self, attempt: int, retry_after: float | None = None,
              rng: random.Random | None = None) -> float:
        if retry_after is not None and retry_after >= 0:
            return min(retry_after, self.retry_after_cap_s)
        wait = min(self.base_s * (2 ** (attempt - 1)), self.max_s)
        if self.jitter:
            wait *= 1.0 - self.jitter + self.jitter * (rng or random).random()
        return wait


class RetryExhaustedError(Exception):
    """Raised by :func:`retry` when the attempts, the time budget or a non-retryable failure end
    the loop: carries the last failure, the attempts made and why it stopped."""

    def __init__(self, failure: Failure, attempts: int, why: str) -> None:
        super().__init__(failure.message)
        self.failure = failure
        self.attempts = attempts
        self.why = why  # "fatal" | "not retryable" | "attempts" | "budget"


async def retry(
    call: Callable[[], Awaitable[T]],
    *,
    attempts: int,
    backoff: Backoff,
    classify_error: Callable[[BaseException], Failure | None] = classify,
    budget_s: float | None = None,
    rng: random.Random | None = None,
) -> tuple[T, int]:
    """``(await call(), attempts made)``, trying again after a retryable failure. ``budget_s``
    bounds the total time spent waiting between attempts. An exception ``classify_error`` does
    not recognise propagates unchanged."""
    waited = 0.0
    failure = Failure("no attempt was made", False)
    for attempt in range(1, attempts + 1):
        try:
            return await call(), attempt
        except Exception as exc:
            classified = classify_error(exc)
            if classified is None:
                raise
            failure = classified
        if failure.fatal:
            raise RetryExhaustedError(failure, attempt, "fatal") from failure.exc
        if not failure.retryable:
            raise RetryExhaustedError(failure, attempt, "not retryable") from failure.exc
        if attempt == attempts:
            break
        wait = backoff.delay(attempt, failure.retry_after, rng)
        if budget_s is not None and waited + wait > budget_s:
            raise RetryExhaustedError(failure, attempt, "budget") from failure.exc
        waited += wait
        await asyncio.sleep(wait)
    raise RetryExhaustedError(failure, attempts, "attempts") from failure.exc
