"""How many calls a provider gets in flight at once: an adaptive limit, as TCP paces a connection.

A :class:`Limiter` hands out permits for calls to one provider (a judge, an embedder; the Ray
backend runs one for the whole cluster). With ``adaptive`` on, the limit it allows

* **starts at half the ceiling** (``initial``, by default, at least 8) and, while
  calls succeed, **grows by one for each call that completes while the limit is in use** (calls
  waiting, or half the places or more taken): a slow start, the limit doubles per round trip, up
  to the ceiling. A limit the run does not fill does not grow: it is no evidence the server takes
  more;
* **halves** when a call is refused as overloaded (HTTP 429, 503, 529) or times out, once per
  round trip: only a call sent after the last cut can cut again, so a burst of refusals of calls
  sent together counts as one signal. After a refusal without Retry-After (a server that refuses
  calls beyond a capacity) it grows back at once, as in a slow start, to the most calls that
  succeeded at one moment since the refusal before (what the server was seen to serve);
  otherwise (a time-out, a rate limit that says when to come back) it stays at half. Above that
  it grows by one per round trip, and next to the limit that was refused by one per four,
  probing the server's capacity without bursts;
* **holds** (does not grow) while the recent latency is more than twice its recent minimum (and
  50 ms above it): a server that queues calls instead of refusing them answers slower before it
  answers worse;
* **pauses the whole provider** when a refusal says how long to wait (``Retry-After``): no call
  starts until then, not only the one that was refused;
* **opens the circuit** (:attr:`Limiter.stopped_answering`) when a provider accepts calls and
  never answers: ``BREAKER_SILENT_CALLS`` calls in a row timed out, with no call answered since
  the first of them was sent, over at least two rounds of time-outs (the last timed out at
  least twice the length of a time-out after the first was sent), so one stall of calls sent
  together does not open it. The caller then stops asking (the Judge stops the run) instead of
  sending every remaining step into the same silence.

With ``adaptive`` off the limit is the ceiling (a fixed limit, as for the embedded judge), and
pauses still apply.

A **gate** (:attr:`Limiter.gate`) holds the permits back for a reason of the caller's: a
permit is granted beside calls in flight only while ``gate(in_flight)`` says so (a run's money
limit lets another call start only while its worst cost fits beside the calls in flight), and
re-asked each time a permit comes back. With nothing in flight a permit is always granted: the
caller then decides, call by call, so the calls wait for each other instead of failing.

Calls waiting for a permit are served lowest priority first (:func:`call_priority`, the sample's
position in the run), so the samples started first finish first: the run keeps few samples half
done, and a sample's chain of calls is not held behind the first calls of later samples.
"""

from __future__ import annotations

import asyncio
import contextlib
import contextvars
import heapq
import itertools
import math
import time
from collections import deque
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass, field
from typing import Any

from ._retry import OVERLOAD_STATUSES, Failure

__all__ = [
    "BREAKER_SILENT_CALLS", "Limiter", "LimiterStats", "Permit", "call_priority", "current_priority", "default_initial",
    "is_congestion", "merge_limiter_stats",
]

_priority: contextvars.ContextVar[int] = contextvars.ContextVar("ragsight_call_priority", default=0)

# Growth stops while the recent latency exceeds its recent minimum by both of these.
LATENCY_TOLERANCE = 2.0
LATENCY_SLACK_S = 0.05
# The circuit opens after this many calls in a row got no answer (see the module docstring).
BREAKER_SILENT_CALLS = 8


@contextlib.contextmanager
def call_priority(priority: int) -> Iterator[None]:
    """Calls made inside the block (and in tasks it starts) wait for a permit with this priority:
    lower first. The engine sets each sample's position in the run."""
    token = _priority.set(priority)
    try:
        yield
    finally:
        _priority.reset(token)


def current_priority() -> int:
    return _priority.get()


