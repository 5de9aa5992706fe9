"""Comparing runs: configurations side by side, an experiment table, and paired differences.

The first run is the baseline; every other run is compared with it on the samples both runs
scored (joined by sample id; a turn of a conversation by its conversation id and turn), each
metric on the rows of its own level: a turn metric on turns (and single-turn samples), a
conversation metric on conversations. Each (metric, run) comparison is a paired difference with a
paired permutation p-value and the CI that inverts the same test (``_stats.paired_difference``:
the CI excludes 0 exactly when the unadjusted p < 1 - confidence); the p-values of all
comparisons in one report are Holm-adjusted together, so "significant" anywhere in the report
keeps the family-wise error rate at ``alpha``. The CIs are not adjusted: where one excludes 0
but the Holm-adjusted verdict finds no difference, the output says why.

The experiment table (runs as columns, metrics as rows, the best value per metric marked)
follows the thesis's Table 6; its means use each run's own scored samples, which may differ
from the paired samples behind the differences.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from .._stats import (
    PairedDifference,
    Pairing,
    count_units,
    describe_counts,
    paired_difference,
    pairs_to_detect,
    too_few_paired,
)
from ..dataset import Sample, sample_level
from ..errors import ConfigError
from ..result import EvaluationResult, overall_of
from ..store import Store
from ._format import config_text, fmt_p
from ._run_data import RunData, judge_settings, load_runs

__all__ = [
    "Comparison",
    "MetricRow",
    "PairedRow",
    "RunColumn",
    "ci_notes",
    "compare",
    "compare_runs",
    "describe_rows",
    "holm",
]

LABELS = "ABCDEFGHIJKLMNOPQRSTUVWXYZ"
BEST_DIGITS = 3
"""Means are compared for "best" after rounding to the digits shown, so equal-looking values
are marked together (as the thesis marks ties)."""


@dataclass(frozen=True)
class RunColumn:
    """One run of a comparison: its label (A, B, ...), id, configuration and sample count
    (``n_samples``: every row; ``counts``: the rows of each level as the pairing line counts
    them, "sample" for data without conversations, else "turn" and "conversation")."""

    label: str
    run_id: str
    config: Mapping[str, Any]
    n_samples: int
    counts: tuple[tuple[str, int], ...] = ()

    @property
    def size(self) -> str:
        """The run's rows as a comparison's header states them: "17 samples", or "12 turns, 5
        conversations" (see :func:`describe_rows`)."""
        return describe_counts(self.counts) if self.counts else describe_counts((("sample", self.n_samples),))


@dataclass(frozen=True)
class MetricRow:
    """A row of the experiment table: one metric's mean, CI and scored count in every run
    (``None`` where the run lacks the metric or scored nothing), and the best runs' indexes."""

    metric: str
    lower_is_better: bool
    means: tuple[float | None, ...]
    ci: tuple[tuple[float | None, float | None], ...]
    n: tuple[int, ...]
    best: tuple[int, ...]


@dataclass(frozen=True)
class PairedRow:
    """One metric of one run against the baseline, on the samples both scored.

    ``shared`` counts the samples of the metric's level present in both runs (turns for a turn
    metric, conversations for a conversation metric); ``difference.n`` the pairs (shared
    samples scored on both sides). ``difference.diff`` is mean(run - baseline).
    ``p_holm`` is the Holm-adjusted p-value and ``verdict`` says which run is better by it.
    """

    metric: str
    lower_is_better: bool
    baseline: str
    other: str
    shared: int
    difference: PairedDifference
    p_holm: float | None
    verdict: str
    level: str = "turn"
    """The rows the metric is paired on: ``turn`` (turns and single-turn samples) or
    ``conversation`` (a conversation's own row)."""


class PoorPairingError(ConfigError):
    """Runs to compare share too few samples for the comparison to speak for the data."""


