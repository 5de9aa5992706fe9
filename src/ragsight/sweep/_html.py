"""The sweep report as one self-contained HTML page: tables, inline SVG charts, no scripts, no
requests (a Content-Security-Policy allows the page's own style only)."""

from __future__ import annotations

import base64
import hashlib
import html
import math
import os
from collections.abc import Sequence
from pathlib import Path

from ..dataset import atomic_write
from ..report import fmt, fmt_ci, fmt_p, fmt_signed
from ._causes import causes_html
from ._model import LATENCY_MEANING, Effect, SweepReport

__all__ = ["render_sweep_html", "write_sweep_html"]

CSS = """
body{font:14px/1.45 system-ui,-apple-system,"Segoe UI",sans-serif;margin:24px auto;max-width:1180px;
color:#1d2733;padding:0 16px}
h1{font-size:22px;margin:0 0 4px}h2{font-size:17px;margin:28px 0 8px;border-bottom:1px solid #d8dee6;
padding-bottom:4px}.muted{color:#5b6b7c}table{border-collapse:collapse;margin:8px 0}
th,td{padding:4px 8px;border-bottom:1px solid #e6eaef;text-align:right;vertical-align:top}
th:first-child,td:first-child{text-align:left}th{background:#f3f6f9;font-weight:600}
td.best{background:#e3f4e6;font-weight:600}td .ci{display:block;font-size:11px;color:#5b6b7c;font-weight:400}
.up{color:#137333}.down{color:#b3261e}.base{font-size:11px;background:#e8eef7;border-radius:3px;padding:0 4px}
.charts{display:flex;flex-wrap:wrap;gap:12px}.chart{border:1px solid #e6eaef;border-radius:4px;padding:6px}
.chart p{margin:2px 0;font-size:12px}ul.findings li{margin:4px 0}.note{color:#8a5a00}
svg text{font:11px system-ui,sans-serif;fill:#1d2733}
"""


def _sha(text: str) -> str:
    return "sha256-" + base64.b64encode(hashlib.sha256(text.encode()).digest()).decode()


CSP = f"default-src 'none'; style-src '{_sha(CSS)}'; base-uri 'none'; form-action 'none'"


def e(text: object) -> str:
    return html.escape(str(text), quote=True)


def _axis(values: Sequence[float | None], pad: float = 0.05) -> tuple[float, float]:
    present = [v for v in values if v is not None and math.isfinite(v)]
    if not present:
        return 0.0, 1.0
    lo, hi = min(present), max(present)
    if hi - lo < 1e-9:
        lo, hi = lo - 0.5, hi + 0.5
    span = hi - lo
    return lo - pad * span, hi + pad * span


