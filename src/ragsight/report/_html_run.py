"""The report's section of one run: its configuration, the summary table with the overall
score, the means corrected by human labels, the judge's spend, the distributions, the failures,
the worst samples, the conversations and every sample's panel."""

from __future__ import annotations

import datetime as dt
from collections.abc import Mapping
from typing import Any

from .._score import Outcome
from ..calls import describe_cost
from ..errors import RagsightError
from ..judge import agreement_notice, conversation_notice
from ..result import EvaluationResult, languages_note, truncation_note, unsupported_note
from ._calibrate import calibrate
from ._conversations import conversations_section
from ._format import arrow, config_text, count_noun, fmt, fmt_ci
from ._html_samples import _order, _worst, sample_panel
from ._markup import e
from ._run_data import RunData
from ._svg import histogram_svg
from ._why import why_section

__all__ = ["judge_note", "run_section"]


def _summary_table(result: EvaluationResult) -> str:
    rows = [
        "<table><thead><tr><th>metric</th><th>mean</th><th>95% CI</th><th>sd</th><th>scored</th>"
        "<th>undetermined</th><th>failed</th><th>skipped</th></tr></thead><tbody>"
    ]
    for key, s in result.summary.items():
        c = s.counts
        rows.append(
            f"<tr><td>{e(key)} {arrow(s.lower_is_better)}</td><td>{fmt(s.mean)}</td>"
            f"<td>{fmt_ci(s.ci_low, s.ci_high)}</td><td>{fmt(s.sd)}</td>"
            f"<td>{c.get('scored', 0)}</td><td>{c.get('undetermined', 0)}</td>"
            f"<td>{c.get('failed', 0)}</td><td>{c.get('skipped', 0)}</td></tr>"
        )
    rows.append("</tbody></table>")
    ov = result.overall_detail
    if ov.mean is not None:
        rows.append(
            f'<p><b>overall score {ov.mean:.3f}</b> <span class="muted">the mean of the '
            f"{len(ov.entries)} metric means (↓ metrics enter as 1 − mean, each clamped to "
            f"[0, 1]); harmonic mean {fmt(ov.harmonic)} (0 whenever one metric mean is 0)"
            + (f"; clamped: {e(', '.join(ov.clamped))}" if ov.clamped else "")
            + "</span></p>"
        )
    if ov.left_out:
        items = "".join(f"<li><b>{e(k)}</b>: {e(why)}</li>" for k, why in ov.left_out.items())
        rows.append(
            f'<div class="warn"><strong>The overall leaves out {len(ov.left_out)} metric(s) '
            f"with no mean:</strong><ul>{items}</ul></div>"
        )
    rows.append(
        '<p class="muted">Means and CIs over scored samples only (95% percentile bootstrap '
        "of the mean); undetermined, failed and skipped results are counted, never averaged "
        "in as 0. ↑ higher is better, ↓ lower is better.</p>"
    )
    return "".join(rows)


def _corrected_section(run: RunData) -> str:
    """Per label field kept in the store for the run's samples: each metric's mean corrected by
    the labels (PPI), beside the raw mean, with the labels it rests on ("" without labels)."""
    fields = sorted({lb.field for lb in run.labels if lb.claim is None})
    parts = []
    for name in fields:
        try:
            rep = calibrate(run.result, [lb for lb in run.labels if lb.field == name], name)
        except RagsightError as exc:  # the report stands without this table, and says why
            parts.append(f'<p class="note">No corrected means for the labels \'{e(name)}\': {e(exc)}</p>')
            continue
        rows = [m for m in rep.metrics if m.n_labels]
        if not rows:
            continue
        parts.append(
            f"<h3>Corrected by the labels '{e(name)}'</h3><table><thead><tr><th>metric</th>"
            "<th>judge mean</th><th>corrected</th><th>95% CI</th><th>labels</th><th>λ</th>"
            "</tr></thead><tbody>"
        )
        for m in rows:
            low, high = m.corrected_ci if m.corrected_ci else (None, None)
            flag = ' <span class="badge low">too few labels</span>' if m.too_few_labels else ""
            parts.append(
                f"<tr><td>{e(m.metric)}{flag}</td><td>{fmt(m.mean)}</td><td>{fmt(m.corrected_mean)}</td>"
                f"<td>{fmt_ci(low, high)}</td><td>{m.n_labels} of {m.n_judged}</td>"
                f"<td>{fmt(m.corrected_lambda, 2)}</td></tr>"
            )
        parts.append("</tbody></table>")
        few = [m for m in rows if m.too_few_labels]
        if few:
            parts.append(
                '<div class="warn"><strong>Too few labels:</strong> '
                + e("; ".join(m.too_few_text() for m in few))
                + ". Those corrected means and CIs are rough; label more "
                "samples before relying on them.</div>"
            )
        parts.append(
            '<p class="muted">judge mean: over every scored sample; corrected: that mean with the '
            "judge's error on the labelled samples taken out (prediction-powered inference, PPI++), "
            "with its 95% CI; λ: the weight given to the judge (1 plain PPI, 0 the labels alone). "
            + e("; ".join(n for n in rep.notes if not n.startswith("labels from the store")))
            + "</p>"
        )
    return "".join(parts)


