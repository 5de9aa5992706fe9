"""``assert_scores``: evaluate inside a test and fail it, readably, when a metric misses its
threshold; ``cases``: parametrise a test over a data file; and what the pytest plugin prints and
writes at the end of a session."""

from __future__ import annotations

import asyncio
import os
import sys
import textwrap
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from ..dataset import Dataset, Sample, check_writable_target, metric_level, sample_level
from ..errors import ConfigError, InputError
from ..judge import Judge, JudgeProvider, JudgeSpec, make_judge
from ..metrics import Metric, check_threshold, resolve_metrics
from ..report import RunData, render_report, save_html
from ..result import EvaluationResult
from ..run import RunOptions, aevaluate

__all__ = [
    "PLUGIN_MODULE",
    "RunRecord",
    "ScoresBelowThresholdError",
    "UnusableRow",
    "aassert_scores",
    "assert_scores",
    "cases",
    "summary_lines",
    "write_session_report",
]

# the pytest plugin (outside the package, so that pytest starts without importing ragsight)
PLUGIN_MODULE = "_ragsight_pytestplugin"
WIDTH = 80
_WORST = 3
_CLAIMS = 4
_REASON = 600  # characters of a reason shown (a judge's error body can be long)


class ScoresBelowThresholdError(AssertionError):
    """A metric missed its threshold on some samples (or could not be scored). ``result`` is the
    evaluation, stored in the run store under ``result.run_id``."""

    __module__ = "ragsight.testing"  # as pytest prints it

    def __init__(self, message: str, result: EvaluationResult, failures: Sequence[Failure]) -> None:
        super().__init__(message)
        self.result = result
        self.failures = tuple(failures)


@dataclass(frozen=True)
class Failure:
    sample_id: str
    metric: str
    threshold: float
    value: float | None
    outcome: str
    reason: str
    lower_is_better: bool

    @property
    def margin(self) -> float:
        """How far past the threshold (larger is worse); unscored counts as worst."""
        if self.value is None:
            return float("inf")
        return self.value - self.threshold if self.lower_is_better else self.threshold - self.value


@dataclass
class RunRecord:
    """One ``assert_scores`` call of a pytest session."""

    test: str
    result: EvaluationResult
    thresholds: dict[str, float]
    store: str
    passed: bool
    lower: dict[str, bool] = field(default_factory=dict)


# ---- the pytest plugin's session, when there is one ---------------------------------------------


def _plugin() -> Any:
    module = sys.modules.get(PLUGIN_MODULE)
    return module if module is not None and module.active() else None


def _option(name: str, env: str) -> str | None:
    plugin = _plugin()
    value = plugin.option(name) if plugin is not None else None
    return value or os.environ.get(env) or None


_JUDGES: dict[tuple[str, str | None], Judge] = {}


def _session_judge(judge: Any, base_url: str | None) -> Any:
    """The judge to use: the one given, else the session's (``--ragsight-judge``, the
    ``ragsight_judge`` ini option or ``$RAGSIGHT_JUDGE``); a spec is made into a Judge once per
    process, so the embedded model loads once for a whole session."""
    if judge is not None and not isinstance(judge, str):
        return judge
    spec = judge or _option("judge", "RAGSIGHT_JUDGE") or "local"
    key = (spec, base_url)
    if key not in _JUDGES:
        _JUDGES[key] = make_judge(spec, base_url=base_url)
    return _JUDGES[key]


# ---- data ----------------------------------------------------------------------------------------


class UnusableRow:
    """A row of a ``cases()`` file that could not be used: its test case fails with the row
    problem (file, row, field, how to fix it) instead of leaving the suite unseen."""

    __module__ = "ragsight.testing"

    def __init__(self, problem: str) -> None:
        self.problem = problem

    def __repr__(self) -> str:
        return f"UnusableRow({self.problem!r})"

    def __getattr__(self, name: str) -> Any:
        if name.startswith("__"):
            raise AttributeError(name)
        raise InputError(f"this case's row could not be used: {self.problem}")


