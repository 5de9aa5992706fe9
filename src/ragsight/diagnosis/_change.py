"""Two runs' diagnoses side by side: which causes a change fixed and which it introduced, on the
samples the runs share (paired as ``ragsight compare`` pairs them: by sample id, a turn of a
conversation by its conversation id and turn).

Per cause: the samples where it is primary in run A and found nowhere in run B's diagnosis of the
same sample (*fixed*: the sample passes in B, or fails there for another reason), and the reverse
(*introduced*); the difference of the counts with the CI of the paired permutation test that
``ragsight compare`` uses (the share of samples with the cause as primary, B minus A, times the
pairs). Fewer than :data:`MIN_PAIRED_SHARE` of the samples paired, of any level (the turns or the
conversations of a conversation data set, each on its own), is refused unless asked for, as
``ragsight compare`` refuses it.

A change is judged only on the metrics both runs measured on the sample: a metric one run did
not measure (not among its metrics, skipped on the sample, or the sample not scored) is left out
of both sides, so a sample failing it in A is never called fixed by B's silence. Each such metric
is named in ``not_judged`` with the samples failing it that could not be judged."""

from __future__ import annotations

from collections.abc import Collection
from dataclasses import dataclass, replace
from typing import Any

from .._stats import MIN_PAIRED_SHARE, LevelPairing, Pairing, paired_difference, too_few_paired
from ._model import (
    CAUSES,
    DIAGNOSIS_FORMAT,
    PRIORITY,
    UNDIAGNOSED,
    Diagnosis,
    SampleDiagnosis,
    UnpairedRunsError,
)
from ._samples import pair_unit

__all__ = ["MIN_PAIRED_SHARE", "PASSING", "CauseChange", "DiagnosisChange", "NotJudged", "SampleChange",
           "diagnose_change"]

PASSING = "passing"
"""The state of a paired sample that fails no threshold in a run."""


@dataclass(frozen=True)
class CauseChange:
    """One cause from run A to run B on the paired samples: the samples with it as primary in
    each, those it left (``fixed``) and those it reached (``introduced``), and ``diff`` (B - A,
    in samples) with the unadjusted 95% CI of the paired permutation test and its p-value (both
    ends None when too few pairs differ for the test to reject anything)."""

    cause: str
    before: int
    after: int
    fixed: int
    introduced: int
    diff: int
    ci_low: float | None
    ci_high: float | None
    p_value: float | None

    def to_dict(self) -> dict[str, Any]:
        return {"cause": self.cause, "before": self.before, "after": self.after, "fixed": self.fixed,
                "introduced": self.introduced, "diff": self.diff, "ci95": [self.ci_low, self.ci_high],
                "p_value": self.p_value}


@dataclass(frozen=True)
class SampleChange:
    """A paired sample whose primary cause differs between the runs (``passing`` when it fails
    nothing)."""

    sample_id: str
    question: str
    before: str
    after: str

    def to_dict(self) -> dict[str, Any]:
        return {"id": self.sample_id, "question": self.question, "before": self.before, "after": self.after}


@dataclass(frozen=True)
class NotJudged:
    """A metric that failed on ``failing`` paired samples of run ``run`` ("A" or "B") which the
    other run did not measure (``everywhere``: not among its metrics at all; else skipped on those
    samples or not scored): those samples' change on it cannot be judged, and is not counted."""

    metric: str
    run: str
    failing: int
    everywhere: bool

    @property
    def other(self) -> str:
        return "B" if self.run == "A" else "A"

    def describe(self) -> str:
        where = f"not measured in {self.other}" if self.everywhere else \
            f"not measured in {self.other} on these samples (skipped or not scored)"
        n = f"{self.failing} sample{'' if self.failing == 1 else 's'}"
        return f"{self.metric}: {where}, {n} failing in {self.run} cannot be judged"

    def to_dict(self) -> dict[str, Any]:
        return {"metric": self.metric, "failing_in": self.run, "not_measured_in": self.other,
                "samples": self.failing, "whole_run": self.everywhere, "line": self.describe()}


@dataclass(frozen=True)
class DiagnosisChange:
    """What changed between the diagnoses of run A and run B (see the module docstring)."""

    run_a: str
    run_b: str
    n_a: int
    n_b: int
    paired: int
    causes: tuple[CauseChange, ...]
    changed: tuple[SampleChange, ...]
    now_passing: int
    now_failing: int
    levels: tuple[LevelPairing, ...] = ()
    """The pairing per level (turns and conversations of a conversation data set)."""
    not_judged: tuple[NotJudged, ...] = ()
    """The metrics one run failed on samples the other did not measure (see the module docstring)."""

    @property
    def pairing(self) -> Pairing:
        """The pairing as ``ragsight compare`` states it (share, poor, partial, describe)."""
        return Pairing(self.run_a, self.run_b, self.n_a, self.n_b, self.paired, self.levels)

    @property
    def share(self) -> float:
        return self.pairing.share

    @property
    def poor(self) -> bool:
        return self.pairing.poor

    @property
    def partial(self) -> bool:
        return self.pairing.partial

    def describe_pairing(self) -> str:
        return self.pairing.describe()

    def to_dict(self) -> dict[str, Any]:
        return {"format": DIAGNOSIS_FORMAT, "runs": [self.run_a, self.run_b],
                "pairing": {"paired": self.paired, "samples_a": self.n_a, "samples_b": self.n_b,
                            "share": self.share, "poor": self.poor,
                            "levels": [{"unit": lv.unit, "samples_a": lv.n_baseline, "samples_b": lv.n_other,
                                        "paired": lv.paired, "share": lv.share} for lv in self.levels]},
                "causes": [c.to_dict() for c in self.causes], "changed": [s.to_dict() for s in self.changed],
                "now_passing": self.now_passing, "now_failing": self.now_failing,
                "not_judged": [x.to_dict() for x in self.not_judged]}