def _not_scored(result: EvaluationResult, prefix: str) -> str:
    groups: dict[tuple[str, str, str], list[int]] = {}
    index = {s.id: i for i, s in enumerate(result.samples)}
    for s in result.samples:
        for key, score in result.scores.get(s.id, {}).items():
            if score.outcome is Outcome.SCORED:
                continue
            reason = score.reason or "(no reason recorded)"
            if len(reason) > 400:
                reason = reason[:400] + "..."
            groups.setdefault((key, score.outcome.value, reason), []).append(index[s.id])
    parts = ["<h3>Failures, skips and undetermined results</h3>"]
    if not groups:
        parts.append("<p>Every metric scored every sample.</p>")
    else:
        order = {"failed": 0, "skipped": 1, "undetermined": 2}
        parts.append(
            '<table><thead><tr><th>metric</th><th class="text">outcome</th>'
            '<th class="text">cause</th><th>samples</th><th class="text">which</th>'
            "</tr></thead><tbody>"
        )
        for (key, outcome, reason), idxs in sorted(
            groups.items(), key=lambda kv: (order.get(kv[0][1], 3), kv[0][0], kv[0][2])
        ):
            links = ", ".join(
                f'<a href="#{prefix}-s{i}">{e(result.samples[i].id)}</a>' for i in idxs[:20]
            )
            more = f" and {len(idxs) - 20} more" if len(idxs) > 20 else ""
            parts.append(
                f'<tr><td>{e(key)}</td><td class="text">{e(outcome)}</td>'
                f'<td class="text">{e(reason)}</td><td>{len(idxs)}</td>'
                f'<td class="text">{links}{more}</td></tr>'
            )
        parts.append("</tbody></table>")
    if result.problems:
        parts.append(
            f"<p>{len(result.problems)} input row(s) with problems (rows that could not "
            "be used were not evaluated):</p><ul>"
        )
        parts.extend(f"<li>{e(p)}</li>" for p in result.problems[:200])
        parts.append("</ul>")
    return "".join(parts)


def judge_note(config: Mapping[str, Any], turns: bool = False) -> str | None:
    """The embedded judge's agreement line for a run made with it (as printed at the start of
    the run), with its line on conversation turns when the run has ``turns``; else None."""
    spec, model = config.get("judge_spec"), config.get("judge_model")
    if isinstance(spec, str) and spec.startswith("local") and isinstance(model, str):
        return agreement_notice(model) + (" " + conversation_notice(model) if turns else "")
    return None


