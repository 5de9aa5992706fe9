"""An agent's whole trajectory against its reference calls, and its calls against the tools'
JSON Schemas (no judge). Both judge a conversation (its conversation-level sample: every call of
the conversation, its reference calls, the tools it had in ``metadata["tools"]``).

``trajectory_match(mode=...)``: 1 when the calls match the reference calls in LangChain
agentevals' sense of the mode, else 0:

- ``strict`` (the default): as many calls as reference calls, the i-th call matching the i-th;
- ``unordered``: the same calls in any order, each call matching a reference call of its own
  (a repeated call needs a repeated reference call);
- ``subset``: every call matches a reference call of its own (the agent made no call the
  reference lacks; it may have made fewer);
- ``superset``: every reference call is matched by a call of its own (the agent made every
  reference call; it may have made more).

Two calls match when their names are equal and their arguments match by ``args``:
``exact`` (the default; values compared after :func:`~ragsight.metrics.tool_calls.normal_args`'
normalisation), ``ignore`` (names only), ``keys:a,b`` (only the listed arguments, a dotted key
reaching into an object: ``keys:address.city``; an argument absent from both matches),
``subset`` (every argument the call gives is in the reference call, with the same value) or
``superset`` (every argument of the reference call is in the call, with the same value). The
calls are paired by the largest matching (a repeat matches once), so the outcome does not depend
on the order of the search.

``tool_argument_validity``: the share of calls whose arguments validate against their tool's JSON
Schema (``jsonschema``, ``pip install 'ragsight[agents]'``); a call of a tool the data does not
list is invalid, and so is a call whose arguments are not JSON (``ToolCall.raw_args``); a call of
a tool without a schema is not counted. Skipped without tools in the data, undetermined when no
call could be checked.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np
from scipy.optimize import linear_sum_assignment

from .._score import Evidence, Score
from ..analyses import SampleAnalyses
from ..dataset import Sample, ToolCall, ToolSpec, tool_named, tools_of
from ..errors import MissingExtraError
from ._base import Metric
from ._levels import conversation_only
from .tool_calls import call_text, normal_args

__all__ = ["ARG_MODES", "MODES", "ToolArgumentValidity", "TrajectoryMatch", "args_matcher", "match_trajectory",
           "validate_calls"]

MODES = ("strict", "unordered", "subset", "superset")
ARG_MODES = ("exact", "ignore", "subset", "superset", "keys")
_MISSING = object()


def _path(args: Mapping[str, Any], key: str) -> Any:
    cur: Any = args
    for part in key.split("."):
        if not isinstance(cur, Mapping) or part not in cur:
            return _MISSING
        cur = cur[part]
    return cur


def _same(a: Any, b: Any) -> bool:
    if a is _MISSING or b is _MISSING:
        return a is b
    return normal_args({"v": a}) == normal_args({"v": b})


def args_matcher(spec: str) -> tuple[str, tuple[str, ...]]:
    """(mode, keys) of an ``args`` parameter: ``exact``, ``ignore``, ``subset``, ``superset`` or
    ``keys:a,b`` (also ``keys:a/b``, as ``--metrics`` writes a list). ValueError names the
    choices."""
    text = spec.strip()
    if text.lower().startswith("keys:"):
        keys = tuple(k.strip() for k in text[5:].replace("/", ",").split(",") if k.strip())
        if not keys:
            raise ValueError("trajectory_match args=keys: needs at least one argument name, e.g. args=keys:city,date")
        return "keys", keys
    if text.lower() not in ARG_MODES or text.lower() == "keys":
        raise ValueError(f"trajectory_match args must be exact, ignore, subset, superset or keys:NAME,..., "
                         f"not '{spec}'")
    return text.lower(), ()


def _args_match(mode: str, keys: Sequence[str], made: Mapping[str, Any], want: Mapping[str, Any]) -> bool:
    if mode == "ignore":
        return True
    if mode == "keys":
        return all(_same(_path(made, k), _path(want, k)) for k in keys)
    a, b = normal_args(made), normal_args(want)
    if mode == "subset":
        return all(k in b and b[k] == v for k, v in a.items())
    if mode == "superset":
        return all(k in a and a[k] == v for k, v in b.items())
    return a == b


def _matches(call: ToolCall, ref: ToolCall, mode: str, keys: Sequence[str]) -> bool:
    """Same name and matching arguments; a call whose arguments are not JSON matches nothing, in
    every argument mode (the tool could not have run with them)."""
    if call.malformed or ref.malformed:
        return False
    return call.name.strip() == ref.name.strip() and _args_match(mode, keys, call.args, ref.args)


def match_trajectory(calls: Sequence[ToolCall], reference: Sequence[ToolCall], mode: str = "strict",
                     args: str = "exact") -> tuple[bool, dict[str, Any]]:
    """(whether ``calls`` match ``reference`` in ``mode``, the trail: each call with the
    reference call it matched or None, the reference calls no call matched)."""
    arg_mode, keys = args_matcher(args)
    n, m = len(calls), len(reference)
    pairs: dict[int, int] = {}
    if mode == "strict":
        pairs = {i: i for i in range(min(n, m)) if _matches(calls[i], reference[i], arg_mode, keys)}
        ok = n == m and len(pairs) == n
    else:
        if n and m:
            fit = np.array([[1.0 if _matches(c, r, arg_mode, keys) else 0.0 for r in reference] for c in calls])
            rows, cols = linear_sum_assignment(fit, maximize=True)
            pairs = {int(i): int(j) for i, j in zip(rows, cols) if fit[i, j] > 0}
        if mode == "unordered":
            ok = len(pairs) == n == m
        elif mode == "subset":
            ok = len(pairs) == n
        else:
            ok = len(pairs) == m
    used = set(pairs.values())
    trail: dict[str, Any] = {
        "mode": mode, "args": args, "calls": n, "reference_calls": m, "matched": len(pairs),
        "steps": [{"call": i, "made": call_text(c), "reference": pairs.get(i),
                   **({"expected": call_text(reference[pairs[i]])} if i in pairs else {})}
                  for i, c in enumerate(calls)],
        "unmatched_reference": [{"reference": j, "expected": call_text(r)} for j, r in enumerate(reference)
                                if j not in used],
    }
    return ok, trail


def _why(ok: bool, mode: str, trail: Mapping[str, Any], calls: Sequence[ToolCall],
         reference: Sequence[ToolCall]) -> str:
    n, m = len(calls), len(reference)
    if ok:
        if n == 0 and m == 0:
            return "no call was expected and none was made"
        if mode == "subset" and n == 0:
            return f"the agent made no call, so none lies outside the {m} expected (subset holds vacuously)"
        if mode == "superset" and m == 0:
            return f"no call was expected, so the {n} made include every expected one (superset holds vacuously)"
        what = {"strict": "in the same order", "unordered": "in some order", "subset": "every call is among",
                "superset": "every expected call is among"}[mode]
        if mode in ("strict", "unordered"):
            return f"the {n} calls are the {m} expected, {what}"
        return f"{what} the {'expected' if mode == 'subset' else 'calls made'} ({n} made, {m} expected)"
    extra = [s for s in trail["steps"] if s["reference"] is None]
    missing = trail["unmatched_reference"]
    if mode == "strict":
        for s in trail["steps"]:
            if s["reference"] is None and s["call"] < m:
                return (f"call {s['call'] + 1}, {s['made']}, is not the expected {call_text(reference[s['call']])}"
                        f" ({n} made, {m} expected)")
        if n < m:
            return f"expected call {n + 1}, {call_text(reference[n])}, was not made ({n} made, {m} expected)"
        return f"call {m + 1}, {call_text(calls[m])}, was not expected ({n} made, {m} expected)"
    if mode in ("unordered", "subset") and extra:
        more = f" (and {len(extra) - 1} more)" if len(extra) > 1 else ""
        return f"call {extra[0]['made']} matches no expected call of its own{more} ({n} made, {m} expected)"
    more = f" (and {len(missing) - 1} more)" if len(missing) > 1 else ""
    return f"expected call {missing[0]['expected']} was not made{more} ({n} made, {m} expected)"


class _Trajectory(Metric):
    level = "conversation"
    groups = frozenset({"agent"})

    def missing(self, sample: Sample) -> str | None:
        return conversation_only(sample) or super().missing(sample)


class TrajectoryMatch(_Trajectory):
    name = "trajectory_match"

    def __init__(self, key: str | None = None, mode: str = "strict", args: str | tuple[Any, ...] = "exact") -> None:
        super().__init__(key)
        mode = str(mode).strip().lower()
        if mode not in MODES:
            raise ValueError(f"trajectory_match mode must be one of {', '.join(MODES)}, not '{mode}'")
        if isinstance(args, tuple):  # keys:a/b as --metrics reads it
            args = "/".join(str(a) for a in args)
        args_matcher(str(args))
        self.mode, self.args = mode, str(args).strip()

    def params(self) -> dict[str, Any]:
        return {"mode": self.mode, "args": self.args}

    def missing(self, sample: Sample) -> str | None:
        found = super().missing(sample)
        if found is None and sample.reference_tool_calls is None:
            return "sample has no reference_tool_calls"
        return found

    async def compute(self, ctx: SampleAnalyses) -> Score:
        s = ctx.sample
        calls, reference = tuple(s.tool_calls or ()), tuple(s.reference_tool_calls or ())
        ok, trail = match_trajectory(calls, reference, self.mode, self.args)
        tools = tools_of(s)
        for step, call in zip(trail["steps"], calls):  # an MCP server's tool: the server named
            tool = tool_named(tools, call.name.strip())
            if tool is not None and tool.server:
                step["server"] = tool.server
        return Score.scored(self.key, 1.0 if ok else 0.0, _why(ok, self.mode, trail, calls, reference),
                            Evidence(details=trail))


def _json_path(error: Any) -> str:
    path = getattr(error, "json_path", None)
    if isinstance(path, str):
        return path
    return "$" + "".join(f"[{p}]" if isinstance(p, int) else f".{p}" for p in error.absolute_path)


def validate_calls(calls: Sequence[ToolCall], tools: Sequence[ToolSpec]) -> list[dict[str, Any]]:
    """One row per call: ``valid`` True / False, or None when it could not be checked (its tool
    has no schema, or a schema that is not valid JSON Schema), with the failing paths and
    messages (``errors``) and the MCP server of its tool. MissingExtraError without jsonschema."""
    try:
        import jsonschema
        from jsonschema.exceptions import SchemaError
        from jsonschema.validators import validator_for
    except ImportError as exc:
        raise MissingExtraError("tool_argument_validity", "agents", "jsonschema") from exc
    by_name: dict[str, ToolSpec] = {}
    for t in tools:
        by_name.setdefault(t.name, t)
    checkers: dict[str, Any] = {}
    rows: list[dict[str, Any]] = []
    for i, call in enumerate(calls):
        row: dict[str, Any] = {"call": i, "made": call_text(call)}
        tool = by_name.get(call.name.strip())
        if tool is not None and tool.server:
            row["server"] = tool.server
        if call.malformed:  # invalid whatever the schema: there are no arguments to check
            row.update(valid=False, errors=[{"path": "$", "message": str(call.args_error)}])
        elif tool is None:
            row.update(valid=False, errors=[{"path": "$", "message": f"no tool named '{call.name}' among the "
                                             f"{len(by_name)} available"}])
        elif tool.parameters is None:
            row.update(valid=None, note=f"the tool '{tool.name}' has no schema")
        else:
            if tool.name not in checkers:
                try:
                    cls = validator_for(tool.parameters)
                    cls.check_schema(tool.parameters)
                    checkers[tool.name] = cls(tool.parameters, format_checker=jsonschema.FormatChecker())
                except SchemaError as exc:
                    checkers[tool.name] = f"the tool '{tool.name}' has a schema that is not valid JSON Schema: " \
                                          f"{exc.message}"
            checker = checkers[tool.name]
            if isinstance(checker, str):
                row.update(valid=None, note=checker)
            else:
                errors = sorted(checker.iter_errors(dict(call.args)), key=lambda e: (_json_path(e), e.message))
                row.update(valid=not errors, errors=[{"path": _json_path(e), "message": e.message} for e in errors])
        rows.append(row)
    return rows


class ToolArgumentValidity(_Trajectory):
    name = "tool_argument_validity"
    packages = (("jsonschema", "agents"),)

    def missing(self, sample: Sample) -> str | None:
        found = super().missing(sample)
        if found is None and tools_of(sample) is None:
            return "sample has no tools (the tool definitions the agent had: the request's tools, an MCP tools/list)"
        return found

    async def compute(self, ctx: SampleAnalyses) -> Score:
        s = ctx.sample
        calls = tuple(s.tool_calls or ())
        tools = tools_of(s) or ()
        if not calls:
            return Score.undetermined(self.key, "no call was made: no arguments to check",
                                      Evidence(details={"calls": 0, "tools": len(tools)}))
        try:
            rows = validate_calls(calls, tools)
        except MissingExtraError as exc:
            return Score.failed(self.key, str(exc))
        checked = [r for r in rows if r["valid"] is not None]
        valid = sum(1 for r in checked if r["valid"])
        details = {"calls": len(calls), "checked": len(checked), "valid": valid, "tools": len(tools), "steps": rows}
        ev = Evidence(details=details)
        if not checked:
            return Score.undetermined(self.key, f"no call could be checked: {rows[0]['note']}"
                                      + (f" (and {len(rows) - 1} more calls unchecked)" if len(rows) > 1 else ""), ev)
        bad = next((r for r in checked if not r["valid"]), None)
        why = ""
        if bad is not None:
            first = bad["errors"][0]
            why = f"; {bad['made']}: {first['path']}: {first['message']}"
            if len(bad["errors"]) > 1:
                why += f" (and {len(bad['errors']) - 1} more errors)"
        skipped = len(rows) - len(checked)
        unchecked = f" ({skipped} unchecked: no schema)" if skipped else ""
        return Score.scored(self.key, valid / len(checked),
                            f"{valid} of {len(checked)} calls have valid arguments{unchecked}{why}", ev)