def _dataset(data: Any) -> Dataset:
    if isinstance(data, UnusableRow):
        raise InputError(f"this case's row could not be used: {data.problem}")
    if isinstance(data, Sample):
        return Dataset([data], source="<sample>")
    if isinstance(data, Mapping):
        return Dataset.from_records([data], "<row>")
    rows = getattr(data, "rows", None)  # a PipelineRun or a TraceImport
    if isinstance(rows, list):
        return Dataset.load(rows)
    return Dataset.load(data)


def cases(data: Any, level: str = "turn") -> list[Any]:
    """The samples of a data file (or rows, or a Dataset) as pytest parameters, each with its
    sample id as the test id::

        @pytest.mark.parametrize("sample", cases("tests/golden.jsonl"))
        def test_golden(sample):
            assert_scores(sample, {"faithfulness": 0.8})

    ``level``: which samples of a chat file: ``"turn"`` (the default: single-turn samples and
    each assistant turn, for the turn metrics), ``"conversation"`` (each conversation's own
    sample, for the conversation metrics such as knowledge_retention) or ``"all"``."""
    import pytest

    if level not in ("turn", "conversation", "all"):
        raise ConfigError(f"level must be 'turn', 'conversation' or 'all', not {level!r}")
    dataset = _dataset(data)
    if not dataset.samples:
        raise ConfigError(f"no usable sample in {dataset.source}"
                          + (f": {dataset.errors[0]}" if dataset.errors else ""))
    chosen = [s for s in dataset if level == "all" or sample_level(s) == level]
    if not chosen:
        raise ConfigError(f"no {level}-level sample in {dataset.source} (cases(..., level=...) chooses "
                          "'turn', 'conversation' or 'all')")
    # an unusable row is a case that fails with its problem: dropped, it left the gate unseen
    return [pytest.param(s, id=s.id) for s in chosen] + [
        pytest.param(UnusableRow(str(p)), id=f"row-{p.row}") for p in dataset.errors]


# ---- the assertion -------------------------------------------------------------------------------


def _keys(thresholds: Mapping[str, float]) -> dict[str, float]:
    if not thresholds:
        raise ConfigError('assert_scores needs thresholds, e.g. {"faithfulness": 0.8}')
    out: dict[str, float] = {}
    for spec, value in thresholds.items():
        if isinstance(value, str):  # a number written as text is a mistake in Python code
            raise ConfigError(f"threshold for {spec!r} must be a number, not {value!r}")
        metric, number = check_threshold(spec, value)
        key = metric.key
        out[key] = number
    return out


def _not_applicable(metric: Metric, sample: Sample) -> bool:
    """The metric does not apply to this question by design, as docs/data.md says: a retrieval
    metric measured against a reference on an out-of-scope question (no relevant context
    exists), or an abstention of one scope on a question of the other. Not a failure: a golden
    set with out-of-scope questions (``ragsight generate`` writes about 15%) must be able to pass."""
    if metric.in_scope_only and sample.out_of_scope:
        return True
    scope = getattr(metric, "scope", None)
    return (scope == "out_of_scope" and not sample.out_of_scope) or (scope == "in_scope" and sample.out_of_scope)


