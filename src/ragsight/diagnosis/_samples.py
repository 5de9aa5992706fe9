"""Why one sample fails, read from the evidence its scores already hold (no judge call).

A sample is diagnosed when a metric scored past its threshold, failed, or has no value
(undetermined; except a decline of an out-of-scope question, which is what it should do). Each
cause is looked for in the trail of the metrics that show it:

- retrieval: context_recall's reference claims no chunk holds; context_precision's per-chunk
  relevance (no relevant chunk, or the first relevant one ranked low); the relevant ids that
  were not retrieved, or ranked low, when the run has IR metrics on ids;
- unsupported: faithfulness's claims not supported by the contexts, each told apart as
  *contradicted* (the chunk sentence that shares most of the claim's words has another number,
  one of the two negates, or it has the opposite of one of the claim's words, in a clause that
  holds most of the claim's words, ``analyses.says_otherwise``; or the judge's
  reason says so), *silent* (no chunk sentence holds
  half of the claim's words, or the judge's reason says the text does not mention it) or *not
  told apart* (a chunk speaks of it, and nothing shows a conflict); the verdicts themselves are
  yes/no;
- noise: noise_sensitivity's claims that are wrong per the reference yet supported by a chunk
  (an irrelevant one, or a relevant one); without it, claims faithfulness finds supported and
  factual_correctness finds wrong, the chunk not named;
- incomplete: factual_correctness's (or answer_correctness's) reference claims missing from the
  response that context_recall finds in the chunks;
- decline: a decline (abstention's verdict, faithfulness's or answer_relevancy's decline
  detection, the phrase detector) of an in-scope question whose chunks hold the answer, or an
  answer (abstention, or a response with claims) to an out-of-scope question;
- tool: tool_call_accuracy's and tool_call_f1's mismatches, and the trajectory faults of the agent
  metrics (:mod:`._trajectory`);
- judge: the metrics that failed or have no value.

A finding *explains* a failing metric when its cause can lower that metric (:data:`EXPLAINED_BY`);
it is *strong* when a metric that measures the cause itself fails (context_recall or
context_precision for retrieval, faithfulness for unsupported claims, noise_sensitivity, abstention,
the tool-call metrics). The primary cause is, among the findings that explain a failing metric,
a strong one first, then the one with the most evidence (claims, chunks, calls), then the
earliest in :data:`PRIORITY` (upstream first); the judge is primary only when nothing else
explains a failing metric. A sample no finding explains is :data:`UNDIAGNOSED`, with the metrics
that would tell.
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from dataclasses import replace

from .._score import ClaimVerdict, Outcome, Score
from ..analyses import SAYS_OTHERWISE_SHARE, closest_sentence, detect_declines, says_otherwise
from ..dataset import Sample
from ._model import (
    PRIORITY,
    UNDIAGNOSED,
    EvidenceItem,
    FailingMetric,
    Finding,
    SampleDiagnosis,
    Threshold,
    _clip,
)
from ._trajectory import TRAJECTORY_METRICS, trajectory_items

__all__ = ["EXPLAINED_BY", "best_sentence", "diagnose_sample", "failing_metrics", "metric_name", "pair_key",
           "pair_unit", "question_text"]

IR_METRICS = frozenset({"hit_rate", "precision_at_k", "recall_at_k", "mrr", "ndcg", "map"})
# span metrics whose failure means a reference passage was missed or ranked low (span_precision
# fails on extra chunks, which is noise, not a miss)
SPAN_MISS_METRICS = ("span_recall", "span_hit_rate", "span_ndcg", "span_mrr")  # the first failing one is cited
RETRIEVAL_METRICS = IR_METRICS | {
    "context_recall", "context_precision", "context_precision_without_reference", "context_relevance",
    "context_entity_recall", "retrieval_accuracy", "mrr_by_similarity", "span_hit_rate", "span_recall",
    "span_precision", "span_mrr", "span_ndcg"}
ANSWER_METRICS = frozenset({"factual_correctness", "answer_correctness", "answer_similarity", "exact_match",
                            "token_f1", "bleu", "rouge_1", "rouge_2", "rouge_l", "chrf"})
TOOL_METRICS = frozenset({"tool_call_accuracy", "tool_call_f1", "conversation_tool_call_accuracy",
                          "conversation_tool_call_f1"}) | TRAJECTORY_METRICS
_GENERATION = ("retrieval", "unsupported", "noise", "incomplete", "decline")

EXPLAINED_BY: Mapping[str, frozenset[str]] = {
    **dict.fromkeys(RETRIEVAL_METRICS, frozenset({"retrieval"})),
    **dict.fromkeys(ANSWER_METRICS, frozenset(_GENERATION)),
    "faithfulness": frozenset({"unsupported"}),
    "citation_precision": frozenset({"unsupported"}),
    "citation_recall": frozenset({"unsupported"}),
    "noise_sensitivity": frozenset({"noise"}),
    "abstention": frozenset({"decline"}),
    "answer_relevancy": frozenset({"decline"}),
    **dict.fromkeys(TOOL_METRICS, frozenset({"tool"})),
    "agent_goal_accuracy": frozenset({"tool"}),
}
"""Metric name -> the causes that can lower it (a failing metric no cause here explains leaves
its sample undiagnosed unless another metric is explained)."""

_OWN: Mapping[str, frozenset[str]] = {
    "retrieval": RETRIEVAL_METRICS,
    "unsupported": frozenset({"faithfulness", "citation_precision", "citation_recall"}),
    "noise": frozenset({"noise_sensitivity"}),
    "decline": frozenset({"abstention", "answer_relevancy"}),
    "tool": TOOL_METRICS,
}
"""Cause -> the metrics that measure it: a finding whose cause's metric fails is *strong*. No
metric measures incompleteness alone (factual_correctness's missing claims may be missed by
the retriever too), so an incomplete answer is never strong."""

_WOULD_TELL: Mapping[str, tuple[str, ...]] = {
    **dict.fromkeys(ANSWER_METRICS, ("context_recall", "faithfulness", "noise_sensitivity", "abstention")),
    **dict.fromkeys(RETRIEVAL_METRICS, ("context_recall", "context_precision")),
    "abstention": ("context_recall",),
    "answer_relevancy": ("abstention",),
    "agent_goal_accuracy": ("tool_call_accuracy",),
}

_SAYS_OTHERWISE = re.compile(r"contradict|conflict|inconsistent|opposite|instead|rather than|differ|disagree|whereas"
                             r"|incorrect|wrong")
_SAYS_NOTHING = re.compile(r"\bnot (?:mention|state|say|contain|include|provide|specif|discuss|address)"
                           r"|no mention|does not (?:mention|say|state)|doesn't (?:mention|say|state)|silent"
                           r"|no information|not found|absent")


def metric_name(key: str) -> str:
    """'factual_correctness(mode=recall)' -> 'factual_correctness'."""
    return key.split("(", 1)[0].strip().lower()


def pair_key(sample: Sample) -> tuple[str, ...]:
    """What pairs a sample with its counterpart in another run (as ``ragsight compare`` pairs
    them): a turn of a conversation by (conversation id, turn), any other sample by its id."""
    if sample.conversation_id is not None:
        return ("turn", sample.conversation_id, "" if sample.turn is None else str(sample.turn))
    return ("id", sample.id)


def pair_unit(key: tuple[str, ...]) -> str:
    """The unit a pairing line counts a :func:`pair_key` in: "sample" for a sample outside
    conversations, "turn" for a turn, "conversation" for a conversation's own sample."""
    if key[0] == "id":
        return "sample"
    return "conversation" if key[2] == "" else "turn"


