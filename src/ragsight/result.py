"""The result of an evaluation: per-metric summaries, per-sample scores, and a stored run's reload."""

from __future__ import annotations

import os
from collections.abc import Collection, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from ._conversations import conversation_aggregates, metric_level, sample_level
from ._cost import Price
from ._files import atomic_write, strict_json
from ._score import Outcome, Score
from ._stats import harmonic_mean, summarize
from .errors import MissingExtraError
from .metrics import Metric, metrics_of_run
from .sample import RowProblem, Sample
from .store import (
    INPUT_COLUMNS,
    TURN_COLUMNS,
    Store,
    conversation_columns,
    input_columns,
    table_rows,
    write_table,
)

__all__ = [
    "EvaluationResult",
    "MetricSummary",
    "Overall",
    "load_result",
    "overall_entry",
    "overall_of",
    "run_cost",
    "summarize_scores",
    "truncation_note",
]

UNATTRIBUTED = "(not attributed)"


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
    values = [s.value for s in scores if s.outcome is Outcome.SCORED and s.value is not None]
    counts = {o.value: 0 for o in Outcome}
    skip: dict[str, int] = {}
    fail: dict[str, int] = {}
    for s in scores:
        counts[s.outcome.value] += 1
        if s.outcome is Outcome.SKIPPED:
            skip[s.reason] = skip.get(s.reason, 0) + 1
        elif s.outcome is Outcome.FAILED:
            # the whole reason: its cause and any "pip install" hint come after a colon
            reason = s.reason or "failed"
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
        self.levels = {m.key: metric_level(m) for m in metrics}
        turn_keys = [k for k in self.metric_keys if self.levels[k] == "turn"]
        # conversation id -> turn-level metric -> the mean over its scored turns (a Score)
        self.conversations: dict[str, dict[str, Score]] = conversation_aggregates(self.samples, self.scores,
                                                                                  turn_keys)
        # per turn-level metric, over conversations: each conversation's mean counts once
        self.conversation_summary: dict[str, MetricSummary] = {
            k: summarize_scores(k, [per[k] for per in self.conversations.values() if k in per], self._lower[k])
            for k in turn_keys
        } if self.conversations else {}

    @property
    def shape(self) -> dict[str, int]:
        """How many conversations, assistant turns and single-turn samples the run has."""
        conv = sum(1 for s in self.samples if sample_level(s) == "conversation")
        turns = sum(1 for s in self.samples if s.conversation_id is not None and s.turn is not None)
        return {"conversations": conv, "turns": turns, "single": len(self.samples) - conv - turns}

    def describe_shape(self) -> str:
        """'12 samples', or '3 conversations, 7 assistant turns' and the single-turn samples beside them."""
        sh = self.shape
        if not sh["conversations"] and not sh["turns"]:
            return f"{len(self.samples)} sample{'s' if len(self.samples) != 1 else ''}"
        out = f"{sh['conversations']} conversation{'s' if sh['conversations'] != 1 else ''}, " \
              f"{sh['turns']} assistant turn{'s' if sh['turns'] != 1 else ''}"
        return out + (f" + {sh['single']} single-turn sample{'s' if sh['single'] != 1 else ''}"
                      if sh["single"] else "")

    @property
    def cost(self) -> Mapping[str, Any] | None:
        """What the run's judge calls cost, as stored when the run stopped (see
        :func:`run_cost`): ``usd`` (None when the judge's price is unknown), ``by_metric``,
        ``price``. None for a run without a judge, or one stored before runs were priced."""
        c = self.judge_stats.get("cost")
        return c if isinstance(c, Mapping) else None

    @property
    def overall_detail(self) -> Overall:
        """The overall score with its parts: the headline mean, the harmonic mean beside it,
        each metric's entry, and the metrics left out (no mean) with the reason."""
        return overall_of(
            {k: s.mean for k, s in self.summary.items()},
            {k for k, low in self._lower.items() if low},
            {k: s.why_no_mean() or "" for k, s in self.summary.items()},
        )

    @property
    def overall(self) -> float | None:
        """The headline overall score: the arithmetic mean of the metric means, each oriented
        (lower-is-better as 1 - mean) and clamped to [0, 1]; None when no metric has a mean.
        Metrics with no mean are left out and named in :attr:`overall_detail`."""
        return self.overall_detail.mean

    @property
    def overall_harmonic(self) -> float | None:
        """The harmonic mean of the same entries as :attr:`overall` (the specification's
        overall score; 0 whenever one metric's entry is 0)."""
        return self.overall_detail.harmonic

    def worst(self) -> tuple[str, str, float] | None:
        """The sample with the lowest score of the run, as (sample id, metric, value): each
        scored value oriented so that lower is worse (a lower-is-better metric as 1 - value);
        ties go to the earlier sample. None when nothing was scored."""
        found: tuple[float, str, str, float] | None = None
        for s in self.samples:
            for key, score in self.scores.get(s.id, {}).items():
                if score.outcome is not Outcome.SCORED or score.value is None:
                    continue
                oriented = 1.0 - score.value if self._lower.get(key) else score.value
                if found is None or oriented < found[0]:
                    found = (oriented, s.id, key, score.value)
        return None if found is None else (found[1], found[2], found[3])

    def scored_values(self, metric: str) -> dict[str, float]:
        """Sample id -> value of ``metric`` for the samples it scored (the pairs a comparison
        can use; undetermined, failed and skipped samples are left out)."""
        out: dict[str, float] = {}
        for sid, per in self.scores.items():
            s = per.get(metric)
            if s is not None and s.outcome is Outcome.SCORED and s.value is not None:
                out[sid] = s.value
        return out

    def __getitem__(self, metric: str) -> MetricSummary:
        return self.summary[metric]

    def records(self) -> list[dict[str, Any]]:
        """One dict per sample, in input order: {"id", "run_id", the inputs (question, contexts,
        response, reference, reference_contexts, retrieved_ids, relevant_ids, metadata),
        "scores": {metric: {...}}}. A turn of a conversation also has ``conversation_id``,
        ``turn`` and its history and tool calls; a conversation's own row has ``turn`` None and
        ``turn_means`` (per turn metric, the mean of its scored turns, with the counts)."""
        out = []
        for s in self.samples:
            per = self.scores.get(s.id, {})
            rec = {"id": s.id, "run_id": self.run_id, **conversation_columns(s), **input_columns(s, "json"),
                   "scores": {k: per[k].to_dict() for k in self.metric_keys if k in per}}
            if s.conversation_id is not None and s.turn is None:
                rec["turn_means"] = {k: v.to_dict() for k, v in self.conversations.get(s.conversation_id, {}).items()}
            out.append(rec)
        return out

    def write_jsonl(self, path: str | os.PathLike[str]) -> None:
        """Write :meth:`records` as strict JSON lines, to a temporary file renamed over ``path``
        when complete (a write killed midway leaves the previous file whole)."""
        with atomic_write(path) as f:
            for rec in self.records():
                f.write(strict_json(rec) + "\n")

    def write(self, path: str | os.PathLike[str]) -> str:
        """Write the per-sample results in the format the file name says: ``.csv`` and
        ``.parquet`` as ``ragsight export --format csv|parquet`` writes them (one flat row per
        sample), anything else as :meth:`write_jsonl`. Returns the format written."""
        suffix = os.path.splitext(os.fspath(path))[1].lower()
        if suffix in (".csv", ".parquet"):
            fmt = suffix[1:]
            write_table(table_rows(self.run_id, self.samples, self.scores, self.metric_keys, self.levels,
                                   "text" if fmt == "csv" else "parquet"), fmt, os.fspath(path))
            return fmt
        self.write_jsonl(path)
        return "jsonl"

    def to_pandas(self) -> Any:
        """A DataFrame with one row per sample: the inputs (``id``, ``question``, ``contexts``,
        ``response``, ``reference``, ``reference_contexts``, ``retrieved_ids``, ``relevant_ids``,
        ``metadata``, as Python lists and dicts; a run with conversations also has
        ``conversation_id`` and ``turn`` after ``id``, and each turn's ``history``, ``tool_calls``,
        ``reference_tool_calls``, ``scenario``, ``expected_outcome`` and ``system_role`` after the
        inputs), then for each metric its value,
        ``<metric>__outcome`` and ``<metric>__reason``. So a filter reads
        ``df[df.faithfulness < 0.5][["question", "contexts"]]``."""
        try:
            import pandas as pd
        except ImportError as exc:
            raise MissingExtraError("to_pandas()", "pandas", "pandas") from exc
        rows = []
        conv = any(s.conversation_id is not None for s in self.samples)
        for s in self.samples:
            row: dict[str, Any] = {"id": s.id}
            turn = conversation_columns(s, "python") if conv else {}
            if conv:
                row.update({"conversation_id": s.conversation_id, "turn": s.turn})
            row.update(input_columns(s, "python"))
            if conv:
                row.update({k: turn.get(k) for k in TURN_COLUMNS})
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


