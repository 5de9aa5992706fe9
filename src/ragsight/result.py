"""The result of an evaluation: per-metric summaries, per-sample scores, and a stored run's reload."""

from __future__ import annotations

import os
from collections import OrderedDict
from collections.abc import Collection, ItemsView, Iterable, Iterator, Mapping, Sequence, ValuesView
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, overload

from ._score import Outcome, Score
from ._stats import harmonic_mean, summarize
from .calls import Price
from .dataset import (
    RowProblem,
    Sample,
    atomic_write,
    conversation_aggregates,
    metric_level,
    strict_json,
)
from .errors import MissingExtraError, StoreError
from .metrics import Metric, metrics_of_run
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
    "LAZY_FROM",
    "EvaluationResult",
    "MetricSummary",
    "Overall",
    "StoredRun",
    "StoredSamples",
    "StoredScores",
    "load_result",
    "overall_entry",
    "overall_of",
    "run_cost",
    "summarize_outcomes",
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


LAZY_FROM = 500
"""A run of this many samples or more, kept in a store file, gives a result that reads its
samples and scores from the store when asked (:class:`StoredRun`), so its memory does not grow
with the run; a smaller one (or one in a ``:memory:`` store) holds them. Both give the same
values, in the same order, of the same types."""


class StoredRun:
    """A finished run's samples and scores, read from its store file on demand: a connection
    of its own, opened at the first read; a few pages of samples kept (:data:`_PAGES`). The
    first read of a sample by index takes the run's sample ids (about 60 bytes a sample), so
    that a page is read by its keys wherever it lies."""

    _PAGE = 256
    _PAGES = 4

    def __init__(self, path: str, run_id: str) -> None:
        self.path = path
        self.run_id = run_id
        self._store: Store | None = None
        self._pages: OrderedDict[int, list[Sample]] = OrderedDict()
        self._ids: list[str] | None = None
        n, _ = self.store.sample_counts(run_id).get(run_id, (0, 0))
        self.n_samples = n
        self.n_scored = int(self.store.conn.execute(
            "SELECT COUNT(DISTINCT sample_id) FROM scores WHERE run_id=?", (run_id,)).fetchone()[0])

    @property
    def store(self) -> Store:
        if self._store is None:
            if not Path(self.path).is_file():  # Store() would make a new, empty one
                raise StoreError(f"the store {self.path} that holds run {self.run_id} is gone; the result "
                                 "reads its samples and scores from there")
            self._store = Store(self.path)
        return self._store

    def close(self) -> None:
        if self._store is not None:
            self._store.close()
            self._store = None

    def __getstate__(self) -> dict[str, Any]:
        # pickled (a result sent to another process): the path and counts, not the connection
        return {**self.__dict__, "_store": None, "_pages": OrderedDict(), "_ids": None}

    def sample_at(self, i: int) -> Sample:
        page = i // self._PAGE
        got = self._pages.get(page)
        if got is None:
            if self._ids is None:
                self._ids = self.store.sample_ids(self.run_id)
            start = page * self._PAGE
            got = self.store.samples_by_id(self.run_id, self._ids[start:start + self._PAGE])
            self._pages[page] = got
            while len(self._pages) > self._PAGES:
                self._pages.popitem(last=False)
        else:
            self._pages.move_to_end(page)
        return got[i % self._PAGE]


class StoredSamples(Sequence[Sample]):
    """A stored run's samples in data order, decoded when read (a sequence, like the list a
    small run's result holds; equal to a list or tuple of the same samples)."""

    def __init__(self, run: StoredRun) -> None:
        self._run = run

    def __len__(self) -> int:
        return self._run.n_samples

    @overload
    def __getitem__(self, i: int) -> Sample: ...
    @overload
    def __getitem__(self, i: slice) -> list[Sample]: ...
    def __getitem__(self, i: int | slice) -> Sample | list[Sample]:
        if isinstance(i, slice):
            return [self[j] for j in range(*i.indices(len(self)))]
        n = len(self)
        if not isinstance(i, int) or isinstance(i, bool):
            raise TypeError(f"sample indices must be integers or slices, not {type(i).__name__}")
        if not -n <= i < n:
            raise IndexError("sample index out of range")
        return self._run.sample_at(i % n)

    def __iter__(self) -> Iterator[Sample]:
        return self._run.store.iter_samples(self._run.run_id)

    def __eq__(self, other: object) -> bool:
        if isinstance(other, (StoredSamples, list, tuple)):
            return len(self) == len(other) and all(a == b for a, b in zip(self, other))
        return NotImplemented

    __hash__ = None  # type: ignore[assignment]

    def __repr__(self) -> str:
        return f"<{len(self)} samples of run {self._run.run_id}, read from {self._run.path}>"


