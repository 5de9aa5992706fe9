"""The Ray backend's shared actors: the cluster-wide rate limiter (and the provider proxy that
takes its permits) and the judge-call cache (the server actor and each worker's side of it).
See ``engine/_ray.py`` for how the driver and the workers use them."""

from __future__ import annotations

import asyncio
import contextvars
import time
import uuid
from collections import OrderedDict
from collections.abc import Awaitable, Callable, Sequence
from typing import Any, TypeVar

from ..calls import Failure, Permit, current_priority
from ..calls import Limiter as AdaptiveLimit
from ..judge import (
    ChoiceScores,
    Completion,
    JudgeProvider,
    JudgeRequest,
    ProviderError,
    provider_identity,
)
from ..store import Store

__all__ = ["CacheServer", "LimitedProvider", "Limiter", "SharedCache", "attempt_id", "signal_of"]

T = TypeVar("T")

# The batch attempt a worker is running: the limiter gives back the permits of a dead attempt.
attempt_id: contextvars.ContextVar[str] = contextvars.ContextVar("ragsight_ray_attempt", default="")


# ---- the cluster-wide rate limiter --------------------------------------------------------


def signal_of(exc: BaseException | None) -> dict[str, Any] | None:
    """What the limiter needs to know about a failed call, as plain data (exceptions with
    keyword-only arguments do not unpickle): the HTTP status, whether it timed out, the server's
    Retry-After. None for a success."""
    if exc is None:
        return None
    if isinstance(exc, asyncio.TimeoutError):
        return {"status": None, "timed_out": True, "retry_after": None}
    if isinstance(exc, ProviderError):
        return {"status": exc.status, "timed_out": exc.timed_out, "retry_after": exc.retry_after}
    return {"status": None, "timed_out": False, "retry_after": None}  # no sign of the server's load


def _failure(signal: dict[str, Any]) -> Failure:
    exc = ProviderError("a worker's call failed", retryable=True, status=signal.get("status"),
                        retry_after=signal.get("retry_after"), timed_out=bool(signal.get("timed_out")))
    return Failure(str(exc), True, exc.retry_after, False, exc)


class Limiter:
    """Permits for calls in flight to a remote judge, for the whole cluster (a Ray actor): the
    adaptive limit of ``ragsight._limiter`` (raised while calls succeed, cut on refusals and
    time-outs, paused on Retry-After) applied to every worker's calls together.

    Each permit is taken under a ticket and a holder (the batch attempt that made the call). When
    a worker dies, the driver releases every permit its attempts held; a permit that is released
    before it was granted (the call was cancelled while waiting) is given back when granted.
    """

    def __init__(self, limit: int, adaptive: bool = True, retry_after_cap_s: float = 60.0) -> None:
        self.limit = max(1, int(limit))
        self._limit = AdaptiveLimit(self.limit, adaptive=adaptive, retry_after_cap_s=retry_after_cap_s)
        self._granted: dict[str, tuple[str, Permit]] = {}  # ticket -> (holder, permit)
        self._cancelled: set[str] = set()
        self._dead: set[str] = set()

    async def acquire(self, holder: str, ticket: str, priority: int = 0) -> bool:
        permit = await self._limit.acquire(priority)
        if holder in self._dead or ticket in self._cancelled:
            self._cancelled.discard(ticket)
            self._limit.forfeit()
            return False
        self._granted[ticket] = (holder, permit)
        return True

    async def release(self, ticket: str, signal: dict[str, Any] | None = None,
                      latency: float | None = None) -> bool:
        """Give a permit back with how its call went (``signal_of``); True when it cut the limit."""
        entry = self._granted.pop(ticket, None)
        if entry is None:
            self._cancelled.add(ticket)
            return False
        return self._limit.release(entry[1], None if signal is None else _failure(signal), latency)

    async def release_holders(self, holders: list[str]) -> int:
        dead = set(holders)
        self._dead |= dead
        tickets = [t for t, (h, _) in self._granted.items() if h in dead]
        for t in tickets:
            del self._granted[t]
            self._limit.forfeit()
        return len(tickets)

    async def stats(self) -> dict[str, Any]:
        """The limit's figures (``LimiterStats``), with ``peak`` and ``in_flight`` as before."""
        st = self._limit.stats
        return {**st.to_dict(), "peak": st.peak_in_flight, "in_flight": len(self._granted)}