def metric_tokens(calls: Sequence[tuple[str | None, str, int, int]],
                  scores: Mapping[str, Mapping[str, Score]]) -> dict[str, list[float]]:
    """Prompt and completion tokens per metric: each call's tokens go to the metrics of its
    sample whose evidence names its step, split equally between them when several share it
    (faithfulness and context_recall share one verdict step); a call no score names (a step of
    an analysis whose metric then failed elsewhere) is counted under ``(not attributed)``."""
    by_step: dict[tuple[str | None, str], list[str]] = {}
    for sid, per in scores.items():
        for metric, score in per.items():
            for ref in score.evidence.calls:
                users = by_step.setdefault((sid, ref.key), [])
                if metric not in users:
                    users.append(metric)
    out: dict[str, list[float]] = {}
    for call_sample, step, prompt, completion in calls:
        users = by_step.get((call_sample, step)) or [UNATTRIBUTED]
        for key in users:
            acc = out.setdefault(key, [0.0, 0.0])
            acc[0] += prompt / len(users)
            acc[1] += completion / len(users)
    return out


def run_cost(store: Store, run_id: str, price: Price | None, stats: Mapping[str, Any],
             scores: Mapping[str, Mapping[str, Score]] | None = None) -> dict[str, Any]:
    """The money a run's judge calls cost (kept in the run's stats as ``cost``): ``usd`` for the
    run (its tokens at ``price``; None when the price is unknown, never 0), ``by_metric`` the
    same per metric (tokens split as :func:`metric_tokens` says), ``price`` the price used."""
    tokens = metric_tokens(store.call_tokens(run_id), scores if scores is not None else store.scores(run_id))
    prompt = int(stats.get("prompt_tokens", 0) or 0)
    completion = int(stats.get("completion_tokens", 0) or 0)
    return {
        "usd": price.cost(prompt, completion) if price is not None else None,
        "price": price.to_dict() if price is not None else None,
        "by_metric": {m: (price.cost(p, c) if price is not None else None) for m, (p, c) in tokens.items()},
        "tokens_by_metric": {m: [round(p, 1), round(c, 1)] for m, (p, c) in tokens.items()},
    }


