"""The runs page: every run with its data set, judge, settings, date and metric means (a checkbox
to compare two or more), then each metric's trend over the runs of one data set.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

from ..report import config_text, fmt
from ..store import RunInfo, Store
from ._assets import e, t, url
from ._model import RunTable
from ._parts import _arrow, _date

__all__ = ["runs_body"]


def _settings(info: RunInfo) -> str:
    """The run's metadata, then the analysis settings it ran with, as ``key=value`` lines."""
    parts = [f"{k}={config_text(v)}" for k, v in info.metadata.items()]
    settings = info.config.get("settings")
    if isinstance(settings, Mapping):
        parts += [f"{k}={config_text(v)}" for k, v in settings.items()]
    if not parts:
        return '<span class="muted">–</span>'
    shown = "<br>".join(t(p) for p in parts[:4])
    if len(parts) > 4:
        rest = "<br>".join(t(p) for p in parts[4:])
        shown += f'<details><summary class="muted">{len(parts) - 4} more</summary>{rest}</details>'
    return shown


def _trend_svg(points: Sequence[tuple[str, float]]) -> str:
    """A metric's mean over runs (oldest first) as a small inline line chart; each point names its
    run and value in a tooltip."""
    w, h, left, right, top, bottom = 260, 90, 30, 8, 8, 16
    values = [v for _, v in points]
    lo, hi = min(0.0, min(values)), max(1.0, max(values))
    pw, ph = w - left - right, h - top - bottom

    def x(i: int) -> float:
        return left + (pw * i / (len(points) - 1) if len(points) > 1 else pw / 2)

    def y(v: float) -> float:
        return top + ph * (1 - (v - lo) / (hi - lo))

    path = " ".join(f"{x(i):.1f},{y(v):.1f}" for i, (_, v) in enumerate(points))
    dots = "".join(f'<circle class="dot" cx="{x(i):.1f}" cy="{y(v):.1f}" r="3"><title>{e(rid)}: {fmt(v)}</title>'
                   "</circle>" for i, (rid, v) in enumerate(points))
    return (f'<svg width="{w}" height="{h}" viewBox="0 0 {w} {h}" role="img">'
            f'<line class="axis" x1="{left}" y1="{top + ph}" x2="{left + pw}" y2="{top + ph}"/>'
            f'<line class="axis" x1="{left}" y1="{top}" x2="{left}" y2="{top + ph}"/>'
            f'<text x="2" y="{top + 4}">{fmt(hi, 1)}</text><text x="2" y="{top + ph}">{fmt(lo, 1)}</text>'
            f'<polyline class="line" points="{path}"/>{dots}'
            f'<text x="{left}" y="{h - 3}">oldest</text><text x="{left + pw - 30}" y="{h - 3}">newest</text></svg>')


def runs_body(store: Store, tables: Mapping[str, RunTable], infos: Sequence[RunInfo]) -> str:
    """The runs page: a table of every run (newest first) with a checkbox to compare, then the
    trend of each metric over the runs of each data set."""
    counts = store.sample_counts()
    parts = [f"<h1>Runs <span class=\"muted\">{len(infos)} in {e(store.path)}</span></h1>"]
    if not infos:
        parts.append("<p>No runs yet: run <code>ragsight evaluate</code> with this store first.</p>")
        return "".join(parts)
    parts.append('<form class="pick" method="get" action="/compare"><div class="scroll"><table><thead><tr>'
                 '<th>compare</th><th class="l">run</th><th class="l">status</th><th class="l">data set</th>'
                 '<th class="l">judge</th><th>samples</th><th class="l">created</th><th class="l">settings</th>'
                 '<th class="l">metric means (scored)</th></tr></thead><tbody>')
    for info in infos:
        table = tables[info.id]
        n, done = counts.get(info.id, (0, 0))
        means = []
        for m in table.metrics:
            mean, k = table.mean(m)
            means.append(f"{t(m)} {_arrow(table.lower.get(m, False))} <b>{fmt(mean)}</b> "
                         f'<span class="muted">({k})</span>')
        parts.append(
            f'<tr><td><input type="checkbox" name="run" value="{e(info.id)}" aria-label="compare {e(info.id)}"></td>'
            f'<td class="l"><a href="{e(url("run", info.id))}">{t(info.id)}</a></td>'
            f'<td class="l">{t(info.status)}</td><td class="l q">{t(info.dataset or "–")}</td>'
            f'<td class="l">{t(info.judge or "–")}</td><td>{n:,}{"" if done == n else f" ({done:,} done)"}</td>'
            f'<td class="l">{_date(info.created_at)}</td><td class="l q">{_settings(info)}</td>'
            f'<td class="l">{"<br>".join(means) or "–"}</td></tr>')
    parts.append('</tbody></table></div><p><button type="submit">Compare the selected runs</button> '
                 '<span class="muted">(two or more; the oldest is the baseline; <label><input type=checkbox '
                 "name=allow_poor value=1> even when they share few samples</label>)</span></p></form>")

    groups: dict[str, list[RunInfo]] = {}
    for info in infos:
        groups.setdefault(info.dataset or "(no data set recorded)", []).append(info)
    trends = []
    for dataset, runs in groups.items():
        if len(runs) < 2:
            continue
        runs = sorted(runs, key=lambda r: r.created_at)
        metrics: list[str] = []
        for r in runs:
            metrics += [m for m in tables[r.id].metrics if m not in metrics]
        figures = []
        for m in metrics:
            points = [(r.id, mean) for r in runs if (mean := tables[r.id].mean(m)[0]) is not None]
            if len(points) < 2:
                continue
            figures.append(f"<figure>{_trend_svg(points)}<figcaption><b>{t(m)}</b> {_arrow(tables[runs[0].id].lower.get(m, False))}"
                           f" mean over {len(points)} runs</figcaption></figure>")
        if figures:
            trends.append(f"<h3>{t(dataset)} <span class=\"muted\">{len(runs)} runs</span></h3>"
                          f'<div class="trends">{"".join(figures)}</div>')
    parts.append("<h2>Trends</h2>")
    parts.append("".join(trends) if trends else
                 '<p class="muted">A trend needs two runs or more of the same data set.</p>')
    return "".join(parts)
