"""The public surface of ragsight.report: __all__ is complete and resolvable, and the CLI
picks up the report commands."""

from __future__ import annotations

import importlib

import pytest

import ragsight.report as report
from ragsight.cli import main

# report's own modules, and the two it re-exports from lower layers (statistics, repeated runs)
MODULES = ("report._compare", "report._compare_view", "report._run_data", "report._calibrate",
           "report._calibrate_view", "report._labels_read", "report._html", "report._repeats_view", "_stats",
           "run._repeats")


def test_all_is_sorted_resolvable_and_re_exports_every_module() -> None:
    # ruff's RUF022 order, as tests/unit/test_public_api.py checks: constants, classes, functions
    kind = lambda n: (0 if n.isupper() and len(n) > 1 else 1 if n[:1].isupper() else 2, n)  # noqa: E731
    assert list(report.__all__) == sorted(report.__all__, key=kind)
    for name in report.__all__:
        assert getattr(report, name) is not None
    for mod in MODULES:
        names = importlib.import_module(f"ragsight.{mod}").__all__
        assert set(names) <= set(report.__all__), f"{mod} exports names the package does not"


@pytest.mark.parametrize("command", ["report", "compare", "calibrate"])
def test_cli_has_the_command(command: str, capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit) as exc:
        main([command, "--help"])
    assert exc.value.code == 0
    assert "examples:" in capsys.readouterr().out
