"""The adaptive concurrency limit (ragsight.calls._limiter), driven directly: slow start, one cut per
burst of refusals, additive increase after a cut, the latency hold, provider-wide pauses,
priority order and cancellation."""

from __future__ import annotations

import asyncio
import itertools

import pytest

from ragsight.calls._limiter import (
    Limiter,
    call_priority,
    default_initial,
    is_congestion,
    merge_limiter_stats,
)
from ragsight.calls._retry import Failure, classify
from ragsight.errors import ProviderError


def overload(retry_after: float | None = None) -> Failure:
    f = classify(ProviderError("HTTP 429", retryable=True, status=429, retry_after=retry_after))
    assert f is not None
    return f


def timeout() -> Failure:
    f = classify(ProviderError("no answer in 60 s", retryable=True, timed_out=True))
    assert f is not None
    return f


def test_default_start_is_moderate() -> None:
    assert default_initial(256) == 128
    assert default_initial(16) == 8
    assert default_initial(4) == 4
    assert Limiter(256).limit == 128
    assert Limiter(256, adaptive=False).limit == 256


def test_congestion_signals() -> None:
    assert is_congestion(overload()) == "overload"
    assert is_congestion(timeout()) == "timeout"
    f = classify(asyncio.TimeoutError())
    assert f is not None and is_congestion(f) == "timeout"
    for status in (503, 529):
        f = classify(ProviderError("busy", retryable=True, status=status))
        assert f is not None and is_congestion(f) == "overload"
    for exc in (ProviderError("HTTP 500", retryable=True, status=500), ConnectionResetError()):
        f = classify(exc)
        assert f is not None and is_congestion(f) is None


class Demand:
    """More calls than the limit allows, all wanting to go at once: each round, every call that
    holds a permit ends (with ``failure`` and ``latency``) and the waiting ones take the freed
    places, as calls do that all last one round trip."""

    def __init__(self, lim: Limiter, calls: int = 5000) -> None:
        self.lim = lim
        self.pending = [asyncio.ensure_future(lim.acquire()) for _ in range(calls)]

    async def round(self, failure: Failure | None = None, latency: float = 0.1) -> int:
        await asyncio.sleep(0)
        granted = [f for f in self.pending if f.done()]
        self.pending = [f for f in self.pending if not f.done()]
        for f in granted:
            self.lim.release(f.result(), failure, latency)
        await asyncio.sleep(0)
        return self.lim.limit

    def close(self) -> None:
        for f in self.pending:
            f.cancel()


def test_slow_start_doubles_per_round_while_calls_wait_then_stops_at_the_ceiling() -> None:
    async def main() -> list[int]:
        lim = Limiter(100, initial=8)
        d = Demand(lim)
        seen = [await d.round() for _ in range(6)]
        d.close()
        return seen

    assert asyncio.run(main()) == [16, 32, 64, 100, 100, 100]


def test_a_limit_the_run_does_not_fill_does_not_grow() -> None:
    async def main() -> int:
        lim = Limiter(100, initial=8)
        for _ in range(20):
            permits = [await lim.acquire() for _ in range(3)]  # 3 of 8 places used
            for p in permits:
                lim.release(p, None, 0.1)
        return lim.limit

    assert asyncio.run(main()) == 8


def test_a_burst_of_refusals_cuts_once_and_growth_is_then_additive() -> None:
    async def main() -> tuple[int, list[bool], int, list[int]]:
        lim = Limiter(256, initial=64)
        permits = await asyncio.gather(*(lim.acquire() for _ in range(64)))
        cuts = [lim.release(p, overload()) for p in permits[:20]]  # 20 refusals of one burst
        after_burst = lim.limit
        for p in permits[20:]:
            lim.release(p, None, 0.1)
        d = Demand(lim)
        later = [await d.round() for _ in range(4)]
        d.close()
        return after_burst, cuts, lim.stats.overloads, later

    after_burst, cuts, overloads, later = asyncio.run(main())
    assert after_burst == 32
    assert cuts == [True] + [False] * 19
    assert overloads == 20
    # the server served the other 44 at once: back to them, then one more per round trip
    assert later[0] >= 44 and all(b - a == 1 for a, b in itertools.pairwise(later)), later


@pytest.mark.parametrize("signal", ["probe refused", "time-out"])
def test_after_a_refused_probe_the_limit_grows_back_to_what_the_server_served(signal: str) -> None:
    """65 calls out where the server serves 64: the 65th is refused at once, the 64 succeed. A
    refusal without Retry-After says the server has a capacity and it was seen to serve 64: the
    limit halves, then grows back to 64 in one round trip and probes above it slowly. A time-out
    says the server is overloaded: the limit stays at half and grows by one per round trip."""
    async def main() -> list[int]:
        lim = Limiter(256, initial=65)
        permits = await asyncio.gather(*(lim.acquire() for _ in range(65)))
        lim.release(permits[-1], overload() if signal == "probe refused" else timeout())
        assert lim.limit == 32
        for p in permits[:-1]:
            lim.release(p, None, 0.3)
        d = Demand(lim)
        seen = [await d.round() for _ in range(6)]
        d.close()
        return seen

    seen = asyncio.run(main())
    if signal == "probe refused":
        assert seen[0] >= 63 and max(seen) <= 66, seen
    else:
        assert seen[0] <= 35 and all(b - a == 1 for a, b in itertools.pairwise(seen)), seen


