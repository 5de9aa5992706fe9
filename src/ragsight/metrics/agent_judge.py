"""Judge-based agent metrics on a conversation's calls, without reference calls.

``tool_selection``: for each call, was its tool the right one among the tools the agent had
(``metadata["tools"]``) for what the user asked at that point (arguments and results are not
judged here). A call of a tool the data does not list is wrong without asking the judge. The
score is the share of calls judged right. Skipped without tools in the data.

``trajectory_quality``: the share of sound items among one *step* per call (does it move toward
the request, without fetching again what an earlier result gave) and one *recovery* per failed
call (after it, did the agent change something sensible: other arguments, another tool, or tell
the user). Two kinds of step are settled without the judge: a **repeat** (the same call, by
name and normalised arguments, as an earlier one whose result did not fail) and a **loop** (the
same call made a third time or more, whatever the results). A result failed when the data marks
it (``Turn.is_error``: Anthropic's ``is_error``, LangChain's ``status="error"``, MCP's
``isError``) or it reads as a failure (:func:`~ragsight.dataset.looks_failed`).

The judge reads the numbered conversation and, for ``tool_selection``, the fenced list of tools
(name, MCP server, description, arguments); the embedded judge gives P(Yes) per item (the
conversation first, as the shared prefix), a remote judge one JSON verdict per item. A call of an
MCP server's tool names the server in its row of the trail (``server``).
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from .._score import ClaimVerdict, Evidence, Score
from ..analyses import SampleAnalyses, judge_items, transcript
from ..dataset import Sample, ToolCall, ToolSpec, Turn, looks_failed, tool_named, tools_of
from ..prompts import fence
from ._base import Metric
from ._levels import conversation_only
from .tool_calls import call_text, normal_args

__all__ = ["LOOP_AT", "Step", "ToolSelection", "TrajectoryQuality", "tool_list", "trajectory_steps"]

LOOP_AT = 3  # the same call made this many times or more is a loop
MAX_SCHEMA_CHARS = 400  # a tool's argument list is cut at this many characters in the prompt


@dataclass(frozen=True)
class Step:
    """One call of the trajectory: its position among the calls, the numbered message that made
    it (None when the transcript does not show it), the turn, its result and whether it failed."""

    index: int
    call: ToolCall
    message: int | None
    turn: int
    result: Turn | None
    failed: bool
    request: str = ""  # the user's last message before the call


def trajectory_steps(history: Sequence[Turn]) -> tuple[str, list[Step]]:
    """The fenced, numbered conversation and the steps of its calls, each with its result (the
    tool message answering its id, else the next unanswered tool message after it)."""
    text, shown = transcript(history)
    number = {id(m): (n, turn) for n, turn, m in shown}
    steps: list[Step] = []
    turn = 0
    request = ""
    for i, m in enumerate(history):
        if id(m) in number:
            turn = number[id(m)][1]
        if m.role == "user":
            request = " ".join(m.content.split())
        if m.role != "assistant" or not m.tool_calls:
            continue
        results: list[Turn] = []
        for t in history[i + 1:]:
            if t.role != "tool":
                break
            results.append(t)
        free = list(results)
        for call in m.tool_calls:
            result = next((r for r in free if call.id and r.tool_call_id == call.id), None)
            if result is None:
                result = next((r for r in free if not r.tool_call_id or not call.id), None)
            if result is not None:
                free.remove(result)
            failed = result is not None and (result.is_error or looks_failed(result.content))
            steps.append(Step(len(steps), call, number.get(id(m), (None, turn))[0], turn, result, failed, request))
    return text, steps


def _schema_text(schema: Mapping[str, Any] | None) -> str:
    if not schema:
        return ""
    props = schema.get("properties")
    required = set(schema.get("required") or ()) if isinstance(schema.get("required"), list) else set()
    if not isinstance(props, Mapping):
        text = json.dumps(schema, ensure_ascii=False, sort_keys=True)
    else:
        parts = []
        for name, p in props.items():
            kind = p.get("type") if isinstance(p, Mapping) else None
            if isinstance(p, Mapping) and isinstance(p.get("enum"), list):
                kind = "|".join(str(v) for v in p["enum"])
            parts.append(f"{name}" + (f" ({kind}{', required' if name in required else ''})" if kind
                                      else (" (required)" if name in required else "")))
        text = ", ".join(parts)
    return text if len(text) <= MAX_SCHEMA_CHARS else text[:MAX_SCHEMA_CHARS - 1] + "…"


def tool_list(tools: Sequence[ToolSpec]) -> str:
    """The fenced list of tools the judge reads: one line per tool."""
    lines = []
    for t in tools:
        where = f" (MCP server {t.server})" if t.server else ""
        desc = f": {' '.join(t.description.split())}" if t.description else ""
        args = _schema_text(t.parameters)
        lines.append(f"- {t.name}{where}{desc}" + (f" Arguments: {args}" if args else ""))
    return fence("tools", "\n".join(lines))


def _where(step: Step) -> str:
    return f"[{step.message}]" if step.message is not None else f"(turn {step.turn})"


def _rows(items: Sequence[tuple[str, dict[str, Any]]], verdicts: Sequence[tuple[bool, float | None, str]]
          ) -> list[dict[str, Any]]:
    return [{**row, "verdict": ok, "probability": p, "reason": reason}
            for (_, row), (ok, p, reason) in zip(items, verdicts)]


async def _judge(ctx: SampleAnalyses, step: str, conversation: str, items: Sequence[tuple[str, dict[str, Any]]],
                 settled: Mapping[int, str], extra: str = "") -> tuple[list[dict[str, Any]], Evidence]:
    """The verdict of each item (settled ones False with their reason, without the judge)."""
    asked = [text for i, (text, _) in enumerate(items) if i not in settled]
    got, calls = await judge_items(ctx, step, conversation, asked, extra) if asked else ([], ())
    answers = iter(got)
    verdicts = [(False, None, settled[i]) if i in settled else next(answers) for i in range(len(items))]
    rows = _rows(items, verdicts)
    trail = tuple(ClaimVerdict(claim=text, supported=r["verdict"], probability=r["probability"], reason=r["reason"],
                               target=f"turn {r['turn']}") for (text, _), r in zip(items, rows))
    ok = sum(1 for r in rows if r["verdict"])
    return rows, Evidence(claims=trail, calls=calls, details={"verdicts": rows, "judged": len(asked),
                                                              "items": len(rows), "ok": ok})


def _first_bad(rows: Sequence[Mapping[str, Any]]) -> str:
    bad = next((r for r in rows if not r["verdict"]), None)
    if bad is None:
        return ""
    return f"; not {bad['item']}" + (f": {bad['reason']}" if bad["reason"] else "")


class _AgentJudged(Metric):
    level = "conversation"
    needs_judge = True
    groups = frozenset({"agent"})

    def missing(self, sample: Sample) -> str | None:
        return conversation_only(sample) or super().missing(sample)


class ToolSelection(_AgentJudged):
    name = "tool_selection"

    def missing(self, sample: Sample) -> str | None:
        found = super().missing(sample)
        if found is None and tools_of(sample) is None:
            return "sample has no tools (the tool definitions the agent had: the request's tools, an MCP tools/list)"
        return found

    async def compute(self, ctx: SampleAnalyses) -> Score:
        tools = tools_of(ctx.sample) or ()
        conversation, steps = trajectory_steps(ctx.sample.history or ())
        if not steps:
            return Score.undetermined(self.key, "no call was made: no tool choice to judge",
                                      Evidence(details={"calls": 0, "tools": len(tools)}))
        items: list[tuple[str, dict[str, Any]]] = []
        settled: dict[int, str] = {}
        for s in steps:
            tool = tool_named(tools, s.call.name.strip())
            label = f"{_where(s)} {call_text(s.call)}"
            row: dict[str, Any] = {"item": label, "call": s.index, "message": s.message, "turn": s.turn,
                                   "tool": s.call.name}
            if tool is not None and tool.server:
                row["server"] = tool.server
            if tool is None:
                settled[len(items)] = f"no tool named '{s.call.name}' is among the {len(tools)} available"
            does = f"; the tool: {' '.join(tool.description.split())}" if tool is not None and tool.description else ""
            asked = f'; the request: "{s.request}"' if s.request else ""
            items.append((f"{label}{does}{asked}", row))
        rows, ev = await _judge(ctx, "tool_selection", conversation, items, settled, tool_list(tools))
        ok = sum(1 for r in rows if r["verdict"])
        return Score.scored(self.key, ok / len(rows), f"{ok} of {len(rows)} calls chose the right tool"
                            f"{_first_bad(rows)}", ev)


def _key(call: ToolCall) -> str:
    if call.malformed:  # arguments that are not JSON: the same text is the same call
        return json.dumps([call.name.strip(), None, call.raw_args], ensure_ascii=False)
    return json.dumps([call.name.strip(), normal_args(call.args)], sort_keys=True, ensure_ascii=False)


class TrajectoryQuality(_AgentJudged):
    name = "trajectory_quality"

    async def compute(self, ctx: SampleAnalyses) -> Score:
        tools = tools_of(ctx.sample) or ()
        conversation, steps = trajectory_steps(ctx.sample.history or ())
        if not steps:
            return Score.undetermined(self.key, "no call was made: no trajectory to judge",
                                      Evidence(details={"calls": 0}))
        items: list[tuple[str, dict[str, Any]]] = []
        settled: dict[int, str] = {}
        seen: dict[str, list[Step]] = {}
        history = ctx.sample.history or ()
        for s in steps:
            twins = seen.setdefault(_key(s.call), [])
            label = f"step {_where(s)} {call_text(s.call)}"
            row: dict[str, Any] = {"item": label, "kind": "step", "call": s.index, "message": s.message,
                                   "turn": s.turn, "failed": s.failed}
            tool = tool_named(tools, s.call.name.strip())
            if tool is not None and tool.server:
                row["server"] = tool.server
            if len(twins) + 1 >= LOOP_AT:
                row["settled"] = "loop"
                settled[len(items)] = f"a loop: the same call for the {_nth(len(twins) + 1)} time"
            else:
                done = next((t for t in twins if not t.failed), None)
                if done is not None:
                    row["settled"] = "repeat"
                    settled[len(items)] = f"repeats the call {_where(done)}, whose result was already there"
            twins.append(s)
            items.append((label, row))
            if s.failed:
                after = _after(history, s, steps)
                rec = f"recovery after the failed call {_where(s)} {call_text(s.call)}: {after}"
                items.append((rec, {"item": f"recovery after {_where(s)}", "kind": "recovery", "call": s.index,
                                    "message": s.message, "turn": s.turn, **({"server": row["server"]}
                                                                               if "server" in row else {})}))
        rows, ev = await _judge(ctx, "trajectory_quality", conversation, items, settled)
        ev.details.update(repeats=[r["call"] for r in rows if r.get("settled") == "repeat"],
                          loops=[r["call"] for r in rows if r.get("settled") == "loop"],
                          failed_calls=[s.index for s in steps if s.failed])
        ok = sum(1 for r in rows if r["verdict"])
        n_steps = sum(1 for r in rows if r["kind"] == "step")
        recoveries = len(rows) - n_steps
        what = f"{n_steps} steps" + (f" and {recoveries} recoveries" if recoveries else "")
        return Score.scored(self.key, ok / len(rows), f"{ok} of {len(rows)} sound ({what}){_first_bad(rows)}", ev)


def _nth(k: int) -> str:
    return {1: "first", 2: "second", 3: "third"}.get(k, f"{k}th")


def _after(history: Sequence[Turn], failed: Step, steps: Sequence[Step]) -> str:
    """What the agent did next, in words: its next call, else its next answer, else nothing."""
    nxt = next((s for s in steps if s.index == failed.index + 1), None)
    if nxt is not None:
        return f"next the agent called {_where(nxt)} {call_text(nxt.call)}"
    if failed.result is not None:
        pos = next((i for i, t in enumerate(history) if t is failed.result), None)
        if pos is not None:
            reply = next((t for t in history[pos + 1:] if t.role == "assistant" and t.content.strip()), None)
            if reply is not None:
                return "next the agent answered the user (its answer is in the conversation)"
    return "the agent did nothing after it"
