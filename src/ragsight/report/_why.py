"""The report's "Why it fails" section: each cause of the run's failing samples (``ragsight
diagnose``, with its default thresholds, without topics: nothing is embedded) with its count,
95% CI, an example linked to its sample panel and that example's evidence."""

from __future__ import annotations

from ..diagnosis import MEANINGS, diagnose, threshold_text
from ..result import EvaluationResult
from ._markup import e

__all__ = ["why_section"]


def why_section(result: EvaluationResult, prefix: str) -> str:
    """The section of run ``prefix`` (its sample panels are ``{prefix}-s{index}``)."""
    d = diagnose(result, topics=False)
    index = {s.id: i for i, s in enumerate(result.samples)}

    def link(sid: str) -> str:
        return f'<a href="#{prefix}-s{index[sid]}">{e(sid)}</a>' if sid in index else e(sid)

    parts = ["<h3>Why it fails</h3>"]
    if not d.samples:
        parts.append(f"<p>No sample fails (a metric {e(threshold_text(d.thresholds))}).</p>")
    else:
        parts.append(
            f'<p class="muted">{len(d.samples)} of {d.n_samples} samples fail (a metric '
            f"{e(threshold_text(d.thresholds))}; or failed, or no value). Each gets one primary cause, "
            "read from its evidence; <code>ragsight diagnose RUN</code> adds the topics of the failing "
            "questions and every sample's findings.</p>"
        )
        parts.append(
            '<table><thead><tr><th class="text">cause</th><th>samples</th><th>95% CI</th><th>also</th>'
            '<th class="text">example</th><th class="text">its evidence</th></tr></thead><tbody>'
        )
        for c in d.causes:
            if not c.count:
                continue
            s = d.sample(c.example) if c.example else None
            pf = s.primary_finding if s is not None else None
            lines = [i.line() for i in pf.evidence[:2]] if pf is not None else list(s.notes[:1]) if s else []
            ci = "–" if c.ci_low is None or c.ci_high is None else f"{c.ci_low:.0f}–{c.ci_high:.0f}"
            parts.append(
                f'<tr><td class="text"><b>{e(c.cause)}</b><br><span class="muted">{e(MEANINGS[c.cause])}</span></td>'
                f"<td>{c.count}</td><td>{ci}</td><td>{c.secondary}</td>"
                f'<td class="text">{link(c.example) if c.example else ""}</td>'
                f'<td class="text">{"<br>".join(e(x) for x in lines)}</td></tr>'
            )
        parts.append("</tbody></table>")
    for u in d.unmeasured:
        parts.append(f'<p class="note">Not measured: {e(u.cause)}; {e(u.hint)}.</p>')
    return "".join(parts)
