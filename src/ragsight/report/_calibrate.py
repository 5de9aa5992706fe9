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

import dataclasses
import os
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Literal

from .._score import Outcome
from .._stats import (
    MIN_LABELS,
    MIN_PAIRED_SHARE,
    ConcordanceTable,
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
from ..store import Label, Store
from ._compare import PoorPairingError
from ._labels_read import (
    _label_rows,
    _parse_label,
    _turn_ids,
    load_labels,
    split_labels,
    store_labels,
)

__all__ = [
    "CalibrationReport",
    "MetricCalibration",
    "PairConcordance",
    "calibrate",
    "too_few_labels_text",
]

DEFAULT_PAIR = ("faithfulness", "factual_correctness")


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
    """The estimator's own ``too_few`` (``_stats.corrected_estimate``): fewer than ``MIN_LABELS``
    (10) labels, or labels all alike (their spread cannot be measured): the corrected mean and
    its CI are rough. Without an estimate (labels or values off the 0-1 scale): fewer than 10."""
    labels_unanimous: bool = False
    """Every label the corrected mean rests on is the same (all pass or all fail)."""

    def too_few_text(self) -> str:
        """Why the labels are too few (:func:`too_few_labels_text`)."""
        return too_few_labels_text(self.metric, self.n_labels, self.labels_unanimous)


def too_few_labels_text(metric: str, n_labels: int, unanimous: bool) -> str:
    """Why a metric's labels are too few for its corrected mean, as calibrate, the report and the
    viewer say it: "faithfulness rests on 6 (fewer than 10)", or, when every label is the same
    (``unanimous``), "faithfulness rests on 12 labels all alike (their spread cannot be
    measured)"."""
    if unanimous:
        return (f"{metric} rests on {n_labels} label{'s' if n_labels != 1 else ''} all alike "
                "(their spread cannot be measured)")
    return f"{metric} rests on {n_labels} (fewer than {MIN_LABELS})"


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
                too_few_labels=est.too_few if est else len(ids) < MIN_LABELS,
                labels_unanimous=bool(est and est.unanimous),
            )
        )
    if unscaled:
        notes.append(f"no corrected mean for {', '.join(unscaled)}: labels or values outside [0, 1] "
                     "(binarise graded labels with --label-threshold)")
    few = [m.too_few_text() for m in rows if m.too_few_labels]
    if few:
        notes.append(f"too few labels for a trustworthy corrected mean: {'; '.join(few)}")

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
