"""The Ray backend's shared actors: the cluster-wide rate limiter (and the provider proxy that
takes its permits) and the judge-call cache (the server actor and each worker's side of it).
See ``engine/_ray.py`` for how the driver and the workers use them."""

from __future__ import annotations

import asyncio
import contextvars
import uuid
from collections import OrderedDict
from collections.abc import Sequence
from typing import Any

from ..judge import (
    ChoiceScores,
    Completion,
    JudgeProvider,
    JudgeRequest,
    ProviderError,
    provider_identity,
)
from ..store import Store

__all__ = ["CacheServer", "LimitedProvider", "Limiter", "SharedCache", "attempt_id"]

# The batch attempt a worker is running: the limiter gives back the permits of a dead attempt.
attempt_id: contextvars.ContextVar[str] = contextvars.ContextVar("ragsight_ray_attempt", default="")


# ---- the cluster-wide rate limiter --------------------------------------------------------


class Limiter:
    """Permits for calls in flight to a remote judge, for the whole cluster (a Ray actor).

    Each permit is taken under a ticket and a holder (the batch attempt that made the call). When
    a worker dies, the driver releases every permit its attempts held; a permit that is released
    before it was granted (the call was cancelled while waiting) is given back when granted.
    """

    def __init__(self, limit: int) -> None:
        self.limit = max(1, int(limit))
        self._sem: asyncio.Semaphore | None = None
        self._granted: dict[str, str] = {}  # ticket -> holder
        self._cancelled: set[str] = set()
        self._dead: set[str] = set()
        self.peak = 0

    def _semaphore(self) -> asyncio.Semaphore:
        if self._sem is None:
            self._sem = asyncio.Semaphore(self.limit)
        return self._sem

    async def acquire(self, holder: str, ticket: str) -> bool:
        sem = self._semaphore()
        await sem.acquire()
        if holder in self._dead or ticket in self._cancelled:
            self._cancelled.discard(ticket)
            sem.release()
            return False
        self._granted[ticket] = holder
        self.peak = max(self.peak, len(self._granted))
        return True

    async def release(self, ticket: str) -> None:
        if self._granted.pop(ticket, None) is not None:
            self._semaphore().release()
        else:
            self._cancelled.add(ticket)

    async def release_holders(self, holders: list[str]) -> int:
        dead = set(holders)
        self._dead |= dead
        tickets = [t for t, h in self._granted.items() if h in dead]
        for t in tickets:
            del self._granted[t]
            self._semaphore().release()
        return len(tickets)

    async def stats(self) -> dict[str, int]:
        return {"limit": self.limit, "peak": self.peak, "in_flight": len(self._granted)}


class LimitedProvider:
    """A provider proxy that holds a cluster-wide permit around each call to the real provider."""

    def __init__(self, inner: JudgeProvider, limiter: Any) -> None:
        self.inner = inner
        self.limiter = limiter
        self.name = inner.name
        self.model = inner.model
        self.supports_choices = inner.supports_choices
        self.max_concurrency = inner.max_concurrency
        self.context_window = inner.context_window
        self.identity = provider_identity(inner)  # the cache key is the real provider's

    async def _permit(self, ticket: str) -> None:
        if not await self.limiter.acquire.remote(attempt_id.get(), ticket):
            raise ProviderError("the batch was given up by the driver", retryable=False)

    async def complete(self, request: JudgeRequest) -> Completion:
        ticket = uuid.uuid4().hex
        try:
            await self._permit(ticket)
            return await self.inner.complete(request)
        finally:
            self.limiter.release.remote(ticket)

    async def score_choices(self, request: JudgeRequest, choices: Sequence[str]) -> ChoiceScores:
        ticket = uuid.uuid4().hex
        try:
            await self._permit(ticket)
            return await self.inner.score_choices(request, choices)
        finally:
            self.limiter.release.remote(ticket)

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
