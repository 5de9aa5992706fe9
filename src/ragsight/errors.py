"""Exception classes. Each one says what went wrong and what to do about it."""

from __future__ import annotations

__all__ = [
    "BudgetExceededError",
    "ConfigError",
    "EmbeddingError",
    "InputError",
    "JudgeError",
    "JudgeSameAsGeneratorWarning",
    "JudgeUnavailableError",
    "MissingExtraError",
    "ModelFileError",
    "OutputError",
    "ProviderError",
    "RagsightError",
    "StoreError",
]


class RagsightError(Exception):
    """Base class of every error ragsight raises on purpose."""


class BudgetExceededError(RagsightError):
    """The next judge call could take the run past its money limit (``max_cost``, the CLI's
    ``--max-cost``): the run stopped before it. The finished samples are saved; ``--resume``
    continues. ``spent`` is what this process paid as the judge reported it (US dollars),
    ``limit`` the limit; ``unreported`` the worst cost of the ``unreported_calls`` calls that ended
    with no usage (cut off at the stop, timed out), which the provider may or may not have billed.
    The run's counts (``run_id``, ``done``, ``total``) are filled in by ``evaluate``."""

    def __init__(self, message: str, *, spent: float, limit: float, unreported: float = 0.0,
                 unreported_calls: int = 0) -> None:
        super().__init__(message)
        self.spent = spent
        self.limit = limit
        self.unreported = unreported
        self.unreported_calls = unreported_calls
        self.run_id = ""
        self.done = 0
        self.total = 0


class InputError(RagsightError):
    """The data given to ragsight cannot be used (names the file, row and field)."""


class ConfigError(RagsightError):
    """A setting (metric name, judge spec, flag) is not usable."""


class JudgeError(RagsightError):
    """A judge call failed after its retries. Carries the attempts made."""


class JudgeUnavailableError(ConfigError):
    """The judge cannot be reached or rejects the credentials (found by the preflight call)."""


class EmbeddingError(RagsightError):
    """Embedding texts failed: the server failed after the embedder's own retries, or the vectors
    cannot be used (NaN, infinity, all zeros, wrong shape). ``status`` is the last HTTP status
    (None for connection failures and unusable vectors), ``fatal`` tells whether retrying later
    can help, ``attempts`` how many requests were made for the failing batch."""

    def __init__(self, message: str, *, status: int | None = None, fatal: bool = False,
                 attempts: int = 0) -> None:
        super().__init__(message)
        self.status = status
        self.fatal = fatal
        self.attempts = attempts


class StoreError(RagsightError):
    """The run store cannot be opened, is locked by another run, or lacks the requested run."""


class ModelFileError(RagsightError):
    """A model file of the embedded judge is missing or corrupt."""


class MissingExtraError(RagsightError):
    """An optional dependency is not installed; the message names the extra to install."""

    def __init__(self, feature: str, extra: str, module: str) -> None:
        super().__init__(
            f"{feature} needs the optional package '{module}', which is not installed. "
            f"Install it with: pip install 'ragsight[{extra}]'"
        )
        self.extra = extra
        self.module = module


class ProviderError(Exception):
    """A provider call failed. ``retryable`` tells the Judge whether to try again;
    ``retry_after`` (seconds) is the server's requested wait, when it gave one; ``timed_out``
    says the call got no answer in time (a sign of an overloaded server, as HTTP 429 is)."""

    def __init__(
        self,
        message: str,
        *,
        retryable: bool,
        status: int | None = None,
        retry_after: float | None = None,
        fatal: bool = False,
        timed_out: bool = False,
        too_large: bool = False,
    ) -> None:
        super().__init__(message)
        self.retryable = retryable
        self.timed_out = timed_out
        self.status = status
        self.retry_after = retry_after
        # fatal: no later call can succeed either (bad key, unknown model); stops the run early
        self.fatal = fatal
        # the answer was larger than the provider reads; it was cut there and not used (counted
        # by the Judge as answers_too_large)
        self.too_large = too_large


class OutputError(ValueError):
    """The judge's output is not usable; the message is sent back to it when re-asking."""


class JudgeSameAsGeneratorWarning(UserWarning):
    """The judge model is the model that generated the responses (self-preference bias)."""
