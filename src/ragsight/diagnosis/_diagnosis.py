"""A run's diagnosis: every failing sample's causes, the count of each cause with a bootstrap 95%
CI, the topics of the failing questions, and the causes the run's metrics cannot find."""

from __future__ import annotations

import difflib
import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, replace
from typing import Any

import numpy as np

from .._score import Outcome
from .._stats import summarize
from ..errors import ConfigError
from ..result import EvaluationResult, passing_with_unsupported
from ..run import run_sync
from ._model import (
    CAUSES,
    DEFAULT_THRESHOLD,
    HINTS,
    NEEDS,
    PRIORITY,
    THRESHOLDS,
    UNDIAGNOSED,
    CauseCount,
    Diagnosis,
    SampleDiagnosis,
    Threshold,
    Topic,
    TopicGroup,
    UnmeasuredCause,
)
from ._samples import diagnose_sample, metric_name, pair_key
from ._topics import (
    centre,
    cluster,
    embed_questions,
    embedder_endpoint,
    name_topics,
    nearest,
    topic_count,
)

__all__ = ["adiagnose", "diagnose", "parse_thresholds", "thresholds_for"]


def parse_thresholds(specs: Sequence[str]) -> dict[str, float]:
    """``["faithfulness=0.8", "factual_correctness(mode=recall)=0.6"]`` -> {metric: value}."""
    out: dict[str, float] = {}
    for spec in specs:
        metric, sep, value = spec.rpartition("=")
        if not sep or not metric.strip():
            raise ConfigError(f"--threshold '{spec}' needs the form METRIC=VALUE, e.g. faithfulness=0.7")
        try:
            out[metric.strip()] = float(value)
        except ValueError:
            raise ConfigError(f"--threshold '{spec}': '{value}' is not a number") from None
    return out


def thresholds_for(result: EvaluationResult, given: Mapping[str, float] | None = None) -> dict[str, Threshold]:
    """Each metric key of the run -> its threshold: the default of its name (:data:`THRESHOLDS`,
    else :data:`DEFAULT_THRESHOLD`), replaced by ``given`` (by metric name, or by exact key,
    which wins). A metric the run does not have, or a value outside -1 to 1, is refused."""
    lower = {k: s.lower_is_better for k, s in result.summary.items()}
    keys = list(result.metric_keys)
    out = {k: Threshold(k, THRESHOLDS.get(metric_name(k), DEFAULT_THRESHOLD), lower.get(k, False)) for k in keys}
    for spec, value in sorted((given or {}).items(), key=lambda kv: kv[0] in keys):
        if not math.isfinite(value) or not -1.0 <= value <= 1.0:
            raise ConfigError(f"threshold {spec}={value:g}: a threshold is a score, between 0 and 1 "
                              "(-1 and 1 for a cosine metric)")
        matched = [spec] if spec in keys else [k for k in keys if metric_name(k) == spec.strip().lower()]
        if not matched:
            close = difflib.get_close_matches(spec, keys, n=1)
            hint = f" (did you mean '{close[0]}'?)" if close else ""
            raise ConfigError(f"threshold {spec}: run {result.run_id} has no metric '{spec}'{hint}; its metrics: "
                              f"{', '.join(keys) or 'none'}")
        for k in matched:
            out[k] = Threshold(k, float(value), lower.get(k, False), default=False)
    return out


def _unmeasured(run_names: frozenset[str], has: Mapping[str, bool]) -> tuple[UnmeasuredCause, ...]:
    """The causes whose metrics the run lacks, among those its data could show."""
    wants = {"retrieval": has["contexts"], "unsupported": has["contexts"],
             "noise": has["contexts"] and has["reference"], "incomplete": has["contexts"] and has["reference"],
             "decline": has["response"], "tool": has["tools"]}
    out = []
    for cause in CAUSES:
        groups = NEEDS[cause]
        if not wants.get(cause) or all(any(m in run_names for m in g) for g in groups):
            continue
        out.append(UnmeasuredCause(cause, groups, HINTS[cause]))
    return tuple(out)


