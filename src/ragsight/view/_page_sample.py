"""A sample's page: the sample's texts (supporting sentences marked), each metric's score,
reason, claims and verdicts with the controls to label them, and the judge calls.
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from typing import Any

from .._score import Outcome, Score
from ..dataset import Sample
from ..report import Marks, fmt
from ..store import ANY_METRIC, shown_name
from ._assets import e, t, url, visible
from ._model import NOT_APPLICABLE, Filter, RunTable
from ._parts import LabelView, _arrow
from ._trajectory import trajectory_field

__all__ = ["sample_body"]


def _label_group(run_id: str, sample_id: str, metric: str, claim: int | None, yes: str, no: str) -> str:
    """The two buttons of one label (a claim verdict's right/wrong, or a sample's pass/fail); the
    script marks the reader's own label and lists everyone's from the group's ``data-by``."""
    claim_attr = f' data-claim="{claim}"' if claim is not None else ""
    common = f'data-run="{e(run_id)}" data-sample="{e(sample_id)}" data-metric="{e(metric)}"{claim_attr}'
    return (f'<span class="lbl"><button type="button" {common} data-value="1" aria-pressed="false">{yes} '
            f'<kbd>y</kbd></button><button type="button" {common} data-value="0" aria-pressed="false">{no} '
            '<kbd>n</kbd></button></span><span class="by"></span>')


def _by_attr(by: Mapping[str, float]) -> str:
    import json

    # a name stored before names were checked is shown with its format characters escaped
    return e(json.dumps({shown_name(k): (int(v) if float(v).is_integer() else v) for k, v in by.items()}))


def _relevance(scores: Mapping[str, Score]) -> dict[int, tuple[bool, str]]:
    for key in ("context_precision", "context_precision_without_reference"):
        score = scores.get(key)
        chunks = score.evidence.details.get("chunks") if score is not None else None
        if isinstance(chunks, list):
            out = {}
            for k, chunk in enumerate(chunks):
                if isinstance(chunk, Mapping) and "relevant" in chunk:
                    try:
                        idx = int(chunk.get("rank", k + 1)) - 1
                    except (TypeError, ValueError):
                        continue
                    out[idx] = (bool(chunk["relevant"]), str(chunk.get("reason") or ""))
            return out
    return {}


def _calls_text(calls: Sequence[Any]) -> str:
    return "; ".join(f"{c.name}({json.dumps(dict(c.args), ensure_ascii=False, sort_keys=True)})" for c in calls)


def _history(sample: Sample) -> list[str]:
    """A turn's chat before its question, each message numbered by its position in the history
    (the number a verdict's reason names: "set by message 2"), with its tool calls and tool
    results; then the calls this turn made. The conversation's own row shows every message."""
    out: list[str] = []
    history = sample.history or ()
    if history:
        items = []
        for n, m in enumerate(history):
            who = f"tool {m.name}" if m.role == "tool" and m.name else m.role
            calls = f'<div class="muted">calls: {t(_calls_text(m.tool_calls))}</div>' if m.tool_calls else ""
            items.append(f'<li id="message-{n}"><div class="muted">message {n} · {t(who)}</div>'
                         f'<div class="text">{t(m.content)}</div>{calls}</li>')
        title = "messages" if sample.turn is None else "history (the chat before this question)"
        fields = f'<div class="field"><b>{title}</b><ol class="history" start="0">{"".join(items)}</ol></div>'
        out.append(fields)
    if sample.turn is not None and sample.tool_calls:
        out.append(f'<div class="field"><b>tool calls of this turn</b><div class="text">'
                   f"{t(_calls_text(sample.tool_calls))}</div></div>")
    if sample.turn is not None and sample.reference_tool_calls is not None:
        out.append(f'<div class="field"><b>reference tool calls</b><div class="text">'
                   f"{t(_calls_text(sample.reference_tool_calls) or '(none expected)')}</div></div>")
    return out


