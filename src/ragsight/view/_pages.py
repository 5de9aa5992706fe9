"""The viewer's pages, rendered on the server as plain HTML (they read without JavaScript; the
script only sends labels and adds keyboard shortcuts).

- runs: every run with its data set, judge, settings, date and metric means; each metric's trend
  over the runs of one data set; a form to compare two or more runs;
- run: filters (metric, outcome, score range), full-text search, sort, pages of samples;
- sample: the whole evidence trail, with the controls to label it;
- compare: :func:`ragsight.report.compare` on the chosen runs, then the samples that changed most.
"""

from __future__ import annotations

import datetime as dt
import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from .._score import Outcome, Score
from ..dataset import Sample
from ..errors import ConfigError
from ..metrics import resolve_metrics
from ..report import (
    MIN_LABELS,
    Comparison,
    Marks,
    PoorPairingError,
    RunData,
    ci_notes,
    compare,
    config_text,
    corrected_estimate,
    fmt,
    fmt_ci,
    fmt_p,
    fmt_signed,
)
from ..result import EvaluationResult
from ..store import ANY_METRIC, RunInfo, Store
from ._assets import e, t, url, visible
from ._model import OUTCOMES, SORTS, Filter, RunTable

__all__ = ["PAGE_SIZE", "LabelView", "compare_body", "run_body", "runs_body", "sample_body"]

PAGE_SIZE = 50


@dataclass
class LabelView:
    """The labels of one run as pages show them: per sample id, per (metric, claim key or None),
    who gave which value."""

    by_sample: dict[str, dict[tuple[str, str | None], dict[str, float]]] = field(default_factory=dict)
    enabled: bool = False

    def labelled(self) -> set[str]:
        return set(self.by_sample)

    def of(self, sample_id: str) -> dict[tuple[str, str | None], dict[str, float]]:
        return self.by_sample.get(sample_id, {})


def _date(ts: float | None) -> str:
    if not ts:
        return "–"
    return dt.datetime.fromtimestamp(ts, dt.timezone.utc).strftime("%Y-%m-%d %H:%M UTC")


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


def _badge(table: RunTable, metric: str, i: int) -> str:
    outcome = table.outcomes[metric][i]
    v = table.values[metric][i]
    if v is None:
        cls = "failed" if outcome == "failed" else outcome
        return f'<span class="badge {e(cls)}">{e(outcome)}</span>'
    o = table.oriented(metric, i)
    cls = "low" if o is not None and o < 0.5 else ""
    return f'<span class="badge {cls}">{fmt(v)}</span>'


def _arrow(lower: bool) -> str:
    return "↓" if lower else "↑"


# ---- runs ---------------------------------------------------------------------------------------


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


