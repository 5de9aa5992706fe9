"""Agreement of metric scores with human preferences between two responses (``ragsight calibrate``
with a pair-labels file).

A pair-labels file has one row per pair of samples, ``id_1`` and ``id_2``, and the label field:
a number, or a list of numbers (one per annotator), positive when the second sample is better
(e.g. -2..2). For each metric the difference ``value(id_2) - value(id_1)`` is correlated with
every annotator's label, as in RAGChecker's meta-evaluation (Ru et al. 2024, section 4.2): a
pair whose difference is missing (a sample not scored) takes the median difference, each
difference is repeated once per annotator label, and Pearson, Spearman and Kendall are taken over
all of them. (RAGChecker also rescales the differences to [-2, 2]; that changes no correlation.)
A lower-is-better metric enters as ``1 - value``.
"""

from __future__ import annotations

import dataclasses
import os
import statistics
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from rich.console import Console
from rich.table import Table
from rich.text import Text

from .._stats import Correlations, correlations
from ..errors import ConfigError, InputError
from ..result import EvaluationResult, load_result
from ..store import Store
from ._calibrate import _values
from ._format import fmt, fmt_p
from ._label_file import parse_label_value, read_label_file

__all__ = ["PAIR_FIELDS", "PairAgreement", "PairCalibrationReport", "calibrate_pairs", "is_pair_labels",
           "print_pair_calibration"]

PAIR_FIELDS = ("id_1", "id_2")


@dataclass(frozen=True)
class PairAgreement:
    """One metric against the preferences: ``n_pairs`` pairs, ``filled`` of them with a missing
    difference replaced by the median; ``correlations`` over every (pair, annotator) label."""

    metric: str
    oriented: bool
    n_pairs: int
    filled: int
    correlations: Correlations


@dataclass(frozen=True)
class PairCalibrationReport:
    run_id: str
    label_field: str
    n_pairs: int  # pairs in the file with a readable label
    matched: int  # ... whose two ids are samples of the run
    n_labels: int  # labels of the matched pairs (one per annotator)
    unmatched: tuple[tuple[str, str], ...]
    invalid: tuple[tuple[int, str], ...]
    metrics: tuple[PairAgreement, ...]
    notes: tuple[str, ...]

    def to_dict(self) -> dict[str, Any]:
        return dataclasses.asdict(self)


def is_pair_labels(path: str | os.PathLike[str]) -> bool:
    """Whether a labels file is a pair-labels file (its rows have ``id_1`` and ``id_2``)."""
    rows = [row for _, row in read_label_file(Path(path))]
    return bool(rows) and all(all(f in r for f in PAIR_FIELDS) for r in rows)


def _labels_of(value: Any) -> list[float]:
    items = value if isinstance(value, (list, tuple)) else [value]
    out = []
    for v in items:
        x = parse_label_value(v)
        if x is not None:
            out.append(x)
    return out


