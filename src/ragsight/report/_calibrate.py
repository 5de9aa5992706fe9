"""Agreement of metric scores with human labels (docs METRICS.md, "Agreement with human labels").

Labels come from a JSONL, JSON or CSV file with an ``id`` column and a label field, joined to
the run's samples by id. Binary labels (true/false, yes/no, correct/wrong, 1/0) give AUROC,
accuracy and Cohen's kappa at a threshold and at the best threshold (Youden's J), expected
calibration error, the telecom study's concordance table for a pair of metrics, and the
study's group statistics: mean (s.d.) per label group with a one-sided Welch t-test
(label 1 > label 0). Graded labels (e.g. 1-5) give Spearman, Kendall and Pearson; binarise
them with ``label_threshold`` for the rest.

A metric where lower is better (noise_sensitivity) enters as ``1 - value``, so that for every
metric a higher number should go with label 1 and an AUROC above 0.5 means agreement.
"""

from __future__ import annotations

import csv
import dataclasses
import json
import math
import os
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal

from rich.console import Console
from rich.text import Text

from .._score import Outcome
from .._stats import (
    MIN_LABELS,
    ConcordanceTable,
    ConditionalRate,
    Correlations,
    GroupComparison,
    ThresholdMetrics,
    auroc,
    best_threshold,
    concordance_table,
    corrected_estimate,
    correlations,
    expected_calibration_error,
    group_comparison,
    threshold_metrics,
)
from ..errors import ConfigError, InputError
from ..result import EvaluationResult, load_result
from ..store import ANY_METRIC, Label, Store
from ._compare import MIN_PAIRED_SHARE, PoorPairingError
from ._format import compact_table, fmt, fmt_ci, fmt_p

__all__ = [
    "CalibrationReport",
    "MetricCalibration",
    "PairConcordance",
    "calibrate",
    "load_labels",
    "print_calibration",
    "split_labels",
    "store_labels",
]

DEFAULT_PAIR = ("faithfulness", "factual_correctness")
ID_FIELDS = ("id", "sample_id", "qid", "question_id")
_TRUE = {"1", "true", "yes", "y", "correct", "right", "pass", "positive"}
_FALSE = {"0", "false", "no", "n", "wrong", "incorrect", "fail", "negative"}


@dataclass(frozen=True)
class MetricCalibration:
    """One metric against the labels, over the ``n`` labelled samples where it was scored.

    ``oriented``: the metric is lower-is-better and entered as 1 - value. The binary
    statistics (``auroc``, ``at_threshold``, ``best_threshold``, ``at_best``, ``ece``,
    ``groups``) are ``None`` for graded labels that were not binarised, and where the data
    leave them undefined (one class only; ECE for values outside [0, 1]).
    ``groups``: group 1 = label 1, group 0 = label 0; the p-value is one-sided, mean(1) > mean(0).
    """

    metric: str
    oriented: bool
    n: int
    not_scored: int
    auroc: float | None
    at_threshold: ThresholdMetrics | None
    best_threshold: float | None
    at_best: ThresholdMetrics | None
    correlations: Correlations
    ece: float | None
    groups: GroupComparison | None
    mean: float | None = None
    """The judge's raw mean over every sample where the metric scored (not only the labelled)."""
    n_labels: int = 0
    """The labels the corrected mean rests on (labelled samples where the metric scored)."""
    n_judged: int = 0
    """The samples where the metric scored (the judge's mean is over these)."""
    corrected_mean: float | None = None
    """The mean corrected by the labels (PPI++, ``_stats.corrected_estimate``), on the metric's
    scale; None where the labels are not on it (graded labels outside [0, 1], not binarised;
    values outside [0, 1]) or fewer than 2."""
    corrected_ci: tuple[float, float] | None = None
    corrected_lambda: float | None = None
    """The weight PPI++ gave the judge: 1 plain PPI, 0 the labels alone."""
    labels_mean: float | None = None
    """The labels' own mean (oriented to the metric's scale), for comparison."""
    too_few_labels: bool = False
    """Fewer than ``MIN_LABELS`` (10) labels: the corrected mean and its CI are rough."""


