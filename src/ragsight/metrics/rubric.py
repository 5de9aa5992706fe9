"""Custom judge metrics from a rubric (G-Eval style): criteria, an integer scale (or pass/fail),
the sample fields the judge sees, optional graded examples and an optional pass threshold.

The judge answers ``{"reason": ..., "score": N}`` through the ``rubric_score`` prompt (the reason
first, so the score follows from it); a score off the scale is sent back to the judge to correct.
The value is the score normalised to [0, 1]: ``(score - low) / (high - low)``. With
``scale="pass/fail"`` the judge answers ``{"reason": ..., "pass": true}`` (``rubric_pass_fail``)
and the value is 1 or 0. The evidence holds the reason, the raw score, the scale and the
criteria; with a ``threshold`` (on the rubric's own scale) also whether the sample passed it.

    from ragsight.metrics.rubric import register_rubric

    register_rubric("politeness", "The response is courteous and respectful to the user.")
    ragsight.evaluate(data, ["faithfulness", "politeness"])

Or pass an instance: ``ragsight.evaluate(data, [RubricMetric("politeness", "...")])``.
A run records each rubric's whole definition (:meth:`RubricMetric.definition`, with its hash),
so resuming, showing or comparing the run rebuilds the rubric from the store, in any process,
without registering it again. Rubrics can also be written in TOML (``load_rubrics``,
``ragsight evaluate --rubric FILE.toml``; docs/rubrics.md).
"""

from __future__ import annotations

import hashlib
import json
import math
import re
from collections.abc import Iterable, Mapping, Sequence
from typing import Any

from .._score import Evidence, Score
from ..analyses import SampleAnalyses, contexts_block, refs
from ..dataset import Sample
from ..errors import ConfigError, OutputError
from ..prompts import fence, load_prompt
from . import GROUPS, REGISTRY, register
from ._base import Metric

__all__ = ["FIELDS", "PASS_FAIL", "RubricMetric", "register_rubric"]

FIELDS = ("question", "contexts", "response", "reference", "reference_contexts")
PASS_FAIL = "pass/fail"
_NAME = re.compile(r"^[a-z_][a-z0-9_]*$")


def _render_field(sample: Sample | Mapping[str, Any], name: str) -> str:
    """One field, fenced as untrusted text."""
    if isinstance(sample, Sample):
        value: Any = sample.reference_text if name == "reference" else getattr(sample, name)
    else:
        value = sample[name]
        if name == "reference" and not isinstance(value, str):
            value = " / ".join(value)
    if name == "contexts":
        return contexts_block(list(value or ()))
    if name == "reference_contexts":
        return "\n".join(fence("document", c, n=i) for i, c in enumerate(value or (), start=1))
    return fence(name, str(value or ""))


def _score_of(raw: Any, low: int, high: int) -> int:
    if isinstance(raw, str) and re.fullmatch(r"\s*-?\d+\s*", raw):
        raw = int(raw)
    if isinstance(raw, bool) or not isinstance(raw, (int, float)) or (
        isinstance(raw, float) and not raw.is_integer()
    ):
        raise OutputError(f'"score" must be an integer from {low} to {high}, got {raw!r}')
    score = int(raw)
    if not low <= score <= high:
        raise OutputError(f'"score" {score} is off the scale: give an integer from {low} to {high}')
    return score


