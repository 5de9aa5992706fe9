"""Tool-call metrics of an agent against reference calls (no judge).

``tool_call_accuracy``: calls are paired with the reference calls, in order (``strict_order``,
the default: the i-th call with the i-th reference call) or by the best pairing regardless of
order (``strict_order=false``: the assignment that maximises the total credit). A pair whose
names differ earns 0; a pair whose names match earns the share of its arguments that match:
argument names in either call, counted once, matching when both calls give the argument and the
values are equal after normalisation. The score is the credit summed over pairs divided by the
larger of the number of calls and of reference calls, so a missing or an extra call costs as
much as a wrong one.

``tool_call_f1``: the F1 of the calls as a multiset of (name, normalised arguments) against the
reference multiset: a call counts only when its name and every argument match a reference call
not already matched. Order does not matter.

Both score 1 when no call was expected and none was made, and 0 when calls were expected and
none made (or the reverse). A sample without ``reference_tool_calls`` is skipped; one without
``tool_calls`` made none.

**Normalisation of argument values** (:func:`normal_args`): strings are stripped and their runs
of whitespace collapsed to one space (case is kept: "Paris" is not "paris"); numbers compare by
value (3 and 3.0 are equal; booleans are not numbers: true is not 1); objects compare key by
key regardless of key order; lists compare item by item in order; null equals null only.

``tool_call_accuracy`` and ``tool_call_f1`` judge one turn (the calls it made against its
reference calls, or a single-turn sample); ``conversation_tool_call_accuracy`` and
``conversation_tool_call_f1`` judge every call of a conversation against every reference call
of it (a conversation-level sample).

**A peer's number** (``like``): ``like=ragas`` gives the value ragas 0.4.3's ToolCallAccuracy /
ToolCallF1 give the same calls (:func:`ragas_accuracy`, :func:`ragas_f1`), ``like=deepeval``
(tool_call_accuracy only) the value of DeepEval 4.3.1's ToolCorrectnessMetric with its default
settings, names only (:func:`deepeval_correctness`); ``strict_order`` then defaults to the
peer's own default (ragas: in order; DeepEval: any order; with ``strict_order=true``, DeepEval's
``should_consider_ordering``). ``tests/fixtures/peers/tool_metrics.json`` holds the peers' own
values for one case per difference (docs/metrics.md compares the definitions).
"""

from __future__ import annotations

import json
import math
from collections import Counter
from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np
from scipy.optimize import linear_sum_assignment

from .._score import Evidence, Score
from ..analyses import SampleAnalyses
from ..dataset import Sample, ToolCall
from ._base import Metric
from ._levels import conversation_only

__all__ = ["LIKE", "ConversationToolCallAccuracy", "ConversationToolCallF1", "ToolCallAccuracy", "ToolCallF1",
           "call_text", "compare_calls", "deepeval_correctness", "describe", "normal_args", "ragas_accuracy",
           "ragas_f1"]

# Whose definition a tool-call metric computes: ragsight's own, or a peer's (see the module docstring).
LIKE = ("ragsight", "ragas", "deepeval")