def run_section(run: RunData, number: int, several: bool) -> str:
    result = run.result
    prefix = f"r{number}"
    parts = [f'<section id="{prefix}"><h2>Run {e(result.run_id)}</h2>']
    meta = [e(result.describe_shape()), f"status {e(result.status)}"]
    if run.created_at:
        meta.append(
            "created "
            + dt.datetime.fromtimestamp(run.created_at, dt.timezone.utc).strftime(
                "%Y-%m-%d %H:%M UTC"
            )
        )
    parts.append(f'<p class="muted">{", ".join(meta)}</p>')
    if run.config:
        parts.append(
            "<table><tbody>"
            + "".join(
                f'<tr><th class="text">{e(k)}</th><td class="text">{e(config_text(v))}</td></tr>'
                for k, v in run.config.items()
            )
            + "</tbody></table>"
        )
    note = judge_note(result.config, turns=result.shape["turns"] > 0)
    if note:
        parts.append(f'<p class="note">{e(note)}</p>')
    cut = truncation_note(result)
    if cut:
        parts.append(f'<p class="note">{e(cut)}</p>')
    apart = languages_note(result)
    if apart:
        parts.append(f'<p class="note">{e(apart)}</p>')
    passing = unsupported_note(result)
    if passing:
        parts.append(f'<p class="note">{e(passing[0])} <code>{e(passing[1])}</code></p>')
    parts.append("<h3>Summary</h3>")
    parts.append(_summary_table(result))
    parts.append(_corrected_section(run))
    st = result.judge_stats
    if st:

        def n(key: str, noun: str = "") -> str:
            v = st.get(key, 0)
            if not isinstance(v, int):  # not a count: shown as stored, the noun in the plural
                return f"{e(v)} {count_noun(0, noun).split(' ', 1)[1]}" if noun else e(v)
            return count_noun(v, noun) if noun else f"{v:,}"

        parts.append(
            f'<p class="muted">judge: {n("calls", "call")}, {n("prompt_tokens")} prompt + '
            f"{n('completion_tokens')} completion tokens, {n('cache_hits', 'cache hit')}, "
            f"{n('retries', 'retry')}, {n('failed_steps', 'failed step')}</p>"
        )
        for line in describe_cost(result.cost):
            if line:
                parts.append(f'<p class="muted">{e(line)}</p>')

    parts.append('<h3>Distributions</h3><div class="plots">')
    for key, s in result.summary.items():
        values = [
            sc.value
            for sid in (x.id for x in result.samples)
            if (sc := result.scores.get(sid, {}).get(key)) is not None
            and sc.outcome is Outcome.SCORED
            and sc.value is not None
        ]
        c = s.counts
        caption = (
            f"<b>{e(key)}</b> {arrow(s.lower_is_better)} — {len(values)} scored; mean "
            f"{fmt(s.mean)} (red line), 95% CI {fmt_ci(s.ci_low, s.ci_high)} (band)"
        )
        others = [
            f"{c.get(o, 0)} {o}" for o in ("undetermined", "failed", "skipped") if c.get(o, 0)
        ]
        if others:
            caption += "; " + ", ".join(others)
        plot = histogram_svg(values, s) if values else '<p class="muted">no scored values</p>'
        parts.append(f"<figure>{plot}<figcaption>{caption}</figcaption></figure>")
    parts.append("</div>")

    parts.append(_not_scored(result, prefix))
    parts.append(why_section(result, prefix))

    order = _order(result)
    parts.append("<h3>Worst samples</h3>")
    worst_rows: list[tuple[int, float, str]] = []
    for i in order[:10]:
        v, metric = _worst(result, result.samples[i])
        if v is not None and metric is not None:
            worst_rows.append((i, v, metric))
    if worst_rows:
        parts.append(
            '<table><thead><tr><th>sample</th><th class="text">lowest metric</th><th>score</th>'
            '<th class="text">question</th></tr></thead><tbody>'
        )
        for i, v, metric in worst_rows:
            smp = result.samples[i]
            q = (smp.question or "")[:140]
            lower = result.summary[metric].lower_is_better if metric in result.summary else False
            shown = fmt(1 - v if lower and v is not None else v)
            parts.append(
                f'<tr><td><a href="#{prefix}-s{i}">{e(smp.id)}</a></td><td class="text">'
                f'{e(metric)} {arrow(lower)}</td><td>{shown}</td><td class="text">{e(q)}</td>'
                "</tr>"
            )
        parts.append("</tbody></table>")
        parts.append(
            '<p class="muted">Ranked by each sample\'s lowest score (a ↓ metric counts as '
            "1 − value).</p>"
        )
    else:
        parts.append("<p>No sample has a scored metric.</p>")

    parts.append(conversations_section(result, prefix, {s.id: f"{prefix}-s{i}" for i, s in enumerate(result.samples)}))
    parts.append(f"<h3>Samples ({len(result.samples)}, worst first)</h3>")
    parts.append(
        '<p class="muted">Open a sample for its question, contexts (relevant ones marked), '
        "response, reference and the evidence: each claim with the judge's verdict, "
        "probability and reason. A supported claim's best-matching context sentence (the one "
        "holding the largest share of the claim's words, found deterministically, not by the "
        "judge) is <mark>highlighted</mark> in its context. The worst sample is open.</p>"
    )
    for rank, i in enumerate(order):
        parts.append(sample_panel(result, i, prefix, open_=rank == 0))
    parts.append("</section>")
    if several:
        parts.append('<p><a href="#top">back to top</a></p>')
    return "".join(parts)
