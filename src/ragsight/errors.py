"""Exception classes. Each one says what went wrong and what to do about it."""

from __future__ import annotations

__all__ = [
    "ConfigError",
    "InputError",
    "JudgeError",
    "JudgeUnavailableError",
    "MissingExtraError",
    "ModelFileError",
    "RagsightError",
    "StoreError",
]


class RagsightError(Exception):
    """Base class of every error ragsight raises on purpose."""


class InputError(RagsightError):
    """The data given to ragsight cannot be used (names the file, row and field)."""


class ConfigError(RagsightError):
    """A setting (metric name, judge spec, flag) is not usable."""


class JudgeError(RagsightError):
    """A judge call failed after its retries. Carries the attempts made."""


class JudgeUnavailableError(ConfigError):
    """The judge cannot be reached or rejects the credentials (found by the preflight call)."""


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