def question_text(sample: Sample) -> str:
    """The question a person reads for a sample: its question, else the conversation's first
    user message, else its scenario."""
    if sample.question:
        return sample.question
    for turn in sample.history or ():
        if turn.role == "user" and turn.content:
            return turn.content
    return sample.scenario or ""


def failing_metrics(sample: Sample, scores: Mapping[str, Score], thresholds: Mapping[str, Threshold],
                    order: Sequence[str], declines: bool = False) -> list[FailingMetric]:
    """The sample's metrics past their threshold, failed or undetermined, in the run's metric
    order. ``declines``: the response declines, so a metric with no value because "the response
    makes no factual claims" has none because of the decline; a decline of an out-of-scope
    question is what it should do, and leaves nothing to count."""
    out = []
    for key in [k for k in order if k in scores] + sorted(k for k in scores if k not in order):
        score = scores[key]
        if score.outcome is Outcome.SCORED and score.value is not None:
            t = thresholds.get(key)
            if t is not None and t.fails(score.value):
                out.append(FailingMetric(key, "scored", score.value, score.reason, t.value))
        elif score.outcome is Outcome.FAILED:
            out.append(FailingMetric(key, "failed", None, score.reason))
        elif score.outcome is Outcome.UNDETERMINED:
            declined = bool(score.evidence.details.get("declines")) or (
                declines and score.reason.startswith("the response"))
            if declined and sample.out_of_scope:
                continue
            out.append(FailingMetric(key, "undetermined", None, score.reason, declined=declined))
    return out


