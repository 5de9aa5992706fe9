"""The trajectory causes of a failing agent conversation, read from the trails of the agent
metrics (no judge call): a **missing step** (trajectory_match's reference calls no call matched),
an **extra** call (a call matched by no reference call), **invalid arguments**
(tool_argument_validity's schema errors), a **wrong tool** (a call of a tool the agent did not
have, or one tool_selection judged wrong), a **loop** (trajectory_quality's repeated or looping
calls) and an unsound step or recovery (trajectory_quality's judged No). They are items of the
``tool`` cause."""

from __future__ import annotations

from collections.abc import Mapping

from .._score import Outcome, Score

__all__ = ["TRAJECTORY_METRICS", "trajectory_items"]

TRAJECTORY_METRICS = frozenset({"trajectory_match", "tool_argument_validity", "tool_selection", "trajectory_quality"})


def _name(key: str) -> str:
    return key.split("(", 1)[0].strip().lower()


def trajectory_items(scores: Mapping[str, Score]) -> list[tuple[str, str, str]]:
    """(kind, sentence, metric key) of each trajectory fault in the scores' trails, the scores
    below 1 only."""
    out: list[tuple[str, str, str]] = []
    for key in sorted(scores):
        sc, name = scores[key], _name(key)
        if name not in TRAJECTORY_METRICS or sc.outcome is not Outcome.SCORED or sc.value is None or sc.value >= 1.0:
            continue
        d = sc.evidence.details
        if name == "trajectory_match":
            out += [("missing_step", f"expected call {r['expected']} was not made", key)
                    for r in d.get("unmatched_reference") or ()]
            out += [("extra", f"call {s['made']} was not expected", key)
                    for s in d.get("steps") or () if s.get("reference") is None]
        elif name == "tool_argument_validity":
            for r in d.get("steps") or ():
                if r.get("valid") is not False:
                    continue
                errors = r.get("errors") or [{}]
                first = errors[0]
                if str(first.get("message", "")).startswith("no tool named"):
                    out.append(("wrong_tool", f"call {r['made']}: {first['message']}", key))
                    continue
                more = f" (and {len(errors) - 1} more)" if len(errors) > 1 else ""
                server = f" (MCP server {r['server']})" if r.get("server") else ""
                out.append(("invalid_arguments", f"call {r['made']}{server}: {first.get('path')}: "
                            f"{first.get('message')}{more}", key))
        else:
            for r in d.get("verdicts") or ():
                if r.get("verdict"):
                    continue
                why = f": {r['reason']}" if r.get("reason") else ""
                if name == "tool_selection":
                    out.append(("wrong_tool", f"{r['item']}{why}", key))
                elif r.get("settled") in ("loop", "repeat"):
                    out.append(("loop", f"{r['item']}{why}", key))
                else:
                    out.append(("bad_recovery" if r.get("kind") == "recovery" else "unsound_step",
                                f"{r['item']}{why}", key))
    return out
