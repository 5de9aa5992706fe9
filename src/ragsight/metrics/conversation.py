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

With a judge that gives yes/no probabilities, two metrics read less than the whole conversation,
so that what the user asked for is never taken for what the assistant did: conversation
completeness judges each user message with the assistant message it may answer and what follows
it (:func:`request_and_after`), and agent goal accuracy reads the assistant's messages and the
tool results only (:func:`outcome_text`).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, ClassVar

from .._score import ClaimVerdict, Evidence, Score
from ..analyses import SampleAnalyses, judge_items, transcript, user_statements
from ..dataset import Sample, Turn
from ..judge import Judge
from ..prompts import fence
from ._base import Metric
from ._levels import conversation_only
from .tool_calls import compare_calls, describe

__all__ = ["EMBEDDED_REFUSAL", "AgentGoalAccuracy", "ConversationCompleteness", "KnowledgeRetention", "RoleAdherence"]

EMBEDDED_REFUSAL = (
    "refused for the embedded judge ({judge}): on chats written to check it, it {found}, so its "
    "score would say the opposite of what happened (docs/validity.md); use a remote judge for it "
    "(--judge openai:MODEL ...)"
)


def embedded_refusal(metric: str, judge: Judge, found: str) -> str | None:
    """The preflight refusal of ``metric`` for the embedded judge (a ``local:`` judge), else None."""
    if not judge.name.startswith("local:"):
        return None
    return EMBEDDED_REFUSAL.format(metric=metric, judge=judge.name, found=found)


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

    async def judge(
        self, ctx: SampleAnalyses, text: str, shown: list[tuple[int, int, Turn]],
        judged: list[tuple[int, int, Turn]], items: list[str], asked: list[int],
    ) -> tuple[list[tuple[bool, float | None, str]], tuple[Any, ...]]:
        """The verdicts of the items at ``asked`` (indices into ``judged`` and ``items``), in order:
        every item read against the whole numbered conversation ``text``."""
        return await judge_items(ctx, self.step, text, [items[i] for i in asked], self.extra(ctx.sample))

    async def compute(self, ctx: SampleAnalyses) -> Score:
        text, shown = transcript(ctx.sample.history or ())
        judged = [(n, turn, m) for n, turn, m in shown if m.role == self.role and m.content.strip()]
        if not judged:
            return Score.undetermined(self.key, self.empty, Evidence(details={"messages": len(shown)}))
        items = [f"[{n}] {m.role}: {' '.join(m.content.split())}" for n, _, m in judged]
        settled = self.settled(shown)
        decided = {i: settled[n] for i, (n, _, _) in enumerate(judged) if n in settled}
        asked = [i for i in range(len(items)) if i not in decided]
        got, calls = await self.judge(ctx, text, shown, judged, items, asked) if asked else ([], ())
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
    """A user message's request is met only when the assistant's words meet it. A judge with
    yes/no probabilities (the embedded judge) reads each user message with only what follows it
    (and the assistant message it answers, when there is one): asked about every message against
    the whole conversation, the 1.5B judge said yes to all of them, four requests never answered
    included (``bench/conversation_check.py``). A remote judge reads the whole conversation in one
    call."""

    name = "conversation_completeness"
    step = "conversation_completeness"
    role = "user"
    what = "had their request met"
    empty = "the conversation has no user message to judge"

    def refuses(self, judge: Judge) -> str | None:
        return embedded_refusal(self.name, judge, "judged requests met that the assistant never met (a "
                                "request asked four times and never answered: 4 of 4 met, P 0.61-0.70, "
                                "with the request read alone with what followed it)")

    async def judge(
        self, ctx: SampleAnalyses, text: str, shown: list[tuple[int, int, Turn]],
        judged: list[tuple[int, int, Turn]], items: list[str], asked: list[int],
    ) -> tuple[list[tuple[bool, float | None, str]], tuple[Any, ...]]:
        if not ctx.need_judge().supports_choices:
            return await super().judge(ctx, text, shown, judged, items, asked)
        out: list[tuple[bool, float | None, str]] = []
        calls: list[Any] = []
        for i in asked:
            part, request = request_and_after([m for _, _, m in shown], [n for n, _, _ in shown].index(judged[i][0]))
            got, refs = await judge_items(ctx, self.step, part, [request])
            out.extend(got)
            calls.extend(refs)
        return out, tuple(calls)


class RoleAdherence(_PerMessage):
    name = "role_adherence"
    requires = ("system_role",)
    step = "role_adherence"
    role = "assistant"
    what = "stay in the given role"
    empty = "the conversation has no assistant message to judge"

    def extra(self, sample: Sample) -> str:
        return fence("role", sample.system_role or "")


def request_and_after(messages: list[Turn], k: int) -> tuple[str, str]:
    """The numbered conversation a user message's request is judged in, and the request as an
    item: the assistant message before it (what it may answer), the message itself and every
    message after it; the request is numbered as shown there."""
    start = k - 1 if k > 0 and messages[k - 1].role == "assistant" else k
    text, _ = transcript(tuple(messages[start:]))
    n = k - start + 1
    m = messages[k]
    return text, f"[{n}] {m.role}: {' '.join(m.content.split())}"


def outcome_text(turns: Sequence[Turn]) -> str:
    """The numbered conversation an expected outcome is judged against by a judge with yes/no
    probabilities: the assistant's messages and the tool results only. An outcome is reached when
    the conversation states it; what the user asked for states nothing (the 1.5B judge, shown the
    user's request, judged two goals never met as reached)."""
    return transcript(tuple(m for m in turns if m.role in ("assistant", "tool")))[0]


class AgentGoalAccuracy(Metric):
    name = "agent_goal_accuracy"
    requires = ("expected_outcome",)
    level = "conversation"
    needs_judge = True
    groups = frozenset({"conversation", "agent"})

    def missing(self, sample: Sample) -> str | None:
        return conversation_only(sample) or super().missing(sample)

    def refuses(self, judge: Judge) -> str | None:
        return embedded_refusal(self.name, judge, "judged goals never met or met in part as reached "
                                "(P 0.57 and 0.74, with only the assistant's messages shown)")

    async def compute(self, ctx: SampleAnalyses) -> Score:
        s = ctx.sample
        turns: Sequence[Turn] = s.history or ()
        text, shown = transcript(turns)
        outcome = " ".join((s.expected_outcome or "").split())
        if ctx.need_judge().supports_choices:
            text = outcome_text(turns)
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
