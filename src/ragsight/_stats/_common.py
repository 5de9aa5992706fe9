"""What the statistics share: input types and checks (every input finite, labels binary,
lengths paired), the bootstrap batch size, p-value text."""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Any, Literal, TypeAlias

import numpy as np
import numpy.typing as npt

__all__ = ["Alternative", "Floats", "Labels"]


Floats: TypeAlias = "Sequence[float] | npt.NDArray[Any]"
"""A one-dimensional sequence of finite numbers (a list, tuple or numpy array)."""


Labels: TypeAlias = "Sequence[bool] | Sequence[int] | npt.NDArray[Any]"
"""Binary labels: booleans, or integers 0 and 1 (1 / True = the positive class, e.g. correct)."""


Alternative: TypeAlias = Literal["greater", "less", "two-sided"]


_BOOT_CHUNK = 1_000_000  # resampled values drawn per batch, to bound memory on large inputs


def _floats(values: Floats, name: str) -> npt.NDArray[np.float64]:
    arr = np.asarray(values, dtype=np.float64)
    if arr.ndim != 1:
        raise ValueError(f"{name} must be a one-dimensional sequence of numbers")
    if not np.all(np.isfinite(arr)):
        raise ValueError(
            f"{name} contains NaN or infinity; compute statistics over scored values only"
        )
    return arr


def _labels(labels: Labels, name: str = "labels") -> npt.NDArray[np.bool_]:
    arr = np.asarray(labels)
    if arr.ndim != 1:
        raise ValueError(f"{name} must be a one-dimensional sequence")
    if arr.dtype == np.bool_:
        return arr
    if arr.size and (arr.dtype.kind not in "iuf" or not np.all((arr == 0) | (arr == 1))):
        raise ValueError(f"{name} must be binary: booleans or the integers 0 and 1")
    return arr.astype(np.bool_)


def _same_length(name_a: str, a: npt.NDArray[Any], name_b: str, b: npt.NDArray[Any]) -> None:
    if a.shape[0] != b.shape[0]:
        raise ValueError(
            f"{name_a} and {name_b} must pair up one to one; got {a.shape[0]} and {b.shape[0]}"
        )


def _check_confidence(confidence: float) -> None:
    if not 0.0 < confidence < 1.0:
        raise ValueError(f"confidence must be strictly between 0 and 1, got {confidence}")


def _check_positive(name: str, value: int) -> None:
    if value < 1:
        raise ValueError(f"{name} must be at least 1, got {value}")


def _finite_or_none(value: Any) -> float | None:
    x = float(value)
    return x if math.isfinite(x) else None


def _sd(x: npt.NDArray[np.float64]) -> float | None:
    return float(np.std(x, ddof=1)) if x.shape[0] >= 2 else None


def _format_p(p: float) -> str:
    return "p<0.001" if p < 0.001 else f"p={p:.2g}"