class RubricMetric(Metric):
    """A judge metric defined by a rubric.

    ``name``: the name results are reported under (lower case, digits and underscores).
    ``criteria``: what a high score means, in plain words (high must be good: the overall score
    treats higher as better). ``scale``: the integer range (low, high). ``fields``: the sample
    fields the judge sees, all required (a sample lacking one is skipped). ``examples``: graded
    examples shown to the judge, each a mapping with the fields, ``score`` and optionally
    ``reason``. ``scale="pass/fail"``: the judge passes or fails the item (value 1 or 0; an
    example's score is "pass" or "fail"). ``threshold``: a score on the rubric's scale at or
    above which a sample passes (recorded in the evidence; not with pass/fail).
    """

    name = "rubric"
    needs_judge = True
    groups = frozenset({"generation"})

    def __init__(
        self,
        name: str,
        criteria: str,
        scale: tuple[int, int] | str = (1, 5),
        fields: Sequence[str] = ("question", "response"),
        examples: Sequence[Mapping[str, Any]] | None = None,
        *,
        threshold: float | None = None,
        key: str | None = None,
    ) -> None:
        if not isinstance(name, str) or not _NAME.match(name):
            raise ValueError(f"rubric name {name!r} must be lower case letters, digits and underscores")
        if not isinstance(criteria, str) or not criteria.strip():
            raise ValueError(f"rubric '{name}': criteria must be a non-empty text")
        self.pass_fail = scale == PASS_FAIL
        low, high = (0, 1) if self.pass_fail else _scale(name, scale)
        fields = tuple(fields)
        unknown = [f for f in fields if f not in FIELDS]
        if not fields or unknown or len(set(fields)) != len(fields):
            raise ValueError(
                f"rubric '{name}': fields must be distinct names among {', '.join(FIELDS)}, got {list(fields)}"
            )
        super().__init__(key or name)
        self.rubric = name
        self.criteria = criteria.strip()
        self.scale = (low, high)
        self.fields = fields
        self.examples = tuple(_check_example(name, i, e, fields, low, high, self.pass_fail)
                              for i, e in enumerate(examples or (), start=1))
        self.threshold = _threshold(name, threshold, low, high, self.pass_fail)

    def definition(self) -> dict[str, Any]:
        """Everything that defines the rubric, as plain JSON values: stored with a run, so the
        run can be resumed and shown without registering the rubric (:meth:`from_definition`)."""
        return {"name": self.rubric, "criteria": self.criteria,
                "scale": PASS_FAIL if self.pass_fail else list(self.scale),
                "fields": list(self.fields), "examples": [dict(e) for e in self.examples],
                "threshold": self.threshold}

    @property
    def definition_hash(self) -> str:
        """A short hash of :meth:`definition` (recorded with the run beside it)."""
        text = json.dumps(self.definition(), sort_keys=True, ensure_ascii=False)
        return hashlib.sha256(text.encode()).hexdigest()[:16]

    @classmethod
    def from_definition(cls, definition: Mapping[str, Any], key: str | None = None) -> RubricMetric:
        """The rubric a stored :meth:`definition` describes."""
        d = dict(definition)
        scale = d["scale"] if d["scale"] == PASS_FAIL else tuple(d["scale"])
        return cls(d["name"], d["criteria"], scale, d["fields"], d.get("examples") or None,
                   threshold=d.get("threshold"), key=key)

    def params(self) -> dict[str, Any]:
        return {"criteria": self.criteria, "scale": PASS_FAIL if self.pass_fail else list(self.scale),
                "fields": list(self.fields), "examples": len(self.examples),
                "threshold": self.threshold, "definition": self.definition(),
                "definition_hash": self.definition_hash}

    def missing(self, sample: Sample) -> str | None:
        absent = [f for f in self.fields if not sample.has(f)]
        return f"sample has no {', '.join(absent)}" if absent else None

    def _examples_block(self) -> str:
        if not self.examples:
            return ""
        parts = ["", "Graded examples, to show how the scale is used (they are not the item to grade):"]
        for i, ex in enumerate(self.examples, start=1):
            parts.append(f"\nExample {i}:")
            parts.extend(_render_field(ex, f) for f in self.fields)
            reason = f" Reason: {' '.join(str(ex['reason']).split())}" if ex.get("reason") else ""
            grade = "Pass" if ex["score"] == "pass" else "Fail" if ex["score"] == "fail" else None
            parts.append(f"Grade: {grade}.{reason}" if grade else f"Score: {ex['score']}.{reason}")
        return "\n".join(parts) + "\n"

    async def compute(self, ctx: SampleAnalyses) -> Score:
        if self.pass_fail:
            return await self._pass_fail(ctx)
        judge = ctx.need_judge()
        low, high = self.scale
        s = ctx.sample

        def validate(d: dict[str, Any]) -> tuple[int, str]:
            score = _score_of(d.get("score"), low, high)
            reason = d.get("reason")
            if not isinstance(reason, str):
                raise OutputError('"reason" must be a string')
            return score, reason.strip()

        ans = await judge.ask(
            load_prompt("rubric_score"),
            {
                "criteria": fence("criteria", self.criteria),
                "low": str(low),
                "high": str(high),
                "examples": self._examples_block(),
                "data": "\n\n".join(_render_field(s, f) for f in self.fields),
                "rubric": self.rubric,
                "criteria_text": self.criteria,
                "field_values": {f: getattr(s, f) for f in self.fields},
            },
            validate, max_tokens=256, use_cache=ctx.settings.use_cache,
        )
        raw, reason = ans.value
        value = (raw - low) / (high - low)
        details = {"rubric": self.rubric, "criteria": self.criteria, "scale": [low, high],
                   "raw_score": raw, "reason": reason, "fields": list(self.fields)}
        said = f"{raw} on {low}-{high}"
        if self.threshold is not None:
            details.update(threshold=self.threshold, passed=raw >= self.threshold)
            said += f" ({'passes' if raw >= self.threshold else 'below'} threshold {self.threshold:g})"
        return Score.scored(self.key, value, f"{said}: {reason}", Evidence(details=details, calls=refs(ans)))

    async def _pass_fail(self, ctx: SampleAnalyses) -> Score:
        judge = ctx.need_judge()

        def validate(d: dict[str, Any]) -> tuple[bool, str]:
            verdict = d.get("pass")
            if not isinstance(verdict, bool):
                raise OutputError(f'"pass" must be true or false, got {verdict!r}')
            reason = d.get("reason")
            if not isinstance(reason, str):
                raise OutputError('"reason" must be a string')
            return verdict, reason.strip()

        s = ctx.sample
        ans = await judge.ask(
            load_prompt("rubric_pass_fail"),
            {
                "criteria": fence("criteria", self.criteria),
                "examples": self._examples_block(),
                "data": "\n\n".join(_render_field(s, f) for f in self.fields),
                "rubric": self.rubric,
                "criteria_text": self.criteria,
                "field_values": {f: getattr(s, f) for f in self.fields},
            },
            validate, max_tokens=256, use_cache=ctx.settings.use_cache,
        )
        passed, reason = ans.value
        grade = "pass" if passed else "fail"
        ev = Evidence(
            details={"rubric": self.rubric, "criteria": self.criteria, "scale": PASS_FAIL,
                     "raw_score": grade, "reason": reason, "fields": list(self.fields), "passed": passed},
            calls=refs(ans),
        )
        return Score.scored(self.key, 1.0 if passed else 0.0, f"{grade}: {reason}", ev)