def best_sentence(claim: str, chunks: Sequence[str], only: int | None = None) -> tuple[float, int | None, str]:
    """(share of the claim's content words it holds, chunk rank, sentence) of the chunk sentence
    holding the largest share of the claim's words (ties: the earliest); ``only``: that chunk."""
    return closest_sentence(claim, chunks, only)


def _unsupported_item(claim: ClaimVerdict, chunks: Sequence[str], metric: str, agrees: bool) -> EvidenceItem:
    """A claim no chunk supports, told apart as contradicted, silent or not told apart."""
    share, rank, sentence = best_sentence(claim.claim, chunks)
    note = "the reference agrees: knowledge from outside the chunks" if agrees else ""
    reason = claim.reason.lower()
    if share >= SAYS_OTHERWISE_SHARE and says_otherwise(claim.claim, sentence):
        return EvidenceItem("contradicted", claim.claim, metric, rank, sentence, note)
    if _SAYS_OTHERWISE.search(reason) and not _SAYS_NOTHING.search(reason):
        return EvidenceItem("contradicted", claim.claim, metric, rank if share >= 0.5 else None,
                            sentence if share >= 0.5 else "", note or f"judge: {claim.reason}")
    if share < 0.5 or _SAYS_NOTHING.search(reason):
        return EvidenceItem("silent", claim.claim, metric, note=note)
    return EvidenceItem("not_told_apart", claim.claim, metric, rank, sentence, note)


class _View:
    """One sample's scores, read by metric name."""

    def __init__(self, sample: Sample, scores: Mapping[str, Score], thresholds: Mapping[str, Threshold],
                 run_names: frozenset[str]) -> None:
        self.sample = sample
        self.scores = scores
        self.thresholds = thresholds
        self.run_names = run_names
        self.chunks = tuple(sample.contexts or ())

    def of(self, name: str, outcome: Outcome | None = Outcome.SCORED) -> list[tuple[str, Score]]:
        return [(k, s) for k, s in self.scores.items()
                if metric_name(k) == name and (outcome is None or s.outcome is outcome)]

    def fails(self, key: str) -> bool:
        s = self.scores.get(key)
        t = self.thresholds.get(key)
        return s is not None and s.value is not None and t is not None and t.fails(s.value)

    def recall(self) -> tuple[str, list[ClaimVerdict]] | None:
        """context_recall's key and its reference claims, when it scored."""
        for key, sc in self.of("context_recall"):
            return key, list(sc.evidence.claims)
        return None

    def relevant_ranks(self) -> tuple[str, list[int], int] | None:
        """(metric, ranks of the relevant chunks, chunks judged) from context_precision (with a
        reference, else without)."""
        for name in ("context_precision", "context_precision_without_reference"):
            for key, sc in self.of(name):
                chunks = sc.evidence.details.get("chunks") or []
                if chunks:
                    return key, [int(c["rank"]) for c in chunks if c.get("relevant")], len(chunks)
        return None

    def answer_claims(self) -> tuple[str, Score] | None:
        """The first factual_correctness or answer_correctness score (its claims: response vs
        reference, then reference vs response)."""
        for name in ("factual_correctness", "answer_correctness"):
            found = self.of(name)
            # a mode that checked the reference's claims against the response first
            for key, sc in found:
                if sc.evidence.details.get("short_answer") or any(c.target == "response" for c in sc.evidence.claims):
                    return key, sc
            if found:
                return found[0]
        return None

    def excerpt(self, rank: int) -> str:
        return self.chunks[rank - 1] if 0 < rank <= len(self.chunks) else f"chunk {rank}"


