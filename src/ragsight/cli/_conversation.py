"""``ragsight show RUN --conversation ID``: a conversation turn by turn, each assistant turn with
its scores and their evidence; and the short history shown above a turn's own trail."""

from __future__ import annotations

from rich.console import Console
from rich.text import Text

from .._score import Score
from ..dataset import Conversation, Sample
from ..errors import RagsightError
from ..result import EvaluationResult

__all__ = ["print_conversation", "print_history"]

SHOWN_HISTORY = 4  # the earlier turns shown above a turn's trail
LINE = 160  # characters of a turn's text shown in a history line


def _short(text: str, limit: int = LINE) -> str:
    one = " ".join(text.split())
    return one if len(one) <= limit else one[: limit - 1] + "…"


def _score_line(score: Score) -> Text:
    value = "–" if score.value is None else f"{score.value:.3f}"
    style = {"scored": "", "undetermined": "yellow", "failed": "red", "skipped": "dim"}[score.outcome.value]
    return Text.assemble(("  " + score.metric, "bold"), f" {value} ", (score.outcome.value, style),
                         (f"  {score.reason}" if score.reason else "", "dim"))


def _evidence(score: Score, out: Console) -> None:
    for cv in score.evidence.claims:
        mark, style = ("✓", "green") if cv.supported else ("✗", "red")
        out.print(Text.assemble((f"    {mark} ", style), (f"[{cv.target}] ", "dim"), cv.claim))
        if cv.reason:
            out.print(Text("        " + cv.reason, style="dim"))


def print_history(sample: Sample, run_id: str, out: Console) -> None:
    """A turn's place in its conversation and its last few earlier turns, one line each."""
    if sample.conversation_id is None:
        return
    history = sample.history or ()
    where = f"turn {sample.turn} of conversation {sample.conversation_id}" if sample.turn is not None \
        else f"conversation {sample.conversation_id} ({len(history)} messages)"
    out.print(Text(where, style="bold"))
    shown = history if sample.turn is None else history[-SHOWN_HISTORY:]
    if len(shown) < len(history):
        out.print(Text(f"  … {len(history) - len(shown)} earlier message(s); the whole conversation: "
                       f"ragsight show {run_id} --conversation {sample.conversation_id}", style="dim"))
    for t in shown:
        calls = f" [calls {', '.join(c.name for c in t.tool_calls)}]" if t.tool_calls else ""
        out.print(Text.assemble((f"  {t.role}: ", "bold dim"), (_short(t.content) + calls, "dim")))
    for label, value in (("scenario", sample.scenario), ("expected outcome", sample.expected_outcome),
                         ("system role", sample.system_role)):
        if value:
            out.print(Text.assemble((f"  {label}: ", "bold dim"), (_short(value), "dim")))


def print_conversation(result: EvaluationResult, conversation_id: str, metric: str | None, out: Console) -> None:
    """Every turn of the conversation in order: the user's message, the tool calls and results,
    and each assistant turn with its scores (and their claims), then the conversation's own
    scores and each turn metric's mean over the turns."""
    samples = [s for s in result.samples if s.conversation_id == conversation_id]
    if not samples:
        known = list(dict.fromkeys(s.conversation_id for s in result.samples if s.conversation_id is not None))
        hint = f"; its conversations: {', '.join(known[:10])}{'...' if len(known) > 10 else ''}" if known \
            else "; it has no conversations"
        raise RagsightError(f"run {result.run_id} has no conversation '{conversation_id}'{hint}")
    conv = next((s for s in samples if s.turn is None), None)
    turns = {s.turn: s for s in samples if s.turn is not None}
    out.rule(f"conversation {conversation_id}  (run {result.run_id}, {len(turns)} assistant turns)")
    if conv is not None:
        for label, value in (("scenario", conv.scenario), ("expected outcome", conv.expected_outcome),
                             ("system role", conv.system_role)):
            if value:
                out.print(Text.assemble((f"{label}: ", "bold"), value))
    messages = conv.history or () if conv is not None else ()
    answers = Conversation(conversation_id, tuple(messages)).assistant_turns
    for pos, t in enumerate(messages):
        k = answers.index(pos) if pos in answers else None
        if k is None:
            calls = f" → {', '.join(f'{c.name}({_args(c.args)})' for c in t.tool_calls)}" if t.tool_calls else ""
            out.print(Text.assemble((f"{t.role}: ", "bold"), _short(t.content, 400), (calls, "dim")))
            continue
        _print_turn(result, turns.get(k), k, t.content, metric, out)
    if not messages:  # no conversation sample: the turns alone
        for k in sorted(turns):
            s = turns[k]
            out.print(Text.assemble(("user: ", "bold"), s.question or ""))
            _print_turn(result, s, k, s.response or "", metric, out)
    out.rule("the conversation", style="dim")
    own = result.scores.get(conversation_id, {}) if conv is not None else {}
    for key, score in own.items():
        if not metric or key == metric:
            out.print(_score_line(score))
            _evidence(score, out)
    for key, score in result.conversations.get(conversation_id, {}).items():
        if metric and key != metric:
            continue
        out.print(_score_line(score))
    if conv is not None and not own and not result.conversations.get(conversation_id):
        out.print(Text("  no score: no metric of the run applies to this conversation", style="dim"))


def _print_turn(result: EvaluationResult, s: Sample | None, k: int, content: str, metric: str | None,
                out: Console) -> None:
    out.print(Text.assemble((f"assistant (turn {k}): ", "bold"), content))
    if s is None:
        return
    for i, ctx in enumerate(s.contexts or (), start=1):
        out.print(Text.assemble((f"  context {i}: ", "dim bold"), (_short(ctx, 300), "dim")))
    if s.reference:
        out.print(Text.assemble(("  reference: ", "dim bold"), (s.reference_text or "", "dim")))
    for key, score in result.scores.get(s.id, {}).items():
        if metric and key != metric:
            continue
        out.print(_score_line(score))
        _evidence(score, out)


def _args(args: object) -> str:
    items = args.items() if isinstance(args, dict) else ()
    return ", ".join(f"{k}={v!r}" for k, v in items)
