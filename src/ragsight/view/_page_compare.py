"""The compare page: :func:`ragsight.report.compare` on the chosen runs (from the viewer's
tables, without texts or evidence), then the samples that changed most between them.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from .._score import Outcome, Score
from ..dataset import Sample
from ..errors import ConfigError
from ..metrics import resolve_metrics
from ..report import (
    Comparison,
    PoorPairingError,
    RunData,
    ci_notes,
    compare,
    describe_rows,
    fmt,
    fmt_ci,
    fmt_p,
    fmt_signed,
)
from ..result import EvaluationResult
from ._assets import e, t, url
from ._model import NOT_APPLICABLE, RunTable
from ._parts import _arrow

__all__ = ["compare_body", "comparison", "light_run"]


def _light_samples(table: RunTable) -> list[Sample]:
    """The run's samples as ids, with a turn's conversation and number (what pairs it)."""
    turns = table.turns or [(None, None)] * len(table.ids)
    return [Sample(id=sid, conversation_id=c, turn=n) for sid, (c, n) in zip(table.ids, turns)]


def light_run(table: RunTable) -> RunData:
    """A run as :func:`ragsight.report.compare` needs it, from the viewer's table: sample ids
    (with a turn's conversation and number, which pair it), outcomes and values (no texts, no
    evidence: compare reads neither), configuration as ``load_runs`` builds it."""
    samples = _light_samples(table)
    scores: dict[str, dict[str, Score]] = {}
    for m in table.metrics:
        outs, vals, why = table.outcomes[m], table.values[m], table.reasons.get(m, {})
        for i, sid in enumerate(table.ids):
            if outs[i] in ("missing", NOT_APPLICABLE):  # not scored, or a metric of the other level
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
        f'<li><b>{"ABCDEFGHIJKLMNOPQRSTUVWXYZ"[k]}</b> = <a href="{e(url("run", tb.run_id))}">{t(tb.run_id)}</a>'
        f' ({t(describe_rows(_light_samples(tb)))}){" (baseline)" if k == 0 else ""}</li>'
        for k, tb in enumerate(tables)) + "</ul>")
    if error is not None:
        again = url("compare", run=ids, allow_poor="1")
        parts.append(f'<p class="warn">{t(error)}</p><p><a href="{e(again)}">Compare the paired part anyway</a></p>')
        return "".join(parts)
    assert cmp is not None
    for pr in cmp.pairing:
        if pr.partial:
            parts.append(f'<p class="warn">Only {t(pr.shortfall())}.</p>')
        else:
            parts.append(f'<p class="muted">Pairing: {t(pr.describe())} ({pr.share:.0%}).</p>')
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
