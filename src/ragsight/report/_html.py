"""The HTML report: one self-contained file that opens offline and reads with JavaScript off.

No CDN, no web fonts, no images: the plots are inline SVG drawn here, the sample panels are
``<details>`` elements. Every text that comes from the data (questions, contexts, responses,
judge reasons, run metadata) goes through ``html.escape``; a Content-Security-Policy allows only
this file's own style sheet and script (by hash), so even markup that slipped through could not
load or run anything. The one script records JavaScript errors and policy violations in
``<body data-js-errors>`` and how far the page is wider than the window in
``data-overflow-px`` (the browser test reads them); the page works without it.

The supporting context span of a claim is found by a deterministic lookup, not by the judge:
the context sentence (``split_sentences``) that contains the largest share of the claim's
words (lower-cased, common stop words left out), ties to the earliest; shown when it holds at
least half of them.
"""

from __future__ import annotations

import base64
import datetime as dt
import hashlib
import os
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from .._score import Outcome, Score
from .._stats import MIN_LABELS
from .._version import __version__
from ..analyses import describe_signals
from ..calls import describe_cost
from ..dataset import Sample, atomic_write, strict_json
from ..errors import RagsightError
from ..judge import agreement_notice
from ..result import EvaluationResult, truncation_note
from ..store import Store
from ._calibrate import calibrate
from ._compare import Comparison, RunData, ci_notes, compare, load_runs
from ._conversations import conversations_section
from ._evidence import Marks, SentenceMatch, best_matching_sentence
from ._format import arrow, config_text, count_noun, fmt, fmt_ci, fmt_p, fmt_signed
from ._markup import e
from ._svg import histogram_svg, runs_svg
from ._why import why_section

__all__ = ["SentenceMatch", "best_matching_sentence", "render_report", "write_report"]



CSS = """
.warn{color:var(--bad);background:var(--bad-bg);padding:.4em .6em;border-radius:4px}
:root{--ok:#1a7f37;--ok-bg:#e6f4ea;--bad:#b42318;--bad-bg:#fdecea;--muted:#5f6368;--line:#d0d7de;
--mark:#fff1a8;--accent:#0b57d0;--best:#e6f4ea}
*{box-sizing:border-box}
body{font-family:system-ui,-apple-system,"Segoe UI",Roboto,Helvetica,Arial,sans-serif;margin:0 auto;
max-width:1180px;padding:1rem 1.5rem 4rem;color:#1f2328;line-height:1.45;background:#fff}
h1{font-size:1.6rem;margin:.4rem 0}h2{font-size:1.3rem;border-bottom:2px solid var(--line);
padding-bottom:.2rem;margin-top:2.2rem}h3{font-size:1.08rem;margin:1.4rem 0 .5rem}
h4{font-size:1rem;margin:.9rem 0 .3rem}
nav ul{list-style:none;padding:0;display:flex;flex-wrap:wrap;gap:.4rem 1.2rem}
a{color:var(--accent)}
table{border-collapse:collapse;margin:.5rem 0 1rem;font-size:.92rem}
th,td{border:1px solid var(--line);padding:.25rem .55rem;text-align:right;vertical-align:top}
th{background:#f6f8fa}th:first-child,td:first-child{text-align:left}
td.text,th.text{text-align:left}
th,td{white-space:nowrap}td.text{white-space:normal;min-width:10em;overflow-wrap:anywhere}
.scroll{overflow-x:auto;max-width:100%;margin:.5rem 0 1rem}.scroll>table{margin:0}
svg{max-width:100%;height:auto}
@media (max-width:700px){body{padding:.5rem .6rem 3rem}th,td{padding:.2rem .35rem}}
td.best{background:var(--best);font-weight:700}
tr.differs th{color:var(--bad)}
.muted,.note{color:var(--muted);font-size:.9rem}
.plots{display:flex;flex-wrap:wrap;gap:1rem}
figure{margin:0;border:1px solid var(--line);border-radius:6px;padding:.4rem .6rem;background:#fff}
figcaption{font-size:.85rem;color:var(--muted);max-width:340px}
svg .bar{fill:#7aa7e8}svg .axis{stroke:#57606a;stroke-width:1}svg .grid{stroke:#eaeef2}
svg .mean{stroke:#b42318;stroke-width:2}svg .ci{fill:#b42318;fill-opacity:.14}
svg .whisker{stroke:#1f2328;stroke-width:1.5}svg text{font-size:11px;fill:#1f2328;
font-family:system-ui,sans-serif}svg .bestbar{fill:#2da44e}
details.sample,details.conversation{border:1px solid var(--line);border-radius:6px;margin:.5rem 0;background:#fff}
details.sample>summary,details.conversation>summary{cursor:pointer;padding:.45rem .7rem;background:#f6f8fa;border-radius:6px}
details.sample[open]>summary,details.conversation[open]>summary{border-bottom:1px solid var(--line);border-radius:6px 6px 0 0}
ol.turns{list-style:none;padding:0}ol.turns li{margin:.3rem 0;overflow-wrap:anywhere}
li.msg.turn{border-left:3px solid var(--line);padding-left:.5rem}li.msg.tool{color:#555;font-size:.9rem}
.panel{padding:.3rem 1rem .8rem}
.field{margin:.5rem 0}.field>b{display:block;font-size:.85rem;color:var(--muted);
text-transform:uppercase;letter-spacing:.03em}
.text{white-space:pre-wrap;overflow-wrap:anywhere}
ol.contexts{padding-left:0;list-style:none}ol.contexts>li{margin:.35rem 0;padding:.3rem .5rem;
border-left:4px solid var(--line)}ol.contexts>li.relevant{border-left-color:var(--ok);
background:#f3faf5}ol.contexts>li.irrelevant{border-left-color:#d0d7de}
.tag{display:inline-block;font-size:.78rem;border-radius:3px;padding:0 .35rem;margin-left:.3rem;
border:1px solid var(--line)}
.tag.relevant{color:var(--ok);border-color:var(--ok)}.tag.irrelevant{color:var(--muted)}
mark{background:var(--mark);padding:0 .1rem}
.badge{display:inline-block;font-size:.8rem;border-radius:3px;padding:0 .35rem;margin:0 .2rem;
background:#eef1f4}
.badge.low{background:var(--bad-bg);color:var(--bad)}.badge.failed{background:var(--bad);color:#fff}
ul.claims{list-style:none;padding-left:0}
li.claim{margin:.35rem 0;padding:.3rem .55rem;border-radius:4px;border-left:4px solid}
li.claim.ok{background:var(--ok-bg);border-color:var(--ok)}
li.claim.bad{background:var(--bad-bg);border-color:var(--bad)}
.verdict{font-weight:700}li.claim.ok .verdict{color:var(--ok)}li.claim.bad .verdict{color:var(--bad)}
.why,.support{font-size:.88rem;margin-top:.15rem}.support q{background:var(--mark)}
.outcome{font-size:.85rem;color:var(--muted)}
pre{white-space:pre-wrap;font-size:.8rem;background:#f6f8fa;padding:.4rem;border-radius:4px}
@media print{details.sample>summary{background:none}nav{display:none}}
"""

