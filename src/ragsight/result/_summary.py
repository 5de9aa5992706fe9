"""A run's figures: one metric's summary over its scores (:class:`MetricSummary`, its mean and
confidence interval over the scored samples with every outcome counted beside them, and why it
has no mean when it has none) and the overall score of the metric means (:class:`Overall`).
"""

from __future__ import annotations

from collections.abc import Collection, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from .._score import Outcome, Score
from .._stats import harmonic_mean, summarize

__all__ = ["MetricSummary", "Overall", "overall_entry", "overall_of", "summarize_outcomes", "summarize_scores"]


@dataclass(frozen=True)
class MetricSummary:
    """Aggregate of one metric over a run: computed over ``scored`` results only, with the
    count of every outcome beside it."""

    metric: str
    n: int
    mean: float | None
    sd: float | None
    ci_low: float | None
    ci_high: float | None
    counts: Mapping[str, int]
    lower_is_better: bool = False
    skip_reasons: Mapping[str, int] = field(default_factory=dict)
    fail_reasons: Mapping[str, int] = field(default_factory=dict)

    def to_dict(self) -> dict[str, Any]:
        return {
            "metric": self.metric, "n": self.n, "mean": self.mean, "sd": self.sd,
            "ci_low": self.ci_low, "ci_high": self.ci_high, "counts": dict(self.counts),
            "lower_is_better": self.lower_is_better, "skip_reasons": dict(self.skip_reasons),
            "fail_reasons": dict(self.fail_reasons),
        }

    def why_no_mean(self) -> str | None:
        """Why the metric has no mean (no sample scored), in words; None when it has one."""
        if self.mean is not None:
            return None
        total = sum(self.counts.values())
        if total == 0:
            return "no sample was evaluated"
        c = self.counts

        def top(reasons: Mapping[str, int]) -> str:
            if not reasons:
                return ""
            reason, _count = max(reasons.items(), key=lambda kv: kv[1])
            more = f" (and {len(reasons) - 1} other reason(s))" if len(reasons) > 1 else ""
            return f": {reason}{more}"

        if c.get("failed", 0) == total:
            return f"failed on all {total} samples{top(self.fail_reasons)}"
        if c.get("skipped", 0) == total:
            return f"skipped on all {total} samples{top(self.skip_reasons)}"
        if c.get("undetermined", 0) == total:
            return f"undetermined on all {total} samples (its definition has no value for them)"
        parts = [f"{c[o]} {o}" for o in ("failed", "skipped", "undetermined") if c.get(o)]
        return f"no sample scored ({', '.join(parts)})"

    @property
    def all_failed_or_skipped(self) -> bool:
        """Every score of the metric failed or was skipped (nothing scored or undetermined)."""
        total = sum(self.counts.values())
        return total > 0 and self.counts.get("failed", 0) + self.counts.get("skipped", 0) == total


def overall_entry(mean: float, lower_is_better: bool) -> float:
    """How a metric's mean enters the overall score: oriented so that higher is better
    (a lower-is-better metric as ``1 - mean``), then clamped to [0, 1].

    Metric means are reported as computed; a cosine-based metric (answer_relevancy,
    answer_similarity, mrr_by_similarity) can have a mean below 0. Only here, where means of
    different metrics are combined, is a value outside [0, 1] clamped (docs/metrics.md)."""
    v = 1.0 - mean if lower_is_better else mean
    return min(1.0, max(0.0, v))


@dataclass(frozen=True)
class Overall:
    """The overall score of a run and what went into it (docs/metrics.md, "Overall score").

    ``mean``: the headline, the arithmetic mean of the metrics' entries (each metric mean
    oriented and clamped by :func:`overall_entry`). ``harmonic``: the harmonic mean of the same
    entries, the overall of the ragas-style specification; it is 0 whenever one entry is 0, so
    it is shown beside the headline, not as it. ``entries``: metric -> value as entered.
    ``left_out``: metric -> why it has no mean (failed or skipped on every sample...), so a
    metric never vanishes from the overall silently. ``clamped``: metrics whose mean lay
    outside [0, 1] and entered clamped."""

    mean: float | None
    harmonic: float | None
    entries: Mapping[str, float]
    left_out: Mapping[str, str] = field(default_factory=dict)
    clamped: tuple[str, ...] = ()

    def to_dict(self) -> dict[str, Any]:
        return {"mean": self.mean, "harmonic": self.harmonic, "entries": dict(self.entries),
                "left_out": dict(self.left_out), "clamped": list(self.clamped)}

    def describe_left_out(self) -> str:
        """One line naming the metrics left out and why (empty when none was)."""
        if not self.left_out:
            return ""
        items = "; ".join(f"{k} ({why})" for k, why in self.left_out.items())
        return f"the overall leaves out {len(self.left_out)} metric(s) with no mean: {items}"


def overall_of(
    means: Mapping[str, float | None],
    lower_is_better: Collection[str] = (),
    why_left_out: Mapping[str, str] | None = None,
) -> Overall:
    """The overall of metric means (``None`` for a metric with no mean: it is left out, with
    the reason from ``why_left_out`` or "no scored sample")."""
    entries: dict[str, float] = {}
    left_out: dict[str, str] = {}
    clamped: list[str] = []
    for key, mean in means.items():
        if mean is None:
            left_out[key] = (why_left_out or {}).get(key) or "no scored sample"
            continue
        lower = key in lower_is_better
        entries[key] = overall_entry(mean, lower)
        raw = 1.0 - mean if lower else mean
        if raw != entries[key]:
            clamped.append(key)
    values = list(entries.values())
    return Overall(
        mean=sum(values) / len(values) if values else None,
        harmonic=harmonic_mean(values) if values else None,
        entries=entries,
        left_out=left_out,
        clamped=tuple(clamped),
    )


def summarize_scores(
    key: str, scores: Sequence[Score], lower_is_better: bool = False, seed: int = 0
) -> MetricSummary:
    return summarize_outcomes(key, ((s.outcome.value, s.value, s.reason) for s in scores), lower_is_better, seed)


def summarize_outcomes(
    key: str, rows: Iterable[tuple[str, float | None, str]], lower_is_better: bool = False, seed: int = 0
) -> MetricSummary:
    """:func:`summarize_scores` from (outcome, value, reason) rows, read one at a time (a
    stored run's summary is computed from its rows without holding its scores)."""
    values: list[float] = []
    counts = {o.value: 0 for o in Outcome}
    skip: dict[str, int] = {}
    fail: dict[str, int] = {}
    for outcome, value, reason in rows:
        counts[outcome] += 1
        if outcome == Outcome.SCORED.value:
            if value is not None:
                values.append(value)
        elif outcome == Outcome.SKIPPED.value:
            skip[reason] = skip.get(reason, 0) + 1
        elif outcome == Outcome.FAILED.value:
            # the whole reason: its cause and any "pip install" hint come after a colon
            reason = reason or "failed"
            fail[reason] = fail.get(reason, 0) + 1
    st = summarize(values, seed=seed)
    return MetricSummary(key, st.n, st.mean, st.sd, st.ci_low, st.ci_high, counts, lower_is_better, skip, fail)