@dataclass(frozen=True)
class Comparison:
    """Everything ``ragsight compare`` prints and the report's comparison section shows."""

    runs: tuple[RunColumn, ...]
    config_keys: tuple[str, ...]
    table: tuple[MetricRow, ...]
    overall: tuple[float | None, ...]
    overall_metrics: tuple[str, ...]
    overall_best: tuple[int, ...]
    paired: tuple[PairedRow, ...]
    alpha: float
    confidence: float
    pairing: tuple[Pairing, ...] = ()
    overall_harmonic: tuple[float | None, ...] = ()
    overall_left_out: tuple[tuple[str, str], ...] = ()
    """(metric, why) for every metric of the table that the overall leaves out."""
    conversations: bool = False
    """A run has conversations: each metric is paired on the rows of its own level."""

    @property
    def baseline(self) -> RunColumn:
        return self.runs[0]

    def differing_keys(self) -> set[str]:
        """Configuration keys whose value is not the same in every run."""
        return {
            k
            for k in self.config_keys
            if len({config_text(r.config.get(k)) for r in self.runs}) > 1
        }

    def to_dict(self) -> dict[str, Any]:
        return dataclasses.asdict(self)


def holm(p_values: Sequence[float | None]) -> list[float | None]:
    """Holm-Bonferroni adjusted p-values, in the input order (``None`` stays ``None`` and does
    not count towards the number of tests).

    With m tests sorted by p ascending, the i-th (from 0) is adjusted to
    max over j <= i of min(1, (m - j) * p_(j)).
    """
    present = sorted((p, i) for i, p in enumerate(p_values) if p is not None)
    m = len(present)
    out: list[float | None] = [None] * len(p_values)
    running = 0.0
    for rank, (p, i) in enumerate(present):
        running = max(running, min(1.0, (m - rank) * p))
        out[i] = running
    return out


def _best(values: Sequence[float | None], lower_is_better: bool) -> tuple[int, ...]:
    rounded = [None if v is None else round(v, BEST_DIGITS) for v in values]
    present = [v for v in rounded if v is not None]
    if not present:
        return ()
    target = min(present) if lower_is_better else max(present)
    return tuple(i for i, v in enumerate(rounded) if v == target)


def _pair_keys(samples: Iterable[Sample]) -> dict[tuple[str, ...], str]:
    """What pairs a sample with its counterpart in another run, mapped to its sample id: a turn
    of a conversation by (conversation id, turn), a conversation by its id, any other sample
    by its id. In sample order. The key's last part is the sample's level (``turn`` or
    ``conversation``), so a metric pairs only the rows of its own level."""
    out: dict[tuple[str, ...], str] = {}
    for s in samples:
        level = sample_level(s)
        if s.conversation_id is not None:
            key: tuple[str, ...] = ("turn", s.conversation_id, "" if s.turn is None else str(s.turn), level)
        else:
            key = ("id", s.id, level)
        out[key] = s.id
    return out


def _units(keys: Mapping[tuple[str, ...], str]) -> dict[tuple[str, ...], str]:
    """Each pairing key (:func:`_pair_keys`) -> the unit the pairing line counts it in: "sample"
    for data without conversations, else its level ("turn" or "conversation")."""
    return {k: "sample" if k[0] == "id" else k[-1] for k in keys}


def describe_rows(samples: Iterable[Sample]) -> str:
    """A run's rows as a comparison's header states them (``compare``, the report's comparison,
    the viewer's compare page): "17 samples" for data without conversations, else each level
    on its own, as the pairing line counts it ("12 turns, 5 conversations")."""
    return describe_counts(count_units(_units(_pair_keys(samples)).values()))


def _configuration(d: RunData) -> dict[str, Any]:
    """A run's configuration as the comparison shows it: its own (metadata, judge, embedder,
    data set), then the judge settings it stored (claim threshold, alignment) that it does not
    already name."""
    return {**d.config, **{k: v for k, v in judge_settings(d.result.config).items() if k not in d.config}}