SCRIPT = """(function(){var errs=[];function put(){if(document.body){
document.body.setAttribute("data-js-errors",errs.join(" | "));}}
window.addEventListener("error",function(e){var t=e.target;
errs.push("error: "+(e.message||(t&&(t.src||t.href))||e.type));put();},true);
document.addEventListener("securitypolicyviolation",function(e){
errs.push("csp: "+e.violatedDirective+" "+e.blockedURI);put();});
document.addEventListener("DOMContentLoaded",function(){
var d=document.documentElement;document.body.setAttribute("data-js","ran");
document.body.setAttribute("data-overflow-px",String(Math.max(0,d.scrollWidth-d.clientWidth)));
put();});})();"""


def _sha256(text: str) -> str:
    return "sha256-" + base64.b64encode(hashlib.sha256(text.encode("utf-8")).digest()).decode()


CSP = (
    f"default-src 'none'; style-src '{_sha256(CSS)}'; script-src '{_sha256(SCRIPT)}'; "
    "base-uri 'none'; form-action 'none'"
)


# ---------------------------------------------------------------------------------------------
# Per-run pieces


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


def _sample_panel(result: EvaluationResult, idx: int, prefix: str, open_: bool = False) -> str:
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
                + e(", ".join(f"{m.metric} rests on {m.n_labels}" for m in few))
                + f" (fewer than {MIN_LABELS}). Those corrected means and CIs are rough; label more "
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


def judge_note(config: Mapping[str, Any]) -> str | None:
    """The embedded judge's agreement line for a run made with it (as printed at the start of
    the run), else None."""
    spec, model = config.get("judge_spec"), config.get("judge_model")
    if isinstance(spec, str) and spec.startswith("local") and isinstance(model, str):
        return agreement_notice(model)
    return None


def _run_section(run: RunData, number: int, several: bool) -> str:
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
    note = judge_note(result.config)
    if note:
        parts.append(f'<p class="note">{e(note)}</p>')
    cut = truncation_note(result)
    if cut:
        parts.append(f'<p class="note">{e(cut)}</p>')
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
        parts.append(_sample_panel(result, i, prefix, open_=rank == 0))
    parts.append("</section>")
    if several:
        parts.append('<p><a href="#top">back to top</a></p>')
    return "".join(parts)


# ---------------------------------------------------------------------------------------------
# Comparison section


