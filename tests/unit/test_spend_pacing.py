"""The money limit that spends its budget (ragsight.run.PacedSpendLimit), driven directly: the
room it leaves for another call beside the calls in flight, from its own reservations."""

from __future__ import annotations

import pytest

from ragsight.calls import Limiter, Price
from ragsight.errors import BudgetExceededError
from ragsight.judge import JudgeRequest, Message
from ragsight.run import PacedSpendLimit

DOLLAR_A_TOKEN = Price("m", 1_000_000.0, 1_000_000.0, "--price")


def request(chars: int, max_tokens: int) -> JudgeRequest:
    return JudgeRequest("p", "1", (Message("user", "x" * chars),), max_tokens=max_tokens)


def test_the_first_call_goes_alone() -> None:
    limit = PacedSpendLimit(1000.0, DOLLAR_A_TOKEN)
    assert limit.room(0) and not limit.room(1)  # no cost known yet: one call at a time


def test_another_call_starts_only_while_twice_the_largest_worst_cost_fits() -> None:
    limit = PacedSpendLimit(1000.0, DOLLAR_A_TOKEN)
    first = limit.admit(request(300, 10))  # worst 100 + 4 + 10 = 114
    assert (limit.in_flight, limit.largest) == (1, pytest.approx(114))
    assert limit.room(1)  # 114 reserved + 2 x 114 <= 1000
    limit.admit(request(300, 10))
    limit.admit(request(300, 10))
    limit.admit(request(300, 10))  # 456 reserved
    assert limit.room(4)  # 456 + 228 = 684
    assert not limit.room(6)  # two granted, not yet reserved: 456 + 3 x 228 > 1000
    limit.settle(first, (20, 5))  # a finished call counts at its tokens: $25 spent, 342 reserved
    assert (limit.spent, limit.reserved, limit.in_flight) == (pytest.approx(25), pytest.approx(342), 3)
    assert limit.room(3)


def test_with_nothing_in_flight_the_call_decides_and_the_refusal_is_the_stop() -> None:
    limit = PacedSpendLimit(200.0, DOLLAR_A_TOKEN)
    limit.settle(limit.admit(request(300, 10)), (60, 5))  # $65 spent
    assert not limit.room(1)  # 65 + 2 x 114 > 200: calls wait for each other
    limit.admit(request(300, 10))  # alone it fits: 65 + 114 <= 200
    with pytest.raises(BudgetExceededError) as stop:
        limit.admit(request(300, 10))
    assert stop.value.spent == pytest.approx(65)


def test_pace_sets_the_judges_limiter_gate() -> None:
    limiter = Limiter(8, adaptive=False)
    limit = PacedSpendLimit(1.0, DOLLAR_A_TOKEN)
    limit.pace(limiter)
    assert limiter.gate == limit.room
