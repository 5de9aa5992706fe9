"""Rubrics for ``ragsight evaluate``: ``[tool.ragsight.rubrics.NAME]`` tables of pyproject.toml in
the working folder (another file with ``--config``) and ``--rubric FILE.toml`` files, registered
for this process so that ``--metrics NAME`` (and ``--fail-under NAME=...``) find them.

They are read and checked before anything else runs, so a malformed rubric stops the command
with exit status 2 before any judge call. A rubric joins no group: it runs when named. The run
stores each rubric's definition, so ``--resume``, ``show``, ``report`` and ``compare`` need
neither the file nor this registration.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

from ..errors import ConfigError
from ..metrics import load_rubrics
from ..metrics.rubric import PASS_FAIL, RubricMetric, register_rubric

__all__ = ["register_cli_rubrics"]


def register_cli_rubrics(config: str | None, files: Sequence[str]) -> list[str]:
    """Read, check and register the rubrics of the project file and of ``files`` (a ``--rubric``
    file's rubric replaces the project's of the same name); their names."""
    project = Path(config) if config else Path("pyproject.toml")
    chosen: dict[str, RubricMetric] = {}
    if config or project.is_file():
        for r in load_rubrics(project, required=False):
            chosen[r.rubric] = r
    from_files: dict[str, str] = {}
    for f in files:
        for r in load_rubrics(f):
            if r.rubric in from_files:
                raise ConfigError(f"the rubric '{r.rubric}' is defined in both {from_files[r.rubric]} and {f}; "
                                  "keep one")
            from_files[r.rubric] = f
            chosen[r.rubric] = r
    for name, r in chosen.items():
        register_rubric(name, r.criteria, PASS_FAIL if r.pass_fail else r.scale, r.fields, r.examples,
                        threshold=r.threshold, groups=(), replace=True)
    return list(chosen)
