"""The report's conversations: each conversation of a run as one block, its messages in order,
each assistant turn with its scores and a link to the turn's own panel (its evidence), then the
conversation's own scores and each turn metric's mean over its turns."""

from __future__ import annotations

from collections.abc import Mapping

from .._score import Outcome, Score
from ..dataset import Conversation
from ..result import EvaluationResult
from ._format import fmt
from ._markup import e

__all__ = ["conversations_section"]

SHOWN = 600  # characters of a message shown


def _badge(score: Score) -> str:
    value = fmt(score.value) if score.outcome is Outcome.SCORED else score.outcome.value
    cls = "failed" if score.outcome is Outcome.FAILED else (
        "low" if score.value is not None and score.value < 0.5 else "")
    return f'<span class="badge {cls}" title="{e(score.reason)}">{e(score.metric)} {e(value)}</span>'


def _text(text: str) -> str:
    return e(text if len(text) <= SHOWN else text[: SHOWN - 1] + "…")


def conversations_section(result: EvaluationResult, prefix: str, panel_ids: Mapping[str, str]) -> str:
    """The HTML of the run's conversations ('' when it has none). ``panel_ids``: sample id ->
    the id of its panel in the page."""
    convs = [s for s in result.samples if s.conversation_id is not None and s.turn is None]
    if not convs:
        return ""
    turns = {(s.conversation_id, s.turn): s for s in result.samples if s.turn is not None}
    parts = [f"<h3>Conversations ({len(convs)})</h3>",
             '<p class="muted">Each conversation in order: the user\'s messages, the tool calls and their '
             "results, and each assistant turn with its scores (open the turn for its evidence). Below "
             "it, the conversation's own scores and each turn metric's mean over its scored turns.</p>"]
    for n, conv in enumerate(convs):
        cid = conv.conversation_id or ""
        means = result.conversations.get(cid, {})
        own = result.scores.get(conv.id, {})
        head = "".join(_badge(s) for s in [*own.values(), *means.values()])
        parts.append(f'<details class="conversation" id="{prefix}-c{n}"><summary><b>{e(cid)}</b> '
                     f"{head}</summary><div class=\"panel\"><ol class=\"turns\">")
        messages = conv.history or ()
        answers = Conversation(cid, tuple(messages)).assistant_turns
        for pos, t in enumerate(messages):
            if pos not in answers:
                calls = "".join(f' <code>{e(c.name)}({e(", ".join(f"{k}={v!r}" for k, v in c.args.items()))})</code>'
                                for c in t.tool_calls)
                parts.append(f'<li class="msg {e(t.role)}"><b>{e(t.role)}</b> {_text(t.content)}{calls}</li>')
                continue
            k = answers.index(pos)
            sample = turns.get((cid, k))
            scores = result.scores.get(sample.id, {}) if sample is not None else {}
            link = f' <a href="#{panel_ids[sample.id]}">turn {k}: evidence</a>' \
                if sample is not None and sample.id in panel_ids else f" turn {k}"
            parts.append(f'<li class="msg assistant turn" data-turn="{k}"><b>assistant</b> {_text(t.content)}'
                         f'<div>{"".join(_badge(s) for s in scores.values())}{link}</div></li>')
        parts.append("</ol>")
        for label, value in (("scenario", conv.scenario), ("expected outcome", conv.expected_outcome),
                             ("system role", conv.system_role)):
            if value:
                parts.append(f'<div class="field"><b>{label}</b><div class="text">{_text(value)}</div></div>')
        if means:
            parts.append('<ul class="means">' + "".join(
                f"<li>{e(k)}: {e(s.reason)}</li>" for k, s in means.items()) + "</ul>")
        parts.append("</div></details>")
    return "".join(parts)