class _StoredItems(ItemsView[str, dict[str, Score]]):
    _mapping: StoredScores

    def __iter__(self) -> Iterator[tuple[str, dict[str, Score]]]:
        return self._mapping._run.store.iter_scores(self._mapping._run.run_id)


class _StoredValues(ValuesView[dict[str, Score]]):
    _mapping: StoredScores

    def __iter__(self) -> Iterator[dict[str, Score]]:
        return (per for _, per in self._mapping._run.store.iter_scores(self._mapping._run.run_id))


class StoredScores(Mapping[str, dict[str, Score]]):
    """A stored run's scores, sample id -> metric key -> Score, read when asked: the same keys,
    order and values as the dict a small run's result holds (each read is a new dict)."""

    def __init__(self, run: StoredRun) -> None:
        self._run = run

    def __getitem__(self, sample_id: str) -> dict[str, Score]:
        got = self._run.store.scores(self._run.run_id, sample_id).get(sample_id) if isinstance(sample_id, str) \
            else None
        if not got:
            raise KeyError(sample_id)
        return got

    def __contains__(self, sample_id: object) -> bool:
        return isinstance(sample_id, str) and self._run.store.has_scores(self._run.run_id, sample_id)

    def __iter__(self) -> Iterator[str]:
        return self._run.store.scored_sample_ids(self._run.run_id)

    def __len__(self) -> int:
        return self._run.n_scored

    def items(self) -> _StoredItems:
        return _StoredItems(self)

    def values(self) -> _StoredValues:
        return _StoredValues(self)

    def __repr__(self) -> str:
        return f"<scores of {len(self)} samples of run {self._run.run_id}, read from {self._run.path}>"