def test_a_call_sent_after_the_cut_can_cut_again_down_to_the_floor() -> None:
    async def main() -> list[int]:
        lim = Limiter(64, initial=64, floor=2)
        out = []
        for _ in range(7):
            p = await lim.acquire()
            lim.release(p, timeout())
            out.append(lim.limit)
        return out

    assert asyncio.run(main()) == [32, 16, 8, 4, 2, 2, 2]


def test_growth_holds_while_latency_is_more_than_twice_its_minimum() -> None:
    async def main() -> tuple[int, list[int]]:
        lim = Limiter(1000, initial=8)
        d = Demand(lim)
        for _ in range(3):
            await d.round(latency=0.1)  # 8 -> 64
        grown = lim.limit
        held = [await d.round(latency=0.5) for _ in range(3)]  # the server queues: 5 x slower
        d.close()
        return grown, held

    grown, held = asyncio.run(main())
    assert grown == 64
    assert max(held) < 64 + 8  # held within a few calls of the slowdown, not doubled to 512
    assert held[-1] == held[-2]


def test_fixed_limit_never_moves_but_still_pauses() -> None:
    async def main() -> tuple[int, float]:
        lim = Limiter(16, adaptive=False)
        p = await lim.acquire()
        lim.release(p, overload(retry_after=0.3))
        limit = lim.limit
        t0 = asyncio.get_running_loop().time()
        q = await lim.acquire()
        lim.release(q, None, 0.01)
        return limit, asyncio.get_running_loop().time() - t0

    limit, waited = asyncio.run(main())
    assert limit == 16
    assert 0.25 <= waited < 1.0


def test_retry_after_pauses_every_caller_not_only_the_refused_one() -> None:
    async def main() -> list[float]:
        lim = Limiter(8, initial=8)
        loop = asyncio.get_running_loop()
        first = await lim.acquire()
        t0 = loop.time()
        lim.release(first, overload(retry_after=0.4))

        async def later() -> float:
            p = await lim.acquire()
            lim.release(p, None, 0.01)
            return loop.time() - t0

        return await asyncio.gather(*(later() for _ in range(5)))

    waits = asyncio.run(main())
    assert all(0.35 <= w < 1.0 for w in waits), waits


def test_waiting_calls_are_served_lowest_priority_first() -> None:
    async def main() -> list[int]:
        lim = Limiter(1, adaptive=False)
        order: list[int] = []
        held = await lim.acquire()

        async def call(prio: int) -> None:
            with call_priority(prio):
                p = await lim.acquire()
            order.append(prio)
            await asyncio.sleep(0)
            lim.release(p, None, 0.01)

        tasks = [asyncio.ensure_future(call(p)) for p in (5, 2, 9, 0, 2)]
        await asyncio.sleep(0.01)
        lim.release(held, None, 0.01)
        await asyncio.gather(*tasks)
        return order

    assert asyncio.run(main()) == [0, 2, 2, 5, 9]


def test_a_cancelled_waiter_does_not_keep_a_place() -> None:
    async def main() -> tuple[int, int]:
        lim = Limiter(2, adaptive=False)
        a, b = await lim.acquire(), await lim.acquire()
        waiter = asyncio.ensure_future(lim.acquire())
        await asyncio.sleep(0.01)
        waiter.cancel()
        await asyncio.gather(waiter, return_exceptions=True)
        lim.release(a, None, 0.01)
        c = await asyncio.wait_for(lim.acquire(), 1)  # the freed place is not lost to the waiter
        lim.release(b, None, 0.01)
        lim.release(c, None, 0.01)
        return lim.in_flight, lim.stats.peak_in_flight

    assert asyncio.run(main()) == (0, 2)


def test_resumed_run_merges_the_figures() -> None:
    old = {"limit": 40, "ceiling": 256, "min_limit": 16, "max_limit": 64, "peak_in_flight": 60,
           "overloads": 3, "timeouts": 1, "cuts": 2, "paused_s": 1.5, "adaptive": True}
    new = {"limit": 50, "ceiling": 256, "min_limit": 32, "max_limit": 50, "peak_in_flight": 48,
           "overloads": 1, "timeouts": 0, "cuts": 1, "paused_s": 0.0, "adaptive": True}
    m = merge_limiter_stats(old, new)
    assert m["limit"] == 50 and m["min_limit"] == 16 and m["max_limit"] == 64
    assert m["overloads"] == 4 and m["cuts"] == 3 and m["paused_s"] == pytest.approx(1.5)
    assert m["peak_in_flight"] == 60


def test_a_gate_holds_permits_beside_calls_in_flight_and_asks_again_when_one_comes_back() -> None:
    async def main() -> None:
        lim = Limiter(8, adaptive=False)
        room = {"open": False}
        asked: list[int] = []

        def gate(in_flight: int) -> bool:
            asked.append(in_flight)
            return room["open"]

        lim.gate = gate
        first = await lim.acquire()  # nothing in flight: granted without asking the gate
        assert asked == []
        second = asyncio.ensure_future(lim.acquire())
        await asyncio.sleep(0)
        assert not second.done() and set(asked) == {1}  # beside a call in flight: the gate said no
        room["open"] = True
        lim.release(first)  # a permit comes back: asked again, granted (nothing in flight now)
        await asyncio.sleep(0)
        assert second.done()
        third = asyncio.ensure_future(lim.acquire())
        await asyncio.sleep(0)
        assert third.done() and asked[-1] == 1  # the gate open: granted beside one in flight
        lim.release(second.result())
        lim.release(third.result())

    asyncio.run(main())