def _cell(text: str, best: bool) -> str:
    return f'<td class="best">{text} ★</td>' if best else f"<td>{text}</td>"


def _comparison_section(cmp: Comparison) -> str:
    n = len(cmp.runs)
    parts = ['<section id="comparison"><h2>Comparison</h2>']
    if n == 2:
        parts.append("<p>Run B is compared with run A (the baseline).</p>")
    else:
        parts.append(f"<p>{n} runs: each run is compared with run A, the baseline.</p>")
    parts.append(
        '<table><thead><tr><th>run</th><th class="text">id</th><th>samples</th></tr></thead><tbody>'
    )
    for r in cmp.runs:
        parts.append(
            f"<tr><td>{e(r.label)}{' (baseline)' if r is cmp.baseline else ''}</td>"
            f'<td class="text">{e(r.run_id)}</td><td>{r.n_samples}</td></tr>'
        )
    parts.append("</tbody></table>")
    for pr in cmp.pairing:
        if pr.partial:
            parts.append(f'<p class="warn"><strong>Only {e(pr.describe())} ({pr.share:.0%}).</strong> '
                         "The differences below speak for the paired samples only.</p>")
        else:
            parts.append(f'<p class="muted">Pairing: {e(pr.describe())}.</p>')

    parts.append("<h3>Configurations</h3>")
    if cmp.config_keys:
        differ = cmp.differing_keys()
        parts.append(
            "<table><thead><tr><th>setting</th>"
            + "".join(f'<th class="text">{e(r.label)}</th>' for r in cmp.runs)
            + "</tr></thead><tbody>"
        )
        for key in cmp.config_keys:
            differs = key in differ
            row_cls = ' class="differs"' if differs else ""
            parts.append(
                f'<tr{row_cls}><th class="text">{e(key)}'
                f"{' ≠' if differs else ''}</th>"
                + "".join(
                    f'<td class="text">{e(config_text(r.config.get(key)))}</td>' for r in cmp.runs
                )
                + "</tr>"
            )
        parts.append('</tbody></table><p class="muted">≠ differs between runs.</p>')
    else:
        parts.append(
            "<p>The runs record no metadata (set it with <code>--metadata KEY=VALUE</code>).</p>"
        )

    parts.append(
        "<h3>Experiment table</h3><table><thead><tr><th>metric</th>"
        + "".join(f"<th>{e(r.label)}</th>" for r in cmp.runs)
        + "</tr></thead><tbody>"
    )
    for row in cmp.table:
        cells = []
        for i, m in enumerate(row.means):
            cells.append(_cell(fmt(m), i in row.best))
        parts.append(
            f"<tr><td>{e(row.metric)} {arrow(row.lower_is_better)}</td>{''.join(cells)}</tr>"
        )
    if cmp.overall_metrics:
        overall = "".join(_cell(fmt(v), i in cmp.overall_best) for i, v in enumerate(cmp.overall))
        parts.append(f"<tr><td><b>overall</b> (mean of means)</td>{overall}</tr>")
        if cmp.overall_harmonic:
            harmonic = "".join(f"<td>{fmt(v)}</td>" for v in cmp.overall_harmonic)
            parts.append(f'<tr><td class="muted">harmonic mean</td>{harmonic}</tr>')
    parts.append("</tbody></table>")
    parts.append(
        '<p class="muted">★ best value per metric (ties all marked, compared at 3 decimals). '
        "Means over each run's own scored samples. ↑ higher is better, ↓ lower is better. "
        "Overall: the mean of the metric means every run has (↓ as 1 − mean, each clamped to "
        "[0, 1]); the harmonic mean beside it is 0 whenever one metric mean is 0.</p>"
    )
    if cmp.overall_left_out:
        items = "".join(f"<li><b>{e(k)}</b>: {e(why)}</li>" for k, why in cmp.overall_left_out)
        parts.append(
            f'<div class="warn"><strong>The overall leaves out {len(cmp.overall_left_out)} '
            f"metric(s):</strong><ul>{items}</ul></div>"
        )

    parts.append("<h3>Paired differences</h3>")
    parts.append(
        "<table><thead><tr><th>metric</th><th>run</th><th>pairs</th><th>A mean</th>"
        f"<th>run mean</th><th>diff (run − A)</th><th>{cmp.confidence:.0%} CI (unadjusted)</th>"
        '<th>p</th><th>p (Holm)</th><th class="text">verdict</th></tr></thead><tbody>'
    )
    for row_p in cmp.paired:
        d = row_p.difference
        parts.append(
            f"<tr><td>{e(row_p.metric)} {arrow(row_p.lower_is_better)}</td><td>{e(row_p.other)}</td>"
            f"<td>{d.n} of {row_p.shared}</td><td>{fmt(d.mean_a)}</td><td>{fmt(d.mean_b)}</td>"
            f"<td>{fmt_signed(d.diff)}</td><td>{fmt_ci(d.ci_low, d.ci_high, signed=True)}</td>"
            f"<td>{fmt_p(d.p_value)}</td><td>{fmt_p(row_p.p_holm)}</td>"
            f'<td class="text">{e(row_p.verdict)}</td></tr>'
        )
    parts.append("</tbody></table>")
    parts.append(
        '<p class="muted">Pairs: samples (joined by id) scored in both runs, of the samples present '
        f"in both. p is a two-sided paired permutation "
        f"(sign-flip) test; the CI (unadjusted) holds the shifts that test does not reject, so it "
        f"excludes 0 exactly when p &lt; {1 - cmp.confidence:.2g}. "
        f"The verdict uses the Holm-adjusted p (p &lt; {cmp.alpha:g}), adjusted over "
        f"all {len(cmp.paired)} comparisons in this table, and respects ↓ metrics.</p>"
        + "".join(f'<p class="muted">{e(note)}</p>' for note in ci_notes(cmp))
    )

    parts.append('<h3>Per metric</h3><div class="plots">')
    for i, row in enumerate(cmp.table):
        parts.append(
            f"<figure>{runs_svg(cmp, i)}<figcaption><b>{e(row.metric)}</b> "
            f"{arrow(row.lower_is_better)} by run; whiskers: 95% CI; green ★: best"
            "</figcaption></figure>"
        )
    parts.append("</div></section>")
    return "".join(parts)