class EvaluationResult:
    """What ``evaluate()`` returns: per-metric summaries, per-sample scores with evidence, the
    run id in the store, judge spend, and the input rows that could not be used."""

    def __init__(
        self, run_id: str, samples: Sequence[Sample], metrics: Sequence[Metric],
        scores: Mapping[str, Mapping[str, Score]], judge_stats: Mapping[str, Any],
        problems: Sequence[RowProblem], store_path: str | None, status: str = "completed",
        config: Mapping[str, Any] | None = None,
    ) -> None:
        self.samples: Sequence[Sample] = list(samples)
        self.scores: Mapping[str, dict[str, Score]] = {sid: dict(v) for sid, v in scores.items()}
        self._stored: StoredRun | None = None
        self._setup(run_id, metrics, judge_stats, problems, store_path, status, config)

    @classmethod
    def from_store(
        cls, run: StoredRun, metrics: Sequence[Metric], judge_stats: Mapping[str, Any],
        problems: Sequence[RowProblem], status: str = "completed", config: Mapping[str, Any] | None = None,
    ) -> EvaluationResult:
        """The result of a stored run that reads its samples and scores from the store when
        asked (``samples`` a :class:`StoredSamples`, ``scores`` a :class:`StoredScores`); the
        summaries are computed from the score rows, one metric at a time, without evidence."""
        self = cls.__new__(cls)
        self.samples = StoredSamples(run)
        self.scores = StoredScores(run)
        self._stored = run
        self._setup(run.run_id, metrics, judge_stats, problems, run.path, status, config)
        return self

    def _setup(
        self, run_id: str, metrics: Sequence[Metric], judge_stats: Mapping[str, Any],
        problems: Sequence[RowProblem], store_path: str | None, status: str, config: Mapping[str, Any] | None,
    ) -> None:
        self.run_id = run_id
        self.metric_keys = [m.key for m in metrics]
        self._lower = {m.key: m.lower_is_better for m in metrics}
        self.judge_stats = dict(judge_stats)
        self.problems = list(problems)
        self.store_path = store_path
        self.status = status
        self.config = dict(config or {})
        self.summary: dict[str, MetricSummary] = {
            k: summarize_outcomes(k, self._outcomes(k), self._lower[k]) for k in self.metric_keys
        }
        self.levels = {m.key: metric_level(m) for m in metrics}
        turn_keys = [k for k in self.metric_keys if self.levels[k] == "turn"]
        # conversation id -> turn-level metric -> the mean over its scored turns (a Score)
        self.conversations: dict[str, dict[str, Score]] = (
            conversation_aggregates(self.samples, self.scores, turn_keys) if self._has_conversations() else {})
        # per turn-level metric, over conversations: each conversation's mean counts once
        self.conversation_summary: dict[str, MetricSummary] = {
            k: summarize_scores(k, [per[k] for per in self.conversations.values() if k in per], self._lower[k])
            for k in turn_keys
        } if self.conversations else {}

    def _outcomes(self, key: str) -> Iterator[tuple[str, float | None, str]]:
        """(outcome, value, reason) of the metric's scores in sample order."""
        if self._stored is not None:
            yield from self._stored.store.score_outcomes(self.run_id, key)
            return
        for s in self.samples:
            sc = self.scores.get(s.id, {}).get(key)
            if sc is not None:
                yield sc.outcome.value, sc.value, sc.reason

    def _levels(self) -> Iterator[tuple[str | None, int | None]]:
        """(conversation id, turn) of every sample, in sample order, without decoding a sample."""
        if self._stored is not None:
            for _, _, _, conv, turn in self._stored.store.sample_rows(self.run_id):
                yield conv, turn
            return
        for s in self.samples:
            yield s.conversation_id, s.turn

    def _has_conversations(self) -> bool:
        return any(conv is not None for conv, _ in self._levels())

    @property
    def lazy(self) -> bool:
        """True when the samples and scores are read from the store when asked (a run of
        :data:`LAZY_FROM` samples or more in a store file), False when they are in memory."""
        return self._stored is not None

    def close(self) -> None:
        """Close the store connection a lazy result reads through (it opens again if the
        result is read later). Nothing to do for a result held in memory."""
        if self._stored is not None:
            self._stored.close()

    @property
    def shape(self) -> dict[str, int]:
        """How many conversations, assistant turns and single-turn samples the run has."""
        conv = turns = 0
        for cid, turn in self._levels():
            conv += cid is not None and turn is None
            turns += cid is not None and turn is not None
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
        for s, per in self._pairs():
            for key, score in per.items():
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

    def _pairs(self) -> Iterator[tuple[Sample, Mapping[str, Score]]]:
        """(sample, its scores by metric) of every sample, in input order ({} for a sample with
        no score); a lazy result reads both streams from the store side by side."""
        if self._stored is None:
            for s in self.samples:
                yield s, self.scores.get(s.id, {})
            return
        scored = iter(self.scores.items())
        nxt = next(scored, None)
        for s in self.samples:
            if nxt is not None and nxt[0] == s.id:
                yield s, nxt[1]
                nxt = next(scored, None)
            else:
                yield s, {}

    def records(self) -> list[dict[str, Any]]:
        """One dict per sample, in input order: {"id", "run_id", the inputs (question, contexts,
        response, reference, reference_contexts, retrieved_ids, relevant_ids, metadata),
        "scores": {metric: {...}}}. A turn of a conversation also has ``conversation_id``,
        ``turn`` and its history and tool calls; a conversation's own row has ``turn`` None and
        ``turn_means`` (per turn metric, the mean of its scored turns, with the counts).
        :meth:`iter_records` gives the same one at a time (for a large run)."""
        return list(self.iter_records())

    def iter_records(self) -> Iterator[dict[str, Any]]:
        """The dicts of :meth:`records`, one at a time: a large run's records are read from the
        store as they are asked for, never all held."""
        for s, per in self._pairs():
            rec = {"id": s.id, "run_id": self.run_id, **conversation_columns(s), **input_columns(s, "json"),
                   "scores": {k: per[k].to_dict() for k in self.metric_keys if k in per}}
            if s.conversation_id is not None and s.turn is None:
                rec["turn_means"] = {k: v.to_dict() for k, v in self.conversations.get(s.conversation_id, {}).items()}
            yield rec

    def write_jsonl(self, path: str | os.PathLike[str]) -> None:
        """Write :meth:`records` as strict JSON lines, to a temporary file renamed over ``path``
        when complete (a write killed midway leaves the previous file whole)."""
        with atomic_write(path) as f:
            for rec in self.iter_records():
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
        conv = self._has_conversations()
        for s, per in self._pairs():
            row: dict[str, Any] = {"id": s.id}
            turn = conversation_columns(s, "python") if conv else {}
            if conv:
                row.update({"conversation_id": s.conversation_id, "turn": s.turn})
            row.update(input_columns(s, "python"))
            if conv:
                row.update({k: turn.get(k) for k in TURN_COLUMNS})
            for k in self.metric_keys:
                sc = per.get(k)
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


