"""The report's comparison section: the runs, their configurations side by side, the experiment
table with the best value per metric marked, the paired differences with their verdicts, and a
plot per metric."""

from __future__ import annotations

from ._compare import Comparison, ci_notes
from ._format import arrow, config_text, fmt, fmt_ci, fmt_p, fmt_signed
from ._markup import e
from ._svg import runs_svg

__all__ = ["comparison_section"]


def _cell(text: str, best: bool) -> str:
    return f'<td class="best">{text} ★</td>' if best else f"<td>{text}</td>"


def comparison_section(cmp: Comparison) -> str:
    n = len(cmp.runs)
    parts = ['<section id="comparison"><h2>Comparison</h2>']
    if n == 2:
        parts.append("<p>Run B is compared with run A (the baseline).</p>")
    else:
        parts.append(f"<p>{n} runs: each run is compared with run A, the baseline.</p>")
    parts.append(
        '<table><thead><tr><th>run</th><th class="text">id</th><th class="text">rows</th></tr></thead><tbody>'
    )
    for r in cmp.runs:
        parts.append(
            f"<tr><td>{e(r.label)}{' (baseline)' if r is cmp.baseline else ''}</td>"
            f'<td class="text">{e(r.run_id)}</td><td class="text">{e(r.size)}</td></tr>'
        )
    parts.append("</tbody></table>")
    for pr in cmp.pairing:
        if pr.partial:
            parts.append(f'<p class="warn"><strong>Only {e(pr.shortfall())}.</strong> '
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
        "in both" + (" (each metric on the rows of its own level: a turn metric on the assistant turns, "
                     "a conversation metric on the conversations)" if cmp.conversations else "")
        + ". p is a two-sided paired permutation "
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