# ---------------------------------------------------------------------------------------------
# The document


def render_report(
    runs: Sequence[RunData | EvaluationResult],
    *,
    comparison: Comparison | None = None,
    title: str | None = None,
    generated_at: str | None = None,
    allow_poor_pairing: bool = False,
    compare_runs: bool = True,
) -> str:
    """The HTML report of one or more runs, as one self-contained document.

    With several runs the comparison section (against the first run) comes first; it is
    computed with :func:`compare` unless given, or left out with ``compare_runs=False`` (runs
    of different data, such as the tests of a pytest session). ``generated_at`` replaces the
    current time in the footer (for reproducible output).
    """
    data = [r if isinstance(r, RunData) else RunData.from_result(r) for r in runs]
    if not data:
        raise ValueError("render_report needs at least one run")
    several = len(data) > 1
    if several and comparison is None and compare_runs:
        comparison = compare(data, allow_poor_pairing=allow_poor_pairing)
    heading = title or (
        "ragsight report: " + (data[0].run_id if not several else f"{len(data)} runs")
    )
    when = generated_at or dt.datetime.now(dt.timezone.utc).strftime("%Y-%m-%d %H:%M UTC")
    nav = []
    if comparison is not None:
        nav.append('<li><a href="#comparison">comparison</a></li>')
    for i, d in enumerate(data, start=1):
        nav.append(f'<li><a href="#r{i}">run {e(d.run_id)}</a></li>')
    body = [
        f'<h1 id="top">{e(heading)}</h1>',
        f'<p class="muted">ragsight {e(__version__)} — generated {e(when)}. '
        "Self-contained: works offline and without JavaScript.</p>",
        "<nav><ul>" + "".join(nav) + "</ul></nav>",
    ]
    if comparison is not None:
        body.append(_comparison_section(comparison))
    for i, d in enumerate(data, start=1):
        body.append(_run_section(d, i, several))
    # Every table scrolls inside its own box on a narrow screen: the page never gets wider than
    # the window (data text is escaped, so "<table" here is always the report's own markup).
    body = [part.replace("<table>", '<div class="scroll"><table>').replace("</table>", "</table></div>")
            for part in body]
    return (
        '<!DOCTYPE html>\n<html lang="en"><head><meta charset="utf-8">'
        f'<meta http-equiv="Content-Security-Policy" content="{e(CSP)}">'
        '<meta name="viewport" content="width=device-width, initial-scale=1">'
        '<meta name="referrer" content="no-referrer">'
        f"<title>{e(heading)}</title><style>{CSS}</style><script>{SCRIPT}</script></head>"
        '<body data-js-errors="">' + "\n".join(body) + "</body></html>\n"
    )


def write_report(
    store: Store, refs: Sequence[str], out: str | os.PathLike[str], **kwargs: Any
) -> Path:
    """Render the report of the runs ``refs`` (ids, id prefixes or 'last') into ``out``."""
    return save_html(render_report(load_runs(store, refs), **kwargs), out)


def save_html(text: str, out: str | os.PathLike[str]) -> Path:
    """Write a rendered report atomically (a reader never sees half a file)."""
    path = Path(out)
    with atomic_write(path) as f:  # on an error: no temporary file left, the previous file intact
        f.write(text)
    return path