def metric_tokens(calls: Iterable[tuple[str | None, str, int, int]],
                  scores: Mapping[str, Mapping[str, Score]],
                  out: dict[str, list[float]] | None = None) -> dict[str, list[float]]:
    """Prompt and completion tokens per metric: each call's tokens go to the metrics of its
    sample whose evidence names its step, split equally between them when several share it
    (faithfulness and context_recall share one verdict step); a call no score names (a step of
    an analysis whose metric then failed elsewhere) is counted under ``(not attributed)``.
    ``out``: totals to add to (the same dict is returned)."""
    by_step: dict[tuple[str | None, str], list[str]] = {}
    for sid, per in scores.items():
        for metric, score in per.items():
            for ref in score.evidence.calls:
                users = by_step.setdefault((sid, ref.key), [])
                if metric not in users:
                    users.append(metric)
    out = {} if out is None else out
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
    if scores is not None:
        tokens = metric_tokens(store.call_tokens(run_id), scores)
    else:
        tokens = _stored_metric_tokens(store, run_id)
    prompt = int(stats.get("prompt_tokens", 0) or 0)
    completion = int(stats.get("completion_tokens", 0) or 0)
    return {
        "usd": price.cost(prompt, completion) if price is not None else None,
        "price": price.to_dict() if price is not None else None,
        "by_metric": {m: (price.cost(p, c) if price is not None else None) for m, (p, c) in tokens.items()},
        "tokens_by_metric": {m: [round(p, 1), round(c, 1)] for m, (p, c) in tokens.items()},
    }


def _stored_metric_tokens(store: Store, run_id: str) -> dict[str, list[float]]:
    """:func:`metric_tokens` of a stored run, read a sample at a time: its calls and its scores
    both in sample-id order, the calls of each sample with that sample's scores (the totals, the
    order of their keys and of their sums are those of the whole run at once)."""
    out: dict[str, list[float]] = {}
    scored = store.iter_scores(run_id, by_id=True)
    nxt = next(scored, None)
    group: list[tuple[str | None, str, int, int]] = []

    def flush() -> None:
        nonlocal nxt
        sid = group[0][0]
        while nxt is not None and sid is not None and nxt[0] < sid:
            nxt = next(scored, None)
        per = {nxt[0]: nxt[1]} if nxt is not None and nxt[0] == sid else {}
        metric_tokens(group, per, out)
        group.clear()

    for call in store.iter_call_tokens(run_id):
        if group and group[0][0] != call[0]:
            flush()
        group.append(call)
    if group:
        flush()
    return out


def load_result(store: Store, ref: str, lazy: bool | None = None) -> EvaluationResult:
    """The result of a stored run (by id, id prefix, or 'last'). ``lazy``: read its samples and
    scores from the store when asked (True; needs a store file), hold them (False); by default
    lazy from :data:`LAZY_FROM` samples in a store file."""
    if lazy and store.path == ":memory:":
        raise ValueError("a result read from the store when asked needs a store file, not ':memory:'")
    run_id = store.resolve_run(ref)
    info = store.run(run_id)
    if lazy is None:
        n, _ = store.sample_counts(run_id).get(run_id, (0, 0))
        lazy = store.path != ":memory:" and n >= LAZY_FROM
    if lazy:
        run = StoredRun(store.path, run_id)
        metrics = metrics_of_run(info.metrics, StoredSamples(run))
        return EvaluationResult.from_store(run, metrics, info.stats, store.problems(run_id), info.status,
                                           info.config)
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
