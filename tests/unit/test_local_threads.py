"""RAGSIGHT_THREADS sets the embedded judge's CPU threads (no model is loaded here)."""

from __future__ import annotations

import pytest

from ragsight.errors import ConfigError
from ragsight.judge._local import LocalProvider


def test_threads_from_the_environment(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("RAGSIGHT_THREADS", "1")
    assert LocalProvider(progress=False).n_threads == 1
    assert LocalProvider(progress=False, n_threads=3).n_threads == 3  # an argument wins


def test_default_is_the_cores(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("RAGSIGHT_THREADS", raising=False)
    assert LocalProvider(progress=False).n_threads >= 1


@pytest.mark.parametrize("raw", ["0", "two", "-1", "1.5"])
def test_a_bad_value_is_refused_by_name(monkeypatch: pytest.MonkeyPatch, raw: str) -> None:
    monkeypatch.setenv("RAGSIGHT_THREADS", raw)
    with pytest.raises(ConfigError, match="RAGSIGHT_THREADS"):
        LocalProvider(progress=False)