@dataclass(frozen=True)
class PairConcordance:
    """The telecom study's concordance table for two metrics, over the ``n`` labelled samples
    where both were scored."""

    m1: str
    m2: str
    n: int
    table: ConcordanceTable


@dataclass(frozen=True)
class CalibrationReport:
    """What ``ragsight calibrate`` prints (``to_dict()`` is its ``--json`` output)."""

    run_id: str
    label_field: str
    label_kind: Literal["binary", "graded"]
    binarised_at: float | None
    threshold: float
    n_labels: int
    matched: int
    unmatched_ids: tuple[str, ...]
    unlabelled: int
    invalid: tuple[tuple[str, str], ...]
    n_positive: int
    n_negative: int
    metrics: tuple[MetricCalibration, ...]
    concordance: PairConcordance | None
    notes: tuple[str, ...]
    label_range: tuple[float, float] | None = None
    """The smallest and largest label value paired with a sample."""
    labels_source: str = "file"
    """Where the labels came from: "file" (a file, mapping or rows) or "store"."""

    @property
    def paired_share(self) -> float:
        """The labels that pair with a sample of the run (by id), over all readable labels."""
        return self.matched / self.n_labels if self.n_labels else 0.0

    def to_dict(self) -> dict[str, Any]:
        return {**dataclasses.asdict(self), "paired_share": self.paired_share}


# ---------------------------------------------------------------------------------------------
# Labels


def _parse_label(value: Any) -> float | None:
    """A label as a number: booleans and yes/no words as 1/0, numbers as they are; ``None``
    for an empty value. Raises ValueError for anything else."""
    if value is None:
        return None
    if isinstance(value, bool):
        return 1.0 if value else 0.0
    if isinstance(value, (int, float)):
        x = float(value)
        if not math.isfinite(x):
            raise ValueError(f"label {value!r} is not a finite number")
        return x
    text = str(value).strip().lower()
    if text == "":
        return None
    if text in _TRUE:
        return 1.0
    if text in _FALSE:
        return 0.0
    try:
        x = float(text)
    except ValueError:
        raise ValueError(f"label {value!r} is neither a number nor yes/no") from None
    if not math.isfinite(x):
        raise ValueError(f"label {value!r} is not a finite number")
    return x


def _rows(path: Path) -> list[Mapping[str, Any]]:
    suffix = path.suffix.lower()
    try:
        if suffix == ".csv":
            with path.open(newline="", encoding="utf-8-sig") as f:
                return list(csv.DictReader(f))
        text = path.read_text(encoding="utf-8")
    except FileNotFoundError:
        raise InputError(f"labels file {path} does not exist") from None
    except OSError as exc:
        raise InputError(f"cannot read labels file {path}: {exc}") from None
    if suffix == ".json":
        try:
            data = json.loads(text)
        except json.JSONDecodeError as exc:
            raise InputError(f"{path}: not valid JSON ({exc})") from None
        if not isinstance(data, list):
            raise InputError(f"{path}: expected a JSON list of objects with 'id' and the label")
        return [r for r in data if isinstance(r, Mapping)]
    rows: list[Mapping[str, Any]] = []
    for lineno, line in enumerate(text.splitlines(), start=1):
        if not line.strip():
            continue
        try:
            row = json.loads(line)
        except json.JSONDecodeError as exc:
            raise InputError(f"{path}, line {lineno}: not valid JSON ({exc.msg})") from None
        if not isinstance(row, Mapping):
            raise InputError(f"{path}, line {lineno}: expected an object with 'id' and the label")
        rows.append(row)
    return rows