def effect_svg(eff: Effect, lower: bool) -> str:
    """A metric against one parameter: the mean per value with its CI as a band. A categorical
    parameter's levels are drawn apart, each with its CI as a bar, and the baseline level's mean
    as a dashed line across: no band and no line joins levels that have no order."""
    w, h, left, right, top, bottom = 300, 170, 40, 30, 14, 34
    pw, ph = w - left - right, h - top - bottom
    ys = [v for pair in eff.ci for v in pair] + list(eff.means)
    lo, hi = _axis([min(0.0, *(v for v in ys if v is not None)) if any(v is not None for v in ys) else 0.0,
                    max(1.0, *(v for v in ys if v is not None)) if any(v is not None for v in ys) else 1.0], 0.0)
    n = len(eff.values)

    def x(i: int) -> float:
        if eff.categorical:  # levels side by side, none at the edges
            return left + pw * (i + 0.5) / n
        return left + (pw * (i / (n - 1)) if n > 1 else pw / 2)

    def y(v: float) -> float:
        return top + ph - (v - lo) / (hi - lo) * ph

    title = f"{eff.metric} vs {eff.parameter}: " + "; ".join(
        f"{v} {fmt(m)} {fmt_ci(a, b)}" for v, m, (a, b) in zip(eff.values, eff.means, eff.ci))
    parts = [f'<svg xmlns="http://www.w3.org/2000/svg" width="{w}" height="{h}" role="img" '
             f'aria-label="{e(title)}"><title>{e(title)}</title>']
    for t in (lo, (lo + hi) / 2, hi):
        parts.append(f'<line x1="{left}" x2="{w - right}" y1="{y(t):.1f}" y2="{y(t):.1f}" stroke="#e6eaef"/>'
                     f'<text x="{left - 4}" y="{y(t) + 4:.1f}" text-anchor="end">{t:.2f}</text>')
    if eff.categorical:
        if eff.means and eff.means[0] is not None:
            parts.append(f'<line x1="{left}" x2="{w - right}" y1="{y(eff.means[0]):.1f}" y2="{y(eff.means[0]):.1f}" '
                         'stroke="#5b6b7c" stroke-dasharray="4,3"/>')
    else:
        band_top = [(x(i), y(b)) for i, (_, b) in enumerate(eff.ci) if b is not None]
        band_bot = [(x(i), y(a)) for i, (a, _) in enumerate(eff.ci) if a is not None]
        if len(band_top) == n and len(band_bot) == n and n > 1:
            pts = " ".join(f"{px:.1f},{py:.1f}" for px, py in band_top + band_bot[::-1])
            parts.append(f'<polygon points="{pts}" fill="#1f6feb" fill-opacity="0.15" stroke="none"/>')
        line = [(x(i), y(m)) for i, m in enumerate(eff.means) if m is not None]
        if len(line) > 1:
            parts.append('<polyline fill="none" stroke="#1f6feb" stroke-width="2" points="'
                         + " ".join(f"{px:.1f},{py:.1f}" for px, py in line) + '"/>')
    for i, (m, (a, b)) in enumerate(zip(eff.means, eff.ci)):
        if a is not None and b is not None:
            width = 2 if eff.categorical else 1
            parts.append(f'<line x1="{x(i):.1f}" x2="{x(i):.1f}" y1="{y(a):.1f}" y2="{y(b):.1f}" '
                         f'stroke="#1f6feb" stroke-width="{width}"/>')
        if m is not None:
            parts.append(f'<circle cx="{x(i):.1f}" cy="{y(m):.1f}" r="3.5" fill="#1f6feb"/>')
        parts.append(f'<text x="{x(i):.1f}" y="{h - bottom + 16}" text-anchor="middle">{e(eff.values[i])}</text>')
    parts.append(f'<text x="{left + pw / 2:.1f}" y="{h - 4}" text-anchor="middle">{e(eff.parameter)}</text>')
    parts.append("</svg>")
    return "".join(parts)


def tradeoff_svg(rep: SweepReport) -> str:
    """Quality against cost, one point per configuration, the Pareto front joined."""
    w, h, left, right, top, bottom = 560, 300, 56, 16, 16, 40
    pw, ph = w - left - right, h - top - bottom
    cost = [(c.tokens_per_question if rep.cost_axis == "tokens" else c.latency_per_question) for c in rep.configs]
    qual = [c.overall for c in rep.configs]
    xlo, xhi = _axis(cost)
    ylo, yhi = _axis(qual)
    unit = "generator tokens per answered question" if rep.cost_axis == "tokens" else "seconds per answered question"

    def x(v: float) -> float:
        return left + (v - xlo) / (xhi - xlo) * pw

    def y(v: float) -> float:
        return top + ph - (v - ylo) / (yhi - ylo) * ph

    label = "quality (overall score) against " + unit
    parts = [f'<svg xmlns="http://www.w3.org/2000/svg" width="{w}" height="{h}" role="img" '
             f'aria-label="{e(label)}"><title>{e(label)}</title>',
             f'<rect x="{left}" y="{top}" width="{pw}" height="{ph}" fill="none" stroke="#d8dee6"/>']
    for t in (ylo, (ylo + yhi) / 2, yhi):
        parts.append(f'<text x="{left - 4}" y="{y(t) + 4:.1f}" text-anchor="end">{t:.2f}</text>')
    for t in (xlo, (xlo + xhi) / 2, xhi):
        parts.append(f'<text x="{x(t):.1f}" y="{h - bottom + 14}" text-anchor="middle">{t:.3g}</text>')
    front = sorted((i for i in rep.pareto if cost[i] is not None and qual[i] is not None),
                   key=lambda i: cost[i])  # type: ignore[arg-type,return-value]
    if len(front) > 1:
        parts.append('<polyline fill="none" stroke="#137333" stroke-width="2" stroke-dasharray="5,3" points="'
                     + " ".join(f"{x(cost[i]):.1f},{y(qual[i]):.1f}" for i in front) + '"/>')  # type: ignore[arg-type]
    for i, c in enumerate(rep.configs):
        if cost[i] is None or qual[i] is None:
            continue
        on = i in rep.pareto
        parts.append(f'<circle cx="{x(cost[i]):.1f}" cy="{y(qual[i]):.1f}" r="5" '  # type: ignore[arg-type]
                     f'fill="{"#137333" if on else "#8a99a8"}"><title>{e(c.short)} {e(c.label)}: quality '
                     f'{fmt(qual[i])}, {fmt(cost[i], 2)}</title></circle>'
                     f'<text x="{x(cost[i]) + 7:.1f}" y="{y(qual[i]) - 6:.1f}">{e(c.short)}</text>')  # type: ignore[arg-type]
    parts.append(f'<text x="{left + pw / 2:.1f}" y="{h - 6}" text-anchor="middle">{e(unit)}</text>')
    parts.append(f'<text x="14" y="{top + ph / 2:.1f}" text-anchor="middle" '
                 f'transform="rotate(-90 14 {top + ph / 2:.1f})">overall score</text></svg>')
    return "".join(parts)


