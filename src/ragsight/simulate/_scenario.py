"""Scenarios: what a simulated user is and wants, read from a JSONL file one row at a time.

A row holds ``id``, ``scenario`` (who the user is and what they want), ``expected_outcome`` (what
a good assistant achieves by the end: read by ``agent_goal_accuracy``), and optionally
``persona`` (how the user writes), ``first_message`` (sent as it is instead of a written one),
``stop_when`` (when the user's goal counts as met) and ``metadata``. A row without ``id`` gets
``s-`` and a hash of its scenario. Any other field is kept in the metadata.

A row that cannot be used is a :class:`ScenarioProblem` naming the file, the line, the scenario
and the field; the other rows are read on.
"""

from __future__ import annotations

import difflib
import hashlib
import json
import os
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from ..errors import InputError

__all__ = ["SCENARIO_FIELDS", "Scenario", "ScenarioFieldError", "ScenarioProblem", "read_scenarios",
           "scenario_from_mapping"]

SCENARIO_FIELDS = ("id", "scenario", "expected_outcome", "persona", "first_message", "stop_when", "metadata")
_REQUIRED = {
    "scenario": "describe who the user is and what they want",
    "expected_outcome": "say what a good assistant achieves by the end of the conversation",
}
_OPTIONAL = ("persona", "first_message", "stop_when")


@dataclass(frozen=True)
class Scenario:
    """One simulated user: who they are and what they want, and what should come of it."""

    id: str
    scenario: str
    expected_outcome: str
    persona: str | None = None
    first_message: str | None = None
    stop_when: str | None = None
    metadata: Mapping[str, Any] = field(default_factory=dict)

    def to_dict(self) -> dict[str, Any]:
        out: dict[str, Any] = {"id": self.id, "scenario": self.scenario, "expected_outcome": self.expected_outcome}
        for name in _OPTIONAL:
            value = getattr(self, name)
            if value is not None:
                out[name] = value
        if self.metadata:
            out["metadata"] = dict(self.metadata)
        return out


class ScenarioFieldError(ValueError):
    """A field of a scenario row cannot be used. ``field`` names it (None: the row itself)."""

    def __init__(self, field: str | None, message: str) -> None:
        super().__init__(message)
        self.field = field
        self.message = message


@dataclass(frozen=True)
class ScenarioProblem:
    """A row left out: where it is, its id when it has one, the field and what to fix."""

    where: str
    id: str | None
    field: str | None
    message: str

    def __str__(self) -> str:
        who = f", scenario '{self.id}'" if self.id else ""
        what = f", field '{self.field}'" if self.field else ""
        return f"{self.where}{who}{what}: {self.message}"


def _text(name: str, value: Any, required: bool) -> str | None:
    if value is None:
        if required:
            raise ScenarioFieldError(name, f"missing; {_REQUIRED[name]}.")
        return None
    if not isinstance(value, str):
        raise ScenarioFieldError(name, f"must be text, got {type(value).__name__}.")
    try:
        value.encode("utf-8")
    except UnicodeEncodeError:
        raise ScenarioFieldError(name, "holds a character that is not valid text (half of an emoji, "
                                       "a lone surrogate); write it again as UTF-8.") from None
    text = value.strip()
    if not text:
        if required:
            raise ScenarioFieldError(name, f"is empty; {_REQUIRED[name]}.")
        return None
    return text


def _row_id(row: Mapping[str, Any]) -> str | None:
    value = row.get("id")
    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, (str, int)):
        raise ScenarioFieldError("id", f"must be text or a whole number, got {type(value).__name__}.")
    text = str(value).strip()
    if not text:
        raise ScenarioFieldError("id", "is empty; give each scenario a name, or leave 'id' out.")
    return text