def _label_rows(rows: Sequence[Mapping[str, Any]], label_field: str, source: str) -> dict[str, Any]:
    out: dict[str, Any] = {}
    has_field = False
    for n, row in enumerate(rows, start=1):
        key = next((k for k in ID_FIELDS if k in row and row[k] not in (None, "")), None)
        turn_key = _turn_key(row)
        if key is None and turn_key is None:
            raise InputError(
                f"{source}, row {n}: no 'id' field; each label row needs the sample id "
                "(or, for a turn of a conversation, its conversation_id and turn)"
            )
        sid: str = str(row[key]) if key is not None else turn_key  # type: ignore[assignment]
        if sid in out:
            raise InputError(f"{source}: id '{sid}' is labelled twice; ids must be unique")
        has_field = has_field or label_field in row
        out[sid] = row.get(label_field)
    if rows and not has_field:
        fields = sorted({k for r in rows for k in r if k not in ID_FIELDS})
        raise InputError(f"{source} has no field '{label_field}'; its fields: {', '.join(fields)}")
    return out


class TurnLabel(str):
    """A label's key that names a turn of a conversation (``conversation_id`` and ``turn``)
    rather than a sample id; :func:`calibrate` finds the turn's sample in the run."""

    conversation_id: str
    turn: str


def _turn_key(row: Mapping[str, Any]) -> TurnLabel | None:
    cid, turn = row.get("conversation_id"), row.get("turn")
    if cid in (None, "") or turn in (None, ""):
        return None
    try:
        t = str(int(float(turn)))  # a CSV cell '1', a JSON 1 or 1.0
    except (TypeError, ValueError):
        return None
    key = TurnLabel(f"conversation {cid} turn {t}")
    key.conversation_id, key.turn = str(cid), t
    return key


def _turn_ids(raw: Mapping[str, Any], result: EvaluationResult) -> dict[str, Any]:
    """Labels keyed by a turn (conversation id and turn) re-keyed by the turn's sample id in
    the run; a turn the run does not have keeps its key (and pairs with nothing)."""
    turns = {(s.conversation_id, str(s.turn)): s.id for s in result.samples
             if s.conversation_id is not None and s.turn is not None}
    out: dict[str, Any] = {}
    for key, value in raw.items():
        if isinstance(key, TurnLabel):
            key = turns.get((key.conversation_id, key.turn), str(key))
        out[key] = value
    return out


def load_labels(path: str | os.PathLike[str], label_field: str) -> dict[str, Any]:
    """Read a labels file (.jsonl, .json or .csv) into {sample id: raw label value}.

    Each row needs an ``id`` (or ``sample_id``, ``qid``, ``question_id``; for a turn of a
    conversation, its ``conversation_id`` and ``turn`` do) and ``label_field``.
    """
    p = Path(path)
    return _label_rows(_rows(p), label_field, str(p))


def store_labels(store: Store, run_id: str, label_field: str
                 ) -> tuple[dict[str, float], dict[str, dict[str, float]], list[str]]:
    """The store's sample labels of field ``label_field`` for a run's samples: ({sample id:
    label of the whole sample}, {metric: {sample id: the metric's own label}}, notes). Claim
    labels are not read here. Where several people labelled the same sample for the same metric,
    the latest label counts (and a note says how often). Raises InputError when there is none."""
    found = store.labels(run_id, field=label_field)
    if not any(lb.claim is None for lb in found):
        fields = sorted({lb.field for lb in store.labels(run_id)})
        have = (f"its samples have labels {', '.join(repr(f) for f in fields)}" if fields
                else "its samples have no labels")
        raise InputError(
            f"no sample labels '{label_field}' in {store.path} for run {run_id} ({have}"
            f"{'; ' + str(len(found)) + ' claim labels' if found else ''}). Import a file with "
            f"'ragsight labels import FILE --run {run_id} --label {label_field}', or pass --labels FILE."
        )
    return split_labels(found, label_field)


