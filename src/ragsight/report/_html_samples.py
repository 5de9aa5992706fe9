"""The report's sample panels: one ``<details>`` per sample with its question, contexts (the
relevant ones marked), response, reference and each metric's evidence, the supporting sentence of
a claim highlighted in its context; and the order they come in, worst sample first."""

from __future__ import annotations

from collections.abc import Mapping

from .._score import Outcome, Score
from ..analyses import describe_signals
from ..dataset import Sample, strict_json
from ..result import EvaluationResult
from ._evidence import Marks
from ._format import arrow, fmt
from ._markup import e

__all__ = ["sample_panel"]


def _oriented(score: Score, lower: bool) -> float | None:
    if score.outcome is not Outcome.SCORED or score.value is None:
        return None
    return 1.0 - score.value if lower else score.value


def _worst(result: EvaluationResult, sample: Sample) -> tuple[float | None, str | None]:
    """The sample's lowest score (lower-is-better metrics as 1 - value) and its metric."""
    best: tuple[float, str] | None = None
    for key, score in result.scores.get(sample.id, {}).items():
        lower = result.summary[key].lower_is_better if key in result.summary else False
        v = _oriented(score, lower)
        if v is not None and (best is None or v < best[0]):
            best = (v, key)
    return (best[0], best[1]) if best else (None, None)


def _order(result: EvaluationResult) -> list[int]:
    """Sample indexes, worst first; samples with no scored metric last, in input order."""
    worst = [_worst(result, s)[0] for s in result.samples]
    return sorted(
        range(len(result.samples)),
        key=lambda i: (worst[i] is None, worst[i] if worst[i] is not None else 0.0, i),
    )


def _relevance(result: EvaluationResult, sample: Sample) -> tuple[dict[int, tuple[bool, str]], str]:
    """Which contexts are relevant: {index: (relevant, why)} and where that comes from."""
    per = result.scores.get(sample.id, {})
    for key in ("context_precision", "context_precision_without_reference"):
        score = per.get(key)
        chunks = score.evidence.details.get("chunks") if score is not None else None
        if isinstance(chunks, list) and chunks:
            out: dict[int, tuple[bool, str]] = {}
            for k, chunk in enumerate(chunks):
                if isinstance(chunk, Mapping) and "relevant" in chunk:
                    idx = int(chunk.get("rank", k + 1)) - 1
                    out[idx] = (bool(chunk["relevant"]), str(chunk.get("reason") or ""))
            return out, f"judged by {key}"
    if (
        sample.retrieved_ids
        and sample.relevant_ids
        and sample.contexts
        and len(sample.retrieved_ids) == len(sample.contexts)
    ):
        rel = sample.relevant_ids
        grades = dict(rel) if isinstance(rel, Mapping) else {r: 1.0 for r in rel}
        return (
            {
                i: (float(grades.get(rid, 0) or 0) > 0, f"id {rid}")
                for i, rid in enumerate(sample.retrieved_ids)
            },
            "from relevant_ids",
        )
    return {}, ""


def _fmt_value(score: Score) -> str:
    return fmt(score.value) if score.outcome is Outcome.SCORED else score.outcome.value