def calibrate_pairs(
    source: EvaluationResult | tuple[Store, str],
    labels: str | os.PathLike[str] | Sequence[Mapping[str, Any]],
    label_field: str = "label",
    metrics: Sequence[str] | None = None,
) -> PairCalibrationReport:
    """Correlate each metric's difference between the two samples of a pair with the human
    preference ``label_field`` (see the module docstring)."""
    result = source if isinstance(source, EvaluationResult) else load_result(*source)
    rows = ([row for _, row in read_label_file(Path(labels))] if isinstance(labels, (str, os.PathLike))
            else list(labels))
    where = str(labels) if isinstance(labels, (str, os.PathLike)) else "<labels>"
    if rows and not any(label_field in r for r in rows):
        fields = sorted({k for r in rows for k in r if k not in PAIR_FIELDS})
        raise InputError(f"{where} has no field '{label_field}'; its fields: {', '.join(fields)}")
    known = {s.id for s in result.samples}
    pairs: list[tuple[str, str, list[float]]] = []
    unmatched: list[tuple[str, str]] = []
    invalid: list[tuple[int, str]] = []
    n_readable = 0
    for n, row in enumerate(rows, start=1):
        if not all(row.get(f) not in (None, "") for f in PAIR_FIELDS):
            raise InputError(f"{where}, row {n}: a pair needs both 'id_1' and 'id_2'")
        a, b = str(row["id_1"]), str(row["id_2"])
        try:
            ys = _labels_of(row.get(label_field))
        except ValueError as exc:
            invalid.append((n, str(exc)))
            continue
        if not ys:
            continue
        n_readable += 1
        if a not in known or b not in known:
            unmatched.append((a, b))
            continue
        pairs.append((a, b, ys))
    if not pairs:
        raise InputError(f"none of the {n_readable} labelled pairs in {where} has both ids among the samples of "
                         f"run {result.run_id}")
    keys = list(metrics) if metrics else list(result.metric_keys)
    unknown = [k for k in keys if k not in result.summary]
    if unknown:
        raise ConfigError(f"run {result.run_id} has no metric {', '.join(unknown)}; "
                          f"its metrics: {', '.join(result.metric_keys)}")
    notes: list[str] = []
    if invalid:
        notes.append(f"{len(invalid)} pair label(s) could not be read and were left out")
    lower = {k: s.lower_is_better for k, s in result.summary.items()}
    out: list[PairAgreement] = []
    for key in keys:
        vals = _values(result, key, lower[key])
        deltas = [vals[b] - vals[a] if a in vals and b in vals else None for a, b, _ in pairs]
        present = [d for d in deltas if d is not None]
        filled = len(deltas) - len(present)
        if not present:
            notes.append(f"{key}: no pair has both samples scored")
            out.append(PairAgreement(key, lower[key], 0, filled, correlations([], [])))
            continue
        median = statistics.median(present)
        x: list[float] = []
        y: list[float] = []
        for d, (_, _, ys) in zip(deltas, pairs):
            for label in ys:
                x.append(median if d is None else d)
                y.append(label)
        out.append(PairAgreement(key, lower[key], len(present), filled, correlations(x, y)))
        if filled:
            notes.append(f"{key}: {filled} pair(s) with a sample not scored took the median difference")
    return PairCalibrationReport(
        run_id=result.run_id, label_field=label_field, n_pairs=n_readable, matched=len(pairs),
        n_labels=sum(len(ys) for _, _, ys in pairs), unmatched=tuple(unmatched), invalid=tuple(invalid),
        metrics=tuple(out), notes=tuple(notes))


def print_pair_calibration(report: PairCalibrationReport, console: Console | None = None) -> None:
    c = console or Console(highlight=False)
    c.print(Text(f"Run {report.run_id} against pairwise preferences '{report.label_field}' "
                 f"(positive: the second sample is better)"))
    c.print(f"{report.matched} of {report.n_pairs} labelled pairs matched by id ({report.n_labels} labels).")
    if report.unmatched:
        shown = ", ".join(f"{a}/{b}" for a, b in report.unmatched[:5])
        c.print(Text(f"{len(report.unmatched)} pair(s) match no samples of the run: {shown}", style="yellow"))
    t = Table(title="Correlation of the difference with the preference (p-value)", title_justify="left")
    for col in ("metric", "pairs", "Pearson", "Spearman", "Kendall"):
        t.add_column(col, justify="left" if col == "metric" else "right")
    for m in report.metrics:
        cr = m.correlations
        t.add_row(Text(m.metric + (" (1-x)" if m.oriented else "")), str(m.n_pairs),
                  *(f"{fmt(v)} ({fmt_p(p)})" if v is not None else "–"
                    for v, p in ((cr.pearson, cr.pearson_p), (cr.spearman, cr.spearman_p),
                                 (cr.kendall, cr.kendall_p))))
    c.print(t)
    c.print("Each pair's difference (second minus first) is repeated once per annotator label; a pair with a "
            "sample not scored takes the median difference (RAGChecker's protocol).")
    for note in report.notes:
        c.print(Text(f"note: {note}", style="yellow"))