def _failures(result: EvaluationResult, thresholds: Mapping[str, float], mode: str) -> list[Failure]:
    failures: list[Failure] = []
    metrics = {m.key: m for m in resolve_metrics(list(thresholds))}
    not_applicable: list[Failure] = []
    for key, threshold in thresholds.items():
        lower = result.summary[key].lower_is_better
        per_sample: list[Failure] = []
        level = result.levels.get(key) or (metric_level(metrics[key]) if key in metrics else "turn")
        # a metric is gated on the samples of its own level only: a chat's conversation row is no
        # turn, and its turns are no conversation (not failures, and not counted)
        samples = [s for s in result.samples if sample_level(s) == level]
        if not samples:
            other = "turn" if level == "conversation" else "conversation"
            failures.append(Failure("(none)", key, threshold, None, "missing",
                                    f"{key} scores {level}s and the data has only {other}-level samples", lower))
            continue
        for sample in samples:
            score = result.scores.get(sample.id, {}).get(key)
            if score is None or score.value is None or score.outcome.value != "scored":
                outcome = score.outcome.value if score is not None else "missing"
                reason = score.reason if score is not None else "no score"
                failure = Failure(sample.id, key, threshold, None, outcome, reason, lower)
                if outcome == "skipped" and key in metrics and _not_applicable(metrics[key], sample):
                    not_applicable.append(failure)
                else:
                    per_sample.append(failure)
                continue
            missed = score.value > threshold if lower else score.value < threshold
            if mode == "each" and missed:
                per_sample.append(Failure(sample.id, key, threshold, score.value, "scored", score.reason, lower))
        if mode == "mean":
            mean = result.summary[key].mean
            if mean is not None and (mean > threshold if lower else mean < threshold):
                per_sample.append(Failure("(mean)", key, threshold, mean, "scored", "", lower))
        failures.extend(per_sample)
    # nothing passes silently: when no gated metric scored any sample, the skips by design are
    # the failure (a gate that measured nothing)
    if not_applicable and not any(s.counts["scored"] for k, s in result.summary.items() if k in thresholds):
        failures.extend(not_applicable)
    return failures


def _clip(text: str, width: int) -> str:
    text = " ".join(str(text).split())
    return text if len(text) <= width else text[: width - 3] + "..."


def _wrap(head: str, items: Sequence[str], indent: str) -> list[str]:
    return textwrap.wrap(head + ", ".join(items), width=WIDTH, subsequent_indent=indent,
                         break_long_words=False, break_on_hyphens=False) or [head]


def _evidence_lines(result: EvaluationResult, failure: Failure) -> list[str]:
    score = result.scores.get(failure.sample_id, {}).get(failure.metric)
    if score is None or score.evidence is None:
        return []
    claims = sorted(score.evidence.claims, key=lambda c: c.supported)  # unsupported first
    lines = []
    for claim in claims[:_CLAIMS]:
        mark = "✓" if claim.supported else "✗"
        why = f" ({claim.reason})" if claim.reason and not claim.supported else ""
        lines.append("    " + _clip(f"{mark} {claim.claim}{why}", WIDTH - 4))
    if len(claims) > _CLAIMS:
        lines.append(f"    ... {len(claims) - _CLAIMS} more claim(s)")
    if not lines and score.reason:
        lines.append("    " + _clip(score.reason, WIDTH - 4))
    return lines


def _message(result: EvaluationResult, failures: Sequence[Failure], store: str, mode: str) -> str:
    n = len(result.samples)
    bad = {f.sample_id for f in failures if f.sample_id != "(mean)"}
    if mode == "mean" and not bad:
        lines = ["ragsight: metric means below threshold over "
                 f"{n} sample{'s' if n != 1 else ''}"]
    else:
        lines = [f"ragsight: {len(bad)} of {n} sample{'s' if n != 1 else ''} below threshold"]
    for metric in dict.fromkeys(f.metric for f in failures):
        mine = [f for f in failures if f.metric == metric]
        op = "<=" if mine[0].lower_is_better else ">="
        items = [f"{f.sample_id} {f.value:.2f}" for f in mine if f.value is not None]
        # the samples one reason left unscored, named together, with the reason whole: the
        # cause of a failed judge step (HTTP status, what the server said) is in its tail
        unscored: dict[tuple[str, str], list[str]] = {}
        for f in mine:
            if f.value is None:
                unscored.setdefault((f.outcome, _clip(f.reason, _REASON)), []).append(f.sample_id)
        items += [f"{', '.join(ids)} not scored ({outcome}: {reason})"
                  for (outcome, reason), ids in unscored.items()]
        lines += _wrap(f"  {metric} {op} {mine[0].threshold:g}: ", items, "    ")
    worst = sorted((f for f in failures if f.value is not None and f.sample_id != "(mean)"),
                   key=lambda f: -f.margin)[:_WORST]
    by_id = {s.id: s for s in result.samples}
    for f in worst:
        question = by_id[f.sample_id].question or ""
        lines.append(_clip(f"worst: {f.sample_id} {f.metric} {f.value:.2f} -- {question}", WIDTH))
        lines += _evidence_lines(result, f)
    sample = worst[0].sample_id if worst else next(iter(bad), result.samples[0].id)
    lines.append("evidence:")
    lines.append(f"  ragsight show {result.run_id} --sample {sample} --store {store}")
    return "\n".join(lines)