def diagnose_change(a: Diagnosis, b: Diagnosis, *, seed: int = 0, allow_poor_pairing: bool = False
                    ) -> DiagnosisChange:
    """The change from run A's diagnosis to run B's (see the module docstring). Raises
    :class:`UnpairedRunsError` when fewer than :data:`MIN_PAIRED_SHARE` of the samples of a level
    pair, unless ``allow_poor_pairing``."""
    paired = [k for k in a.keys if k in b.keys]
    pairing = Pairing.of(a.run_id, b.run_id, {k: pair_unit(k) for k in a.keys}, {k: pair_unit(k) for k in b.keys})
    if pairing.poor and not allow_poor_pairing:
        units, said = too_few_paired([pairing])
        raise UnpairedRunsError(
            f"the runs share too few {units} to compare their causes ({said}). Rows without an id are "
            "matched by their question and reference: check that both runs evaluated the same questions, or "
            "give the rows ids. To compare the paired part anyway, pass --allow-poor-pairing "
            "(allow_poor_pairing=True).")
    by_a = {s.sample_id: s for s in a.samples}
    by_b = {s.sample_id: s for s in b.samples}
    rows = []
    left_out: dict[tuple[str, str], int] = {}
    for k in paired:
        both = a.measured(k) & b.measured(k)
        sa, sb = by_a.get(a.keys[k]), by_b.get(b.keys[k])
        for run, s in (("A", sa), ("B", sb)):
            for f in () if s is None else s.failing:
                if f.metric not in both:
                    left_out[(f.metric, run)] = left_out.get((f.metric, run), 0) + 1
        rows.append((k, on_metrics(sa, both), on_metrics(sb, both)))
    not_judged = tuple(
        NotJudged(metric, run, n, metric not in (b.thresholds if run == "A" else a.thresholds))
        for (metric, run), n in sorted(left_out.items(), key=lambda kv: (kv[0][1], kv[0][0])))

    def primary(s: SampleDiagnosis | None) -> str:
        return PASSING if s is None else s.primary

    def causes(s: SampleDiagnosis | None) -> tuple[str, ...]:
        return () if s is None else s.causes

    def question(sa: SampleDiagnosis | None, sb: SampleDiagnosis | None) -> str:
        return sb.question if sb is not None else sa.question if sa is not None else ""

    out = []
    order = (*PRIORITY, UNDIAGNOSED)
    for cause in (*CAUSES, UNDIAGNOSED):
        xa = [1.0 if primary(sa) == cause else 0.0 for _, sa, _ in rows]
        xb = [1.0 if primary(sb) == cause else 0.0 for _, _, sb in rows]
        before, after = int(sum(xa)), int(sum(xb))
        if not before and not after:
            continue
        fixed = sum(1 for _, sa, sb in rows if primary(sa) == cause and cause not in causes(sb))
        introduced = sum(1 for _, sa, sb in rows if primary(sb) == cause and cause not in causes(sa))
        d = paired_difference(xa, xb, seed=seed)
        n = len(rows)
        out.append(CauseChange(cause, before, after, fixed, introduced, after - before,
                               None if d.ci_low is None else round(d.ci_low * n, 2),
                               None if d.ci_high is None else round(d.ci_high * n, 2), d.p_value))
    out.sort(key=lambda c: (-max(c.before, c.after), order.index(c.cause)))
    changed = tuple(
        SampleChange(b.keys[k], question(sa, sb), primary(sa), primary(sb))
        for k, sa, sb in rows if primary(sa) != primary(sb))
    return DiagnosisChange(
        run_a=a.run_id, run_b=b.run_id, n_a=len(a.keys), n_b=len(b.keys), paired=len(rows), causes=tuple(out),
        changed=changed,
        now_passing=sum(1 for _, sa, sb in rows if sa is not None and sb is None),
        now_failing=sum(1 for _, sa, sb in rows if sa is None and sb is not None), levels=pairing.levels,
        not_judged=not_judged)


def on_metrics(s: SampleDiagnosis | None, metrics: Collection[str]) -> SampleDiagnosis | None:
    """The sample's diagnosis judged on ``metrics`` only: its failing metrics among them, the
    findings as explaining those, and the primary cause chosen among them as a diagnosis chooses
    it; None when it fails none of them (passing, as far as they tell)."""
    if s is None:
        return None
    failing = tuple(f for f in s.failing if f.metric in metrics)
    if len(failing) == len(s.failing):
        return s
    if not failing:
        return None
    findings = tuple(replace(f, explains=tuple(m for m in f.explains if m in metrics)) for f in s.findings)
    candidates = sorted((f for f in findings if f.explains and not f.secondary_only),
                        key=lambda f: (f.cause == "judge", not f.strong, -len(f.evidence), PRIORITY.index(f.cause)))
    primary = candidates[0].cause if candidates else UNDIAGNOSED
    ordered = tuple(sorted(findings, key=lambda f: (f.cause != primary, PRIORITY.index(f.cause))))
    return replace(s, failing=failing, primary=primary, findings=ordered)
