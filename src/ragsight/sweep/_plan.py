"""A sweep's plan (``--dry-run``): what running it will do, counted before it does it: the runs
to make and to reuse, the calls to the system under test, the generator's calls and tokens, and
the judge's steps.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from ..dataset import sample_from_mapping
from ..metrics import resolve_metrics
from ..pipeline import PipelineConfig
from ..store import Store
from ._questions import (
    _fingerprint,
    _is_oos,
    _row_id,
    _sample_row,
    _split_metrics,
    judged_ids,
    run_id_for,
)
from ._spec import SweepSpec

__all__ = ["SweepPlan", "plan_sweep"]

# Judge steps per judged sample for a remote (JSON) judge, by metric: shared steps are counted once
# (faithfulness and context_recall share the verdict call against the contexts). The embedded
# judge verifies one claim per call, so it makes more calls than this. abstention's step is
# skipped when its phrase detector finds a clean decline: counted here as at most one.
JUDGE_STEPS: dict[str, frozenset[str]] = {
    "faithfulness": frozenset({"claims:response", "verify:contexts"}),
    "context_recall": frozenset({"claims:reference", "verify:contexts"}),
    "answer_relevancy": frozenset({"questions:response"}),
    "context_precision": frozenset({"chunks:reference"}),
    "context_precision_without_reference": frozenset({"chunks:response"}),
    "abstention": frozenset({"declines:response"}),
}
ANSWER_TEMPLATE_TOKENS = 150
REWRITE_TEMPLATE_TOKENS = 120


def _tokens(text: str) -> int:
    return max(len(text.split()), math.ceil(len(text) / 4))


@dataclass(frozen=True)
class SweepPlan:
    """What a sweep will do, before it does it (``--dry-run``)."""

    configurations: int
    to_run: int
    reused: int
    questions: int
    out_of_scope: int
    judged: int
    target_calls: int
    generator_rewrites: int
    generator_answers: int
    generator_prompt_tokens: int
    generator_completion_tokens: int
    judge_samples: int
    judge_steps: int | None
    judge_metrics: tuple[str, ...]
    retrieval_metrics: tuple[str, ...]
    notes: tuple[str, ...] = ()

    @property
    def generator_calls(self) -> int:
        return self.generator_rewrites + self.generator_answers

    def lines(self) -> list[str]:
        out = [
            f"configurations: {self.configurations} ({self.to_run} to run, {self.reused} already in the store)",
            f"questions: {self.questions} ({self.out_of_scope} out of scope), the same for every configuration",
            f"judged questions per configuration: {self.judged} (judge metrics: "
            f"{', '.join(self.judge_metrics) or 'none'})",
            f"retrieval metrics on every question: {', '.join(self.retrieval_metrics) or 'none'}",
        ]
        if self.target_calls:
            out.append(f"calls to the system under test: {self.target_calls}")
        out.append(
            f"generator calls: at most {self.generator_calls} ({self.generator_rewrites} RAG-fusion "
            f"rewrites, {self.generator_answers} answers; repeats come from the cache), about "
            f"{self.generator_prompt_tokens:,} prompt and at most {self.generator_completion_tokens:,} "
            "completion tokens"
        )
        steps = "unknown for these metrics" if self.judge_steps is None else str(self.judge_steps)
        out.append(f"judge: {self.judge_samples} samples, at most {steps} judge steps with a remote judge "
                   "(an answer of one short sentence needs no claim extraction; the embedded judge "
                   "makes one call per claim verdict: more)")
        out.extend(self.notes)
        return out


def plan_sweep(spec: SweepSpec, rows: Sequence[Mapping[str, Any]], store: Store | None = None, *,
               judge: Any = None, embedder: Any = None) -> SweepPlan:
    """Count what running ``spec`` on ``rows`` will do (the dry-run); ``judge``/``embedder``:
    those that replace the file's (they decide which finished runs are reused)."""
    fp = _fingerprint(spec, rows, judge=judge, embedder=embedder)
    existing = set()
    if store is not None:
        existing = {r.id for r in store.runs() if r.status == "completed"}
    todo = [c for c in spec.configurations if run_id_for(spec, c, fp) not in existing]
    retrieval, judge_metrics = _split_metrics(spec.metrics)
    judged = judged_ids(rows, spec.judge_questions, spec.judge_out_of_scope)
    n_judged = sum(1 for r in rows if _row_id(r) in judged)
    oos = sum(1 for r in rows if _is_oos(r))
    rewrites = answers = ptok = ctok = target_calls = 0
    notes: list[str] = []
    q_tokens = {_row_id(r): _tokens(str(r.get("question", ""))) for r in rows}
    if spec.reference:
        # rewrites depend on the question, the generator and their number only: one per question
        seen_rw: set[tuple[str, str, int]] = set()
        for c in todo:
            cfg = PipelineConfig.from_mapping(c.params)
            for r in rows:
                rid = _row_id(r)
                if cfg.retrieval == "fusion" and (rid, cfg.generator, cfg.fusion_queries) not in seen_rw:
                    seen_rw.add((rid, cfg.generator, cfg.fusion_queries))
                    rewrites += 1
                    ptok += REWRITE_TEMPLATE_TOKENS + q_tokens[rid]
                    ctok += 60 * cfg.fusion_queries + 40
                if rid in judged:
                    answers += 1
                    ptok += ANSWER_TEMPLATE_TOKENS + q_tokens[rid] + cfg.top_k * cfg.chunk_size
                    ctok += cfg.max_answer_tokens
    else:
        target_calls = len(todo) * len(rows)
        if spec.factory is not None:
            notes.append(f"the factory builds one pipeline per configuration to run ({len(todo)}); each "
                         "answers every question")
        notes.append("the system under test generates its own answers: its tokens are not counted here")
    # judge steps: per judged question, the steps of the metrics that run on it (a metric's own
    # rules decide: abstention(scope=out_of_scope) only on out-of-scope questions, ...)
    chosen = [m for m in resolve_metrics(list(spec.metrics)) if m.key in judge_metrics]
    steps: int | None = 0 if all(m.name in JUDGE_STEPS for m in chosen) else None
    if steps is not None:
        for r in rows:
            if _row_id(r) not in judged:
                continue
            probe = sample_from_mapping({**_sample_row(r, spec.baseline, spec, judged=True, response="x",
                                                       contexts=["x"], ids=["x"], spans=[None], meta={}),
                                         "response": "x"})[0]
            union: set[str] = set()
            for m in chosen:
                if m.missing(probe) is None:
                    union |= JUDGE_STEPS[m.name]
            steps += len(union) * len(todo)
    return SweepPlan(
        configurations=len(spec.configurations), to_run=len(todo),
        reused=len(spec.configurations) - len(todo), questions=len(rows), out_of_scope=oos,
        judged=n_judged, target_calls=target_calls, generator_rewrites=rewrites,
        generator_answers=answers, generator_prompt_tokens=ptok, generator_completion_tokens=ctok,
        judge_samples=n_judged * len(todo) if judge_metrics else 0, judge_steps=steps if judge_metrics else 0,
        judge_metrics=tuple(judge_metrics), retrieval_metrics=tuple(retrieval), notes=tuple(notes),
    )