async def _evaluate_and_check(
    data: Any,
    thresholds: Mapping[str, float],
    *,
    judge: str | JudgeProvider | Judge | None = None,
    mode: str = "each",
    embedder: Any = None,
    base_url: str | None = None,
    store: str | os.PathLike[str] | None = None,
    metadata: Mapping[str, Any] | None = None,
    concurrency: int | None = None,
) -> tuple[EvaluationResult, ScoresBelowThresholdError | None]:
    if mode not in ("each", "mean"):
        raise ConfigError(f"mode must be 'each' (every sample) or 'mean' (the metric's mean), not {mode!r}")
    wanted = _keys(thresholds)
    plugin = _plugin()
    base_url = base_url or _option("base_url", "RAGSIGHT_BASE_URL")
    store_path = str(store or _option("store", "RAGSIGHT_STORE") or "ragsight.db")
    test = plugin.current_test() if plugin is not None else None
    meta = {**(dict(metadata or {})), **({"pytest": test} if test else {})}
    chosen_judge = _session_judge(judge, base_url) if any(
        m.needs_judge for m in resolve_metrics(list(wanted))) else judge
    # no preflight: an unchanged suite run again makes no judge call at all (the cache answers);
    # an unreachable judge still fails loudly, on the first step, in the test's message
    dataset = _dataset(data)
    unusable = [p for p in dataset.errors if not p.message.startswith("warning:")]
    if unusable:  # a gate must not pass on the rows that happened to be readable
        shown = "; ".join(str(p) for p in unusable[:3]) + ("; ..." if len(unusable) > 3 else "")
        raise InputError(
            f"assert_scores: {len(unusable)} row(s) of {dataset.source} cannot be used, so the check "
            f"would pass on the rest unseen. Fix or remove them: {shown}")
    result = await aevaluate(dataset, list(wanted), judge=JudgeSpec(chosen_judge, base_url=base_url),
                             embedder=embedder, store=store_path, metadata=meta,
                             options=RunOptions(preflight=False, concurrency=concurrency))
    failures = _failures(result, wanted, mode)
    lower = {k: result.summary[k].lower_is_better for k in wanted}
    if plugin is not None:
        plugin.record(RunRecord(test or "", result, wanted, store_path, not failures, lower))
    if failures:
        return result, ScoresBelowThresholdError(_message(result, failures, store_path, mode), result, failures)
    return result, None


async def aassert_scores(
    data: Any,
    thresholds: Mapping[str, float],
    *,
    judge: str | JudgeProvider | Judge | None = None,
    mode: str = "each",
    embedder: Any = None,
    base_url: str | None = None,
    store: str | os.PathLike[str] | None = None,
    metadata: Mapping[str, Any] | None = None,
    concurrency: int | None = None,
) -> EvaluationResult:
    """Async form of :func:`assert_scores` (for async tests)."""
    __tracebackhide__ = True  # pytest shows the test's line, not ragsight's
    result, error = await _evaluate_and_check(
        data, thresholds, judge=judge, mode=mode, embedder=embedder, base_url=base_url, store=store,
        metadata=metadata, concurrency=concurrency)
    if error is not None:
        raise error
    return result