def _retrieval(v: _View) -> Finding | None:
    items: list[EvidenceItem] = []
    metrics: list[str] = []
    recall = v.recall()
    if recall is not None:
        key, claims = recall
        missed = [EvidenceItem("missed", c.claim, key) for c in claims if not c.supported]
        if missed:
            items += missed
            metrics.append(key)
    ranks = v.relevant_ranks()
    if ranks is not None:
        key, relevant, n = ranks
        if not relevant:
            items.append(EvidenceItem("no_relevant_chunk", str(n), key))
            metrics.append(key)
        elif relevant[0] > 1 and v.fails(key):
            items.append(EvidenceItem("ranked_low", v.excerpt(relevant[0]), key, relevant[0],
                                      note=f"rank {relevant[0]} of {n}"))
            metrics.append(key)
    s = v.sample
    ir = [k for k in v.scores if metric_name(k) in IR_METRICS and v.fails(k)]
    if ir and s.retrieved_ids is not None and s.relevant_ids:
        grades = dict(s.relevant_ids) if isinstance(s.relevant_ids, Mapping) else dict.fromkeys(s.relevant_ids, 1)
        wanted = [i for i, g in grades.items() if float(g) > 0]
        retrieved = list(s.retrieved_ids)
        missing = [i for i in wanted if i not in retrieved]
        items += [EvidenceItem("missed_id", i, ir[0]) for i in missing[:5]]
        hits = [r for r, i in enumerate(retrieved, start=1) if i in wanted]
        if hits and hits[0] > 1 and not any(i.kind == "ranked_low" for i in items):
            items.append(EvidenceItem("ranked_low", f"id {retrieved[hits[0] - 1]}", ir[0], hits[0],
                                      note=f"rank {hits[0]} of {len(retrieved)}"))
        metrics.append(ir[0])
    items, metrics = _span_misses(v, items, metrics)
    return Finding("retrieval", tuple(items), tuple(dict.fromkeys(metrics))) if items else None


def _span_misses(v: _View, items: list[EvidenceItem], metrics: list[str]) -> tuple[list[EvidenceItem], list[str]]:
    """The reference passages (document spans) no retrieved chunk reached, and the first chunk that
    reached one when it ranks low: read from a failing span metric's trail, no judge needed."""
    span = sorted((k for k in v.scores if metric_name(k) in SPAN_MISS_METRICS and v.fails(k)),
                  key=lambda k: SPAN_MISS_METRICS.index(metric_name(k)))
    if not span:
        return _off_reference(v, items, metrics)
    key = span[0]
    d = v.scores[key].evidence.details
    refs = list(d.get("reference_spans") or ())
    reached = {int(j) for r in d.get("reached") or () for j in r.get("spans") or ()}
    texts = list(v.sample.reference_contexts or ())
    out = list(items)
    for j, sp in enumerate(refs):
        if j in reached:
            continue
        where = f"{sp.get('doc_id')} characters {sp.get('start')}-{sp.get('end')}"
        text = f"{_clip(texts[j], 160)} ({where})" if len(texts) == len(refs) else where
        out.append(EvidenceItem("missed_span", text, key))
    ranks = [int(r) for r in d.get("relevant_ranks") or ()]
    if ranks and ranks[0] > 1 and not any(i.kind == "ranked_low" for i in out):
        out.append(EvidenceItem("ranked_low", v.excerpt(ranks[0]), key, ranks[0],
                                note=f"rank {ranks[0]} of {d.get('retrieved')}"))
    if len(out) > len(items):
        metrics = [*metrics, key]
    return out, metrics


def _off_reference(v: _View, items: list[EvidenceItem], metrics: list[str]) -> tuple[list[EvidenceItem], list[str]]:
    """A failing span_precision (counted only with a threshold the user set): the retrieved chunks
    that reach no reference passage, the first three."""
    keys = [k for k in v.scores if metric_name(k) == "span_precision" and v.fails(k)]
    if not keys or items:
        return items, metrics
    d = v.scores[keys[0]].evidence.details
    off = [int(r["rank"]) for r in d.get("reached") or () if not r.get("spans")]
    out = [EvidenceItem("off_reference", v.excerpt(rank), keys[0], rank,
                        note=f"rank {rank} of {d.get('retrieved')}") for rank in off[:3]]
    return (out, [*metrics, keys[0]]) if out else (items, metrics)