def split_labels(labels: Sequence[Label], label_field: str
                 ) -> tuple[dict[str, float], dict[str, dict[str, float]], list[str]]:
    """Labels of one run (``Store.labels(run_id)``) as :func:`store_labels` gives them: the
    sample labels of ``label_field`` by sample id, the whole sample's and each metric's own."""
    sample_level = [lb for lb in labels if lb.claim is None and lb.field == label_field]
    latest: dict[tuple[str, str], tuple[str, float]] = {}
    several = set()
    for lb in sample_level:
        at = (lb.sample_id or "", lb.metric)
        if at in latest:
            several.add(at)
            if lb.when < latest[at][0]:
                continue
        latest[at] = (lb.when, lb.value)
    general: dict[str, float] = {}
    own: dict[str, dict[str, float]] = {}
    for (sid, metric), (_, value) in latest.items():
        if metric == ANY_METRIC:
            general[sid] = value
        else:
            own.setdefault(metric, {})[sid] = value
    notes = [f"labels from the store ({len(sample_level)} of field '{label_field}')"]
    if several:
        notes.append(f"{len(several)} sample label(s) were given by several people: the latest counts")
    return general, own, notes


# ---------------------------------------------------------------------------------------------
# Calibration


def _values(result: EvaluationResult, metric: str, oriented: bool) -> dict[str, float]:
    out: dict[str, float] = {}
    for sid, per in result.scores.items():
        s = per.get(metric)
        if s is not None and s.outcome is Outcome.SCORED and s.value is not None:
            out[sid] = 1.0 - s.value if oriented else s.value
    return out