def compare(
    runs: Sequence[RunData | EvaluationResult],
    *,
    alpha: float = 0.05,
    seed: int = 0,
    n_perm: int = 10000,
    confidence: float = 0.95,
    allow_poor_pairing: bool = False,
) -> Comparison:
    """Compare runs: the first is the baseline, each other run is compared with it.

    For every metric both runs have: the paired difference on the samples scored in both
    (joined by sample id), its permutation p-value and the CI inverting that test (unadjusted),
    the Holm-adjusted p-value
    across every comparison made, and a verdict that respects lower-is-better metrics.

    Raises :class:`PoorPairingError` when a run pairs fewer than :data:`MIN_PAIRED_SHARE` of
    its samples with the baseline, each level on its own (of a conversation data set: of its
    turns, or of its conversations), unless ``allow_poor_pairing`` (then ``pairing`` says so).
    """
    if len(runs) < 2:
        raise ConfigError("compare needs at least two runs")
    if len(runs) > len(LABELS):
        raise ConfigError(f"compare takes at most {len(LABELS)} runs")
    data = [r if isinstance(r, RunData) else RunData.from_result(r) for r in runs]
    keyed = [_pair_keys(d.result.samples) for d in data]  # pairing key -> sample id, per run
    columns = tuple(
        RunColumn(LABELS[i], d.run_id, _configuration(d), len(d.result.samples),
                  count_units(_units(keyed[i]).values()))
        for i, d in enumerate(data)
    )
    config_keys: list[str] = []
    for col in columns:
        config_keys.extend(k for k in col.config if k not in config_keys)

    metrics: list[str] = []
    lower: dict[str, bool] = {}
    for d in data:
        for key, summary in d.result.summary.items():
            if key not in metrics:
                metrics.append(key)
                lower[key] = summary.lower_is_better

    table: list[MetricRow] = []
    for key in metrics:
        sums = [d.result.summary.get(key) for d in data]
        means = tuple(None if s is None else s.mean for s in sums)
        table.append(
            MetricRow(
                metric=key,
                lower_is_better=lower[key],
                means=means,
                ci=tuple((None, None) if s is None else (s.ci_low, s.ci_high) for s in sums),
                n=tuple(0 if s is None else s.n for s in sums),
                best=_best(means, lower[key]),
            )
        )

    # The overall of each run over the metrics every run has a mean for (the same metrics for
    # every run, so the overalls compare); every other metric is named with the reason.
    shared_metrics = tuple(row.metric for row in table if all(m is not None for m in row.means))
    overall: list[float | None] = []
    harmonic: list[float | None] = []
    for i in range(len(data)):
        ov = overall_of(
            {row.metric: row.means[i] for row in table if row.metric in shared_metrics},
            {k for k in shared_metrics if lower[k]},
        )
        overall.append(ov.mean)
        harmonic.append(ov.harmonic)
    left_out: list[tuple[str, str]] = []
    for row in table:
        if row.metric in shared_metrics:
            continue
        whys = []
        for i, d in enumerate(data):
            s = d.result.summary.get(row.metric)
            if s is None:
                whys.append(f"run {columns[i].label} does not have it")
            elif s.mean is None:
                whys.append(f"run {columns[i].label}: {s.why_no_mean()}")
        left_out.append((row.metric, "; ".join(whys)))

    base = data[0]
    pairing: list[Pairing] = []
    for j in range(1, len(data)):
        pairing.append(Pairing.of(columns[0].label, columns[j].label, _units(keyed[0]), _units(keyed[j])))
    if any(pr.poor for pr in pairing) and not allow_poor_pairing:
        units, lines = too_few_paired(pairing)
        raise PoorPairingError(
            f"the runs share too few {units} to compare ({lines}). Rows without an id are "
            "matched by their question and reference: check that both runs evaluated the same "
            "questions, or give the rows ids. To compare the paired part anyway, pass "
            "--allow-poor-pairing (allow_poor_pairing=True)."
        )
    raw: list[tuple[str, int, int, PairedDifference, str]] = []
    for j in range(1, len(data)):
        other = data[j]
        shared = [k for k in keyed[0] if k in keyed[j]]
        for key in metrics:
            if key not in base.result.summary or key not in other.result.summary:
                continue
            level = base.result.levels.get(key, "turn")
            shared_ids = [k for k in shared if k[-1] == level]  # the rows of the metric's own level
            a_vals, b_vals = base.result.scored_values(key), other.result.scored_values(key)
            ids = [k for k in shared_ids if keyed[0][k] in a_vals and keyed[j][k] in b_vals]
            diff = paired_difference(
                [a_vals[keyed[0][k]] for k in ids],
                [b_vals[keyed[j][k]] for k in ids],
                seed=seed,
                n_perm=n_perm,
                confidence=confidence,
            )
            raw.append((key, j, len(shared_ids), diff, level))
    adjusted = holm([d.p_value for _, _, _, d, _ in raw])
    paired = []
    for (key, j, n_shared, diff, level), p_adj in zip(raw, adjusted):
        verdict = dataclasses.replace(diff, p_value=p_adj).verdict(
            higher_is_better=not lower[key], alpha=alpha, names=(columns[0].label, columns[j].label)
        )
        paired.append(
            PairedRow(
                key, lower[key], columns[0].label, columns[j].label, n_shared, diff, p_adj, verdict, level
            )
        )
    return Comparison(
        runs=columns,
        config_keys=tuple(config_keys),
        table=tuple(table),
        overall=tuple(overall),
        overall_metrics=shared_metrics,
        overall_best=_best(overall, False),
        overall_harmonic=tuple(harmonic),
        overall_left_out=tuple(left_out),
        paired=tuple(paired),
        alpha=alpha,
        confidence=confidence,
        pairing=tuple(pairing),
        conversations=any(k[-1] == "conversation" for keys in keyed for k in keys),
    )


