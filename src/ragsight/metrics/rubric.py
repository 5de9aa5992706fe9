"""Custom judge metrics from a rubric (G-Eval style): criteria, an integer scale, the sample
fields the judge sees, and optional graded examples.

The judge answers ``{"reason": ..., "score": N}`` through the ``rubric_score`` prompt (the reason
first, so the score follows from it); a score off the scale is sent back to the judge to correct.
The value is the score normalised to [0, 1]: ``(score - low) / (high - low)``. The evidence
holds the reason, the raw score, the scale and the criteria.

    from ragsight.metrics.rubric import register_rubric

    register_rubric("politeness", "The response is courteous and respectful to the user.")
    ragsight.evaluate(data, ["faithfulness", "politeness"])

Or pass an instance: ``ragsight.evaluate(data, [RubricMetric("politeness", "...")])``.
A rubric is registered in the running process only: register it again before resuming or
reloading a run that used it.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping, Sequence
from typing import Any

from .._score import Evidence, Score
from ..analyses import SampleAnalyses, contexts_block, refs
from ..errors import ConfigError, OutputError
from ..prompts import fence, load_prompt
from ..sample import Sample
from . import GROUPS, REGISTRY, register
from ._base import Metric

__all__ = ["FIELDS", "RubricMetric", "register_rubric"]

FIELDS = ("question", "contexts", "response", "reference", "reference_contexts")
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
    ``reason``.
    """

    name = "rubric"
    needs_judge = True
    groups = frozenset({"generation"})

    def __init__(
        self,
        name: str,
        criteria: str,
        scale: tuple[int, int] = (1, 5),
        fields: Sequence[str] = ("question", "response"),
        examples: Sequence[Mapping[str, Any]] | None = None,
        *,
        key: str | None = None,
    ) -> None:
        if not isinstance(name, str) or not _NAME.match(name):
            raise ValueError(f"rubric name {name!r} must be lower case letters, digits and underscores")
        if not isinstance(criteria, str) or not criteria.strip():
            raise ValueError(f"rubric '{name}': criteria must be a non-empty text")
        low, high = _scale(name, scale)
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
        self.examples = tuple(_check_example(name, i, e, fields, low, high)
                              for i, e in enumerate(examples or (), start=1))

    def params(self) -> dict[str, Any]:
        return {"criteria": self.criteria, "scale": list(self.scale), "fields": list(self.fields),
                "examples": len(self.examples)}

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
            parts.append(f"Score: {ex['score']}.{reason}")
        return "\n".join(parts) + "\n"

    async def compute(self, ctx: SampleAnalyses) -> Score:
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
        ev = Evidence(
            details={"rubric": self.rubric, "criteria": self.criteria, "scale": [low, high],
                     "raw_score": raw, "reason": reason, "fields": list(self.fields)},
            calls=refs(ans),
        )
        return Score.scored(self.key, value, f"{raw} on {low}-{high}: {reason}", ev)


def _scale(name: str, scale: Any) -> tuple[int, int]:
    try:
        low, high = scale
    except (TypeError, ValueError):
        raise ValueError(f"rubric '{name}': scale must be two integers (low, high), got {scale!r}") from None
    if any(isinstance(x, bool) or not isinstance(x, int) for x in (low, high)) or low >= high:
        raise ValueError(f"rubric '{name}': scale must be two integers with low < high, got {scale!r}")
    return low, high


def _check_example(
    name: str, i: int, ex: Mapping[str, Any], fields: tuple[str, ...], low: int, high: int
) -> dict[str, Any]:
    if not isinstance(ex, Mapping):
        raise ValueError(f"rubric '{name}': example {i} must be a mapping of fields, score and reason")
    absent = [f for f in fields if f not in ex]
    if absent:
        raise ValueError(f"rubric '{name}': example {i} lacks {', '.join(absent)}")
    try:
        score = _score_of(ex.get("score"), low, high)
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
    scale: tuple[int, int] = (1, 5),
    fields: Sequence[str] = ("question", "response"),
    examples: Sequence[Mapping[str, Any]] | None = None,
    *,
    groups: Iterable[str] | None = None,
    replace: bool = False,
) -> type[RubricMetric]:
    """Make a rubric selectable by name (``evaluate(data, [name])``, ``--metrics name``).

    ``groups``: the selection groups it joins (default ``generation``, plus ``reference-free``
    when it reads neither ``reference`` nor ``reference_contexts``). ``replace``: allow
    registering a rubric again under the same name (a built-in metric is never replaced).
    Raises ConfigError for a name already taken, ValueError for an unusable rubric.
    """
    probe = RubricMetric(name, criteria, scale, fields, examples)  # validates everything
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
            super().__init__(name, probe.criteria, probe.scale, probe.fields, probe.examples, key=key)

    Registered.name = name
    Registered.requires = probe.fields
    Registered.groups = frozenset(chosen)
    Registered.__name__ = Registered.__qualname__ = f"Rubric_{name}"
    Registered.__doc__ = f"Rubric metric '{name}': {probe.criteria}"
    register(Registered)
    return Registered