def calibrate(
    source: EvaluationResult | tuple[Store, str],
    labels: str | os.PathLike[str] | Mapping[str, Any] | Sequence[Mapping[str, Any]] | Sequence[Label] | None,
    label_field: str = "label",
    metrics: Sequence[str] | None = None,
    *,
    threshold: float = 0.5,
    pair: tuple[str, str] | None = None,
    t_high: tuple[float, float] = (0.7, 0.7),
    t_low: tuple[float, float] = (0.3, 0.3),
    label_threshold: float | None = None,
    n_bins: int = 10,
    allow_poor_pairing: bool = False,
) -> CalibrationReport:
    """Measure how well a run's metric scores agree with human labels.

    ``source``: an :class:`EvaluationResult` or ``(store, run ref)``. ``labels``: a labels
    file, a mapping {sample id: label}, rows (mappings with ``id`` and ``label_field``), or
    None: the store's labels of field ``label_field`` for the run's samples (see
    :func:`store_labels`; a metric's own labels take precedence over labels of the whole sample),
    or those labels given as :class:`~ragsight.store.Label` objects (``Store.labels(run_id)``).
    ``metrics``: the metrics to check (default: all the run's). ``threshold``: where a score
    counts as a positive prediction (``score >= threshold``). ``pair``: the two metrics of the
    concordance table (default faithfulness and factual_correctness, skipped with a note when
    the run lacks one). ``label_threshold`` turns graded labels into binary ones
    (``label >= label_threshold`` is 1).

    Labels pair with samples by id. When fewer than :data:`MIN_PAIRED_SHARE` of the labels
    find their sample (the usual cause: the ids of the labels file are not the run's, e.g.
    data without ids, whose automatic ids come from the question and reference), raises
    :class:`PoorPairingError` unless ``allow_poor_pairing``.
    """
    result = source if isinstance(source, EvaluationResult) else load_result(*source)
    notes: list[str] = []
    own: dict[str, dict[str, float]] = {}  # metric -> sample id -> the metric's own label
    given = (list(labels) if isinstance(labels, Sequence) and not isinstance(labels, str) else [])
    stored = labels is None or (bool(given) and isinstance(given[0], Label))
    if stored and labels is not None:
        raw, own, store_notes = split_labels([lb for lb in given if isinstance(lb, Label)], label_field)
        notes.extend(store_notes)
    elif labels is None:
        if isinstance(source, EvaluationResult):
            if not source.store_path:
                raise ConfigError("this result has no store to read labels from; pass a labels file")
            with Store(source.store_path) as store:
                raw, own, store_notes = store_labels(store, result.run_id, label_field)
        else:
            raw, own, store_notes = store_labels(source[0], result.run_id, label_field)
        notes.extend(store_notes)
    elif isinstance(labels, (str, os.PathLike)):
        raw = load_labels(labels, label_field)
    elif isinstance(labels, Mapping):
        raw = {str(k): v for k, v in labels.items()}
    else:
        raw = _label_rows([r for r in given if isinstance(r, Mapping)], label_field, "<labels>")

    raw = _turn_ids(raw, result)
    parsed: dict[str, float] = {}
    invalid: list[tuple[str, str]] = []
    for sid, value in raw.items():
        try:
            parsed_value = _parse_label(value)
        except ValueError as exc:
            invalid.append((sid, str(exc)))
            continue
        if parsed_value is not None:
            parsed[sid] = parsed_value
    if invalid:
        notes.append(f"{len(invalid)} label(s) could not be read and were left out")

    sample_ids = [s.id for s in result.samples]
    known = set(sample_ids)
    unmatched = tuple(sid for sid in parsed if sid not in known)
    labelled = {sid: parsed[sid] for sid in sample_ids if sid in parsed}
    any_label = set(labelled).union(*own.values())
    unlabelled = len(sample_ids) - len(any_label)
    if not any_label:
        raise InputError(
            f"none of the {len(parsed)} labels matches a sample of run {result.run_id} by id "
            f"(label ids such as {', '.join(list(parsed)[:3]) or 'none'}; sample ids such as "
            f"{', '.join(sample_ids[:3])})"
        )
    share = len(labelled) / len(parsed) if parsed else 1.0
    if share < MIN_PAIRED_SHARE and not allow_poor_pairing:
        raise PoorPairingError(
            f"only {len(labelled)} of {len(parsed)} labels ({share:.0%}) pair with a sample of run "
            f"{result.run_id} by id (unpaired label ids such as {', '.join(unmatched[:3])}; sample "
            f"ids such as {', '.join(sample_ids[:3])}). Give the labels the run's sample ids "
            "('ragsight export RUN' lists them), or pass --allow-poor-pairing "
            "(allow_poor_pairing=True) to measure the paired part anyway."
        )

    values = set(labelled.values()).union(*(m.values() for m in own.values()))
    kind: Literal["binary", "graded"] = "binary" if values <= {0.0, 1.0} else "graded"
    binarise: Callable[[float], bool] | None = None
    if label_threshold is not None:
        cut = label_threshold
        binarise = lambda v: v >= cut  # noqa: E731
    elif kind == "binary":
        binarise = lambda v: v == 1.0  # noqa: E731
    binary = {sid: binarise(v) for sid, v in labelled.items()} if binarise else None
    if binarise is None:
        notes.append(
            "labels are graded: only correlations are computed; binarise them with "
            "--label-threshold for AUROC, kappa, ECE, concordance and group statistics"
        )
    every = list(labelled.values()) + [v for m in own.values() for v in m.values()]
    n_pos = sum(binarise(v) for v in every) if binarise else 0
    n_neg = len(every) - n_pos if binarise else 0

    keys = list(metrics) if metrics else list(result.metric_keys)
    unknown = [k for k in keys if k not in result.summary]
    if unknown:
        raise ConfigError(
            f"run {result.run_id} has no metric {', '.join(unknown)}; "
            f"its metrics: {', '.join(result.metric_keys)}"
        )
    strangers = sorted(set(own) - set(result.metric_keys))
    if strangers:
        notes.append(f"labels of metrics the run does not have were left out: {', '.join(strangers)}")
    lower = {k: s.lower_is_better for k, s in result.summary.items()}
    oriented = [k for k in keys if lower[k]]
    if oriented:
        notes.append(f"lower-is-better metrics enter as 1 - value: {', '.join(oriented)}")

    rows: list[MetricCalibration] = []
    unscaled: list[str] = []
    for key in keys:
        vals = _values(result, key, lower[key])
        mine = {**labelled, **own[key]} if own.get(key) else labelled
        ids = [sid for sid in sample_ids if sid in mine and sid in vals]
        x = [vals[sid] for sid in ids]
        y = [mine[sid] for sid in ids]
        corr = correlations(x, y)
        au = at_t = best = at_best = ece = groups = None
        if binarise is not None:
            yb = [binarise(v) for v in y]
            au = auroc(x, yb)
            at_t = threshold_metrics(x, yb, threshold)
            best = best_threshold(x, yb)
            at_best = threshold_metrics(x, yb, best) if best is not None else None
            if all(0.0 <= v <= 1.0 for v in x):
                ece = expected_calibration_error(x, yb, n_bins=n_bins)
            else:
                notes.append(f"{key}: values outside [0, 1], so no calibration error")
            groups = group_comparison(
                [v for v, b in zip(x, yb) if b], [v for v, b in zip(x, yb) if not b], "greater"
            )
        # the corrected mean: labels on the metric's 0-1 scale (binary, binarised or within
        # [0, 1]) and the judge's values on it too
        raw = _values(result, key, False)
        ppi_labels = {sid: (1.0 if binarise(v) else 0.0) if binarise else v for sid, v in zip(ids, y)}
        est = None
        if all(0.0 <= v <= 1.0 for v in ppi_labels.values()) and all(0.0 <= v <= 1.0 for v in raw.values()):
            est = corrected_estimate(raw, ppi_labels, lower_is_better=lower[key])
        elif ids:
            unscaled.append(key)
        rows.append(
            MetricCalibration(
                key,
                lower[key],
                len(ids),
                len(mine) - len(ids),
                au,
                at_t,
                best,
                at_best,
                corr,
                ece,
                groups,
                mean=sum(raw.values()) / len(raw) if raw else None,
                n_labels=len(ids),
                n_judged=len(raw),
                corrected_mean=est.corrected_mean if est else None,
                corrected_ci=est.corrected_ci if est else None,
                corrected_lambda=est.lam if est else None,
                labels_mean=est.labels_mean if est else None,
                too_few_labels=len(ids) < MIN_LABELS,
            )
        )
    if unscaled:
        notes.append(f"no corrected mean for {', '.join(unscaled)}: labels or values outside [0, 1] "
                     "(binarise graded labels with --label-threshold)")
    few = [f"{m.metric} ({m.n_labels})" for m in rows if m.too_few_labels]
    if few:
        notes.append(f"too few labels for a trustworthy corrected mean (fewer than {MIN_LABELS}): {', '.join(few)}")

    concordance: PairConcordance | None = None
    m1, m2 = pair or DEFAULT_PAIR
    missing = [m for m in (m1, m2) if m not in result.summary]
    if missing:
        if pair is not None:
            raise ConfigError(
                f"--pair {m1},{m2}: run {result.run_id} has no metric "
                f"{', '.join(missing)}; its metrics: {', '.join(result.metric_keys)}"
            )
        notes.append(
            f"no concordance table: the run has no {' or '.join(missing)} "
            "(choose two metrics with --pair m1,m2)"
        )
    elif binary is not None and (own.get(m1) or own.get(m2)):
        notes.append(f"no concordance table: {m1} or {m2} has labels of its own, not one label per sample")
    elif binary is not None and not binary:
        notes.append("no concordance table: no labels of the whole sample (only per-metric ones)")
    elif binary is not None:
        v1, v2 = _values(result, m1, lower[m1]), _values(result, m2, lower[m2])
        ids = [sid for sid in labelled if sid in v1 and sid in v2]
        table = concordance_table(
            [v1[s] for s in ids], [v2[s] for s in ids], [binary[s] for s in ids], t_high, t_low
        )
        concordance = PairConcordance(m1, m2, len(ids), table)

    return CalibrationReport(
        run_id=result.run_id,
        label_field=label_field,
        label_kind=kind,
        binarised_at=label_threshold,
        threshold=threshold,
        n_labels=len(any_label) if stored else len(parsed),
        matched=len(any_label) if stored else len(labelled),
        unmatched_ids=unmatched,
        unlabelled=unlabelled,
        invalid=tuple(invalid),
        n_positive=n_pos,
        n_negative=n_neg,
        metrics=tuple(rows),
        concordance=concordance,
        notes=tuple(notes),
        label_range=(min(values), max(values)),
        labels_source="store" if stored else "file",
    )