def render_sweep_html(rep: SweepReport) -> str:
    base = rep.configs[rep.baseline]
    q = max(c.questions for c in rep.configs)
    out = [
        "<!doctype html><html lang='en'><head><meta charset='utf-8'>",
        f"<meta http-equiv='Content-Security-Policy' content=\"{CSP}\">",
        "<meta name='viewport' content='width=device-width,initial-scale=1'>",
        f"<title>ragsight sweep: {e(rep.name)}</title><style>{CSS}</style></head><body>",
        f"<h1>Sweep <em>{e(rep.name)}</em></h1>",
        f"<p class='muted'>{len(rep.configs)} configurations × {q} questions, every configuration on the "
        f"same questions (paired by question id). Store: {e(rep.store)}. Baseline: "
        f"{e(base.short)} ({e(base.label)}).</p>",
    ]
    if rep.judged_note:
        out.append(f"<p>{e(rep.judged_note)}</p>")
    if rep.findings:
        out.append("<h2>Findings</h2><ul class='findings'>")
        out.extend(f"<li>{e(f)}</li>" for f in rep.findings)
        out.append("</ul>")
    # configurations x metrics
    out.append("<h2>Configurations × metrics</h2><p class='muted'>Mean and 95% bootstrap CI over the "
               "questions; green: best per metric; ▲/▼: better/worse than the baseline (paired "
               f"permutation test, Holm-adjusted over all {len(rep.comparisons)} comparisons, α = {rep.alpha:g}).</p>")
    out.append("<table id='matrix'><thead><tr><th>configuration</th>")
    out.extend(f"<th>{e(m)} {'↓' if rep.lower_is_better[m] else '↑'}</th>" for m in rep.metrics)
    out.append("<th>overall</th><th>tokens / q</th><th>latency / q</th></tr></thead><tbody>")
    for i, c in enumerate(rep.configs):
        tag = " <span class='base'>baseline</span>" if c.baseline else ""
        out.append(f"<tr><td><b>{e(c.short)}</b> {e(c.label)}{tag}</td>")
        for m in rep.metrics:
            lo, hi = c.ci[m]
            cmp = rep.comparison(m, i)
            mark = ""
            if cmp is not None and cmp.better is not None:
                mark = " <span class='up'>▲</span>" if cmp.better else " <span class='down'>▼</span>"
            cls = " class='best'" if i in rep.best.get(m, ()) else ""
            out.append(f"<td{cls}>{fmt(c.means[m])}{mark}<span class='ci'>{fmt_ci(lo, hi)} n={c.n[m]}</span></td>")
        cls = " class='best'" if i in rep.best_overall else ""
        out.append(f"<td{cls}>{fmt(c.overall)}</td><td>{fmt(c.tokens_per_question, 0)}</td>"
                   f"<td>{fmt(c.latency_per_question, 2)} s</td></tr>")
    out.append("</tbody></table>")
    said = []
    if rep.overall_metrics:
        said.append(f"overall: mean of the metric means (↓ as 1 − mean) of {e(', '.join(rep.overall_metrics))}.")
    if any(c.tokens_per_question is not None for c in rep.configs):
        said.append("Tokens: the generator's per answered question (rewrites and answer), as counted when "
                    "each step was made.")
    if any(c.latency_per_question is not None for c in rep.configs):
        said.append(e(LATENCY_MEANING[0].upper() + LATENCY_MEANING[1:]))
    if said:
        out.append(f"<p class='muted' id='matrix-notes'>{' '.join(said)}</p>")
    # best per metric
    out.append(f"<h2>Best configuration per metric, against the baseline {e(base.short)}</h2>"
               "<table id='best'><thead><tr><th>metric</th><th>best</th><th>mean [CI]</th><th>baseline</th>"
               "<th>difference [CI]</th><th>p Holm</th><th>verdict</th></tr></thead><tbody>")
    for m in rep.metrics:
        idx = rep.best.get(m, ())
        if not idx:
            continue
        c = rep.configs[idx[0]]
        cmp = rep.comparison(m, idx[0])
        d = cmp.difference if cmp else None
        verdict = "the baseline" if idx[0] == rep.baseline else (
            "—" if cmp is None else ("better" if cmp.better else "worse" if cmp.better is False
                                     else "no detectable difference"))
        out.append(f"<tr><td>{e(m)}</td><td>{e(c.short)} {e(c.label)}</td><td>{fmt(c.means[m])} "
                   f"{fmt_ci(*c.ci[m])}</td><td>{fmt(base.means[m])}</td>"
                   f"<td>{fmt_signed(d.diff) if d else '–'} {fmt_ci(d.ci_low, d.ci_high, signed=True) if d else ''}</td>"
                   f"<td>{fmt_p(cmp.p_holm) if cmp else '–'}</td><td>{e(verdict)}</td></tr>")
    out.append("</tbody></table>")
    if rep.best_overall:
        c = rep.configs[rep.best_overall[0]]
        out.append(f"<p><b>Best overall:</b> {e(c.short)} ({e(c.label)}), overall score {fmt(c.overall)}"
                   "</p><p class='muted'>")
        diffs = [(m, rep.comparison(m, rep.best_overall[0])) for m in rep.metrics]
        parts = [f"{e(m)} {fmt_signed(x.difference.diff)} {fmt_ci(x.difference.ci_low, x.difference.ci_high, signed=True)}"
                 f" (p Holm {fmt_p(x.p_holm)})" for m, x in diffs if x is not None and x.difference.diff is not None]
        out.append(("Against the baseline: " + "; ".join(parts) + "." if parts else "") + "</p>")
    # effects
    if rep.effects:
        out.append("<h2>Effect of each parameter</h2><p class='muted'>Mean per value with its 95% CI as a band. "
                   "A parameter whose values are names or switches is drawn as levels: each level's mean "
                   "and CI, the baseline's level as a dashed line, and each level's paired difference from "
                   "it below. Each chart says whether the other settings are held at the baseline or "
                   "averaged.</p>")
        for p in rep.varied:
            effs = [x for x in rep.effects if x.parameter == p]
            if not effs:
                continue
            out.append(f"<h3>{e(p)}</h3><div class='charts'>")
            for x in effs:
                steps = "; ".join((f"{s.value_to} vs {s.value_from}" if x.categorical else f"{s.value_from}→{s.value_to}")
                                  + f": {fmt_signed(s.difference.diff)} "
                                  f"{fmt_ci(s.difference.ci_low, s.difference.ci_high, signed=True)} p {fmt_p(s.p_holm)}"
                                  for s in x.steps)
                how = (f"levels, each against the baseline's {x.values[0]}; " if x.categorical else "") + x.mode
                out.append(f"<div class='chart'><p><b>{e(x.metric)}</b> ({e(how)})</p>"
                           f"{effect_svg(x, rep.lower_is_better[x.metric])}<p class='muted'>{e(steps)}</p></div>")
            out.append("</div>")
    # trade-off
    out.append("<h2>Quality / cost trade-off</h2><p class='muted'>Green: the Pareto front (no other "
               "configuration is at least as good and cheaper).</p>")
    out.append(tradeoff_svg(rep))
    out.append("<p>Pareto front: " + e(", ".join(f"{rep.configs[i].short} ({rep.configs[i].label})"
                                              for i in rep.pareto) or "–") + "</p>")
    out.append(causes_html(rep))
    # runs
    out.append("<h2>Runs</h2><table id='runs'><thead><tr><th>configuration</th><th>run</th><th>status</th>"
               "<th>questions</th><th>answered</th><th>failed</th></tr></thead><tbody>")
    for c in rep.configs:
        out.append(f"<tr><td>{e(c.short)}</td><td>{e(c.run_id)}</td><td>{e(c.status)}</td><td>{c.questions}</td>"
                   f"<td>{c.answered}</td><td>{c.failed}</td></tr>")
    out.append("</tbody></table><p class='muted'>Each run's evidence: <code>ragsight report RUN</code> "
               "or <code>ragsight show RUN --sample ID</code>.</p>")
    for n in rep.notes:
        out.append(f"<p class='note'>{e(n)}</p>")
    out.append("</body></html>")
    return "\n".join(out)


def write_sweep_html(rep: SweepReport, path: str | os.PathLike[str]) -> Path:
    p = Path(path)
    with atomic_write(p) as f:  # on an error: no temporary file left, the previous file intact
        f.write(render_sweep_html(rep))
    return p
