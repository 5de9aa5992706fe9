"""A run's money limit that spends its budget: calls wait for each other near the limit.

:class:`~ragsight.judge.SpendLimit` refuses a call whose worst cost does not fit beside the
reservations of the calls in flight. Alone, that stopped a run as soon as its calls in flight
filled the budget with their worst cases (a 20-sample run of $0.0064 stopped at a $0.005 limit
with no sample saved, and at $0.01 with $0.00 spent). :class:`PacedSpendLimit` keeps the limit
and the refusal, and paces the calls through the judge's concurrency limiter
(:attr:`ragsight.calls.Limiter.gate`):

- a call starts beside calls in flight only while the worst cost of another call fits beside
  their reservations: :attr:`MARGIN` times the largest worst cost reserved so far by this
  command, for it and for each call granted and not yet reserved;
- otherwise it waits until calls finish and give their reservations back (a finished call then
  counts at its reported tokens, usually far below its worst case);
- with nothing in flight the call is sent when its own worst cost fits beside what this command
  spent, and the run stops (``BudgetExceededError``) only when it does not.

The first call of a command goes alone (no cost is known yet). A call more than MARGIN times
as costly as any before it, asked for while others are in flight, finds no room and stops the
run early; the spend is still within the limit, and ``--resume`` continues.
"""

from __future__ import annotations

from ..calls import Limiter, Price
from ..judge import JudgeRequest, SpendLimit

__all__ = ["PacedSpendLimit"]


class PacedSpendLimit(SpendLimit):
    """A :class:`~ragsight.judge.SpendLimit` that paces the calls in flight (module docstring).
    :meth:`pace` hands its rule to the judge's limiter."""

    MARGIN = 2.0

    def __init__(self, limit_usd: float, price: Price) -> None:
        super().__init__(limit_usd, price)
        self.in_flight = 0  # calls admitted and not settled
        self.largest = 0.0  # the largest worst cost reserved so far

    def admit(self, request: JudgeRequest) -> float:
        worst = super().admit(request)
        self.in_flight += 1
        self.largest = max(self.largest, worst)
        return worst

    def settle(self, reservation: float, used: tuple[int, int] | None) -> None:
        super().settle(reservation, used)
        self.in_flight = max(0, self.in_flight - 1)

    def room(self, permits_out: int) -> bool:
        """Whether another call may start beside ``permits_out`` calls (sent, or granted and about
        to reserve): the worst cost of each one not yet reserved, and of the new one, counted at
        MARGIN times the largest so far, must fit beside this command's spend and reservations.
        With nothing out the limiter grants the call without asking: it fits, or the run stops."""
        if self.largest <= 0.0:
            return permits_out == 0  # no cost known yet: one call at a time
        pending = max(0, permits_out - self.in_flight) + 1
        return self.counted + self.reserved + pending * self.MARGIN * self.largest <= self.limit

    def pace(self, limiter: Limiter) -> None:
        """Let ``limiter`` (the judge's) start a call only while :meth:`room` says so."""
        limiter.gate = self.room