@dataclass(frozen=True)
class _Collected:
    """Every sample read once: the failing ones diagnosed, the pairing keys of all."""

    thresholds: dict[str, Threshold]
    run_names: frozenset[str]
    found: list[SampleDiagnosis]
    keys: dict[tuple[str, ...], str]
    n: int
    has: dict[str, bool]
    not_scored: dict[tuple[str, ...], tuple[str, ...]]


def _collect(result: EvaluationResult, thresholds: Mapping[str, float] | None) -> _Collected:
    th = thresholds_for(result, thresholds)
    run_names = frozenset(metric_name(k) for k in result.metric_keys)
    keys: dict[tuple[str, ...], str] = {}
    found: list[SampleDiagnosis] = []
    has = {"contexts": False, "reference": False, "response": False, "tools": False}
    not_scored: dict[tuple[str, ...], tuple[str, ...]] = {}
    shared: dict[tuple[str, ...], tuple[str, ...]] = {}
    all_keys = tuple(result.metric_keys)
    n = 0
    for s in result.samples:
        key = pair_key(s)
        keys[key] = s.id
        has["contexts"] |= bool(s.contexts)
        has["reference"] |= s.reference is not None
        has["response"] |= s.response is not None
        has["tools"] |= bool(s.reference_tool_calls or s.tool_calls)
        per = result.scores.get(s.id)
        missing = all_keys if not per else tuple(
            k for k in all_keys if k not in per or per[k].outcome is Outcome.SKIPPED)
        if missing:
            not_scored[key] = shared.setdefault(missing, missing)  # one tuple for the many alike
        if not per:
            continue
        n += 1
        d = diagnose_sample(s, per, th, run_names, result.metric_keys)
        if d is not None:
            found.append(d)
    return _Collected(th, run_names, found, keys, n, has, not_scored)


def _assemble(result: EvaluationResult, c: _Collected, seed: int, n_boot: int,
              topics: tuple[list[int], list[tuple[str, ...]], Any, str] | None = None) -> Diagnosis:
    """The diagnosis from the samples read, with their topics (labels, names, vectors, method)
    when grouped."""
    found, n = c.found, c.n
    topic_list: list[Topic] = []
    labels: list[int] = []
    vectors: Any = np.zeros((0, 0))
    method = ""
    if topics is not None:
        labels, names, vectors, method = topics
        found = [replace(d, topic=label) for d, label in zip(found, labels)]
        topic_list = [Topic(t, names[t], tuple(d.sample_id for d in found if d.topic == t)) for t in range(len(names))]
    members_of: list[list[int]] = [[] for _ in topic_list]
    for i, lab in enumerate(labels):
        members_of[lab].append(i)
    centres = [centre(vectors, members_of[t]) for t in range(len(topic_list))]

    counts: list[CauseCount] = []
    for cause in (*CAUSES, UNDIAGNOSED):
        idx = [i for i, d in enumerate(found) if d.primary == cause]
        secondary = sum(1 for d in found if d.primary != cause and cause in d.causes)
        if not idx and not secondary:
            continue
        st = summarize([1.0] * len(idx) + [0.0] * (n - len(idx)), seed=seed, n_boot=n_boot)
        kinds: dict[str, int] = {}
        for i in idx:
            pf = found[i].primary_finding
            for kind, k in (pf.kinds if pf is not None else {}).items():
                kinds[kind] = kinds.get(kind, 0) + k
        strong = [i for i in idx if (pf := found[i].primary_finding) is not None and pf.strong]
        example = found[(strong or idx)[0]].sample_id if idx else None
        groups = []
        for t, topic in enumerate(topic_list):
            members = [i for i in idx if labels[i] == t]
            if members:
                groups.append(TopicGroup(t, topic.words, tuple(found[i].sample_id for i in members),
                                         found[nearest(members, vectors, centres[t])].sample_id))
        counts.append(CauseCount(
            cause=cause, count=len(idx),
            ci_low=None if st.ci_low is None else round(st.ci_low * n, 2),
            ci_high=None if st.ci_high is None else round(st.ci_high * n, 2),
            share=len(idx) / n if n else 0.0, secondary=secondary, kinds=kinds, example=example,
            topics=tuple(sorted(groups, key=lambda g: (-len(g.samples), g.topic)))))
    order = (*PRIORITY, UNDIAGNOSED)
    counts.sort(key=lambda x: (-x.count, order.index(x.cause)))
    return Diagnosis(
        run_id=result.run_id, n_samples=n, thresholds=c.thresholds, samples=tuple(found), causes=tuple(counts),
        unmeasured=_unmeasured(c.run_names, c.has), topics=tuple(topic_list), topic_method=method, keys=c.keys,
        seed=seed, not_scored=c.not_scored,
        passing_unsupported={k: tuple(v) for k, v in passing_with_unsupported(
            result, {k: t.value for k, t in c.thresholds.items()}).items()})


