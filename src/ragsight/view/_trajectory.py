"""A conversation's trajectory on its page: each call in order, with the message that made it, its
MCP server, whether its arguments validate (tool_argument_validity's trail), the reference call
it matched (trajectory_match's), the judge's verdicts on it (tool_selection's, trajectory_quality's)
and its result, a failed result marked."""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import Any

from .._score import Outcome, Score
from ..dataset import Sample, tool_named, tools_of
from ..metrics.agent_judge import trajectory_steps
from ._assets import t

__all__ = ["trajectory_field"]

MAX_RESULT_CHARS = 300


def _rows(scores: Mapping[str, Score], name: str, field: str) -> dict[int, Mapping[str, Any]]:
    """The trail rows of the first scored metric ``name`` by call index."""
    for key in sorted(scores):
        sc = scores[key]
        if key.split("(", 1)[0] != name or sc.outcome is not Outcome.SCORED:
            continue
        out: dict[int, Mapping[str, Any]] = {}
        for r in sc.evidence.details.get(field) or ():
            if isinstance(r, Mapping) and isinstance(r.get("call"), int) and r.get("kind", "step") == "step":
                out.setdefault(r["call"], r)
        return out
    return {}


def trajectory_field(sample: Sample, scores: Mapping[str, Score]) -> str:
    """The trajectory table of a conversation's own sample ('' for a turn or without calls)."""
    if sample.turn is not None or not sample.tool_calls:
        return ""
    _, steps = trajectory_steps(sample.history or ())
    tools = tools_of(sample)
    validity = _rows(scores, "tool_argument_validity", "steps")
    matched = _rows(scores, "trajectory_match", "steps")
    chosen = _rows(scores, "tool_selection", "verdicts")
    sound = _rows(scores, "trajectory_quality", "verdicts")
    body = []
    for s in steps:
        tool = tool_named(tools, s.call.name.strip())
        args = (f"<not JSON: {s.call.raw_args}>" if s.call.malformed
                else json.dumps(dict(s.call.args), ensure_ascii=False, sort_keys=True))
        v = validity.get(s.index)
        if v is None:
            valid = ""
        elif v.get("valid") is None:
            valid = "unchecked"
        elif v.get("valid"):
            valid = "valid"
        else:
            first = (v.get("errors") or [{}])[0]
            valid = f"invalid: {first.get('path', '')}: {first.get('message', '')}"
        m = matched.get(s.index)
        ref = "" if m is None else ("no reference call" if m.get("reference") is None else f"reference {m['reference'] + 1}")
        verdicts = []
        for what, rows in (("tool", chosen), ("step", sound)):
            r = rows.get(s.index)
            if r is not None:
                p = r.get("probability")
                verdicts.append(f"{what} {'ok' if r.get('verdict') else 'not ok'}"
                                + (f" (P {p:.2f})" if isinstance(p, (int, float)) else "")
                                + (f": {r['reason']}" if r.get("reason") else ""))
        result = "" if s.result is None else s.result.content
        if len(result) > MAX_RESULT_CHARS:
            result = result[:MAX_RESULT_CHARS - 1] + "…"
        failed = ' <span class="badge low">failed</span>' if s.failed else ""
        body.append(
            f'<tr id="call-{s.index}"><td>{s.index + 1}</td><td>{"" if s.message is None else s.message}</td>'
            f'<td class="l">{t(s.call.name)}({t(args)})</td><td>{t(tool.server) if tool and tool.server else ""}</td>'
            f'<td class="l">{t(valid)}</td><td>{t(ref)}</td><td class="l">{t("; ".join(verdicts))}</td>'
            f'<td class="l">{t(result)}{failed}</td></tr>')
    head = ('<tr><th>#</th><th>message</th><th class="l">call</th><th>server</th><th class="l">arguments</th>'
            '<th>matched</th><th class="l">judged</th><th class="l">result</th></tr>')
    return (f'<div class="field" id="trajectory"><b>trajectory ({len(steps)} calls)</b><div class="scroll">'
            f'<table><thead>{head}</thead><tbody>{"".join(body)}</tbody></table></div></div>')