def compare_runs(store: Store, refs: Sequence[str], **kwargs: Any) -> Comparison:
    """Load runs from a store (ids, id prefixes or 'last') and :func:`compare` them."""
    return compare(load_runs(store, refs), **kwargs)


def ci_notes(cmp: Comparison) -> list[str]:
    """Plain notes where a row's CI and its verdict could be read as disagreeing.

    The CI inverts the unadjusted permutation test; the verdict uses the Holm-adjusted p. So a
    CI can exclude 0 while the verdict says "no significant difference" (the adjustment over all
    comparisons), or, when ``alpha`` is not 1 - confidence, the other way round. Also says when
    a CI is unbounded because too few pairs differ for the test to reject anything.
    """
    notes: list[str] = []
    level = f"{cmp.confidence:.0%}"
    for p in cmp.paired:
        d = p.difference
        what = f"{p.metric} {p.other} vs {p.baseline}"
        significant = p.p_holm is not None and p.p_holm < cmp.alpha and d.diff != 0
        if d.ci_excludes_zero and not significant:
            notes.append(
                f"Note: {what}: the {level} CI excludes 0 (unadjusted p={fmt_p(d.p_value)}), but "
                f"after Holm's adjustment over {len(cmp.paired)} comparisons p={fmt_p(p.p_holm)}"
                f" is not below {cmp.alpha:g}: no difference is claimed. The CI speaks for "
                "this comparison alone, the verdict for all of them together."
            )
        elif significant and not d.ci_excludes_zero:
            notes.append(
                f"Note: {what}: significant at alpha={cmp.alpha:g} although the {level} CI "
                f"includes 0: the verdict uses alpha={cmp.alpha:g}, the CI {level}."
            )
        elif d.n >= 2 and d.ci_low is None and d.p_value is not None:
            floor = f" (its smallest p is 2/2^{d.n} = {2 / 2**d.n:.3g})" if d.exact else ""
            notes.append(
                f"Note: {what}: the {level} CI is unbounded (–): with {d.n} pairs the "
                f"permutation test cannot reach p<{1 - cmp.confidence:.2g}{floor}, so no "
                "difference is ruled out."
            )
    blind = _undetectable_note(cmp)
    if blind:
        notes.append(blind)
    return notes


def _undetectable_note(cmp: Comparison) -> str | None:
    """A note when no verdict could have said "better", whatever the scores: with at most 16
    pairs the permutation test's smallest p is 2 / 2**n, and Holm's adjustment multiplies the
    smallest p by the number of comparisons. "No significant difference" then says nothing
    about the runs, only about the sample size."""
    tested = [p.difference for p in cmp.paired if p.difference.p_value is not None]
    m = len(cmp.paired)
    if not tested or not all(d.exact for d in tested):
        return None
    n = max(d.n for d in tested)
    floor = 2 / 2**n
    need = pairs_to_detect(n, m, cmp.alpha)
    if need is None:
        return None
    over = f"Holm's adjustment over {m} comparisons makes it {min(1.0, m * floor):.3g}" if m > 1 else (
        f"that is {floor:.3g}")
    return (
        f"Note: no difference here could have been called significant, whatever the scores: "
        f"with {n} pairs the smallest possible p is 2/2^{n} = {floor:.3g}, and {over}, not "
        f"below {cmp.alpha:g}. So \"no significant difference\" says nothing about the runs: it "
        f"takes at least {need} paired samples for a difference to be detectable at all (more "
        "for a small one)."
    )
