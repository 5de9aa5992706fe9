"""Conversation-level judge metrics: each judges a whole conversation (a conversation-level
sample: ``conversation_id`` set, ``turn`` None, every turn in ``history``) message by message.

- ``knowledge_retention`` = assistant messages that keep what the user established before them
  (facts, preferences, constraints: not asked again, ignored or contradicted) / assistant messages.
- ``conversation_completeness`` = user messages whose request was met by the assistant's replies
  / user messages.
- ``role_adherence`` = assistant messages that stay in the given ``system_role`` / assistant
  messages; skipped when the conversation has no system role.
- ``agent_goal_accuracy`` = 1 when the ``expected_outcome`` was reached by the end of the
  conversation (as its tool results and the assistant's messages show), else 0; skipped without
  an expected outcome. With reference tool calls, the evidence lists the calls that differ from
  them, and a missed goal's reason names the first.

The judge reads the numbered conversation (``analyses.transcript``) and gives a verdict per item,
with a reason (the embedded judge: P(Yes) per item, the conversation first as the shared prefix;
a reason is asked for the items judged No). The trail holds one verdict per judged message
(``Evidence.claims``, target ``turn K``; ``details["verdicts"]``). A conversation with nothing to
judge (no assistant or no user message) is ``undetermined``.
"""

from __future__ import annotations

from typing import Any, ClassVar

from .._score import ClaimVerdict, Evidence, Score
from ..analyses import SampleAnalyses, judge_items, transcript, user_statements
from ..dataset import Sample, Turn
from ..prompts import fence
from ._base import Metric
from ._levels import conversation_only
from .tool_calls import compare_calls, describe

__all__ = ["AgentGoalAccuracy", "ConversationCompleteness", "KnowledgeRetention", "RoleAdherence"]


class _PerMessage(Metric):
    """Judge each message of one role in the conversation; the score is the share judged ok."""

    level = "conversation"
    needs_judge = True
    groups = frozenset({"conversation"})
    step: ClassVar[str]
    role: ClassVar[str]  # the messages judged
    what: ClassVar[str]  # "keep what the user established"
    empty: ClassVar[str]  # why a conversation has nothing to judge

    def missing(self, sample: Sample) -> str | None:
        return conversation_only(sample) or super().missing(sample)

    def extra(self, sample: Sample) -> str:
        return ""

    def settled(self, shown: list[tuple[int, int, Turn]]) -> dict[int, str]:
        """The verdicts decided without the judge (those messages are ok): their reason by the
        message's number."""
        return {}

    async def compute(self, ctx: SampleAnalyses) -> Score:
        text, shown = transcript(ctx.sample.history or ())
        judged = [(n, turn, m) for n, turn, m in shown if m.role == self.role and m.content.strip()]
        if not judged:
            return Score.undetermined(self.key, self.empty, Evidence(details={"messages": len(shown)}))
        items = [f"[{n}] {m.role}: {' '.join(m.content.split())}" for n, _, m in judged]
        settled = self.settled(shown)
        decided = {i: settled[n] for i, (n, _, _) in enumerate(judged) if n in settled}
        asked = [item for i, item in enumerate(items) if i not in decided]
        got, calls = await judge_items(ctx, self.step, text, asked, self.extra(ctx.sample)) if asked else ([], ())
        answers = iter(got)
        verdicts = [(True, None, decided[i]) if i in decided else next(answers) for i in range(len(items))]
        rows = [{"message": n, "turn": turn, "verdict": ok, "probability": p, "reason": reason}
                for (n, turn, _), (ok, p, reason) in zip(judged, verdicts)]
        trail = tuple(ClaimVerdict(claim=item, supported=ok, probability=p, reason=reason, target=f"turn {turn}")
                      for item, (_, turn, _), (ok, p, reason) in zip(items, judged, verdicts))
        n_ok = sum(ok for ok, _, _ in verdicts)
        ev = Evidence(claims=trail, calls=calls, details={"verdicts": rows, "judged": len(rows), "ok": n_ok})
        first_bad = next((r for r in rows if not r["verdict"]), None)
        why = ""
        if first_bad is not None:
            why = f"; not message [{first_bad['message']}] (turn {first_bad['turn']})"
            if first_bad["reason"]:
                why += f": {first_bad['reason']}"
        return Score.scored(self.key, n_ok / len(rows), f"{n_ok} of {len(rows)} {self.role} messages "
                            f"{self.what}{why}", ev)


class KnowledgeRetention(_PerMessage):
    """An assistant message can forget only what the user stated before it: a message with no
    user statement before it (only questions, or nothing) keeps everything by definition and is
    not asked about (a small judge cited a user statement that was never made)."""

    name = "knowledge_retention"
    step = "knowledge_retention"
    role = "assistant"
    what = "keep what the user established"
    empty = "the conversation has no assistant message to judge"

    def settled(self, shown: list[tuple[int, int, Turn]]) -> dict[int, str]:
        out: dict[int, str] = {}
        for n, _, m in shown:  # in order: one pass, however long the conversation
            if m.role == "user" and user_statements([m.content]):
                break
            if m.role == self.role:
                out[n] = "the user stated nothing before this message (only questions), so there is nothing to forget"
        return out


class ConversationCompleteness(_PerMessage):
    name = "conversation_completeness"
    step = "conversation_completeness"
    role = "user"
    what = "had their request met"
    empty = "the conversation has no user message to judge"


class RoleAdherence(_PerMessage):
    name = "role_adherence"
    requires = ("system_role",)
    step = "role_adherence"
    role = "assistant"
    what = "stay in the given role"
    empty = "the conversation has no assistant message to judge"

    def extra(self, sample: Sample) -> str:
        return fence("role", sample.system_role or "")


class AgentGoalAccuracy(Metric):
    name = "agent_goal_accuracy"
    requires = ("expected_outcome",)
    level = "conversation"
    needs_judge = True
    groups = frozenset({"conversation", "agent"})

    def missing(self, sample: Sample) -> str | None:
        return conversation_only(sample) or super().missing(sample)

    async def compute(self, ctx: SampleAnalyses) -> Score:
        s = ctx.sample
        turns: tuple[Turn, ...] = s.history or ()
        text, shown = transcript(turns)
        outcome = " ".join((s.expected_outcome or "").split())
        [(reached, p, reason)], calls = await judge_items(ctx, "agent_goal", text, [outcome])
        details: dict[str, Any] = {"expected_outcome": outcome, "reached": reached, "probability": p,
                                   "reason": reason, "messages": len(shown)}
        mismatches: list[str] = []
        if s.reference_tool_calls is not None:
            accuracy, pairs = compare_calls(tuple(s.tool_calls or ()), s.reference_tool_calls)
            wrong = [r for r in pairs if "mismatch" in r]
            mismatches = [describe(r) for r in wrong]
            details["mismatched_calls"] = wrong
            details["tool_call_accuracy"] = accuracy
        trail = (ClaimVerdict(claim=outcome, supported=reached, probability=p, reason=reason,
                              target="conversation"),)
        ev = Evidence(claims=trail, calls=calls, details=details)
        if reached:
            return Score.scored(self.key, 1.0, "the expected outcome was reached", ev)
        why = f": {mismatches[0]}" if mismatches else (f": {reason}" if reason else "")
        more = f" (and {len(mismatches) - 1} more call mismatches)" if len(mismatches) > 1 else ""
        return Score.scored(self.key, 0.0, f"the expected outcome was not reached{why}{more}", ev)