def assert_scores(
    data: Any,
    thresholds: Mapping[str, float],
    *,
    judge: str | JudgeProvider | Judge | None = None,
    mode: str = "each",
    embedder: Any = None,
    base_url: str | None = None,
    store: str | os.PathLike[str] | None = None,
    metadata: Mapping[str, Any] | None = None,
    concurrency: int | None = None,
) -> EvaluationResult:
    """Evaluate ``data`` on the metrics named in ``thresholds`` and fail the test (an
    AssertionError, :class:`ScoresBelowThresholdError`) when a sample misses a threshold
    (``mode="each"``, the default) or a metric's mean does (``mode="mean"``). A sample a metric
    could not score fails too, with the reason. The message names the samples and metrics below
    threshold and shows the claim-level evidence of the worst ones; the run is saved in the
    store (``--ragsight-store``, ``$RAGSIGHT_STORE`` or ``./ragsight.db``), whose judge cache
    makes a second run of an unchanged suite free.

    ``data``: a Sample, a row (dict), a list of them, a data file, a Dataset, or the result of
    ``answer_with_langchain`` / ``import_traces``. ``judge``: a spec, a provider or a Judge;
    default ``--ragsight-judge`` / ``$RAGSIGHT_JUDGE``, else the embedded judge. Thresholds are
    minimums, maximums for lower-is-better metrics (noise_sensitivity).

        assert_scores(rows, {"faithfulness": 0.8, "context_recall": 0.7})
    """
    __tracebackhide__ = True  # pytest shows the test's line, not ragsight's
    result, error = asyncio.run(_evaluate_and_check(
        data, thresholds, judge=judge, mode=mode, embedder=embedder, base_url=base_url, store=store,
        metadata=metadata, concurrency=concurrency))
    if error is not None:
        raise error
    return result


# ---- the end of a session ------------------------------------------------------------------------


def _mean_text(record: RunRecord, key: str) -> str:
    mean = record.result.summary[key].mean
    op = "<=" if record.lower.get(key) else ">="
    return f"{key} {'n/a' if mean is None else f'{mean:.2f}'} ({op}{record.thresholds[key]:g})"


def summary_lines(records: Sequence[RunRecord], report: str | None = None) -> list[str]:
    """The session summary: one line per ``assert_scores`` call, then the judge's spend."""
    lines = []
    for r in records:
        status = "PASSED" if r.passed else "FAILED"
        test = r.test.rsplit("/", 1)[-1] or f"run {r.result.run_id}"
        means = ", ".join(_mean_text(r, k) for k in r.thresholds)
        one = f"{status} {test}  {means}"
        if len(one) <= WIDTH:
            lines.append(one)
        else:  # the test id on its line, the means under it
            lines.append(_clip(f"{status} {test}", WIDTH))
            lines.append("       " + _clip(means, WIDTH - 7))
    calls = sum(int(r.result.judge_stats.get("calls", 0)) for r in records)
    hits = sum(int(r.result.judge_stats.get("cache_hits", 0)) for r in records)
    tokens = sum(int(r.result.judge_stats.get("prompt_tokens", 0)) + int(r.result.judge_stats.get(
        "completion_tokens", 0)) for r in records)
    stores = sorted({r.store for r in records})
    lines.append(f"{len(records)} run{'s' if len(records) != 1 else ''} saved in {', '.join(stores)}; "
                 f"judge: {calls} calls, {hits} cache hits, {tokens} tokens")
    if report:
        lines.append(f"HTML report of the session's runs: {report}")
    return lines


def write_session_report(records: Sequence[RunRecord], path: str | os.PathLike[str]) -> Path:
    """The HTML report of every run of the session (no comparison: each test has its own data)."""
    runs = [RunData.from_result(r.result, {"pytest": r.test or "(outside a test)",
                                           "passed": r.passed,
                                           "thresholds": dict(r.thresholds)}) for r in records]
    try:
        target = check_writable_target(path, "--ragsight-report file")
    except OSError as exc:
        raise ConfigError(str(exc)) from None
    return save_html(render_report(runs, title=f"ragsight: {len(runs)} runs of a pytest session",
                                   compare_runs=False), target)
