"""Two runs' diagnoses side by side: which causes a change fixed and which it introduced, on the
samples the runs share (paired as ``ragsight compare`` pairs them: by sample id, a turn of a
conversation by its conversation id and turn).

Per cause: the samples where it is primary in run A and found nowhere in run B's diagnosis of the
same sample (*fixed*: the sample passes in B, or fails there for another reason), and the reverse
(*introduced*); the difference of the counts with the CI of the paired permutation test that
``ragsight compare`` uses (the share of samples with the cause as primary, B minus A, times the
pairs). Fewer than :data:`MIN_PAIRED_SHARE` of the samples paired, of any level (the turns or the
conversations of a conversation data set, each on its own), is refused unless asked for, as
``ragsight compare`` refuses it."""

from __future__ import annotations

from dataclasses import dataclass
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

__all__ = ["MIN_PAIRED_SHARE", "PASSING", "CauseChange", "DiagnosisChange", "SampleChange", "diagnose_change"]

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
                "now_passing": self.now_passing, "now_failing": self.now_failing}


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
    for k in paired:
        sa, sb = by_a.get(a.keys[k]), by_b.get(b.keys[k])
        rows.append((k, sa, sb))

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
        now_failing=sum(1 for _, sa, sb in rows if sa is None and sb is not None), levels=pairing.levels)