def _normal(value: Any) -> Any:
    if isinstance(value, bool) or value is None:
        return value
    if isinstance(value, (int, float)):
        f = float(value)
        return f if math.isfinite(f) else repr(f)
    if isinstance(value, str):
        return " ".join(value.split())
    if isinstance(value, Mapping):
        return {str(k): _normal(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [_normal(v) for v in value]
    return str(value)


def normal_args(args: Mapping[str, Any]) -> dict[str, str]:
    """Each argument's normalised value, as canonical JSON (see the module docstring)."""
    return {str(k): json.dumps(_normal(v), sort_keys=True, ensure_ascii=False) for k, v in args.items()}


def _key(call: ToolCall, side: str = "") -> str:
    if call.malformed:  # arguments that are not JSON equal nothing on the other side, not even the same text
        return json.dumps([call.name.strip(), None, side, call.raw_args], ensure_ascii=False)
    return json.dumps([call.name.strip(), normal_args(call.args)], sort_keys=True, ensure_ascii=False)


def call_text(call: ToolCall) -> str:
    """A call as a person reads it: ``name(a=1, b="x")``; one whose arguments are not JSON shows
    their text (cut at 200 characters): ``name(<not JSON: {"city": "Par>)``."""
    if call.malformed:
        raw = call.raw_args or ""
        return f"{call.name}(<not JSON: {raw[:200]}{'...' if len(raw) > 200 else ''}>)"
    args = ", ".join(f"{k}={json.dumps(v, ensure_ascii=False, sort_keys=True)}" for k, v in call.args.items())
    return f"{call.name}({args})"


def _credit(call: ToolCall, ref: ToolCall) -> tuple[float, list[str]]:
    """(credit of the pair, names of the arguments that differ); a call whose arguments are not
    JSON earns nothing."""
    if call.name.strip() != ref.name.strip():
        return 0.0, []
    if call.malformed or ref.malformed:
        return 0.0, ["(arguments not JSON)"]
    a, b = normal_args(call.args), normal_args(ref.args)
    names = sorted(set(a) | set(b))
    if not names:
        return 1.0, []
    differ = [k for k in names if a.get(k) != b.get(k) or k not in a or k not in b]
    return (len(names) - len(differ)) / len(names), differ


def compare_calls(
    calls: Sequence[ToolCall], reference: Sequence[ToolCall], strict_order: bool = True
) -> tuple[float, list[dict[str, Any]]]:
    """(tool_call_accuracy, one row per pair or unpaired call) of ``calls`` against ``reference``."""
    n, m = len(calls), len(reference)
    if n == 0 and m == 0:
        return 1.0, []
    if strict_order:
        pairs = [(i, i) for i in range(min(n, m))]
    else:
        gain = np.array([[_credit(c, r)[0] for r in reference] for c in calls], dtype=np.float64)
        rows, cols = linear_sum_assignment(gain, maximize=True) if n and m else ([], [])
        pairs = sorted(zip((int(r) for r in rows), (int(c) for c in cols)), key=lambda p: p[1])
    rows_out: list[dict[str, Any]] = []
    total = 0.0
    for i, j in pairs:
        credit, differ = _credit(calls[i], reference[j])
        total += credit
        row: dict[str, Any] = {"call": i, "reference": j, "credit": credit, "made": call_text(calls[i]),
                               "expected": call_text(reference[j])}
        if calls[i].name.strip() != reference[j].name.strip():
            row["mismatch"] = "name"
        elif differ:
            row["mismatch"] = "arguments"
            row["arguments"] = differ
        rows_out.append(row)
    paired_calls = {i for i, _ in pairs}
    paired_refs = {j for _, j in pairs}
    for j in range(m):
        if j not in paired_refs:
            rows_out.append({"call": None, "reference": j, "credit": 0.0, "expected": call_text(reference[j]),
                             "mismatch": "missing"})
    for i in range(n):
        if i not in paired_calls:
            rows_out.append({"call": i, "reference": None, "credit": 0.0, "made": call_text(calls[i]),
                             "mismatch": "extra"})
    return total / max(n, m), rows_out


def describe(row: dict[str, Any]) -> str:
    """One mismatch in a sentence."""
    kind = row.get("mismatch")
    if kind == "missing":
        return f"expected call {row['expected']} was not made"
    if kind == "extra":
        return f"call {row['made']} was not expected"
    if kind == "name":
        return f"call {row['made']} was made where {row['expected']} was expected"
    return (f"call {row['made']} differs from the expected {row['expected']} in "
            f"{', '.join(row.get('arguments', []))}")


# ---- the peers' definitions, for their numbers (like=ragas, like=deepeval) -----------------------


def _ragas_key(call: ToolCall) -> tuple[str, ...]:
    out = [call.name]
    for k in sorted(call.args):
        out += [k, str(call.args[k])]
    return tuple(out)


def _ragas_args(made: Mapping[str, Any], expected: Mapping[str, Any]) -> float:
    if not expected and not made:
        return 1.0
    if not expected:
        return 0.0
    return sum(1 for k in expected if k in made and str(made[k]) == str(expected[k])) / len(expected)


def ragas_accuracy(calls: Sequence[ToolCall], reference: Sequence[ToolCall], strict_order: bool = True) -> float:
    """ragas' ToolCallAccuracy: 0 unless the names line up (in order, or as sorted lists with
    ``strict_order`` false), else the mean over the reference calls of the share of each
    reference call's arguments the paired call gives with the same text (``str(5) != str(5.0)``;
    arguments only the call gives are not counted), times the share of reference calls paired;
    1 with no call expected nor made, 0 when only one side is empty."""
    if not calls and not reference:
        return 1.0
    if not calls or not reference:
        return 0.0
    if not strict_order:
        calls, reference = sorted(calls, key=_ragas_key), sorted(reference, key=_ragas_key)
    names, expected = [c.name for c in calls], [r.name for r in reference]
    aligned = names == expected if strict_order else sorted(names) == sorted(expected)
    if not aligned:
        return 0.0
    score = sum(_ragas_args(c.args, r.args) for c, r in zip(calls, reference) if c.name == r.name) / len(reference)
    paired = min(len(calls), len(reference))
    return score * paired / len(reference) if paired < len(reference) else score


def _hashable(value: Any) -> Any:
    if isinstance(value, Mapping):
        return frozenset((k, _hashable(v)) for k, v in value.items())
    if isinstance(value, (list, tuple)):
        return tuple(_hashable(v) for v in value)
    return value


def ragas_f1(calls: Sequence[ToolCall], reference: Sequence[ToolCall]) -> float:
    """ragas' ToolCallF1: the F1 of the calls as *sets* of (name, arguments) compared by Python
    equality (a repeated call counts once; 5 equals 5.0), rounded to 4 decimals; 0 when both are
    empty."""
    made = {(c.name, _hashable(c.args)) for c in calls}
    want = {(r.name, _hashable(r.args)) for r in reference}
    tp, fp, fn = len(made & want), len(made - want), len(want - made)
    precision = tp / (tp + fp) if tp + fp else 0.0
    recall = tp / (tp + fn) if tp + fn else 0.0
    return round(2 * precision * recall / (precision + recall), 4) if precision + recall else 0.0


def deepeval_correctness(calls: Sequence[ToolCall], reference: Sequence[ToolCall], ordered: bool = False) -> float:
    """DeepEval's ToolCorrectnessMetric with its default settings (names only, arguments not
    compared): the share of the expected calls matched by a call of the same name, each call
    matching once; extra calls cost nothing. A call equal to one already matched (same name and
    arguments) counts as matched too, so two identical expected calls met by two identical calls
    score 0.5, as DeepEval computes it. ``ordered`` (``should_consider_ordering``): the longest
    common subsequence of the names instead. 1 with no call expected nor made; 0 with calls and
    none expected."""
    if not calls and not reference:
        return 1.0
    if not reference:
        return 0.0
    if ordered:
        lcs = [[0] * (len(calls) + 1) for _ in range(len(reference) + 1)]
        for i, r in enumerate(reference, 1):
            for j, c in enumerate(calls, 1):
                lcs[i][j] = lcs[i - 1][j - 1] + 1 if r.name == c.name else max(lcs[i - 1][j], lcs[i][j - 1])
        return lcs[-1][-1] / len(reference)
    matched: list[tuple[str, Any]] = []
    total = 0
    for r in reference:
        for c in calls:
            key = (c.name, _hashable(c.args))
            if key not in matched and c.name == r.name:
                matched.append(key)
                total += 1
                break
    return total / len(reference)


def _like(metric: str, value: Any, allowed: Sequence[str] = LIKE) -> str:
    like = str(value).strip().lower()
    if like not in allowed:
        raise ValueError(f"{metric} like must be one of {', '.join(allowed)}, not '{value}'"
                         + ("; DeepEval has no tool-call F1: use tool_call_accuracy(like=deepeval)"
                            if like == "deepeval" else ""))
    return like


def _n(k: int, noun: str) -> str:
    return f"{k} {noun}" if k == 1 else f"{k} {noun}s"


class _ToolCallMetric(Metric):
    groups = frozenset({"agent"})

    def missing(self, sample: Sample) -> str | None:
        if sample.reference_tool_calls is None:
            return "sample has no reference_tool_calls"
        return None

    @staticmethod
    def calls(sample: Sample) -> tuple[tuple[ToolCall, ...], tuple[ToolCall, ...]]:
        return tuple(sample.tool_calls or ()), tuple(sample.reference_tool_calls or ())


class ToolCallAccuracy(_ToolCallMetric):
    name = "tool_call_accuracy"

    def __init__(self, key: str | None = None, strict_order: bool | int | str | None = None,
                 like: str = "ragsight") -> None:
        super().__init__(key)
        self.like = _like(self.name, like)
        if strict_order is None:  # the definition's own default: DeepEval's is any order
            strict_order = self.like != "deepeval"
        if isinstance(strict_order, str):
            if strict_order.lower() not in ("true", "false"):
                raise ValueError(f"{self.name} strict_order must be true or false, not '{strict_order}'")
            strict_order = strict_order.lower() == "true"
        if strict_order not in (True, False, 0, 1):
            raise ValueError(f"{self.name} strict_order must be true or false, not {strict_order!r}")
        self.strict_order = bool(strict_order)

    def params(self) -> dict[str, Any]:
        return {"strict_order": self.strict_order, **({"like": self.like} if self.like != "ragsight" else {})}

    async def compute(self, ctx: SampleAnalyses) -> Score:
        calls, reference = self.calls(ctx.sample)
        value, rows = compare_calls(calls, reference, self.strict_order)
        wrong = [r for r in rows if "mismatch" in r]
        details: dict[str, Any] = {"strict_order": self.strict_order, "calls": len(calls),
                                   "reference_calls": len(reference), "pairs": rows}
        peer = ""
        if self.like == "ragas":
            value = ragas_accuracy(calls, reference, self.strict_order)
            peer = "; as ragas' ToolCallAccuracy: names all in line or 0, the reference's arguments compared as text"
        elif self.like == "deepeval":
            value = deepeval_correctness(calls, reference, ordered=self.strict_order)
            peer = "; as DeepEval's ToolCorrectness: names only, extra calls free"
        if self.like != "ragsight":
            details["like"] = self.like
        ev = Evidence(details=details)
        if not calls and not reference:
            return Score.scored(self.key, value, f"no call was expected and none was made{peer}", ev)
        order = "in order" if self.strict_order else "in any order"
        why = f"; {describe(wrong[0])}" + (f" (and {len(wrong) - 1} more)" if len(wrong) > 1 else "") if wrong else ""
        return Score.scored(self.key, value, f"{_n(len(calls), 'call')} against {len(reference)} expected, "
                            f"paired {order}{why}{peer}", ev)


class ToolCallF1(_ToolCallMetric):
    name = "tool_call_f1"

    def __init__(self, key: str | None = None, like: str = "ragsight") -> None:
        super().__init__(key)
        self.like = _like(self.name, like, ("ragsight", "ragas"))

    def params(self) -> dict[str, Any]:
        return {"like": self.like} if self.like != "ragsight" else {}

    async def compute(self, ctx: SampleAnalyses) -> Score:
        calls, reference = self.calls(ctx.sample)
        made, want = Counter(_key(c, "made") for c in calls), Counter(_key(r, "reference") for r in reference)
        tp = sum((made & want).values())
        left = made & want
        extra: list[str] = []
        for c in calls:  # calls not matched, in order (the first copies of a key match first)
            k = _key(c, "made")
            if left[k] > 0:
                left[k] -= 1
            else:
                extra.append(call_text(c))
        left = made & want
        missing: list[str] = []
        for r in reference:
            k = _key(r, "reference")
            if left[k] > 0:
                left[k] -= 1
            else:
                missing.append(call_text(r))
        precision = tp / len(calls) if calls else None
        recall = tp / len(reference) if reference else None
        details: dict[str, Any] = {"matched": tp, "calls": len(calls), "reference_calls": len(reference),
                                   "precision": precision, "recall": recall, "extra": extra, "missing": missing}
        peer = ""
        if self.like == "ragas":
            details["like"] = "ragas"
            peer = "; as ragas' ToolCallF1: calls as sets (a repeat counts once), 0 when both are empty"
        ev = Evidence(details=details)
        if not calls and not reference:
            value = ragas_f1(calls, reference) if self.like == "ragas" else 1.0
            return Score.scored(self.key, value, f"no call was expected and none was made{peer}", ev)
        value = 2 * tp / (len(calls) + len(reference))  # = 2PR / (P + R), 0 when nothing matches
        if self.like == "ragas":
            value = ragas_f1(calls, reference)
        return Score.scored(self.key, value, f"{tp} of {_n(len(calls), 'call')} match one of {len(reference)} "
                            f"expected ({len(extra)} extra, {len(missing)} missing){peer}", ev)


class ConversationToolCallAccuracy(ToolCallAccuracy):
    name = "conversation_tool_call_accuracy"
    groups = frozenset({"agent", "conversation"})
    level = "conversation"

    def missing(self, sample: Sample) -> str | None:
        return conversation_only(sample) or super().missing(sample)


class ConversationToolCallF1(ToolCallF1):
    name = "conversation_tool_call_f1"
    groups = frozenset({"agent", "conversation"})
    level = "conversation"

    def missing(self, sample: Sample) -> str | None:
        return conversation_only(sample) or super().missing(sample)
