"""How hard a judge step tries (:class:`RetryPolicy`) and how much a run may spend on its
calls (:class:`SpendLimit`, ``--max-cost``)."""

from __future__ import annotations

from dataclasses import dataclass

from ..calls import OVERLOAD_BUDGET_S, Price, format_limit, format_usd
from ..errors import BudgetExceededError, ConfigError
from ._protocol import JudgeRequest

__all__ = ["RetryPolicy", "SpendLimit"]


@dataclass(frozen=True)
class RetryPolicy:
    """Bounds on how hard one step tries.

    ``max_attempts``: transport attempts per model call (429, 5xx, timeouts, resets).
    ``max_reasks``: extra calls after an unusable output, each telling the judge what was wrong.
    A re-ask costs a call only when an output was unusable; with 3, a judge that breaks 20% of
    its outputs fails 0.2^4 = 0.16% of steps (0.8% with 2).
    ``step_deadline_s``: wall-time cap for a whole step, retries and waits included.
    ``overload_budget_s``: refusals for overload (429, 503, 529) without Retry-After are tried
    again beyond ``max_attempts`` while this much of the step's time is not spent (a burst of
    refusals costs waits, not scores); see ``ragsight._retry.may_try_again``.
    """

    max_attempts: int = 4
    max_reasks: int = 3
    backoff_base_s: float = 0.5
    backoff_max_s: float = 20.0
    call_timeout_s: float = 120.0
    step_deadline_s: float = 300.0
    overload_budget_s: float = OVERLOAD_BUDGET_S

    def __post_init__(self) -> None:
        problems = []
        if not isinstance(self.max_attempts, int) or self.max_attempts < 1:
            problems.append(f"max_attempts must be at least 1 (the CLI's --max-retries + 1), got {self.max_attempts!r}")
        if not isinstance(self.max_reasks, int) or self.max_reasks < 0:
            problems.append(f"max_reasks must be 0 or more, got {self.max_reasks!r}")
        for name in ("call_timeout_s", "step_deadline_s"):
            value = getattr(self, name)
            if not isinstance(value, (int, float)) or not value > 0 or value != value:
                flag = " (the CLI's --timeout)" if name == "call_timeout_s" else ""
                problems.append(f"{name} must be a positive number of seconds{flag}, got {value!r}")
        for name in ("backoff_base_s", "backoff_max_s", "overload_budget_s"):
            value = getattr(self, name)
            if not isinstance(value, (int, float)) or not value >= 0:
                problems.append(f"{name} must be 0 or more seconds, got {value!r}")
        if problems:
            raise ConfigError("invalid retry policy: " + "; ".join(problems))


class SpendLimit:
    """A run's money limit (``--max-cost``): no call is sent that could take the spend past it.

    Before each call its worst cost is reserved: the prompt counted at one token per
    :data:`BYTES_PER_TOKEN` bytes of its text (more tokens than common tokenizers make of
    English, about one per character of Chinese or Japanese) and the whole ``max_tokens`` reply.
    When what is counted so far, the reservations of the calls in flight and this reservation
    exceed the limit, :class:`BudgetExceededError` is raised instead of the call.

    A finished call replaces its reservation by its reported cost (``spent``). A call that ended
    with no usage (cut off by ragsight when its sample was dropped at a stop or by Ctrl-C, timed
    out, its connection lost) gives its reservation back too, and its worst cost goes to
    ``unreported`` (``unreported_calls`` of them): what the provider may have billed for it is
    not known, so it is not said as spent, and it still counts against the limit, which stays a
    bound on what could be billed. ``spent`` counts this process's calls only.
    """

    BYTES_PER_TOKEN = 3

    def __init__(self, limit_usd: float, price: Price) -> None:
        self.limit = float(limit_usd)
        self.price = price
        self.spent = 0.0
        self.reserved = 0.0
        self.unreported = 0.0
        self.unreported_calls = 0

    @property
    def counted(self) -> float:
        """What counts against the limit besides the calls in flight: the reported spend and the
        worst cost of the calls that reported none."""
        return self.spent + self.unreported

    def worst_cost(self, request: JudgeRequest) -> float:
        size = sum(len(m.content.encode("utf-8")) for m in request.messages)
        prompt = -(-size // self.BYTES_PER_TOKEN) + 4 * len(request.messages)
        return self.price.cost(prompt, request.max_tokens)

    def admit(self, request: JudgeRequest) -> float:
        worst = self.worst_cost(request)
        if self.counted + self.reserved + worst > self.limit:
            unknown = (f", up to {format_usd(self.unreported)} more for {self.unreported_calls} call(s) that "
                       "reported no usage" if self.unreported_calls else "")
            raise BudgetExceededError(
                f"the next judge call could cost up to {format_usd(worst)}, and {format_usd(self.spent)} is "
                f"spent{unknown} ({format_usd(self.reserved)} more in flight) of the {format_limit(self.limit)} "
                "limit (--max-cost)",
                spent=self.spent, limit=self.limit, unreported=self.unreported,
                unreported_calls=self.unreported_calls)
        self.reserved += worst
        return worst

    def settle(self, reservation: float, used: tuple[int, int] | None) -> None:
        """Give a call's reservation back and count its cost: ``used`` (prompt, completion
        tokens) as reported, or None for a call that ended with no usage (cut off, timed out):
        its worst cost is counted as unreported (class docstring)."""
        self.reserved = max(0.0, self.reserved - reservation)
        if used is None:
            self.unreported += reservation
            self.unreported_calls += 1
        else:
            self.spent += self.price.cost(*used)