async def adiagnose(
    result: EvaluationResult,
    *,
    thresholds: Mapping[str, float] | None = None,
    topics: bool = True,
    embedder: Any = None,
    seed: int = 0,
    n_boot: int = 2000,
    embedder_base_url: str | None = None,
) -> Diagnosis:
    """:func:`diagnose` for async code."""
    _check_seed(seed)
    c = _collect(result, thresholds)
    if not topics or not c.found:
        return _assemble(result, c, seed, n_boot)
    url = embedder_endpoint(embedder, embedder_base_url, result.config, result.run_id)
    texts = [d.question or d.sample_id for d in c.found]
    vectors, method = await embed_questions(texts, embedder, result.config.get("embedder_spec"), url)
    labels = cluster(vectors, topic_count(len(texts)))
    return _assemble(result, c, seed, n_boot, (labels, name_topics(texts, labels), vectors, method))


def diagnose(
    result: EvaluationResult,
    *,
    thresholds: Mapping[str, float] | None = None,
    topics: bool = True,
    embedder: Any = None,
    seed: int = 0,
    n_boot: int = 2000,
    embedder_base_url: str | None = None,
) -> Diagnosis:
    """Why the run's samples fail, from the evidence its scores hold (no judge call).

    A sample fails when a metric scored below its threshold (above it for a lower-is-better
    metric), failed, or has no value; ``thresholds`` maps a metric name or key to its threshold
    (the defaults: docs/diagnose.md). Each failing sample gets one primary cause (retrieval,
    unsupported, noise, incomplete, decline, tool, judge; or undiagnosed, naming the metrics that
    would tell) and the other causes found, each with the claims, chunks or calls that show it.
    Each cause is counted with a bootstrap 95% CI (``seed``, ``n_boot`` draws) over the run's
    evaluated samples. ``topics``: group the failing questions by their embeddings (``embedder``:
    None for the run's local embedder or the offline one, ``"words"`` for TF-IDF words, a spec or
    an Embedder) and name each group by its most distinctive words; ``topics=False`` embeds
    nothing. A remote ``embedder`` (``openai:MODEL``) is asked at ``embedder_base_url``, else at
    the server the run stored for it, else not at all (ConfigError): the failing questions never
    go where the run did not send them. ``seed``: 0 to 2**32 - 1."""
    _check_seed(seed)
    if not topics:
        return _assemble(result, _collect(result, thresholds), seed, n_boot)
    return run_sync(lambda: adiagnose(result, thresholds=thresholds, topics=topics, embedder=embedder, seed=seed,
                                      n_boot=n_boot, embedder_base_url=embedder_base_url))


def _check_seed(seed: Any) -> None:
    if isinstance(seed, bool) or not isinstance(seed, int) or not 0 <= seed < 2**32:
        raise ConfigError(f"seed (--seed) must be a whole number from 0 to {2**32 - 1}, not {seed!r}")