def scenario_from_mapping(row: Any) -> Scenario:
    """A :class:`Scenario` from one row; raises :class:`ScenarioFieldError` naming the field."""
    if not isinstance(row, Mapping):
        raise ScenarioFieldError(None, f"a scenario row must be a JSON object, got {type(row).__name__}.")
    rid = _row_id(row)
    unknown = [k for k in row if k not in SCENARIO_FIELDS]
    try:
        texts = {name: _text(name, row.get(name), name in _REQUIRED) for name in (*_REQUIRED, *_OPTIONAL)}
    except ScenarioFieldError as exc:
        if exc.message.startswith("missing") and exc.field is not None:
            close = difflib.get_close_matches(exc.field, [str(k) for k in unknown], n=1)
            if close:
                raise ScenarioFieldError(exc.field, f"{exc.message} (the row has '{close[0]}': did you mean "
                                                    f"'{exc.field}'?)") from None
            if "question" in row:
                raise ScenarioFieldError(exc.field, f"{exc.message} This row is a test-set question: "
                                                    "'ragsight answer' asks those.") from None
        raise
    meta = row.get("metadata")
    if meta is not None and not isinstance(meta, Mapping):
        raise ScenarioFieldError("metadata", f"must be an object of name: value, got {type(meta).__name__}.")
    metadata = dict(meta or {})
    for k in unknown:
        metadata.setdefault(str(k), row[k])
    scenario, outcome = texts["scenario"], texts["expected_outcome"]
    assert scenario is not None and outcome is not None
    if rid is None:
        rid = "s-" + hashlib.sha256(scenario.encode("utf-8")).hexdigest()[:12]
    return Scenario(rid, scenario, outcome, texts["persona"], texts["first_message"], texts["stop_when"], metadata)


def read_scenarios(path: str | os.PathLike[str]) -> tuple[list[Scenario], list[ScenarioProblem]]:
    """The scenarios of a JSONL file, and the rows left out with the reason. A file that cannot
    be read at all, or holds no row, raises :class:`~ragsight.errors.InputError`."""
    p = Path(path)
    if not p.is_file():
        what = ("is a folder" if p.is_dir() else "is not a regular file (a pipe, a device or a socket)"
                if p.exists() else "no such file")
        raise InputError(f"{p}: {what}. Give a JSONL file of scenarios (docs/simulate.md), or write "
                         "one with 'ragsight generate DOCS --types scenario=0.8,scenario_out_of_scope=0.2'.")
    try:
        text = p.read_text("utf-8-sig")
    except (OSError, UnicodeDecodeError) as exc:
        raise InputError(f"{p}: cannot be read as UTF-8 text ({exc}).") from None
    scenarios: list[Scenario] = []
    problems: list[ScenarioProblem] = []
    seen: dict[str, int] = {}
    lines = 0
    # JSONL lines end at "\n" only: U+2028, NEL, FF or VT inside a text are part of it, as written
    for n, line in enumerate(text.split("\n"), start=1):
        line = line.removesuffix("\r")
        if not line.strip():
            continue
        lines += 1
        where = f"{p.name}, line {n}"
        try:
            row = json.loads(line)
        except (ValueError, RecursionError) as exc:  # ValueError: JSON, or a number too long to read
            msg = (exc.msg if isinstance(exc, json.JSONDecodeError) else "nested too deeply"
                   if isinstance(exc, RecursionError) else "a number too long to read: more than 4,300 digits")
            problems.append(ScenarioProblem(where, None, None, f"not valid JSON ({msg})."))
            continue
        try:
            sc = scenario_from_mapping(row)
        except ScenarioFieldError as exc:
            rid = row.get("id") if isinstance(row, Mapping) and isinstance(row.get("id"), (str, int)) else None
            problems.append(ScenarioProblem(where, None if rid is None else str(rid), exc.field, exc.message))
            continue
        if sc.id in seen:
            problems.append(ScenarioProblem(where, sc.id, "id", f"already used by line {seen[sc.id]}; give "
                                                                "each scenario its own id."))
            continue
        seen[sc.id] = n
        scenarios.append(sc)
    if not lines:
        raise InputError(f"{p}: the file holds no scenario.")
    return scenarios, problems