def sample_panel(result: EvaluationResult, idx: int, prefix: str, open_: bool = False) -> str:
    sample = result.samples[idx]
    per = result.scores.get(sample.id, {})
    sid = f"{prefix}-s{idx}"
    marks = Marks(sid, sample.contexts or ())
    claim_html: dict[str, list[str]] = {}
    for key, score in per.items():
        items = []
        for n, cv in enumerate(score.evidence.claims, start=1):
            ok = cv.supported
            verdict = "✓ supported" if ok else "✗ not supported"
            meta = []
            if cv.target:
                meta.append(cv.target)
            if cv.probability is not None:
                meta.append(f"P(supported)={cv.probability:.2f}")
            li = [
                f'<li class="claim {"ok" if ok else "bad"}"><span class="verdict">{verdict}</span> '
                f'<span class="muted">[{e(", ".join(meta))}]</span> {e(cv.claim)}'
            ]
            if cv.reason:
                li.append(f'<div class="why">judge: {e(cv.reason)}</div>')
            if cv.signals:
                li.append(f'<div class="muted signals">signals: {e(describe_signals(cv.signals))}</div>')
            found = marks.add(cv, f"{key} claim {n}")
            if found is not None:
                m, mid = found
                li.append(
                    f'<div class="support">best-matching context sentence (context '
                    f"{m.context + 1}, {m.cover:.0%} of the claim's words): "
                    f'<a href="#{mid}"><q>{e(m.text)}</q></a></div>'
                )
            li.append("</li>")
            items.append("".join(li))
        claim_html[key] = items

    worst, worst_key = _worst(result, sample)
    badges = []
    for key, score in per.items():
        lower = result.summary[key].lower_is_better if key in result.summary else False
        v = _oriented(score, lower)
        cls = (
            "failed"
            if score.outcome is Outcome.FAILED
            else ("low" if v is not None and v < 0.5 else "")
        )
        badges.append(f'<span class="badge {cls}">{e(key)} {e(_fmt_value(score))}</span>')
    summary_line = (
        f"<b>{e(sample.id)}</b> "
        + (f"— lowest {e(worst_key)} {fmt(worst)}" if worst_key else "— nothing scored")
        + " "
        + "".join(badges)
    )
    parts = [
        f'<details class="sample" id="{sid}"{" open" if open_ else ""}><summary>{summary_line}'
        '</summary><div class="panel">'
    ]
    if sample.question:
        parts.append(
            f'<div class="field"><b>question</b><div class="text">{e(sample.question)}</div></div>'
        )
    if sample.contexts:
        rel, source = _relevance(result, sample)
        parts.append(
            '<div class="field"><b>contexts (retrieval rank order)'
            + (f"; relevance {e(source)}" if source else "")
            + '</b><ol class="contexts">'
        )
        for i in range(len(sample.contexts)):
            flag = rel.get(i)
            cls = "" if flag is None else ("relevant" if flag[0] else "irrelevant")
            tag = ""
            if flag is not None:
                tag = (
                    f' <span class="tag {cls}">{"relevant" if flag[0] else "not relevant"}</span>'
                    + (f' <span class="muted">{e(flag[1])}</span>' if flag[1] else "")
                )
            rid = ""
            if sample.retrieved_ids and i < len(sample.retrieved_ids):
                rid = f' <span class="muted">id {e(sample.retrieved_ids[i])}</span>'
            parts.append(
                f'<li class="{cls}"><div>context {i + 1}{rid}{tag}</div>'
                f'<div class="text">{marks.render(i)}</div></li>'
            )
        parts.append("</ol></div>")
    if sample.response:
        parts.append(
            f'<div class="field"><b>response</b><div class="text">{e(sample.response)}</div></div>'
        )
    if sample.reference:
        refs = sample.references
        body = (
            e(refs[0])
            if len(refs) == 1
            else "<ul>" + "".join(f"<li>{e(r)}</li>" for r in refs) + "</ul>"
        )
        parts.append(
            f'<div class="field"><b>reference{"s (any counts)" if len(refs) > 1 else ""}'
            f'</b><div class="text">{body}</div></div>'
        )
    if sample.metadata:
        parts.append(
            f'<div class="field"><b>metadata</b><div class="text muted">'
            f"{e(strict_json(dict(sample.metadata)))}</div></div>"
        )
    parts.append('<div class="field"><b>evidence</b>')
    for key, score in per.items():
        lower = result.summary[key].lower_is_better if key in result.summary else False
        parts.append(
            f'<h4>{e(key)} {arrow(lower)} <span class="badge">{e(_fmt_value(score))}</span> '
            f'<span class="outcome">{e(score.outcome.value)}</span></h4>'
        )
        if score.reason:
            parts.append(f'<div class="why">{e(score.reason)}</div>')
        if claim_html.get(key):
            parts.append('<ul class="claims">' + "".join(claim_html[key]) + "</ul>")
        if score.evidence.details:
            text = strict_json(score.evidence.details, indent=1)
            if len(text) > 6000:
                text = text[:6000] + "\n..."
            parts.append(
                f'<details><summary class="muted">details</summary><pre>{e(text)}</pre></details>'
            )
        if score.evidence.calls:
            steps = ", ".join(
                f"{c.prompt_id} v{c.prompt_version}{' (cache)' if c.cached else ''}"
                for c in score.evidence.calls
            )
            parts.append(f'<div class="muted">judge steps: {e(steps)}</div>')
    parts.append("</div></div></details>")
    return "".join(parts)