def default_initial(ceiling: int) -> int:
    """The starting limit: half the ceiling, at least 8 (and at most the ceiling): 128 for the
    default ceiling of 256. That is the engine's default of samples in flight, and a sample sends
    its first two to five calls at once; a start of 64 held the first calls of the later samples
    of a 20-sample run back by a round trip. It halves to 8 within four rounds of refusals where
    only 8 fit (bench/bench_vs_ragas.py --capacity gives the refusals this costs)."""
    return max(1, min(ceiling, max(8, ceiling // 2)))


def is_congestion(failure: Failure) -> str | None:
    """``"overload"`` for a refusal that means too many calls, ``"timeout"`` for a call that got
    no answer in time, else None (an error that says nothing about the server's load)."""
    exc = failure.exc
    status = getattr(exc, "status", None)
    if status in OVERLOAD_STATUSES:
        return "overload"
    if isinstance(exc, asyncio.TimeoutError) or getattr(exc, "timed_out", False):
        return "timeout"
    return None


@dataclass(frozen=True)
class Permit:
    """One call's permit: when it was granted (monotonic clock)."""

    granted: float


@dataclass
class LimiterStats:
    """What the limit did: ``limit`` now, the ``ceiling``, the lowest and highest it reached, the
    most calls in flight at once, and the signals it acted on."""

    limit: int = 0
    ceiling: int = 0
    adaptive: bool = True
    min_limit: int = 0
    max_limit: int = 0
    peak_in_flight: int = 0
    overloads: int = 0
    timeouts: int = 0
    cuts: int = 0
    paused_s: float = 0.0
    in_flight: int = 0  # live, for a progress display; not part of the record

    def to_dict(self) -> dict[str, Any]:
        return {"limit": self.limit, "ceiling": self.ceiling, "adaptive": self.adaptive,
                "min_limit": self.min_limit, "max_limit": self.max_limit,
                "peak_in_flight": self.peak_in_flight, "overloads": self.overloads,
                "timeouts": self.timeouts, "cuts": self.cuts, "paused_s": round(self.paused_s, 3)}


@dataclass(order=True)
class _Waiter:
    priority: int
    seq: int
    future: asyncio.Future[Permit] = field(compare=False)


class Limiter:
    """Permits for calls in flight to one provider; see the module docstring.

    ``await acquire()`` returns a :class:`Permit` (waiting while the limit is reached or the
    provider is paused); ``release(permit, failure, latency)`` gives it back and reports how the
    call went: ``failure`` None for a success. Made lazily inside the event loop that uses it; one
    limiter serves one loop.
    """

    def __init__(self, ceiling: int, *, initial: int | None = None, adaptive: bool = True,
                 floor: int = 1, retry_after_cap_s: float = 60.0) -> None:
        self.ceiling = max(1, int(ceiling))
        self.floor = max(1, min(int(floor), self.ceiling))
        self.adaptive = adaptive
        start = self.ceiling if not adaptive else default_initial(self.ceiling) if initial is None else initial
        self._limit = float(max(self.floor, min(self.ceiling, int(start))))
        self._ssthresh = math.inf
        self._in_flight = 0
        self._waiters: list[_Waiter] = []
        self._n_waiting = 0  # waiters not granted nor cancelled (the heap keeps cancelled ones)
        self._seq = itertools.count()
        self._pause_until = 0.0
        self._wake_handle: asyncio.TimerHandle | None = None
        self._last_cut = -math.inf
        # the calls that succeeded since the last refusal: (granted, ended), for how many the
        # server served at once
        self._served: deque[tuple[float, float]] = deque(maxlen=512)
        self._n_served = 0
        self._refusable = False
        self._wmax = math.inf  # the limit when the last cut came
        self._short: float | None = None  # latency EWMA over ~5 calls
        self._base: float | None = None  # its recent minimum
        self.retry_after_cap_s = retry_after_cap_s
        # the streak of calls that timed out with none answered since: (count, first one's grant
        # time, the shortest time-out seen); the circuit, once open: (count, seconds of silence)
        self._silent = 0
        self._silent_from = 0.0
        self._silent_wait = math.inf
        self._open: tuple[int, float] | None = None
        # whether another call may start beside ``in_flight`` permits out (see the module docstring)
        self.gate: Callable[[int], bool] | None = None
        self.stats = LimiterStats(limit=int(self._limit), ceiling=self.ceiling, adaptive=adaptive,
                                  min_limit=int(self._limit), max_limit=int(self._limit))

    # ---- reading --------------------------------------------------------------------------

    @property
    def limit(self) -> int:
        """The calls allowed in flight now."""
        return int(self._limit)

    @property
    def in_flight(self) -> int:
        return self._in_flight

    @property
    def waiting(self) -> int:
        return self._n_waiting

    def paused_for(self) -> float:
        """Seconds until a provider-wide pause (Retry-After) ends; 0 when not paused."""
        return max(0.0, self._pause_until - time.monotonic())

    # ---- permits --------------------------------------------------------------------------

    async def acquire(self, priority: int | None = None) -> Permit:
        prio = current_priority() if priority is None else priority
        if not self._waiters and self._in_flight < self.limit and self.paused_for() == 0 and self._gate_open():
            return self._grant()
        fut: asyncio.Future[Permit] = asyncio.get_running_loop().create_future()
        heapq.heappush(self._waiters, _Waiter(prio, next(self._seq), fut))
        self._n_waiting += 1
        self._wake()
        try:
            return await fut
        except asyncio.CancelledError:
            if fut.done() and not fut.cancelled():
                self._in_flight -= 1  # granted as it was cancelled: give the place back
                self.stats.in_flight = self._in_flight
                self._wake()
            else:
                self._n_waiting -= 1  # left in the heap, skipped when its turn comes
            raise

    def _gate_open(self) -> bool:
        return self.gate is None or self._in_flight == 0 or self.gate(self._in_flight)

    def _grant(self) -> Permit:
        self._in_flight += 1
        self.stats.in_flight = self._in_flight
        self.stats.peak_in_flight = max(self.stats.peak_in_flight, self._in_flight)
        return Permit(time.monotonic())

    def release(self, permit: Permit, failure: Failure | None = None, latency: float | None = None) -> bool:
        """Give ``permit`` back. ``failure``: how the call failed (None: it succeeded; a failure
        that is no congestion signal leaves the limit alone). Returns True when this call's
        refusal cut the limit (the caller may send it again at once: the lower limit paces it)."""
        # in use: calls waiting, or at least half the places taken (as Linux judges a TCP window
        # in use: calls that end together free the places one by one)
        in_use = self.waiting > 0 or 2 * self._in_flight >= self.limit
        if failure is None and self._refusable:
            # after a refusal without Retry-After: grow back at once (a slow start) to what the
            # server was seen to serve at one moment since, short of what it refused; looked at
            # every 8 successes, and no more once the limit may grow back that far
            self._served.append((permit.granted, time.monotonic()))
            self._n_served += 1
            if self._n_served % 8 == 0:
                served = _most_at_once(self._served)
                self._ssthresh = max(self._ssthresh, min(float(served), self._wmax - 1))
                self._refusable = self._ssthresh < self._wmax - 1
        self._in_flight = max(0, self._in_flight - 1)
        self.stats.in_flight = self._in_flight
        cut = False
        if failure is None:
            self._silent = 0
            self._succeeded(latency, in_use)
        else:
            if is_congestion(failure) == "timeout":
                self._no_answer(permit)
            cut = self._congested(permit, failure)
        self._wake()
        return cut

    @property
    def stopped_answering(self) -> tuple[int, float] | None:
        """(calls in a row without an answer, seconds of silence) once the circuit is open (the
        provider accepts calls and never answers); None while it answers."""
        return self._open

    def _no_answer(self, permit: Permit) -> None:
        now = time.monotonic()
        if self._silent == 0:
            self._silent_from = permit.granted
            self._silent_wait = math.inf
        self._silent += 1
        self._silent_from = min(self._silent_from, permit.granted)
        self._silent_wait = min(self._silent_wait, now - permit.granted)
        if (self._open is None and self._silent >= BREAKER_SILENT_CALLS
                and now - self._silent_from >= 2 * self._silent_wait):
            self._open = (self._silent, now - self._silent_from)

    def forfeit(self) -> None:
        """Give back a permit whose call did not go out or was lost (a cancelled call, a worker
        that died): no signal either way."""
        self._in_flight = max(0, self._in_flight - 1)
        self.stats.in_flight = self._in_flight
        self._wake()

    # ---- the rule -------------------------------------------------------------------------

    def _succeeded(self, latency: float | None, in_use: bool) -> None:
        hold = False
        if latency is not None and latency >= 0:
            short = latency if self._short is None else 0.8 * self._short + 0.2 * latency
            self._short = short
            # the minimum drifts up 2.5% per round trip (limit calls), so that a run whose calls
            # become longer (another kind of step) is not held for good by an old minimum
            base = short if self._base is None else min(self._base * (1 + 0.025 / self._limit), short)
            self._base = base
            hold = short > LATENCY_TOLERANCE * base and short - base > LATENCY_SLACK_S
        if not self.adaptive or hold or not in_use or self._limit >= self.ceiling:
            return
        if self._limit < self._ssthresh:
            self._limit += 1.0  # slow start: one more per call
        elif self._limit + 1 >= self._wmax:
            self._limit += 0.25 / self._limit  # next to the limit that was refused: a probe per 4 trips
        else:
            self._limit += 1.0 / self._limit  # about one more per round trip
        self._limit = min(self._limit, float(self.ceiling))
        self.stats.max_limit = max(self.stats.max_limit, self.limit)
        self.stats.limit = self.limit

    def _congested(self, permit: Permit, failure: Failure) -> bool:
        kind = is_congestion(failure)
        if kind is None:
            return False
        if kind == "overload":
            self.stats.overloads += 1
        else:
            self.stats.timeouts += 1
        self._served.clear()
        self._n_served = 0
        now = time.monotonic()
        if failure.retry_after is not None and failure.retry_after > 0:
            until = now + min(failure.retry_after, self.retry_after_cap_s)
            if until > self._pause_until:
                self.stats.paused_s += until - max(now, self._pause_until)
                self._pause_until = until
        if not self.adaptive or permit.granted < self._last_cut:
            return False  # sent before the last cut: the same burst, already answered
        cut = max(float(self.floor), math.floor(self._limit / 2))
        self._wmax = self._limit
        # a server that refuses calls beyond a capacity (no Retry-After): it may be grown back to
        # what it is seen to serve (above); a time-out or a rate limit that says when to come
        # back: stay down
        self._refusable = kind == "overload" and failure.retry_after is None
        self._ssthresh = cut
        self._limit = cut
        self._last_cut = now
        self.stats.cuts += 1
        self.stats.limit = self.limit
        self.stats.min_limit = min(self.stats.min_limit, self.limit)
        return True

    def _wake(self) -> None:
        pause = self.paused_for()
        if pause > 0:
            if self._waiters and self._wake_handle is None:
                loop = asyncio.get_running_loop()
                self._wake_handle = loop.call_later(pause, self._resume)
            return
        while self._waiters and self._in_flight < self.limit:
            if self._waiters[0].future.done():
                heapq.heappop(self._waiters)
                continue  # cancelled while waiting
            if not self._gate_open():
                return  # a permit coming back asks again
            w = heapq.heappop(self._waiters)
            self._n_waiting -= 1
            w.future.set_result(self._grant())

    def _resume(self) -> None:
        self._wake_handle = None
        self._wake()


def _most_at_once(spans: Iterable[tuple[float, float]]) -> int:
    """The most of these (start, end) spans that overlap at one moment."""
    events = sorted([(a, 1) for a, _ in spans] + [(b, -1) for _, b in spans], key=lambda e: (e[0], e[1]))
    most = now = 0
    for _, step in events:
        now += step
        most = max(most, now)
    return most


def merge_limiter_stats(old: dict[str, Any], new: dict[str, Any]) -> dict[str, Any]:
    """The figures of a run continued (``--resume``): the limit as it ended, the signals of both
    parts added up, the extremes of both."""
    out = dict(new)
    for k in ("overloads", "timeouts", "cuts", "paused_s"):
        out[k] = old.get(k, 0) + new.get(k, 0)
    for k in ("max_limit", "peak_in_flight"):
        out[k] = max(old.get(k, 0), new.get(k, 0))
    if "min_limit" in old:
        out["min_limit"] = min(old["min_limit"], new.get("min_limit", old["min_limit"]))
    return out
