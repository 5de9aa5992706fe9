"""A run's page: filters (metric, outcome, score range), full-text search, sort and label filter
(:class:`RunQuery`), the selection they make, the metric means corrected by the labels, and a
page of samples with their scores.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from ..errors import ConfigError
from ..report import corrected_estimate, fmt, fmt_ci, too_few_labels_text
from ._assets import e, t, url
from ._model import OUTCOMES, SORTS, Filter, RunTable
from ._parts import LabelView, _arrow, _date

__all__ = ["PAGE_SIZE", "RunQuery", "Selection", "corrected_table", "run_body", "select"]


PAGE_SIZE = 50


def _badge(table: RunTable, metric: str, i: int) -> str:
    outcome = table.outcomes[metric][i]
    v = table.values[metric][i]
    if v is None:
        cls = "failed" if outcome == "failed" else outcome
        return f'<span class="badge {e(cls)}">{e(outcome)}</span>'
    o = table.oriented(metric, i)
    cls = "low" if o is not None and o < 0.5 else ""
    return f'<span class="badge {cls}">{fmt(v)}</span>'


@dataclass(frozen=True)
class RunQuery:
    """A run page's request: its filter, search text, page and label filter."""

    filter: Filter
    q: str = ""
    page: int = 1
    labels: str = ""  # "", "unlabelled", "labelled"

    @classmethod
    def parse(cls, params: Mapping[str, str]) -> RunQuery:
        def number(name: str) -> float | None:
            raw = params.get(name, "").strip()
            if not raw:
                return None
            try:
                value = float(raw)
            except ValueError:
                raise ConfigError(f"'{name}' must be a number, not '{raw}'") from None
            if not math.isfinite(value):
                raise ConfigError(f"'{name}' must be a finite number, not '{raw}'")
            return value

        try:
            page = max(1, int(params.get("page", "1") or "1"))
        except ValueError:
            raise ConfigError(f"'page' must be a whole number, not '{params.get('page')}'") from None
        labels = params.get("labels", "")
        if labels not in ("", "unlabelled", "labelled"):
            raise ConfigError(f"'labels' must be labelled or unlabelled, not '{labels}'")
        threshold = number("threshold")
        return cls(Filter(params.get("metric") or None, params.get("outcome") or None, number("low"),
                          number("high"), params.get("sort") or "data", 0.5 if threshold is None else threshold),
                   params.get("q", "").strip(), page, labels)

    def params(self, **change: Any) -> dict[str, Any]:
        f = self.filter
        out: dict[str, Any] = {"metric": f.metric, "outcome": f.outcome, "low": f.low, "high": f.high,
                               "sort": None if f.sort == "data" else f.sort,
                               "threshold": None if f.threshold == 0.5 else f.threshold,
                               "q": self.q or None, "labels": self.labels or None, "page": None}
        out.update(change)
        return out


def _select(name: str, label: str, options: Sequence[tuple[str, str]], chosen: str | None) -> str:
    opts = "".join(f'<option value="{e(v)}"{" selected" if v == (chosen or "") else ""}>{t(text)}</option>'
                   for v, text in options)
    return f'<label>{e(label)}<select name="{e(name)}" id="{e(name)}">{opts}</select></label>'


def _summary_table(table: RunTable) -> str:
    rows = ['<div class="scroll"><table><thead><tr><th class="l">metric</th><th>mean</th><th>scored</th>'
            '<th>undetermined</th><th>failed</th><th>skipped</th></tr></thead><tbody>']
    for m in table.metrics:
        mean, _ = table.mean(m)
        c = table.counts(m)
        rows.append(f'<tr><td class="l">{t(m)} {_arrow(table.lower.get(m, False))}</td><td>{fmt(mean)}</td>'
                    f"<td>{c['scored']:,}</td><td>{c['undetermined']:,}</td><td>{c['failed']:,}</td>"
                    f"<td>{c['skipped']:,}</td></tr>")
    rows.append("</tbody></table></div>")
    return "".join(rows)


@dataclass(frozen=True)
class Selection:
    """The samples a run page lists: all that match (positions, in order), and this page's."""

    matched: list[int]
    rows: list[int]
    page: int
    pages: int


