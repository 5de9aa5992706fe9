"""A server with a fixed capacity: a FakeOpenAIServer handler that answers HTTP 429 to any chat
request beyond ``limit`` in flight, as a rate-limited API or a proxy in front of a small
deployment does, and passes the others to an inner handler.

    gate = Capacity(JudgeWorld(latency=0.05), limit=8)
    with FakeOpenAIServer(handler=gate) as srv:
        ...
    gate.refused, gate.peak, gate.accepted

A request counts as in flight from its arrival until its answer is computed (the inner handler's
latency included). ``retry_after`` adds a Retry-After header (seconds) to the refusals.
Embedding requests pass through uncounted.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable
from typing import Any

from .openai_server import RecordedRequest, Reply

__all__ = ["Capacity"]


class Capacity:
    def __init__(self, inner: Callable[[RecordedRequest], Reply | None], limit: int,
                 retry_after: float | None = None) -> None:
        self.inner = inner
        self.limit = limit
        self.retry_after = retry_after
        self.in_flight = 0
        self.peak = 0
        self.accepted = 0
        self.refused = 0
        self.refusal_times: list[float] = []
        self.arrivals: list[float] = []
        self._lock = threading.Lock()

    def halves(self) -> tuple[int, int]:
        """Refusals in the first and the second half of the time between the first and the last
        chat request."""
        if not self.arrivals:
            return 0, 0
        mid = (self.arrivals[0] + self.arrivals[-1]) / 2
        late = sum(1 for t in self.refusal_times if t >= mid)
        return len(self.refusal_times) - late, late

    def __call__(self, request: RecordedRequest) -> Reply | None:
        if not request.path.endswith("/chat/completions"):
            return self.inner(request)
        with self._lock:
            self.arrivals.append(time.monotonic())
            if self.in_flight >= self.limit:
                self.refused += 1
                self.refusal_times.append(time.monotonic())
                headers: dict[str, Any] = {}
                if self.retry_after is not None:
                    headers["Retry-After"] = f"{self.retry_after:g}"
                return Reply.error(429, f"more than {self.limit} requests in flight",
                                   code="rate_limit_exceeded", headers=headers)
            self.in_flight += 1
            self.accepted += 1
            self.peak = max(self.peak, self.in_flight)
        try:
            return self.inner(request)
        finally:
            with self._lock:
                self.in_flight -= 1
