"""The monitor pages (a store that ``ragsight monitor`` writes): the windows over time per metric
with their CIs and alerts, the counts of requests by state; and one window's evaluated requests,
each linking to its sample page in its batch's run (where its evidence is read and labelled: the
labels go through the labels API like any run's, so ``calibrate`` reads them).
"""

from __future__ import annotations

import datetime as dt
import json
import sqlite3
from collections.abc import Sequence
from typing import Any

from ..monitor import Window, find_alerts, parse_alert, saved_baseline, status, windows
from ._assets import e, t, url

__all__ = ["has_monitor", "monitor_body", "window_arg", "window_body"]


def has_monitor(conn: sqlite3.Connection) -> bool:
    try:
        return conn.execute("SELECT 1 FROM monitor_requests LIMIT 1").fetchone() is not None
    except Exception:  # an older store: no monitor tables
        return False


def _f(x: float | None) -> str:
    return "–" if x is None else f"{x:.3f}"


def _chart(metric: str, ws: Sequence[Window], alerted: set[float]) -> str:
    """One metric's window means (dots) with their CIs (vertical bars), oldest left; a window
    with an alert in red."""
    points = [(w, w.metrics[metric]) for w in ws if metric in w.metrics and w.metrics[metric].mean is not None]
    if not points:
        return '<p class="muted">no scored window yet</p>'
    width, h, left, top, bottom = max(320, 24 * len(points) + 60), 150, 36, 10, 20
    ph = h - top - bottom
    pw = width - left - 10
    lows = [m.ci_low if m.ci_low is not None else m.mean for _, m in points]
    highs = [m.ci_high if m.ci_high is not None else m.mean for _, m in points]
    lo = min(0.0, *[v for v in lows if v is not None])
    hi = max(1.0, *[v for v in highs if v is not None])

    def x(i: int) -> float:
        return left + (pw * (i + 0.5) / len(points))

    def y(v: float) -> float:
        return top + ph * (1 - (v - lo) / (hi - lo))

    parts = [f'<line class="axis" x1="{left}" y1="{top + ph}" x2="{left + pw}" y2="{top + ph}"/>',
             f'<line class="axis" x1="{left}" y1="{top}" x2="{left}" y2="{top + ph}"/>',
             f'<text x="2" y="{top + 4}">{hi:.1f}</text><text x="2" y="{top + ph}">{lo:.1f}</text>']
    line = []
    for i, (w, m) in enumerate(points):
        assert m.mean is not None
        colour = "#b42318" if w.start in alerted else "#0b57d0"
        if m.ci_low is not None and m.ci_high is not None:
            parts.append(f'<line x1="{x(i):.1f}" y1="{y(m.ci_low):.1f}" x2="{x(i):.1f}" y2="{y(m.ci_high):.1f}" '
                         f'stroke="{colour}" stroke-width="2"/>')
        parts.append(f'<circle cx="{x(i):.1f}" cy="{y(m.mean):.1f}" r="3.5" fill="{colour}"><title>'
                     f'{e(w.label())}: {_f(m.mean)} [{_f(m.ci_low)}, {_f(m.ci_high)}], {m.scored} scored'
                     f'{" (alert)" if w.start in alerted else ""}</title></circle>')
        line.append(f"{x(i):.1f},{y(m.mean):.1f}")
    parts.append(f'<polyline class="line" points="{" ".join(line)}"/>')
    parts.append(f'<text x="{left}" y="{h - 4}">oldest</text><text x="{left + pw - 36}" y="{h - 4}">newest</text>')
    return (f'<svg class="monitor-chart" width="{width}" height="{h}" viewBox="0 0 {width} {h}" role="img" '
            f'aria-label="{e(metric)} per window">' + "".join(parts) + "</svg>")