def select(table: RunTable, query: RunQuery, hits: list[str] | None, labels: LabelView) -> Selection:
    """Filter, search hits, label filter, sort, then the requested page (the last one if it is
    past the end)."""
    selected = query.filter.select(table, hits)
    if query.labels:
        done = labels.labelled()
        want = query.labels == "labelled"
        selected = [i for i in selected if (table.ids[i] in done) == want]
    pages = max(1, math.ceil(len(selected) / PAGE_SIZE))
    page = min(query.page, pages)
    return Selection(selected, selected[(page - 1) * PAGE_SIZE: page * PAGE_SIZE], page, pages)


def corrected_table(table: RunTable, general: Mapping[str, float], own: Mapping[str, Mapping[str, float]],
                    field_name: str) -> str:
    """Each metric's raw judge mean beside its mean corrected by the labels (prediction-powered
    inference: ``ragsight.report.corrected_estimate``, as ``calibrate`` reports it), with the
    count of labels it rests on, and a warning where they are too few, worded as ``calibrate``
    words it (``ragsight.report.too_few_labels_text``)."""
    if not general and not own:
        return ""
    rows = []
    few: list[str] = []
    for m in table.metrics:
        labels = {**general, **own.get(m, {})}  # a metric's own label before the whole sample's
        if not labels:
            continue
        judged = {sid: v for sid, v in zip(table.ids, table.values[m]) if v is not None}
        n = sum(1 for sid in labels if sid in judged)
        if not n:
            continue
        off = [v for v in labels.values() if not 0.0 <= v <= 1.0]
        if off:
            rows.append(f'<tr><td class="l">{t(m)}</td><td>{n}</td><td colspan="3" class="l">labels not on the '
                        "0-1 scale: no corrected mean (<code>ragsight calibrate --label-threshold</code> "
                        "binarises them)</td></tr>")
            continue
        est = corrected_estimate(judged, labels, lower_is_better=table.lower.get(m, False))
        mark = " !" if est.too_few else ""
        if est.too_few:
            few.append(too_few_labels_text(m, est.n_labels, est.unanimous))
        rows.append(f'<tr><td class="l">{t(m)} {_arrow(table.lower.get(m, False))}</td><td>{est.n_labels}</td>'
                    f"<td>{fmt(est.judge_mean)}</td><td><b>{fmt(est.corrected_mean)}</b>{mark}</td>"
                    f"<td>{fmt_ci(*est.corrected_ci) if est.corrected_ci else '–'}</td></tr>")
    if not rows:
        return ""
    out = [f'<h2>Corrected by the labels \'{t(field_name)}\'</h2><div class="scroll"><table id="corrected"><thead><tr>'
           '<th class="l">metric</th><th>labels</th><th>judge mean</th><th>corrected mean</th><th>95% CI</th>'
           "</tr></thead><tbody>", *rows, "</tbody></table></div>",
           '<p class="muted">Prediction-powered inference (PPI++): the judge\'s mean over every scored sample, '
           "corrected by its error on the labelled ones; the same estimate as <code>ragsight calibrate RUN "
           f"--label {t(field_name)}</code>.</p>"]
    if few:
        out.append(f'<p class="warn" id="too-few"><strong>!</strong> too few labels: {t("; ".join(few))}. Those '
                   "corrected means (marked !) are rough: their interval may not cover the true mean.</p>")
    return "".join(out)