def _reference_agrees(v: _View) -> set[str]:
    """Response claims the reference supports (factual_correctness's or answer_correctness's trail)."""
    found = v.answer_claims()
    if found is None or found[1].evidence.details.get("short_answer"):
        return set()
    return {c.claim for c in found[1].evidence.claims if c.target == "reference" and c.supported}


def _unsupported(v: _View) -> Finding | None:
    for key, sc in v.of("faithfulness"):
        bad = [c for c in sc.evidence.claims if not c.supported and c.target != "user"]
        if not bad:
            return None
        agrees = _reference_agrees(v)
        items = tuple(_unsupported_item(c, v.chunks, key, c.claim in agrees) for c in bad)
        return Finding("unsupported", items, (key,))
    return None


def _noise(v: _View) -> tuple[Finding | None, bool]:
    """(the finding, whether it names the chunks: noise_sensitivity scored)."""
    for key, sc in v.of("noise_sensitivity"):
        d = sc.evidence.details
        relevant = {int(k) for k in d.get("relevant_chunks") or ()}
        items = []
        for row in d.get("claims") or ():
            support = [int(k) for k in row.get("supporting_chunks") or ()]
            if row.get("correct") or not support:
                continue
            irrelevant = [k for k in support if k not in relevant]
            if len(irrelevant) == len(support):
                kind, rank = "irrelevant_chunk", irrelevant[0]
            else:
                kind, rank = "relevant_chunk", next(k for k in support if k in relevant)
            _, _, sentence = best_sentence(str(row.get("claim", "")), v.chunks, only=rank)
            items.append(EvidenceItem(kind, str(row.get("claim", "")), key, rank, sentence))
        return (Finding("noise", tuple(items), (key,)) if items else None), True
    faith = v.of("faithfulness")
    found = v.answer_claims()
    if not faith or found is None or found[1].evidence.details.get("short_answer"):
        return None, False
    supported = {c.claim for c in faith[0][1].evidence.claims if c.supported}
    key, sc = found
    items = [EvidenceItem("from_chunks", c.claim, key) for c in sc.evidence.claims
             if c.target == "reference" and not c.supported and c.claim in supported]
    return (Finding("noise", tuple(items), (faith[0][0], key)) if items else None), False


def _incomplete(v: _View) -> tuple[Finding | None, list[str]]:
    """(the finding, the reference claims left out of the response that the run cannot place:
    no context_recall to say whether the chunks hold them)."""
    found = v.answer_claims()
    if found is None:
        return None, []
    key, sc = found
    recall = v.recall()
    held = {c.claim for c in recall[1] if c.supported} if recall is not None else None
    if sc.evidence.details.get("short_answer"):
        if not sc.evidence.claims or sc.evidence.claims[0].supported or sc.evidence.claims[0].signals.get("declines"):
            return None, []
        answer = v.sample.reference_text or ""
        if held is None:
            return None, [answer]
        if not held or recall is None:
            return None, []
        n = len(recall[1])
        return Finding("incomplete", (EvidenceItem("wrong_answer", answer, key, note=(
            f"context_recall: {len(held)} of {n} reference claim{'s' if n != 1 else ''} in the chunks")),),
            (key, recall[0])), []
    left = [c.claim for c in sc.evidence.claims if c.target == "response" and not c.supported]
    if held is None or recall is None:
        return None, left
    items = tuple(EvidenceItem("left_out", c, key) for c in left if c in held)
    return (Finding("incomplete", items, (key, recall[0])) if items else None), []


def _declined(v: _View) -> tuple[bool | None, str, str]:
    """(whether the response declines, in words how it was seen, the metric that saw it)."""
    for key, sc in v.of("abstention"):
        d = sc.evidence.details
        if isinstance(d.get("declined"), bool):
            quoted = ", ".join(f'"{q}"' for q in d.get("quoted") or ())
            how = f"decline phrases {quoted}" if quoted and d.get("decided_by") == "detector" else "the judge"
            return bool(d["declined"]), how, key
    for key, sc in v.of("faithfulness", Outcome.UNDETERMINED):
        if sc.evidence.details.get("declines"):
            quoted = ", ".join(f'"{q}"' for q in sc.evidence.details.get("quoted") or ())
            return True, f"decline phrases {quoted}".strip(), key
    for key, sc in v.of("answer_relevancy"):
        if sc.evidence.details.get("noncommittal"):
            return True, "noncommittal", key
    response = v.sample.response
    if response:
        signals = detect_declines(response)
        if signals.verdict == "declines":
            return True, f"decline phrases {signals.quoted()}", "phrase detector"
    for key, sc in v.of("faithfulness"):
        if sc.evidence.claims:
            return False, "it makes claims", key
    return None, "", ""


