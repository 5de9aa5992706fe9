"""The result of an evaluation: per-metric summaries, per-sample scores, and a stored run's reload."""

from __future__ import annotations

import os
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from ._files import atomic_write, strict_json
from ._score import Outcome, Score
from ._stats import overall_score, summarize
from .errors import MissingExtraError
from .metrics import Metric, resolve_metrics
from .sample import RowProblem, Sample
from .store import INPUT_COLUMNS, Store, input_columns

__all__ = ["EvaluationResult", "MetricSummary", "load_result", "summarize_scores"]


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


def summarize_scores(
    key: str, scores: Sequence[Score], lower_is_better: bool = False, seed: int = 0
) -> MetricSummary:
    values = [s.value for s in scores if s.outcome is Outcome.SCORED and s.value is not None]
    counts = {o.value: 0 for o in Outcome}
    skip: dict[str, int] = {}
    fail: dict[str, int] = {}
    for s in scores:
        counts[s.outcome.value] += 1
        if s.outcome is Outcome.SKIPPED:
            skip[s.reason] = skip.get(s.reason, 0) + 1
        elif s.outcome is Outcome.FAILED:
            reason = s.reason.split(":")[0] if s.reason else "failed"
            fail[reason] = fail.get(reason, 0) + 1
    st = summarize(values, seed=seed)
    return MetricSummary(key, st.n, st.mean, st.sd, st.ci_low, st.ci_high, counts, lower_is_better, skip, fail)


class EvaluationResult:
    """What ``evaluate()`` returns: per-metric summaries, per-sample scores with evidence, the
    run id in the store, judge spend, and the input rows that could not be used."""

    def __init__(
        self, run_id: str, samples: Sequence[Sample], metrics: Sequence[Metric],
        scores: Mapping[str, Mapping[str, Score]], judge_stats: Mapping[str, Any],
        problems: Sequence[RowProblem], store_path: str | None, status: str = "completed",
        config: Mapping[str, Any] | None = None,
    ) -> None:
        self.run_id = run_id
        self.samples = list(samples)
        self.metric_keys = [m.key for m in metrics]
        self._lower = {m.key: m.lower_is_better for m in metrics}
        self.scores = {sid: dict(v) for sid, v in scores.items()}
        self.judge_stats = dict(judge_stats)
        self.problems = list(problems)
        self.store_path = store_path
        self.status = status
        self.config = dict(config or {})
        self.summary: dict[str, MetricSummary] = {
            k: summarize_scores(k, [self.scores[s.id][k] for s in self.samples if k in self.scores.get(s.id, {})],
                                self._lower[k])
            for k in self.metric_keys
        }

    @property
    def overall(self) -> float | None:
        """Harmonic mean of the metric means (lower-is-better metrics enter as 1 - mean)."""

        # A cosine-based mean can be negative; it enters the harmonic mean as 0 (clamped to [0, 1]).
        means = {k: min(1.0, max(0.0, s.mean)) for k, s in self.summary.items() if s.mean is not None}
        if not means:
            return None
        return overall_score(means, {k for k in means if self._lower[k]})

    def __getitem__(self, metric: str) -> MetricSummary:
        return self.summary[metric]

    def records(self) -> list[dict[str, Any]]:
        """One dict per sample, in input order: {"id", "run_id", the inputs (question, contexts,
        response, reference, reference_contexts, retrieved_ids, relevant_ids, metadata),
        "scores": {metric: {...}}}."""
        out = []
        for s in self.samples:
            per = self.scores.get(s.id, {})
            out.append({"id": s.id, "run_id": self.run_id, **input_columns(s, "json"),
                        "scores": {k: per[k].to_dict() for k in self.metric_keys if k in per}})
        return out

    def write_jsonl(self, path: str | os.PathLike[str]) -> None:
        """Write :meth:`records` as strict JSON lines, to a temporary file renamed over ``path``
        when complete (a write killed midway leaves the previous file whole)."""
        with atomic_write(path) as f:
            for rec in self.records():
                f.write(strict_json(rec) + "\n")

    def to_pandas(self) -> Any:
        """A DataFrame with one row per sample: the inputs (``id``, ``question``, ``contexts``,
        ``response``, ``reference``, ``reference_contexts``, ``retrieved_ids``, ``relevant_ids``,
        ``metadata``, as Python lists and dicts), then for each metric its value,
        ``<metric>__outcome`` and ``<metric>__reason``. So a filter reads
        ``df[df.faithfulness < 0.5][["question", "contexts"]]``."""
        try:
            import pandas as pd
        except ImportError as exc:
            raise MissingExtraError("to_pandas()", "pandas", "pandas") from exc
        rows = []
        for s in self.samples:
            row: dict[str, Any] = {"id": s.id, **input_columns(s, "python")}
            for k in self.metric_keys:
                sc = self.scores.get(s.id, {}).get(k)
                row[k] = sc.value if sc else None
                row[f"{k}__outcome"] = sc.outcome.value if sc else None
                row[f"{k}__reason"] = sc.reason if sc else None
            rows.append(row)
        return pd.DataFrame(rows, columns=list(rows[0]) if rows else ["id", *INPUT_COLUMNS])

    def __repr__(self) -> str:
        parts = []
        for k, s in self.summary.items():
            mean = "n/a" if s.mean is None else f"{s.mean:.3f}"
            parts.append(f"{k}={mean} ({s.counts['scored']}/{sum(s.counts.values())} scored)")
        return f"EvaluationResult(run_id={self.run_id!r}, {', '.join(parts)})"


def load_result(store: Store, ref: str) -> EvaluationResult:
    """The result of a stored run (by id, id prefix, or 'last')."""
    run_id = store.resolve_run(ref)
    info = store.run(run_id)
    samples = store.samples(run_id)
    metrics = resolve_metrics([m["key"] for m in info.metrics], samples)
    return EvaluationResult(run_id, samples, metrics, store.scores(run_id), info.stats,
                            store.problems(run_id), store.path, info.status, info.config)