# ---- a run --------------------------------------------------------------------------------------


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
    count of labels it rests on, and a warning where they are too few."""
    if not general and not own:
        return ""
    rows = []
    few = False
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
        few = few or est.too_few
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
        out.append(f'<p class="warn"><strong>!</strong> fewer than {MIN_LABELS} labels: the corrected mean rests on '
                   "too few to be trusted; its interval may not cover the true mean.</p>")
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


# ---- a sample -----------------------------------------------------------------------------------


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

    return e(json.dumps({k: (int(v) if float(v).is_integer() else v) for k, v in by.items()}))


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
            metric_html.append(f'<section class="metric"><h3>{t(m)} {_arrow(lower)} '
                               '<span class="badge missing">not scored yet</span></h3></section>')
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
    if conversation is not None:  # a turn of a conversation: named, its history not shown yet
        turn = getattr(sample, "turn", None)
        fields.append(f'<p class="muted" id="conversation">conversation {t(conversation)}'
                      f'{"" if turn is None else f", turn {t(turn)}"}</p>')
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


# ---- compare ------------------------------------------------------------------------------------


def light_run(table: RunTable) -> RunData:
    """A run as :func:`ragsight.report.compare` needs it, from the viewer's table: sample ids
    (with a turn's conversation and number, which pair it), outcomes and values (no texts, no
    evidence: compare reads neither), configuration as ``load_runs`` builds it."""
    turns = table.turns or [(None, None)] * len(table.ids)
    samples = [Sample(id=sid, conversation_id=c, turn=n) for sid, (c, n) in zip(table.ids, turns)]
    scores: dict[str, dict[str, Score]] = {}
    for m in table.metrics:
        outs, vals, why = table.outcomes[m], table.values[m], table.reasons.get(m, {})
        for i, sid in enumerate(table.ids):
            if outs[i] == "missing":
                continue
            scores.setdefault(sid, {})[m] = Score(m, Outcome(outs[i]), vals[i], why.get(i, ""))
    info = table.info
    result = EvaluationResult(info.id, samples, resolve_metrics(table.metrics), scores, info.stats, [],
                              None, info.status, info.config)
    config: dict[str, Any] = dict(info.metadata)
    for key, value in (("judge", info.judge), ("embedder", info.embedder), ("dataset", info.dataset)):
        if value is not None and key not in config:
            config[key] = value
    return RunData(result, config, info.created_at)


def _pair_key(table: RunTable, i: int) -> tuple[str, ...]:
    """What pairs a sample across runs, as ``compare`` pairs it: a turn by its conversation and
    number, any other sample by its id."""
    conv, turn = table.turns[i] if table.turns else (None, None)
    if conv is not None:
        return ("turn", conv, "" if turn is None else str(turn))
    return ("id", table.ids[i])


def changed_most(tables: Sequence[RunTable], limit: int = 50) -> list[tuple[float, str, str, int]]:
    """(largest change, sample id in the first run, its partner's id, run index) of the samples
    whose scores moved most between the first run and another, over the metrics both scored;
    largest first, ties in data order; samples that did not move are left out."""
    base = tables[0]
    found: list[tuple[float, str, str, int]] = []
    for j, other in enumerate(tables[1:], start=1):
        metrics = [m for m in base.metrics if m in other.values]
        partner = {_pair_key(other, k): k for k in range(len(other))}
        for i, sid in enumerate(base.ids):
            k = partner.get(_pair_key(base, i))
            if k is None:
                continue
            diffs = [abs(b - a) for m in metrics
                     if (a := base.values[m][i]) is not None and (b := other.values[m][k]) is not None]
            if diffs and max(diffs) > 0:
                found.append((max(diffs), sid, other.ids[k], j))
    found.sort(key=lambda x: (-x[0], base.position[x[1]], x[3]))
    return found[:limit]


def compare_body(tables: Sequence[RunTable], cmp: Comparison | None, error: str | None, took_s: float,
                 moved: Sequence[tuple[float, str, str, int]]) -> str:
    ids = [tb.run_id for tb in tables]
    parts = ["<h1>Comparison</h1>"]
    parts.append("<ul>" + "".join(
        f'<li><b>{"ABCDEFGHIJKLMNOPQRSTUVWXYZ"[k]}</b> = <a href="{e(url("run", rid))}">{t(rid)}</a>'
        f'{" (baseline)" if k == 0 else ""}</li>' for k, rid in enumerate(ids)) + "</ul>")
    if error is not None:
        again = url("compare", run=ids, allow_poor="1")
        parts.append(f'<p class="warn">{t(error)}</p><p><a href="{e(again)}">Compare the paired part anyway</a></p>')
        return "".join(parts)
    assert cmp is not None
    for pr in cmp.pairing:
        cls = "warn" if pr.partial else "muted"
        parts.append(f'<p class="{cls}">{"Only " if pr.partial else "Pairing: "}{t(pr.describe())} ({pr.share:.0%}).</p>')
    parts.append('<h2>Means</h2><div class="scroll"><table><thead><tr><th class="l">metric</th>'
                 + "".join(f"<th>{r.label}</th>" for r in cmp.runs) + "</tr></thead><tbody>")
    for row in cmp.table:
        cells = "".join(f"<td>{fmt(mv)}{' ★' if k in row.best and len(cmp.runs) > 1 else ''}</td>"
                        for k, mv in enumerate(row.means))
        parts.append(f'<tr><td class="l">{t(row.metric)} {_arrow(row.lower_is_better)}</td>{cells}</tr>')
    parts.append("</tbody></table></div>")
    parts.append(f'<h2>Paired differences <span class="muted">(as <code>ragsight compare</code>: permutation '
                 f"test, {cmp.confidence:.0%} CI unadjusted, verdict by Holm-adjusted p &lt; {cmp.alpha:g})</span></h2>")
    parts.append('<div class="scroll"><table id="paired"><thead><tr><th class="l">metric</th><th>run</th><th>pairs</th>'
                 '<th>diff (run − A)</th><th>CI</th><th>p</th><th>p (Holm)</th><th class="l">verdict</th></tr></thead><tbody>')
    for p in cmp.paired:
        d = p.difference
        parts.append(f'<tr><td class="l">{t(p.metric)} {_arrow(p.lower_is_better)}</td><td>{p.other}</td>'
                     f"<td>{d.n} of {p.shared}</td><td>{fmt_signed(d.diff)}</td>"
                     f"<td>{fmt_ci(d.ci_low, d.ci_high, signed=True)}</td><td>{fmt_p(d.p_value)}</td>"
                     f'<td>{fmt_p(p.p_holm)}</td><td class="l">{t(p.verdict)}</td></tr>')
    parts.append("</tbody></table></div>")
    parts += [f'<p class="muted">{t(note)}</p>' for note in ci_notes(cmp)]
    parts.append('<h2>Samples that changed most</h2><div class="scroll"><table id="changed"><thead><tr>'
                 '<th>largest change</th><th class="l">sample</th><th>run</th>'
                 + "".join(f"<th>{t(m)}</th>" for m in tables[0].metrics) + "</tr></thead><tbody>")
    base = tables[0]
    if not moved:
        parts.append('<tr><td colspan="99" class="l">No sample scored in both runs changed.</td></tr>')
    for change, sid, other_sid, j in moved:
        other = tables[j]
        i, k = base.position[sid], other.position[other_sid]
        row_cells: list[str] = []
        for m in base.metrics:
            a = base.values[m][i]
            b = other.values[m][k] if m in other.values else None
            row_cells.append(f"<td>{fmt(a)} → {fmt(b)}</td>" if a is not None or b is not None else "<td>–</td>")
        parts.append(f'<tr><td>{fmt(change)}</td><td class="l"><a href="{e(url("run", other.run_id, "sample", other_sid))}">'
                     f'{t(other_sid)}</a> <a class="muted" href="{e(url("run", base.run_id, "sample", sid))}">(in A)</a></td>'
                     f'<td>{cmp.runs[j].label}</td>{"".join(row_cells)}</tr>')
    parts.append("</tbody></table></div>")
    parts.append(f'<p class="muted">computed in {took_s * 1000:.0f} ms</p>')
    return "".join(parts)


def comparison(tables: Sequence[RunTable], allow_poor: bool
               ) -> tuple[Comparison | None, str | None, list[tuple[float, str, str, int]]]:
    """:func:`ragsight.report.compare` on the runs (the first is the baseline), or on a poor
    pairing the refusal's message instead; and the samples that changed most."""
    if len(tables) < 2:
        raise ConfigError("pick two runs or more to compare")
    try:
        cmp = compare([light_run(tb) for tb in tables], allow_poor_pairing=allow_poor)
    except PoorPairingError as exc:
        return None, str(exc), []
    return cmp, None, changed_most(tables)