def monitor_body(conn: sqlite3.Connection, window_s: float | None, rules: Sequence[str]) -> str:
    info = status(conn, window_s=window_s, last=48)
    length = float(info["window_s"])
    ws = windows(conn, length)[-48:]
    settings = info["settings"]
    min_scored = int(settings.get("min_scored", 10))
    alpha = float(settings.get("alpha", 0.01))
    parsed = [parse_alert(r) for r in (list(rules) or settings.get("alerts", []))]
    baseline = saved_baseline(conn)
    alerts = find_alerts(ws, parsed, min_scored=min_scored, alpha=alpha, baseline=baseline)
    out = [f"<h1>Monitor</h1><p class=\"muted\">Windows of {length:g} s by the time each request started; "
           "means with their 95% bootstrap CIs. This page reloads every 10 seconds.</p>"]
    counts = [("received", "requests stored"), ("sampled", "sampled"), ("evaluated", "evaluated"),
              ("pending", "pending"), ("not_evaluated", "not evaluated"), ("unsampled", "unsampled"),
              ("skipped", "not RAG requests"), ("open", "still arriving")]
    out.append('<table id="monitor-counts"><tr>' + "".join(f"<th>{e(label)}</th>" for _, label in counts)
               + "</tr><tr>" + "".join(f'<td data-key="{k}">{info[k]:,}</td>' for k, _ in counts) + "</tr></table>")
    for why, n in info["not_evaluated_reasons"].items():
        out.append(f'<p class="warn">{n:,} sampled requests not evaluated: {t(why)}</p>')
    b = info["budget"]
    limit = "no daily limit" if b["limit_usd"] is None else f"limit ${b['limit_usd']:g}"
    out.append(f"<p>Spent today (UTC {e(b['day'])}): ${b['spent_usd']:.4f} ({e(limit)}).</p>")
    if baseline is not None:
        out.append(f'<p id="monitor-baseline">Each window is compared with the {t(baseline.describe())}, by a '
                   f"one-sided Welch t-test at p &lt; {alpha:g}.</p>")
    if alerts:
        out.append('<h2>Alerts</h2><ul id="monitor-alerts">' + "".join(
            f'<li class="warn" data-kind="{e(a.kind)}" data-metric="{e(a.metric)}">{t(a.message)}</li>'
            for a in reversed(alerts)) + "</ul>")
    metrics = sorted({m for w in ws for m in w.metrics})
    for metric in metrics:
        alerted = {a.window_start for a in alerts if a.metric == metric}
        out.append(f'<h2 id="metric-{e(metric)}">{t(metric)}</h2>' + _chart(metric, ws, alerted))
        rows = []
        for w in reversed(ws):
            m = w.metrics.get(metric)
            if m is None:
                continue
            c = m.counts
            link = url("monitor", "window", repr(w.start), window=repr(length))
            rows.append(f'<tr{" class=alert" if w.start in alerted else ""}><td class="l"><a href="{e(link)}">'
                        f"{e(w.label())}</a></td><td>{sum(w.requests.values()):,}</td><td>{m.scored}</td>"
                        f"<td>{_f(m.mean)}</td><td>[{_f(m.ci_low)}, {_f(m.ci_high)}]</td>"
                        f"<td>{c.get('undetermined', 0)}</td><td>{c.get('failed', 0)}</td><td>{c.get('skipped', 0)}</td>"
                        f"<td>{'alert' if w.start in alerted else ''}</td></tr>")
        out.append('<div class="scroll"><table><tr><th class="l">window</th><th>requests</th><th>scored</th>'
                   "<th>mean</th><th>95% CI</th><th>undetermined</th><th>failed</th><th>skipped</th><th></th></tr>"
                   + "".join(rows) + "</table></div>")
    if not metrics:
        out.append('<p class="muted">No request has been evaluated yet.</p>')
    return "".join(out)


def window_body(conn: sqlite3.Connection, start: float, length: float) -> str:
    rows = conn.execute(
        "SELECT trace_id, state, reason, run_id, sample, started_at FROM monitor_requests WHERE"
        " coalesce(started_at, first_seen) >= ? AND coalesce(started_at, first_seen) < ? AND state IN"
        " ('evaluated','not_evaluated','batched','queued') ORDER BY started_at LIMIT 2000",
        (start, start + length)).fetchall()
    scores: dict[str, dict[str, tuple[str, float | None]]] = {}
    for trace_id, metric, outcome, value in conn.execute(
            "SELECT trace_id, metric, outcome, value FROM monitor_scores WHERE started_at >= ? AND started_at < ?",
            (start, start + length)):
        scores.setdefault(str(trace_id), {})[str(metric)] = (str(outcome), value)
    metrics = sorted({m for v in scores.values() for m in v})
    a = dt.datetime.fromtimestamp(start, dt.timezone.utc).strftime("%Y-%m-%d %H:%M:%S")
    out = [f'<h1>Window from {e(a)} UTC ({length:g} s)</h1><p><a href="/monitor">all windows</a></p>',
           '<p class="muted">The sampled requests of the window; each opens its sample page (evidence, '
           "labels) in its batch's run.</p>",
           '<div class="scroll"><table id="window-samples"><tr><th class="l">request</th><th class="l">question</th>'
           + "".join(f"<th>{e(m)}</th>" for m in metrics) + '<th class="l">state</th></tr>']
    for trace_id, state, reason, run_id, sample, _ in rows:
        question = ""
        if sample:
            try:
                question = str(json.loads(sample).get("question") or "")
            except ValueError:
                question = ""
        name = e(trace_id)
        link = (f'<a href="{e(url("run", str(run_id), "sample", str(trace_id)))}">{name}</a>'
                if run_id and state == "evaluated" else name)
        cells = []
        for m in metrics:
            outcome, value = scores.get(str(trace_id), {}).get(m, ("", None))
            cells.append(f"<td>{_f(value) if outcome == 'scored' else e(outcome)}</td>")
        what = e(state) + (f": {t(reason)}" if reason else "")
        out.append(f'<tr><td class="l">{link}</td><td class="q">{t(question[:300])}</td>{"".join(cells)}'
                   f'<td class="l">{what}</td></tr>')
    out.append("</table></div>")
    return "".join(out)


def window_arg(value: Any) -> float | None:
    """A window length given as ?window= (seconds, or 30s/15m/1h)."""
    if value in (None, ""):
        return None
    from ..monitor import parse_window

    text = str(value)
    return float(text) if text.replace(".", "", 1).isdigit() and float(text) > 0 else parse_window(text)