def _decline(v: _View) -> Finding | None:
    declined, how, key = _declined(v)
    if declined is None:
        return None
    if v.sample.out_of_scope:
        if declined:
            return None
        faith = v.of("faithfulness")
        claims = [c.claim for c in faith[0][1].evidence.claims] if faith else []
        texts = claims[:3] or [v.sample.response or ""]
        return Finding("decline", tuple(EvidenceItem("answered_out_of_scope", t, key, note=how if not faith else "")
                                        for t in texts), (key,))
    if not declined:
        return None
    recall = v.recall()
    ranks = v.relevant_ranks()
    held = [c.claim for c in recall[1] if c.supported] if recall is not None else []
    note = f"seen by {key}: {how}" if key != "phrase detector" else how
    if held and recall is not None:
        items = tuple(EvidenceItem("wrong_decline", c, recall[0], note=note if i == 0 else "")
                      for i, c in enumerate(held[:3]))
        return Finding("decline", items, (key, recall[0]))
    if ranks is not None and ranks[1] and recall is None:
        rank = ranks[1][0]
        return Finding("decline", (EvidenceItem("wrong_decline", f"chunk {rank}: {v.excerpt(rank)}", ranks[0],
                                                rank, note=note),), (key, ranks[0]))
    if recall is not None or ranks is not None:
        return Finding("decline", (EvidenceItem("fair_decline", v.sample.response or "", key, note=how),), (key,),
                       secondary_only=True)
    return Finding("decline", (EvidenceItem("declined_in_scope", v.sample.response or "", key, note=(
        f"{how}; run context_recall to tell whether the chunks hold the answer")),), (key,))


def _tool(v: _View) -> Finding | None:
    items: list[EvidenceItem] = []
    seen: set[str] = set()
    metrics: list[str] = []
    # tool_call_accuracy's pairs first (they say which argument differs), then tool_call_f1's lists
    keys = sorted((k for k in v.scores if metric_name(k) in TOOL_METRICS), key=lambda k: "f1" in k)
    for key in keys:
        sc = v.scores[key]
        if sc.outcome is not Outcome.SCORED or sc.value is None or sc.value >= 1.0:
            continue
        d = sc.evidence.details
        found: list[tuple[str, str, tuple[str, ...]]] = []  # (kind, sentence, the calls it is about)
        for row in d.get("pairs") or ():
            kind, made, want = row.get("mismatch"), str(row.get("made")), str(row.get("expected"))
            if kind == "missing":
                found.append(("missing", f"expected call {want} was not made", (want,)))
            elif kind == "extra":
                found.append(("extra", f"call {made} was not expected", (made,)))
            elif kind == "name":
                found.append(("name", f"call {made} was made where {want} was expected", (made, want)))
            elif kind == "arguments":
                found.append(("arguments", f"call {made} differs from the expected {want} in "
                                           f"{', '.join(row.get('arguments') or [])}", (made, want)))
        found += [("missing", f"expected call {c} was not made", (str(c),)) for c in d.get("missing") or ()]
        found += [("extra", f"call {c} was not expected", (str(c),)) for c in d.get("extra") or ()]
        for kind, text, calls in found:
            if seen.issuperset(calls) or (kind in ("missing", "extra") and calls[0] in seen):
                continue
            seen.update(calls)
            items.append(EvidenceItem(kind, text, key))
            metrics.append(key)
    for kind, text, key in trajectory_items(v.scores):  # the same call named by two metrics: once
        if any(i.text == text for i in items):
            continue
        items.append(EvidenceItem(kind, text, key))
        metrics.append(key)
    return Finding("tool", tuple(items), tuple(dict.fromkeys(metrics))) if items else None


