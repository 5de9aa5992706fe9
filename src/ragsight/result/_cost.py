"""What a run's judge calls cost: its tokens attributed to the metrics whose evidence names
each call's step (:func:`metric_tokens`), and the money at the judge's price (:func:`run_cost`).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any

from .._score import Score
from ..calls import Price
from ..store import Store

__all__ = ["UNATTRIBUTED", "metric_tokens", "run_cost"]


UNATTRIBUTED = "(not attributed)"


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
    # by metric name, the unattributed share last: the order calls happened to finish in is not
    # the run's (same input, same output)
    tokens = dict(sorted(tokens.items(), key=lambda kv: (kv[0] == UNATTRIBUTED, kv[0])))
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
