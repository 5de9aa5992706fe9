"""One retry rule for every remote call: the judge, the embedder, the preflight ping and the
system under test.

A failure is classified once (:class:`Failure`: retryable or not, fatal or not, the server's
requested wait); the wait before the next attempt is :meth:`Backoff.delay`: the server's
Retry-After when it gave one (bounded), else exponential from ``base_s``, capped at ``max_s``,
with jitter so that many callers do not retry in step. :func:`retry` runs the loop for callers
that only need the answer; the Judge, which records every attempt, uses the same two pieces.

How long to keep trying is :func:`may_try_again`: ``max_attempts`` attempts, except after a
refusal for overload (HTTP 429, 503, 529) that says nothing usable about when to come back (no
Retry-After, or one past the cap): those are tried again for as long as
``OVERLOAD_BUDGET_S`` of the step's time allows, however many attempts that takes. A burst of
refusals lasting a few seconds then costs waits, not scores (4 attempts fit in 3.5 s).
"""

from __future__ import annotations

import asyncio
import random
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import TypeVar

from ..errors import ProviderError

__all__ = [
    "OVERLOAD_BUDGET_S", "OVERLOAD_STATUSES", "Backoff", "Failure", "RetryExhaustedError", "classify",
    "is_overload", "may_try_again", "retry",
]

T = TypeVar("T")

# HTTP statuses that mean "too many calls": rate limited, overloaded, Anthropic's overloaded
OVERLOAD_STATUSES = frozenset({429, 503, 529})
# How long refusals for overload without a usable Retry-After are tried again, per step.
OVERLOAD_BUDGET_S = 60.0


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


def is_overload(failure: Failure) -> bool:
    """A refusal that means "too many calls" (HTTP 429, 503, 529), not a fatal one (quota)."""
    return not failure.fatal and getattr(failure.exc, "status", None) in OVERLOAD_STATUSES


def may_try_again(failure: Failure, attempt: int, max_attempts: int, elapsed_s: float,
                  next_wait_s: float, budget_s: float = OVERLOAD_BUDGET_S) -> bool:
    """Whether attempt ``attempt + 1`` may follow this failure, ``elapsed_s`` after the first
    attempt began, with ``next_wait_s`` to wait first: never after a fatal or non-retryable
    failure; within ``max_attempts``; beyond them only for an overload refusal without a usable
    Retry-After, while the wait still ends within ``budget_s`` of the first attempt."""
    if failure.fatal or not failure.retryable:
        return False
    if attempt < max_attempts:
        return True
    return is_overload(failure) and failure.retry_after is None and elapsed_s + next_wait_s <= budget_s


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
    overload_budget_s: float | None = None,
    rng: random.Random | None = None,
) -> tuple[T, int]:
    """``(await call(), attempts made)``, trying again after a retryable failure. ``budget_s``
    bounds the total time spent waiting between attempts. ``overload_budget_s``: refusals for
    overload without Retry-After are tried beyond ``attempts`` for that long (:func:`may_try_again`).
    An exception ``classify_error`` does not recognise propagates unchanged."""
    waited = 0.0
    loop = asyncio.get_running_loop()
    start = loop.time()
    attempt = 0
    while True:
        attempt += 1
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
        wait = backoff.delay(attempt, failure.retry_after, rng)
        if not may_try_again(failure, attempt, attempts, loop.time() - start, wait,
                             overload_budget_s if overload_budget_s is not None else 0.0):
            raise RetryExhaustedError(failure, attempt, "attempts") from failure.exc
        if budget_s is not None and waited + wait > budget_s:
            raise RetryExhaustedError(failure, attempt, "budget") from failure.exc
        waited += wait
        await asyncio.sleep(wait)
