"""Rubrics written in TOML: ``[tool.ragsight.rubrics.NAME]`` in pyproject.toml, or a file of
its own with ``[rubrics.NAME]`` (or the same ``[tool.ragsight.rubrics.NAME]`` tables)::

    [tool.ragsight.rubrics.politeness]
    criteria = "The response is polite and does not blame the user."
    fields = ["question", "response"]
    scale = [1, 5]            # or scale = "pass/fail"
    threshold = 4             # optional: a score at or above passes
    examples = [              # optional graded examples
      { question = "Where is my bag?", response = "Read the rules.", score = 1, reason = "Curt." },
    ]

Each table becomes the :class:`~ragsight.metrics.rubric.RubricMetric` a Python user builds. A
table that cannot be used is refused with a ConfigError naming the file, the table and the key.
"""

from __future__ import annotations

import difflib
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from ..dataset import ALIAS_TO_FIELD, read_toml
from ..errors import ConfigError
from .rubric import _NAME, FIELDS, PASS_FAIL, RubricMetric

__all__ = ["RUBRIC_KEYS", "load_rubrics", "rubrics_from_toml"]

RUBRIC_KEYS = ("criteria", "fields", "scale", "examples", "threshold")
_EXAMPLE_KEYS = ("score", "reason")


def _near(word: str, known: tuple[str, ...]) -> str:
    close = difflib.get_close_matches(word, known, n=1)
    return f" (did you mean '{close[0]}'?)" if close else ""


def _typename(value: Any) -> str:
    return {str: "a text", bool: "true/false", int: "a number", float: "a number", list: "a list",
            dict: "a table"}.get(type(value), type(value).__name__)


def _one(name: str, table: Any, where: str) -> RubricMetric:
    head = f"{where}.{name}]"
    if not isinstance(table, Mapping):
        raise ConfigError(f"{head} must be a table of {', '.join(RUBRIC_KEYS)}")
    if not _NAME.match(name):
        raise ConfigError(f"{head}: the rubric name '{name}' must be lower case letters, digits and "
                          "underscores (it becomes the metric's name)")
    for key in table:
        if key not in RUBRIC_KEYS:
            raise ConfigError(f"{head}: unknown key '{key}'{_near(key, RUBRIC_KEYS)}; "
                              f"known: {', '.join(RUBRIC_KEYS)}")
    criteria = table.get("criteria")
    if criteria is None:
        raise ConfigError(f'{head}: criteria is missing; say what a high score means, e.g. '
                          'criteria = "The response is polite."')
    if not isinstance(criteria, str) or not criteria.strip():
        raise ConfigError(f"{head} criteria must be a non-empty text, got {criteria!r}")
    fields = table.get("fields", ["question", "response"])
    if not isinstance(fields, list) or not fields or not all(isinstance(f, str) for f in fields):
        raise ConfigError(f"{head} fields must be a non-empty list of field names, e.g. "
                          f'fields = ["question", "response"]; got {fields!r}')
    for f in fields:
        if f not in FIELDS:
            alias = ALIAS_TO_FIELD.get(f.strip().lower())  # answer, actual_output... as data files name them
            near = f" (the sample field is '{alias}')" if alias in FIELDS else _near(f, FIELDS)
            raise ConfigError(f"{head} fields: unknown field '{f}'{near}; known: {', '.join(FIELDS)}")
    if len(set(fields)) != len(fields):
        raise ConfigError(f"{head} fields: a field is listed twice: {fields!r}")
    scale = table.get("scale", [1, 5])
    if scale != PASS_FAIL and not (
        isinstance(scale, list) and len(scale) == 2
        and all(isinstance(x, int) and not isinstance(x, bool) for x in scale) and scale[0] < scale[1]
    ):
        raise ConfigError(f'{head} scale must be [low, high] (two whole numbers, low < high) or '
                          f'"{PASS_FAIL}", got {scale!r}')
    threshold = table.get("threshold")
    if threshold is not None:
        if isinstance(threshold, bool) or not isinstance(threshold, (int, float)):
            raise ConfigError(f"{head} threshold must be a number on the scale, got {_typename(threshold)} "
                              f"{threshold!r}")
        if scale == PASS_FAIL:
            raise ConfigError(f'{head} threshold has no meaning with scale = "{PASS_FAIL}"; leave it out')
        if not scale[0] <= threshold <= scale[1]:
            raise ConfigError(f"{head} threshold {threshold} is off the scale {scale[0]}-{scale[1]}")
    examples = table.get("examples", [])
    if not isinstance(examples, list):
        raise ConfigError(f"{head} examples must be a list of tables, e.g. examples = "
                          '[{ question = "...", response = "...", score = 1, reason = "..." }]')
    allowed = (*fields, *_EXAMPLE_KEYS)
    for i, ex in enumerate(examples, start=1):
        if not isinstance(ex, Mapping):
            raise ConfigError(f"{head} examples[{i}] must be a table of the fields, score and reason")
        for key in ex:
            if key not in allowed:
                why = (f"'{key}' is not among this rubric's fields" if key in FIELDS
                       else f"unknown key '{key}'{_near(key, allowed)}")
                raise ConfigError(f"{head} examples[{i}]: {why}; an example holds {', '.join(allowed)}")
        absent = [k for k in (*fields, "score") if k not in ex]
        if absent:
            raise ConfigError(f"{head} examples[{i}] lacks {', '.join(absent)}")
    try:
        return RubricMetric(name, criteria, scale if scale == PASS_FAIL else (scale[0], scale[1]),
                            fields, examples, threshold=threshold)
    except ValueError as exc:  # what is left: an example's score off the scale
        raise ConfigError(f"{head}: {str(exc).removeprefix(f'rubric {name!r}: ')}") from None


def rubrics_from_toml(doc: Mapping[str, Any], source: str, *, top_level: bool = True) -> list[RubricMetric]:
    """The rubrics of a parsed TOML document: ``[tool.ragsight.rubrics.NAME]`` tables, and
    (``top_level``) ``[rubrics.NAME]`` tables. ``source`` names the file in messages."""
    out: dict[str, RubricMetric] = {}
    tool = doc.get("tool")
    nested = tool.get("ragsight") if isinstance(tool, Mapping) else None
    places: list[tuple[str, Any]] = []
    if isinstance(nested, Mapping) and "rubrics" in nested:
        places.append(("tool.ragsight.rubrics", nested["rubrics"]))
    if top_level and "rubrics" in doc:
        places.append(("rubrics", doc["rubrics"]))
    for prefix, table in places:
        if not isinstance(table, Mapping):
            raise ConfigError(f"{source} [{prefix}] must hold tables, one per rubric: [{prefix}.NAME]")
        for name, body in table.items():
            if name in out:
                raise ConfigError(f"{source} defines the rubric '{name}' twice")
            out[name] = _one(str(name), body, f"{source} [{prefix}")
    return list(out.values())


def load_rubrics(path: str | Path, *, required: bool = True) -> list[RubricMetric]:
    """The rubrics of a TOML file (see the module docstring). ``required``: a file without any
    rubric table is an error (a ``--rubric`` file), else it gives no rubric (pyproject.toml)."""
    path = Path(path)
    doc = read_toml(path, "rubric file" if required else "config file")
    found = rubrics_from_toml(doc, str(path.name if required is False else path), top_level=required)
    if required and not found:
        raise ConfigError(f"{path} defines no rubric; write [rubrics.NAME] tables (see docs/rubrics.md)")
    return found