def _scale(name: str, scale: Any) -> tuple[int, int]:
    try:
        low, high = scale
    except (TypeError, ValueError):
        raise ValueError(f"rubric '{name}': scale must be two integers (low, high), got {scale!r}") from None
    if any(isinstance(x, bool) or not isinstance(x, int) for x in (low, high)) or low >= high:
        raise ValueError(f"rubric '{name}': scale must be two integers with low < high, got {scale!r}")
    return low, high


def _threshold(name: str, threshold: Any, low: int, high: int, pass_fail: bool) -> float | None:
    if threshold is None:
        return None
    if pass_fail:
        raise ValueError(f"rubric '{name}': threshold has no meaning with scale pass/fail (a sample "
                         "passes or fails); leave it out")
    if isinstance(threshold, bool) or not isinstance(threshold, (int, float)) or not math.isfinite(threshold):
        raise ValueError(f"rubric '{name}': threshold must be a number on the scale, got {threshold!r}")
    if not low <= threshold <= high:
        raise ValueError(f"rubric '{name}': threshold {threshold:g} is off the scale {low}-{high}")
    return float(threshold)


def _grade_of(raw: Any) -> str:
    if isinstance(raw, bool):
        return "pass" if raw else "fail"
    if isinstance(raw, str) and raw.strip().lower() in ("pass", "fail"):
        return raw.strip().lower()
    raise OutputError(f'the score of a pass/fail rubric must be "pass" or "fail", got {raw!r}')


def _check_example(
    name: str, i: int, ex: Mapping[str, Any], fields: tuple[str, ...], low: int, high: int,
    pass_fail: bool = False,
) -> dict[str, Any]:
    if not isinstance(ex, Mapping):
        raise ValueError(f"rubric '{name}': example {i} must be a mapping of fields, score and reason")
    absent = [f for f in fields if f not in ex]
    if absent:
        raise ValueError(f"rubric '{name}': example {i} lacks {', '.join(absent)}")
    try:
        score: int | str = _grade_of(ex.get("score")) if pass_fail else _score_of(ex.get("score"), low, high)
    except OutputError as exc:
        raise ValueError(f"rubric '{name}': example {i}: {exc}") from None
    out = {f: ex[f] for f in fields}
    out["score"] = score
    if ex.get("reason"):
        out["reason"] = str(ex["reason"])
    return out


def register_rubric(
    name: str,
    criteria: str,
    scale: tuple[int, int] | str = (1, 5),
    fields: Sequence[str] = ("question", "response"),
    examples: Sequence[Mapping[str, Any]] | None = None,
    *,
    threshold: float | None = None,
    groups: Iterable[str] | None = None,
    replace: bool = False,
) -> type[RubricMetric]:
    """Make a rubric selectable by name (``evaluate(data, [name])``, ``--metrics name``).

    ``groups``: the selection groups it joins (default ``generation``, plus ``reference-free``
    when it reads neither ``reference`` nor ``reference_contexts``). ``replace``: allow
    registering a rubric again under the same name (a built-in metric is never replaced).
    Raises ConfigError for a name already taken, ValueError for an unusable rubric.
    """
    probe = RubricMetric(name, criteria, scale, fields, examples, threshold=threshold)  # validates everything
    if groups is None:
        chosen = {"generation"}
        if not {"reference", "reference_contexts"} & set(probe.fields):
            chosen.add("reference-free")
    else:
        chosen = set(groups)
        bad = sorted(chosen - set(GROUPS))
        if bad:
            raise ValueError(f"rubric '{name}': unknown group(s) {', '.join(bad)}; known: {', '.join(GROUPS)}")
    existing = REGISTRY.get(name)
    if existing is not None:
        if not issubclass(existing, RubricMetric):
            raise ConfigError(f"'{name}' is a built-in metric; give the rubric another name")
        if not replace:
            raise ConfigError(f"a rubric named '{name}' is already registered; pass replace=True to redefine it")
        del REGISTRY[name]

    class Registered(RubricMetric):
        def __init__(self, key: str | None = None) -> None:
            super().__init__(name, probe.criteria, PASS_FAIL if probe.pass_fail else probe.scale,
                             probe.fields, probe.examples, threshold=probe.threshold, key=key)

    Registered.name = name
    Registered.requires = probe.fields
    Registered.groups = frozenset(chosen)
    Registered.__name__ = Registered.__qualname__ = f"Rubric_{name}"
    Registered.__doc__ = f"Rubric metric '{name}': {probe.criteria}"
    register(Registered)
    return Registered