def _judge(failing: Sequence[FailingMetric]) -> Finding | None:
    items = tuple(EvidenceItem(f.outcome, f"{f.metric} {f.outcome}: {f.reason or 'no reason given'}", f.metric)
                  for f in failing if f.outcome in ("failed", "undetermined") and not f.declined)
    return Finding("judge", items, tuple(i.metric for i in items)) if items else None


def _explainers(f: FailingMetric, sample: Sample) -> frozenset[str]:
    if f.outcome == "failed":
        return frozenset({"judge"})
    if f.outcome == "undetermined":
        return frozenset({"decline", "retrieval"}) if f.declined else frozenset({"judge"})
    name = metric_name(f.metric)
    out = set(EXPLAINED_BY.get(name, ()))
    if name == "abstention" and not sample.out_of_scope:
        out.add("retrieval")  # a decline the missing chunks justify
    if sample.out_of_scope:
        out.add("decline")  # an answer made up where none should be
    return frozenset(out)


def _strong(cause: str, explained: Sequence[FailingMetric], sample: Sample) -> bool:
    if cause == "judge":
        return True
    if cause == "decline" and (sample.out_of_scope or any(f.declined for f in explained)):
        return True
    own = _OWN.get(cause, frozenset())
    return any(f.outcome == "scored" and metric_name(f.metric) in own for f in explained)


def diagnose_sample(sample: Sample, scores: Mapping[str, Score], thresholds: Mapping[str, Threshold],
                    run_names: frozenset[str], order: Sequence[str] = ()) -> SampleDiagnosis | None:
    """The diagnosis of one sample from its scores' evidence; None when nothing fails."""
    v = _View(sample, scores, thresholds, run_names)
    failing = failing_metrics(sample, scores, thresholds, order, declines=_declined(v)[0] is True)
    if not failing:
        return None
    incomplete, unplaced = _incomplete(v)
    noise, named = _noise(v)
    found = [f for f in (_tool(v), _decline(v), _retrieval(v), _unsupported(v), noise, incomplete, _judge(failing))
             if f is not None]
    findings = []
    for f in found:
        explained = [m for m in failing if f.cause in _explainers(m, sample)]
        if f.cause == "judge":
            explained = [m for m in failing if m.outcome in ("failed", "undetermined") and not m.declined]
        findings.append(replace(f, explains=tuple(m.metric for m in explained),
                                strong=_strong(f.cause, explained, sample)))
    candidates = [f for f in findings if f.explains and not f.secondary_only]
    candidates.sort(key=lambda f: (f.cause == "judge", not f.strong, -len(f.evidence), PRIORITY.index(f.cause)))
    primary = candidates[0].cause if candidates else UNDIAGNOSED
    ordered = sorted(findings, key=lambda f: (f.cause != primary, PRIORITY.index(f.cause)))

    needs: list[str] = []
    notes: list[str] = []
    if unplaced:
        n = len(unplaced)
        notes.append(f"{n} reference claim{'s' if n != 1 else ''} left out of the response: run context_recall "
                     "to tell retrieval misses from incomplete answers")
        needs.append("context_recall")
    if noise is not None and not named:
        notes.append("run noise_sensitivity to name the chunk a wrong claim came from")
        needs.append("noise_sensitivity")
    declined, how, by = _declined(v)
    if declined and how == "the judge" and any(f.cause == "unsupported" for f in findings):
        notes.append(f"{by}'s judge reads the response as a decline, the decline detector does not: faithfulness "
                     "judged its words as claims, so its unsupported claims may be a decline's words")
    explained_all = {m for f in findings for m in f.explains}
    for m in failing:
        if m.metric in explained_all or m.outcome != "scored":
            continue
        would = [x for x in _WOULD_TELL.get(metric_name(m.metric), ()) if x not in run_names]
        why = f"{m.describe()} ({m.reason})" if m.reason else m.describe()
        notes.append(f"{why}: nothing in the run's evidence explains it"
                     + (f"; run {', '.join(would)} to tell why" if would else ""))
        needs += would
    return SampleDiagnosis(
        sample_id=sample.id, question=question_text(sample), key=pair_key(sample), failing=tuple(failing),
        primary=primary, findings=tuple(ordered), needs=tuple(dict.fromkeys(needs)), notes=tuple(notes))