def sample_body(
    table: RunTable, sample: Sample, scores: Mapping[str, Score], calls: Sequence[Mapping[str, Any]],
    labels: LabelView, order: str, claim_keys: Mapping[str, str],
) -> str:
    """The sample page: navigation, the sample's texts (supporting sentences marked), each metric's
    score, reason, claims and verdicts with their label controls, and the judge calls."""
    run_id, sid = table.run_id, sample.id
    i = table.position[sid]
    f = Filter(sort="informative" if order == "queue" else "data")
    sequence = f.select(table)
    at = sequence.index(i)
    done = labels.labelled()

    def link(pos: int | None, id_: str, text: str) -> str:
        if pos is None:
            return f'<span class="muted">{text}</span>'
        href = url("run", run_id, "sample", table.ids[pos], order=order if order == "queue" else None)
        return f'<a id="{id_}" href="{e(href)}">{text}</a>'

    def unlabelled(step: int) -> int | None:
        j = at + step
        while 0 <= j < len(sequence):
            if table.ids[sequence[j]] not in done:
                return sequence[j]
            j += step
        return None

    nav = [link(sequence[at - 1] if at > 0 else None, "prev-sample", "← previous <kbd>,</kbd>"),
           link(sequence[at + 1] if at + 1 < len(sequence) else None, "next-sample", "next <kbd>.</kbd> →")]
    if labels.enabled:
        nav += [link(unlabelled(-1), "prev-unlabelled", "← previous unlabelled <kbd>[</kbd>"),
                link(unlabelled(1), "next-unlabelled", "next unlabelled <kbd>]</kbd> →")]
    where = "in the label queue" if order == "queue" else "in data order"
    parts = [f"<h1>Sample {t(sid)}</h1>",
             f'<p class="muted">run <a href="{e(url("run", run_id))}">{t(run_id)}</a> · sample {at + 1:,} of '
             f"{len(sequence):,} {where}</p>",
             f'<nav class="sample">{"".join(nav)}</nav>']
    if labels.enabled:
        parts.append(
            '<div class="reviewer"><label>Your name <input id="who" autocomplete="name" '
            'placeholder="e.g. ana" maxlength="80"></label> <span class="muted">kept in this browser; '
            'every label records it, with the time.</span><span id="status" class="status" role="status"></span>'
            '<details id="keys"><summary class="muted">keyboard <kbd>?</kbd></summary><p class="muted">'
            "<kbd>j</kbd>/<kbd>k</kbd> next/previous item · <kbd>y</kbd> right (pass) · <kbd>n</kbd> wrong "
            "(fail) · <kbd>x</kbd> remove your label · <kbd>]</kbd>/<kbd>[</kbd> next/previous unlabelled "
            "sample · <kbd>.</kbd>/<kbd>,</kbd> next/previous sample</p></details></div>")

    contexts = list(sample.contexts or ())
    marks = Marks(f"s{i}", contexts)
    metric_html = []
    mine = labels.of(sid)
    for m in table.metrics:
        score = scores.get(m)
        lower = table.lower.get(m, False)
        if score is None:
            other = table.outcomes[m][i] == NOT_APPLICABLE
            own_row = sample.conversation_id is not None and sample.turn is None
            badge = (f"not applicable: a metric of the {'turn' if own_row else 'conversation'} level"
                     if other else "not scored yet")
            metric_html.append(f'<section class="metric"><h3>{t(m)} {_arrow(lower)} '
                               f'<span class="badge missing">{e(badge)}</span></h3></section>')
            continue
        value = fmt(score.value) if score.outcome is Outcome.SCORED else score.outcome.value
        sec = [f'<section class="metric" id="m-{e(m)}"><h3>{t(m)} {_arrow(lower)} <span class="badge">{e(value)}</span> '
               f'<span class="muted">{e(score.outcome.value)}</span></h3>']
        if score.reason:
            sec.append(f'<div class="why">{t(score.reason)}</div>')
        if labels.enabled:
            by = mine.get((m, None), {})
            sec.append(f'<div class="samplelabel" data-group data-by="{_by_attr(by)}">Your judgement of this '
                       f"sample for {t(m)}:"
                       + _label_group(run_id, sid, m, None, "✓ pass", "✗ fail") + "</div>")
        if score.evidence.claims:
            sec.append('<ul class="claims">')
            for n, cv in enumerate(score.evidence.claims):
                meta = [x for x in (cv.target, None if cv.probability is None else
                                    f"P(supported)={cv.probability:.2f}") if x]
                by = mine.get((m, claim_keys.get(cv.claim)), {}) if cv.claim in claim_keys else {}
                li = [f'<li class="claim {"ok" if cv.supported else "bad"}" data-group data-by="{_by_attr(by)}">'
                      f'<span class="verdict">{"✓ supported" if cv.supported else "✗ not supported"}</span> '
                      f'<span class="muted">[{t(", ".join(meta))}]</span> {t(cv.claim)}']
                if labels.enabled:
                    li.append(_label_group(run_id, sid, m, n, "verdict right", "wrong"))
                if cv.reason:
                    li.append(f'<div class="why">judge: {t(cv.reason)}</div>')
                found = marks.add(cv, f"{m} claim {n + 1}")
                if found is not None:
                    match, mid = found
                    li.append(f'<div class="support">supporting sentence (context {match.context + 1}, '
                              f"{match.cover:.0%} of the claim's words): <a href=\"#{e(mid)}\"><q>{t(match.text)}</q></a></div>")
                li.append("</li>")
                sec.append("".join(li))
            sec.append("</ul>")
        if score.evidence.details:
            import json

            text = json.dumps(score.evidence.details, ensure_ascii=False, indent=1)
            if len(text) > 8000:
                text = text[:8000] + "\n…"
            sec.append(f'<details><summary class="muted">details</summary><pre>{t(text)}</pre></details>')
        if score.evidence.calls:
            steps = ", ".join(f"{c.prompt_id} v{c.prompt_version}{' (cache)' if c.cached else ''}"
                              for c in score.evidence.calls)
            sec.append(f'<div class="muted">judge steps: {t(steps)}</div>')
        sec.append("</section>")
        metric_html.append("".join(sec))

    fields = []
    conversation = getattr(sample, "conversation_id", None)
    if conversation is not None:  # a turn of a conversation, read in its chat
        turn = getattr(sample, "turn", None)
        fields.append(f'<p class="muted" id="conversation">conversation {t(conversation)}'
                      f'{"" if turn is None else f", turn {t(turn)}"}</p>')
        fields += _history(sample)
        fields.append(trajectory_field(sample, scores))
    if sample.question:
        fields.append(f'<div class="field"><b>question</b><div class="text" id="question">{t(sample.question)}</div></div>')
    if contexts:
        rel = _relevance(scores)
        items = []
        for k in range(len(contexts)):
            flag = rel.get(k)
            tag = "" if flag is None else (" · relevant" if flag[0] else " · not relevant")
            rid = ""
            if sample.retrieved_ids and k < len(sample.retrieved_ids):
                rid = f" · id {t(sample.retrieved_ids[k])}"
            items.append(f'<li><div class="muted">context {k + 1}{rid}{tag}</div><div class="text">{visible(marks.render(k))}'
                         "</div></li>")
        fields.append(f'<div class="field"><b>contexts</b><ol class="contexts">{"".join(items)}</ol></div>')
    if sample.response:
        fields.append(f'<div class="field"><b>response</b><div class="text" id="response">{t(sample.response)}</div></div>')
    for k, ref in enumerate(sample.references):
        fields.append(f'<div class="field"><b>reference{f" {k + 1}" if len(sample.references) > 1 else ""}</b>'
                      f'<div class="text">{t(ref)}</div></div>')
    if sample.metadata:
        import json

        fields.append(f'<div class="field"><b>metadata</b><div class="text muted">'
                      f"{t(json.dumps(dict(sample.metadata), ensure_ascii=False))}</div></div>")
    parts += fields
    whole = mine.get((ANY_METRIC, None))
    if whole:
        given = ", ".join(f"{who or '(no name)'}={fmt(v, 2)}" for who, v in sorted(whole.items()))
        parts.append(f'<p class="muted" id="whole-labels">labels of the whole sample (every metric): {t(given)}</p>')
    parts.append("<h2>Scores and evidence</h2>")
    parts += metric_html
    parts.append(f"<h2>Judge calls ({len(calls)})</h2>")
    if not calls:
        parts.append('<p class="muted">No judge call recorded for this sample (answers from the cache of an '
                     "earlier run are recorded there, or the metrics need no judge).</p>")
    for c in calls:
        head = (f"{c.get('prompt_id')} v{c.get('prompt_version')} · attempt {c.get('attempt')} · "
                f"{c.get('prompt_tokens')}+{c.get('completion_tokens')} tokens · {float(c.get('latency_s') or 0):.2f} s"
                + (" · cached" if c.get("cached") else "") + (f" · ERROR {c.get('error')}" if c.get("error") else ""))
        msgs = "".join(f"<b>{t(msg.get('role'))}</b><pre>{t(msg.get('content'))}</pre>" for msg in c.get("messages") or [])
        raw = c.get("raw_output")
        parts.append(f'<details class="call"><summary>{t(head)}</summary>{msgs}<b>output</b>'
                     f"<pre>{t(raw if raw is not None else '(none)')}</pre></details>")
    return "".join(parts)
