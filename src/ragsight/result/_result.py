"""The result object (:class:`EvaluationResult`): what ``evaluate()`` returns, with its
summaries, overall score, records and exports (JSON lines, CSV, Parquet, pandas); a stored run's
reload (:func:`load_result`) and the note on texts cut to fit the judge's window.
"""

from __future__ import annotations

import os
from collections.abc import Iterator, Mapping, Sequence
from typing import Any

from .._score import Outcome, Score
from ..analyses import detect_declines
from ..dataset import (
    RowProblem,
    Sample,
    atomic_write,
    conversation_aggregates,
    metric_level,
    same_file,
    strict_json,
)
from ..errors import ConfigError, MissingExtraError
from ..metrics import Metric, metrics_of_run
from ..store import (
    FORMATS,
    INPUT_COLUMNS,
    TURN_COLUMNS,
    Store,
    conversation_columns,
    input_columns,
    table_rows,
    write_table,
)
from ._stored import StoredRun, StoredSamples, StoredScores
from ._summary import MetricSummary, Overall, overall_of, summarize_outcomes, summarize_scores

__all__ = [
    "LAZY_FROM", "EvaluationResult", "languages_note", "load_result", "passing_with_unsupported",
    "truncation_note", "unsupported_note",
]


LAZY_FROM = 500
"""A run of this many samples or more, kept in a store file, gives a result that reads its
samples and scores from the store when asked (:class:`StoredRun`), so its memory does not grow
with the run; a smaller one (or one in a ``:memory:`` store) holds them. Both give the same
values, in the same order, of the same types."""


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
        each metric's entry, and the metrics left out (no mean) with the reason: those of the
        run, and those a group chose and the judge refused, which the run did not compute
        (``config["left_out"]``)."""
        refused = self.config.get("left_out") if isinstance(self.config, Mapping) else None
        refused = {str(k): str(v) for k, v in refused.items()} if isinstance(refused, Mapping) else {}
        return overall_of(
            {**{k: s.mean for k, s in self.summary.items()}, **{k: None for k in refused if k not in self.summary}},
            {k for k, low in self._lower.items() if low},
            {**{k: s.why_no_mean() or "" for k, s in self.summary.items()}, **refused},
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
        ties go to the earlier sample. None when nothing was scored. A correct decline (an
        out-of-scope question the response declines) is not a failure, so it is never the
        lowest score, whatever a metric that compares words gave it."""
        found: tuple[float, str, str, float] | None = None
        for s, per in self._pairs():
            if s.out_of_scope and s.response and detect_declines(s.response).verdict == "declines":
                continue
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
        "scores": {metric: {"value", "outcome", "reason"}}, "evidence": {metric: {...}}}. A turn of a conversation also has ``conversation_id``,
        ``turn`` and its history and tool calls; a conversation's own row has ``turn`` None and
        ``turn_means`` (per turn metric, the mean of its scored turns, with the counts).
        :meth:`iter_records` gives the same one at a time (for a large run)."""
        return list(self.iter_records())

    def iter_records(self) -> Iterator[dict[str, Any]]:
        """The dicts of :meth:`records`, one at a time: a large run's records are read from the
        store as they are asked for, never all held."""
        for s, per in self._pairs():
            rec = {"id": s.id, "run_id": self.run_id, **conversation_columns(s), **input_columns(s, "json"),
                   "scores": {k: per[k].to_dict() for k in self.metric_keys if k in per},
                   "evidence": {k: per[k].evidence.to_dict() for k in self.metric_keys if k in per}}
            if s.conversation_id is not None and s.turn is None:
                rec["turn_means"] = {k: v.to_dict() for k, v in self.conversations.get(s.conversation_id, {}).items()}
            yield rec

    def write_jsonl(self, path: str | os.PathLike[str]) -> None:
        """Write :meth:`records` as strict JSON lines, to a temporary file renamed over ``path``
        when complete (a write killed midway leaves the previous file whole)."""
        with atomic_write(path) as f:
            for rec in self.iter_records():
                f.write(strict_json(rec) + "\n")

    def write(self, path: str | os.PathLike[str], fmt: str | None = None) -> str:
        """Write the per-sample results: ``fmt`` ``jsonl`` (:meth:`write_jsonl`), ``csv`` or
        ``parquet`` (one flat row per sample); by default the format the file name says
        (``.csv``, ``.parquet``, anything else JSONL). ``ragsight export`` and ``ragsight
        evaluate --out`` both write through this, so they write the same rows. Returns the
        format written. A ``path`` that is the run's store (or one of the files SQLite keeps
        beside it) is refused (ConfigError), before anything is written."""
        if self.store_path and self.store_path != ":memory:":
            for suffix in ("", "-wal", "-shm", "-journal"):
                if same_file(path, f"{self.store_path}{suffix}"):
                    raise ConfigError(f"the output file {os.fspath(path)} is the store of run {self.run_id} "
                                      f"({self.store_path}{suffix}); writing it would replace the store: give "
                                      "another file name")
        if fmt is None:
            suffix = os.path.splitext(os.fspath(path))[1].lower()
            fmt = suffix[1:] if suffix in (".csv", ".parquet") else "jsonl"
        if fmt not in FORMATS:
            raise ConfigError(f"unknown export format '{fmt}'; use one of {', '.join(FORMATS)}")
        if fmt in ("csv", "parquet"):
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


def languages_note(result: EvaluationResult) -> str | None:
    """One sentence when samples were judged across languages (a question and answer in one
    language over contexts in another: the summary and the report say it): how many samples, and
    which languages. None when there were none."""
    samples: set[str] = set()
    pairs: dict[tuple[str, str], int] = {}
    for sid, per in result.scores.items():
        for score in per.values():
            mark = score.evidence.details.get("across_languages")
            if isinstance(mark, dict) and sid not in samples:
                samples.add(sid)
                pair = (str(mark.get("text", "?")), str(mark.get("contexts", "?")))
                pairs[pair] = pairs.get(pair, 0) + 1
    if not samples:
        return None
    n = len(samples)
    which = ", ".join(f"{k} {a} over {b}" for (a, b), k in sorted(pairs.items(), key=lambda kv: (-kv[1], kv[0])))
    return (f"judged across languages: {n} sample{'s' if n != 1 else ''} ({which}: question and answer in "
            "one language, contexts in another); their claim verdicts read the judge without word overlap, "
            "which means nothing across languages.")


def passing_with_unsupported(result: EvaluationResult, thresholds: Mapping[str, float] | None = None,
                             default: float = 0.5) -> dict[str, list[str]]:
    """faithfulness key -> the samples it scored at or above its threshold (``thresholds`` by
    key, else ``default``) although a claim of theirs was judged unsupported: a sample with one
    invented claim among good ones, which the share of supported claims lets pass. Only the keys
    with such samples."""
    keys = [k for k in result.metric_keys if k.split("(")[0] == "faithfulness"]
    out: dict[str, list[str]] = {}
    for k in keys:
        at = (thresholds or {}).get(k, default)
        for sid, per in result.scores.items():
            score = per.get(k)
            if score is None or score.outcome is not Outcome.SCORED or score.value is None or score.value < at:
                continue
            d = score.evidence.details
            if isinstance(d.get("claims"), int) and isinstance(d.get("supported"), int) and d["supported"] < d["claims"]:
                out.setdefault(k, []).append(sid)
    return out


def unsupported_note(result: EvaluationResult) -> tuple[str, str] | None:
    """When samples pass faithfulness's default threshold with a claim judged unsupported (the
    summary and the report say it loudly): a sentence (how many, an example, why they pass) and
    the command that fails them. None when there are none."""
    found = passing_with_unsupported(result)
    if not found:
        return None
    parts = []
    for key, ids in found.items():
        n = len(ids)
        parts.append(f"{key}: {n} sample{'s' if n != 1 else ''} pass{'' if n != 1 else 'es'} 0.5 with a claim "
                     f"judged unsupported (e.g. {ids[0]})")
    return ("; ".join(parts) + ". A sample fails below 0.5, the share of its claims supported, as in ragas and "
            "DeepEval, so one invented claim among good ones passes. To fail every sample with an unsupported "
            "claim:", f"ragsight diagnose {result.run_id} --threshold faithfulness=1")