# ---------------------------------------------------------------------------------------------
# Terminal output


def _print_corrected(report: CalibrationReport, c: Console) -> None:
    """The means corrected by the labels (PPI), with how many labels each rests on."""
    shown = [m for m in report.metrics if m.corrected_mean is not None]
    if not shown:
        return
    tb = compact_table("Means corrected by the labels (PPI)")
    for col in ("metric", "judge", "corrected", "95% CI", "labels", "λ"):
        tb.add_column(col, justify="left" if col == "metric" else "right",
                      **({"overflow": "fold"} if col == "metric" else {"no_wrap": True}))
    for m in shown:
        low, high = m.corrected_ci if m.corrected_ci else (None, None)
        tb.add_row(Text(m.metric + (" !" if m.too_few_labels else "")), fmt(m.mean), fmt(m.corrected_mean),
                   fmt_ci(low, high), f"{m.n_labels}/{m.n_judged}", fmt(m.corrected_lambda, 2))
    c.print(tb)
    c.print("judge: the raw mean over every scored sample; corrected: that mean with the judge's "
            "error on the labelled samples taken out (prediction-powered inference), with its 95% "
            "CI; labels: labelled of scored samples; λ: the weight given to the judge (1 plain "
            "PPI, 0 the labels alone).")
    few = [m for m in shown if m.too_few_labels]
    if few:
        c.print(Text(
            f"WARNING: too few labels: {', '.join(f'{m.metric} rests on {m.n_labels}' for m in few)} "
            f"(fewer than {MIN_LABELS}). Those corrected means and CIs (marked !) are rough; "
            "label more samples before relying on them.", style="bold red"))