def run_body(
    table: RunTable, query: RunQuery, hits: list[str] | None, chosen: Selection, questions: Mapping[int, str],
    labels: LabelView, timing: Mapping[str, float], extra_summary: str = "",
) -> str:
    """The run page: summary, filter form, the page of samples with their scores."""
    info = table.info
    f = query.filter
    selected, rows, page, pages = chosen.matched, chosen.rows, chosen.page, chosen.pages
    parts = [f"<h1>Run {t(info.id)}</h1>",
             f'<p class="muted">{len(table):,} samples · status {t(info.status)} · data set {t(info.dataset or "–")}'
             f" · judge {t(info.judge or '–')} · created {_date(info.created_at)}</p>",
             _summary_table(table), extra_summary]
    metric_opts = [("", "any metric")] + [(m, m) for m in table.metrics]
    outcome_opts = [("", "any outcome")] + [(o, o) for o in OUTCOMES]
    sort_names = {"data": "data order", "asc": "value, lowest first", "desc": "value, highest first",
                  "informative": "most informative to label"}
    parts.append(
        f'<form class="filters" method="get" action="{e(url("run", info.id))}">'
        f'<label>search<input type="search" name="q" id="q" value="{e(query.q)}" '
        'placeholder="words in question, answer, contexts"></label>'
        + _select("metric", "metric", metric_opts, f.metric)
        + _select("outcome", "outcome", outcome_opts, f.outcome)
        + f'<label>score from<input type="number" step="any" name="low" id="low" value="{e("" if f.low is None else f.low)}"></label>'
        + f'<label>to<input type="number" step="any" name="high" id="high" value="{e("" if f.high is None else f.high)}"></label>'
        + _select("sort", "sort", [(s, sort_names[s]) for s in SORTS], f.sort)
        + _select("labels", "labels", [("", "all samples"), ("unlabelled", "unlabelled"),
                                       ("labelled", "labelled")], query.labels)
        + '<button type="submit" id="apply">Apply</button>'
        f'<a href="{e(url("run", info.id))}">clear</a></form>')
    queue = url("run", info.id, sort="informative", labels="unlabelled" if labels.enabled else None)
    parts.append(f'<p class="muted"><a href="{e(queue)}" id="queue">Label queue</a>: unlabelled samples, '
                 f"the most informative first (a score near the threshold {fmt(f.threshold, 2)}, or metrics "
                 "that disagree).</p>")
    took = " · ".join(f"{k} {v * 1000:.0f} ms" for k, v in timing.items())
    what = f"{len(selected):,} of {len(table):,} samples"
    if hits is not None:
        what += f" ({len(hits):,} match the search)"
    parts.append(f'<p id="count"><b>{what}</b> <span class="muted">{took}</span></p>')
    parts.append(_pager(table, query, page, pages))
    order = "queue" if f.sort == "informative" else None
    parts.append('<div class="scroll"><table id="samples"><thead><tr><th>#</th><th class="l">sample</th>'
                 '<th class="l">question</th>'
                 + "".join(f"<th>{t(m)} {_arrow(table.lower.get(m, False))}</th>" for m in table.metrics)
                 + ("<th>labels</th>" if labels.enabled else "")
                 + ("<th>informative</th>" if f.sort == "informative" else "") + "</tr></thead><tbody>")
    done = labels.labelled()
    for i in rows:
        sid = table.ids[i]
        q = questions.get(i, "")
        q = q if len(q) <= 160 else q[:160] + "…"
        link = url("run", info.id, "sample", sid, order=order)
        cells = "".join(f"<td>{_badge(table, m, i)}</td>" for m in table.metrics)
        lab = ""
        if labels.enabled:
            n = sum(len(v) for v in labels.of(sid).values())
            lab = f"<td>{n if sid in done else ''}</td>"
        inf = ""
        if f.sort == "informative":
            score = table.informativeness(f.threshold)[i]
            inf = f"<td>{fmt(score, 2)}</td>"
        parts.append(f'<tr><td>{i + 1}</td><td class="l"><a href="{e(link)}">{t(sid)}</a></td>'
                     f'<td class="q">{t(q)}</td>{cells}{lab}{inf}</tr>')
    parts.append("</tbody></table></div>")
    if not rows:
        parts.append("<p>No sample matches.</p>")
    parts.append(_pager(table, query, page, pages))
    return "".join(parts)


def _pager(table: RunTable, query: RunQuery, page: int, pages: int) -> str:
    links = []
    if page > 1:
        links.append(f'<a rel="prev" href="{e(url("run", table.run_id, **query.params(page=page - 1)))}">← previous</a>')
    links.append(f"page {page} of {pages}")
    if page < pages:
        links.append(f'<a rel="next" class="next" href="{e(url("run", table.run_id, **query.params(page=page + 1)))}">'
                     "next →</a>")
    return f'<div class="pager">{" ".join(links)}</div>'