def load_result(store: Store, ref: str) -> EvaluationResult:
    """The result of a stored run (by id, id prefix, or 'last')."""
    run_id = store.resolve_run(ref)
    info = store.run(run_id)
    samples = store.samples(run_id)
    metrics = metrics_of_run(info.metrics, samples)
    return EvaluationResult(run_id, samples, metrics, store.scores(run_id), info.stats,
                            store.problems(run_id), store.path, info.status, info.config)


def truncation_note(result: EvaluationResult) -> str | None:
    """One sentence when texts were cut to fit the judge's window (the summary and the report
    say it): how many samples, and the largest cut. None when nothing was cut."""
    samples: set[str] = set()
    largest: tuple[int, str, str, int, int] | None = None
    for sid, per in result.scores.items():
        for score in per.values():
            for t in score.evidence.details.get("truncated") or ():
                if not isinstance(t, dict):
                    continue
                samples.add(sid)
                tokens, kept = int(t.get("tokens", 0)), int(t.get("kept", 0))
                if largest is None or tokens - kept > largest[0]:
                    largest = (tokens - kept, sid, str(t.get("field", "")), tokens, kept)
    if largest is None:
        return None
    _, sid, where, tokens, kept = largest
    n = len(samples)
    return (f"cut to fit the judge's window: {n} sample{'s' if n != 1 else ''}; the largest cut: {where} "
            f"of sample {sid}, {tokens:,} tokens to {kept:,}. The scores that read a cut text list it "
            "under 'truncated' (ragsight show RUN --sample ID).")