def rate_text(rate: ConditionalRate) -> str:
    """A conditional probability with its counts, e.g. ``"0.87 (13/15)"``."""
    return f"{fmt(rate.probability, 2)} ({rate.k}/{rate.n})"


def print_calibration(report: CalibrationReport, console: Console | None = None) -> None:
    """Print a calibration report with rich."""
    c = console or Console(highlight=False)
    f = report.label_field
    c.print(
        Text(
            f"Run {report.run_id} against labels '{f}' ({report.label_kind}"
            + (
                f", binarised at >= {report.binarised_at:g}"
                if report.binarised_at is not None
                else ""
            )
            + ")"
        )
    )
    if report.label_kind == "graded" and report.binarised_at is None:
        span = report.label_range
        kinds = (f"graded labels from {span[0]:g} to {span[1]:g}, not binarised: "
                 "--label-threshold X makes label >= X count as 1" if span is not None
                 else "graded labels, not binarised")
    else:
        kinds = f"{report.n_positive} with {f}=1, {report.n_negative} with {f}=0"
    how = "from the store matched to" if report.labels_source == "store" else "paired with"
    by = "content" if report.labels_source == "store" else "id"
    c.print(
        f"{report.matched} of {report.n_labels} labels {how} a sample of the run by {by} "
        f"({kinds}); {report.unlabelled} sample(s) of the run have no label."
    )
    if report.unmatched_ids:
        shown = ", ".join(report.unmatched_ids[:10])
        more = (
            f" and {len(report.unmatched_ids) - 10} more" if len(report.unmatched_ids) > 10 else ""
        )
        c.print(
            Text(
                f"WARNING: {len(report.unmatched_ids)} label id(s) match no sample of the run "
                f"({report.paired_share:.0%} paired): {shown}{more}. The figures below speak "
                "for the paired labels only.",
                style="bold red",
            )
        )
    for sid, why in report.invalid[:10]:
        c.print(Text(f"unreadable label for '{sid}': {why}", style="yellow"))

    _print_corrected(report, c)

    t = report.threshold
    if any(m.auroc is not None or m.at_threshold is not None for m in report.metrics):
        agree = compact_table("Agreement with the labels")
        for col in (
            "metric",
            "n",
            "AUROC",
            f"acc@{t:g}",
            f"κ@{t:g}",
            "best t",
            "acc@best",
            "κ@best",
            "ECE",
        ):
            agree.add_column(col, justify="left" if col == "metric" else "right",
                             **({"overflow": "fold"} if col == "metric" else {"no_wrap": True}))
        for m in report.metrics:
            a, b = m.at_threshold, m.at_best
            agree.add_row(
                Text(m.metric + (" (1-x)" if m.oriented else "")),
                str(m.n),
                fmt(m.auroc),
                fmt(a.accuracy if a else None),
                fmt(a.kappa if a else None),
                fmt(m.best_threshold),
                fmt(b.accuracy if b else None),
                fmt(b.kappa if b else None),
                fmt(m.ece),
            )
        c.print(agree)
        c.print(
            "acc, κ (Cohen's kappa): the prediction score >= t against the label; best t "
            "maximises Youden's J. ECE: scores read as P(label=1), 10 equal-width bins."
        )

    corr = compact_table("Correlation with the labels (p-value)")
    for col in ("metric", "n", "Spearman", "Kendall", "Pearson"):
        corr.add_column(col, justify="left" if col == "metric" else "right",
                             **({"overflow": "fold"} if col == "metric" else {"no_wrap": True}))
    for m in report.metrics:
        cr = m.correlations
        corr.add_row(
            Text(m.metric + (" (1-x)" if m.oriented else "")),
            str(cr.n),
            *(
                f"{fmt(v)} ({fmt_p(pv)})" if v is not None else "–"
                for v, pv in (
                    (cr.spearman, cr.spearman_p),
                    (cr.kendall, cr.kendall_p),
                    (cr.pearson, cr.pearson_p),
                )
            ),
        )
    c.print(corr)

    if any(m.groups is not None for m in report.metrics):
        grp = compact_table("Scores by label group: mean (s.d.)")
        for col in ("metric", f"{f}=1", "n", f"{f}=0", "n", "t", "df", "p"):
            grp.add_column(col, justify="left" if col == "metric" else "right",
                             **({"overflow": "fold"} if col == "metric" else {"no_wrap": True}))
        for m in report.metrics:
            g = m.groups
            if g is None:
                continue
            grp.add_row(
                Text(m.metric + (" (1-x)" if m.oriented else "")),
                g.a.mean_sd(),
                str(g.a.n),
                g.b.mean_sd(),
                str(g.b.n),
                fmt(g.t_statistic, 2),
                fmt(g.df, 1),
                fmt_p(g.p_value),
            )
        c.print(grp)
        c.print(f"t, df, p: one-sided Welch t-test of mean({f}=1) > mean({f}=0).")

    cc = report.concordance
    if cc is not None:
        tb = cc.table
        con = compact_table(f"Concordance with the labels ({cc.n} samples with both metrics)")
        for col in ("", cc.m1, cc.m2, "joint"):
            con.add_column(col, justify="left" if col == "" else "right",
                           **({"overflow": "fold"} if col == "" else {"no_wrap": True}))
        hi, lo = tb.correct_given_high, tb.wrong_given_low
        con.add_row(
            f"P({f}=1 | m1 > {tb.t_high[0]:g}, m2 > {tb.t_high[1]:g})",
            rate_text(hi.m1),
            rate_text(hi.m2),
            rate_text(hi.joint),
        )
        con.add_row(
            f"P({f}=0 | m1 < {tb.t_low[0]:g}, m2 < {tb.t_low[1]:g})",
            rate_text(lo.m1),
            rate_text(lo.m2),
            rate_text(lo.joint),
        )
        c.print(con)
        c.print(
            "Each metric column conditions on that metric alone; joint on both. "
            "Cells: probability (k/n samples)."
        )
    for note in report.notes:
        c.print(Text(f"note: {note}", style="dim"))