class LimitedProvider:
    """A provider proxy that holds a cluster-wide permit around each call to the real provider
    and tells the limiter how the call went."""

    def __init__(self, inner: JudgeProvider, limiter: Any) -> None:
        self.inner = inner
        self.limiter = limiter
        self.name = inner.name
        self.model = inner.model
        self.supports_choices = inner.supports_choices
        self.max_concurrency = inner.max_concurrency
        self.context_window = inner.context_window
        self.identity = provider_identity(inner)  # the cache key is the real provider's

    async def _limited(self, call: Callable[[], Awaitable[T]]) -> T:
        ticket = uuid.uuid4().hex
        failed: BaseException | None = None
        t0 = None
        try:
            if not await self.limiter.acquire.remote(attempt_id.get(), ticket, current_priority()):
                raise ProviderError("the batch was given up by the driver", retryable=False)
            t0 = time.monotonic()
            return await call()
        except BaseException as exc:
            failed = exc
            raise
        finally:
            latency = None if t0 is None or failed is not None else time.monotonic() - t0
            self.limiter.release.remote(ticket, signal_of(failed), latency)

    async def complete(self, request: JudgeRequest) -> Completion:
        return await self._limited(lambda: self.inner.complete(request))

    async def score_choices(self, request: JudgeRequest, choices: Sequence[str]) -> ChoiceScores:
        return await self._limited(lambda: self.inner.score_choices(request, choices))

    def count_tokens(self, text: str) -> int:
        return self.inner.count_tokens(text)

    async def preflight(self) -> None:
        await self.inner.preflight()

    async def aclose(self) -> None:
        await self.inner.aclose()


# ---- the shared judge-call cache ----------------------------------------------------------


class CacheServer:
    """The judge-call cache for the cluster (a Ray actor on the driver's node).

    ``get`` answers from the entries written during this run, then from the driver's store
    (read only). ``put`` keeps the entry until the driver has written it to its store
    (``drain`` then ``forget``); with no store path (an in-memory store) entries stay here.
    """

    def __init__(self, path: str | None, seed: dict[str, dict[str, Any]] | None = None) -> None:
        self.path = path
        self._mem: dict[str, dict[str, Any]] = dict(seed or {})
        self._pending: list[str] = []
        self._store: Store | None = None

    def get(self, key: str) -> dict[str, Any] | None:
        hit = self._mem.get(key)
        if hit is not None or self.path is None:
            return hit
        if self._store is None:
            self._store = Store(self.path)
        return self._store.cache_get(key)

    def put(self, key: str, entry: dict[str, Any]) -> None:
        self._mem[key] = entry
        self._pending.append(key)

    def drain(self) -> list[tuple[str, dict[str, Any]]]:
        keys, self._pending = self._pending, []
        return [(k, self._mem[k]) for k in dict.fromkeys(keys)]

    def forget(self, keys: list[str]) -> None:
        if self.path is None:
            return
        pending = set(self._pending)
        for k in keys:
            if k not in pending:
                self._mem.pop(k, None)


class SharedCache:
    """The worker's side of the shared cache (a :class:`~ragsight.judge.CallCache`): ``get``
    answers from a local table, else awaits the cache actor; ``put`` is sent on without
    waiting."""

    def __init__(self, server: Any, size: int = 4096) -> None:
        self.server = server
        self.size = size
        self._local: OrderedDict[str, dict[str, Any] | None] = OrderedDict()
        self._sent: list[Any] = []


    def _remember(self, key: str, entry: dict[str, Any] | None) -> None:
        self._local[key] = entry
        self._local.move_to_end(key)
        while len(self._local) > self.size:
            self._local.popitem(last=False)

    async def get(self, key: str) -> dict[str, Any] | None:
        hit = self._local.get(key)
        if hit is None:
            hit = await self.server.get.remote(key)
            self._remember(key, hit)
        return hit

    async def put(self, key: str, entry: dict[str, Any]) -> None:
        self._remember(key, entry)
        self._sent.append(self.server.put.remote(key, entry))

    async def flush(self) -> None:
        """Wait until the cache actor holds every entry put so far (before a batch returns, so
        the driver's last drain finds them)."""
        sent, self._sent = self._sent, []
        if sent:
            await asyncio.gather(*sent)
