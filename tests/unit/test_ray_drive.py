"""How the Ray driver hands out batches when a worker fails, with stand-in actors (no cluster).

Seen in a loaded run of tests/integration/test_ray_two_nodes.py: after the worker node was
killed, Ray restarted its actor, and every call to the restarting actor failed at once with
ActorUnavailableError. The driver sent the failed batch straight back to the same actor (it had
the lowest load), three times in a few milliseconds, and gave up: "the batch with samples s10,
s11 lost its worker 3 times (last: ActorUnavailableError)". A restarting worker is not a dead
one; the batch must wait for it or go to another worker.
"""

from __future__ import annotations

import asyncio
import concurrent.futures
import time
from typing import Any

import pytest

ray = pytest.importorskip("ray", reason="the Ray backend needs the 'ray' extra: pip install 'ragsight[ray]'")
from ray.exceptions import ActorDiedError, ActorUnavailableError  # noqa: E402

from ragsight import Sample  # noqa: E402
from ragsight.engine import _ray  # noqa: E402
from ragsight.engine._ray import WorkerLostError, _BatchResult, _drive, _SampleResult  # noqa: E402


class _Ref:
    def __init__(self, fut: concurrent.futures.Future[Any]) -> None:
        self._fut = fut

    def future(self) -> concurrent.futures.Future[Any]:
        return self._fut


class _Method:
    def __init__(self, actor: FakeActor) -> None:
        self.actor = actor

    def remote(self, attempt: str, batch: list[Sample], start: int) -> _Ref:
        return _Ref(self.actor.call(batch))


class FakeActor:
    """Answers each batch at once. ``script`` is what its calls do in turn until it runs out:
    "unavailable", "died", or "ok"; then "ok". ``unavailable_for`` makes every call within that
    many seconds of the first failure unavailable (a restart that takes that long)."""

    def __init__(self, script: tuple[str, ...] = (), unavailable_for: float = 0.0) -> None:
        self.script = list(script)
        self.unavailable_for = unavailable_for
        self.down_since: float | None = None
        self.calls: list[tuple[str, float]] = []
        self.run_batch = _Method(self)

    def call(self, batch: list[Sample]) -> concurrent.futures.Future[Any]:
        fut: concurrent.futures.Future[Any] = concurrent.futures.Future()
        now = time.monotonic()
        what = self.script.pop(0) if self.script else "ok"
        if what == "ok" and self.down_since is not None and now - self.down_since < self.unavailable_for:
            what = "unavailable"
        self.calls.append((what, now))
        if what == "unavailable":
            self.down_since = self.down_since if self.down_since is not None else now
            fut.set_exception(ActorUnavailableError("the actor is restarting", None))
        elif what == "died":
            self.down_since = now
            fut.set_exception(ActorDiedError())
        else:
            fut.set_result(_BatchResult(tuple(_SampleResult(s.id, (), ()) for s in batch), {}))
        return fut


@pytest.fixture(autouse=True)
def short_rests(monkeypatch: pytest.MonkeyPatch) -> None:
    """Rests of 0.05 s doubling to 0.4 s (0.5 s to 8 s in use), to keep the tests short."""
    monkeypatch.setattr(_ray, "_REST_S", (0.05, 0.4))


def drive(actors: list[FakeActor], n_batches: int, max_attempts: int = 3) -> dict[str, Any]:
    batches = [[Sample(id=f"s{2 * b}", response="x"), Sample(id=f"s{2 * b + 1}", response="y")]
               for b in range(n_batches)]
    results: dict[str, Any] = {}
    asyncio.run(_drive(ray, actors, batches, None, None, None, None, "run", results, None, None, max_attempts))
    return results


def test_a_batch_waits_for_a_restarting_worker_instead_of_using_up_its_attempts() -> None:
    # one worker: it dies under the first batch, then is unavailable for 0.25 s while it restarts
    actor = FakeActor(("died",), unavailable_for=0.25)
    t0 = time.monotonic()
    results = drive([actor], n_batches=2)
    assert sorted(results) == ["s0", "s1", "s2", "s3"]
    kinds = [k for k, _ in actor.calls]
    assert kinds[0] == "died" and kinds[-2:] == ["ok", "ok"]
    # it rested between tries (0.05 s, 0.1 s, ...), not hammered: a handful of calls, not hundreds
    assert kinds.count("unavailable") <= 4
    assert time.monotonic() - t0 >= 0.25


def test_the_batch_of_a_failed_worker_goes_to_another_worker() -> None:
    sick = FakeActor(("unavailable",), unavailable_for=60.0)
    well = FakeActor()
    results = drive([sick, well], n_batches=3)
    assert sorted(results) == [f"s{i}" for i in range(6)]
    # it held two batches when it failed (two per worker); resting, it was never asked again
    assert [k for k, _ in sick.calls] == ["unavailable", "unavailable"]
    assert [k for k, _ in well.calls] == ["ok", "ok", "ok"]


def test_a_batch_whose_worker_really_dies_each_time_still_stops_at_max_attempts() -> None:
    # a sample that crashes its worker: each death counts, and the run stops with the reason
    actor = FakeActor(("died", "died", "died", "died"))
    with pytest.raises(WorkerLostError, match=r"samples s0, s1 lost its worker 3 times \(last: ActorDiedError\)"):
        drive([actor], n_batches=1)


def test_a_worker_that_never_comes_back_ends_the_run_with_a_clear_error() -> None:
    # unavailable for ever: the batch gives up after 5 meetings per allowed attempt (here 1),
    # then counts a death; it does not wait for ever
    actor = FakeActor(unavailable_for=1e9)
    actor.down_since = time.monotonic()
    with pytest.raises(WorkerLostError, match=r"lost its worker 1 time \(last: ActorUnavailableError\)"):
        drive([actor], n_batches=1, max_attempts=1)
    assert [k for k, _ in actor.calls] == ["unavailable"] * 6
