"""The dataset package kept in modules of one reason each: none over 600 lines, and its public names
(and the documented ``ragsight.sample`` / ``ragsight.conversation`` paths) import as before."""

from __future__ import annotations

import importlib
from pathlib import Path

import pytest

DATASET = Path(__file__).resolve().parents[2] / "src" / "ragsight" / "dataset"
LIMIT = 600


@pytest.mark.parametrize("path", sorted(DATASET.glob("*.py")), ids=lambda p: p.name)
def test_no_dataset_module_is_over_the_limit(path: Path) -> None:
    n = len(path.read_text(encoding="utf-8").splitlines())
    assert n <= LIMIT, f"dataset/{path.name} has {n} lines (limit {LIMIT})"


@pytest.mark.parametrize("module", ["ragsight.dataset", "ragsight.sample", "ragsight.conversation"])
def test_every_public_name_imports(module: str) -> None:
    mod = importlib.import_module(module)
    missing = [n for n in mod.__all__ if not hasattr(mod, n)]
    assert not missing, f"{module} lacks {missing}"


def test_the_dataset_names_in_use_elsewhere_are_kept() -> None:
    import ragsight.dataset as ds

    for name in ("conversation_aggregates", "metric_level", "sample_level", "Conversation", "Dataset",
                 "turn_samples", "sample_from_mapping"):
        assert name in ds.__all__
