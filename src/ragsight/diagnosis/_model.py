"""What a diagnosis is made of: the causes, what each needs, the thresholds, and the frozen
records of a sample's findings, a cause's count and a run's diagnosis (with their JSON form).

The JSON keys written by ``to_dict`` are part of the interface (docs/diagnose.md lists them);
``DIAGNOSIS_FORMAT`` changes when one is renamed or removed."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from ..errors import ConfigError

__all__ = [
    "CAUSES",
    "DEFAULT_THRESHOLD",
    "DIAGNOSIS_FORMAT",
    "HINTS",
    "MEANINGS",
    "NEEDS",
    "PRIORITY",
    "THRESHOLDS",
    "UNDIAGNOSED",
    "CauseCount",
    "Diagnosis",
    "EvidenceItem",
    "FailingMetric",
    "Finding",
    "SampleDiagnosis",
    "Threshold",
    "Topic",
    "TopicGroup",
    "UnmeasuredCause",
    "UnpairedRunsError",
]

DIAGNOSIS_FORMAT = 1
"""The version of the JSON that ``Diagnosis.to_dict`` and ``DiagnosisChange.to_dict`` write."""

CAUSES = ("retrieval", "unsupported", "noise", "incomplete", "decline", "tool", "judge")
UNDIAGNOSED = "undiagnosed"
"""A failing sample whose evidence does not show why: its notes name the metrics that would."""

PRIORITY = ("tool", "decline", "retrieval", "unsupported", "noise", "incomplete", "judge")
"""Which cause is primary when several explain a failing metric equally (after the causes whose
own metric fails, then the one with the most evidence): upstream first, since a wrong tool call
or a missed chunk explains what follows it; the judge last, since an unmeasured step explains no
score."""

MEANINGS = {
    "retrieval": "the retriever did not bring what the answer needs",
    "unsupported": "the response states what no chunk supports",
    "noise": "the response repeats a wrong statement from a chunk",
    "incomplete": "the chunks hold it, the response leaves it out",
    "decline": "a decline the chunks could answer, or an answer to an out-of-scope question",
    "tool": "the agent's tool calls differ from the expected ones, use a wrong tool, invalid arguments or loop",
    "judge": "unmeasured: a step of the judge failed, or a metric has no value",
    UNDIAGNOSED: "failing, but the run's evidence does not show why",
}

NEEDS: Mapping[str, tuple[tuple[str, ...], ...]] = {
    # every group is needed; one metric of a group is enough
    "retrieval": (("context_recall", "context_precision", "hit_rate", "recall_at_k", "mrr", "ndcg", "map",
                   "span_hit_rate", "span_recall", "span_mrr", "span_ndcg"),),
    "unsupported": (("faithfulness",),),
    "noise": (("noise_sensitivity",),),
    "incomplete": (("factual_correctness", "answer_correctness"), ("context_recall",)),
    "decline": (("abstention", "faithfulness", "answer_relevancy"),),  # the last two: the phrase detector
    "tool": (("tool_call_accuracy", "tool_call_f1", "conversation_tool_call_accuracy", "conversation_tool_call_f1",
              "trajectory_match", "tool_argument_validity", "tool_selection", "trajectory_quality"),),
    "judge": (),
}

HINTS = {
    "retrieval": "run context_recall to tell retrieval misses from incomplete answers",
    "unsupported": "run faithfulness to find the claims no chunk supports",
    "noise": "run noise_sensitivity to find wrong claims taken from irrelevant chunks",
    "incomplete": "run factual_correctness and context_recall to find what the chunks hold and the response "
                  "leaves out",
    "decline": "run abstention to find wrong declines and answers to out-of-scope questions",
    "tool": "run tool_call_accuracy to find the tool calls that differ from the expected ones",
    "judge": "",
}

DEFAULT_THRESHOLD = 0.5
THRESHOLDS: Mapping[str, float] = {
    "noise_sensitivity": 0.0,  # lower is better: any wrong claim taken from a chunk fails
    # precision over the retrieved chunks: with one reference passage it cannot pass 1/k, so at 0.5
    # every question of a top-4 retriever "failed" with its answer right; counted only when asked
    # (--threshold span_precision=0.5)
    "span_precision": 0.0,
    "precision_at_k": 0.0,
    "tool_call_accuracy": 1.0,
    "tool_call_f1": 1.0,
    "conversation_tool_call_accuracy": 1.0,
    "conversation_tool_call_f1": 1.0,
    "trajectory_match": 1.0,
    "tool_argument_validity": 1.0,
}
"""The default thresholds by metric name; every other metric fails below
:data:`DEFAULT_THRESHOLD` (above it for a lower-is-better one)."""


class UnpairedRunsError(ConfigError):
    """Two runs to diagnose side by side share too few samples for the change to speak for them."""


@dataclass(frozen=True)
class Threshold:
    """A metric fails on a sample when its value is below ``value`` (above it when lower is
    better). ``default``: not set by the user."""

    metric: str
    value: float
    lower_is_better: bool = False
    default: bool = True

    def fails(self, v: float) -> bool:
        return v > self.value if self.lower_is_better else v < self.value

    def describe(self) -> str:
        return f"{'above' if self.lower_is_better else 'below'} {self.value:g}"

    def to_dict(self) -> dict[str, Any]:
        return {"threshold": self.value, "fails": "above" if self.lower_is_better else "below",
                "set_by": "default" if self.default else "user"}


@dataclass(frozen=True)
class FailingMetric:
    """Why a sample is diagnosed: a metric past its threshold (``scored``), one the judge could
    not measure (``failed``), or one with no value (``undetermined``)."""

    metric: str
    outcome: str
    value: float | None
    reason: str
    threshold: float | None = None
    declined: bool = False  # undetermined because the response declines (faithfulness)

    def describe(self) -> str:
        if self.outcome == "scored" and self.value is not None:
            return f"{self.metric} {self.value:.2f}"
        return f"{self.metric} {self.outcome}" + (" by a decline" if self.declined else "")

    def to_dict(self) -> dict[str, Any]:
        return {"metric": self.metric, "outcome": self.outcome, "value": self.value,
                "threshold": self.threshold, "reason": self.reason}


def _clip(text: str, n: int) -> str:
    one = " ".join(text.split())
    return one if len(one) <= n else one[: n - 1].rstrip() + "…"


_LINES = {
    "missed": "reference claim in no retrieved chunk: {text}",
    "no_relevant_chunk": "none of the {text} retrieved chunks is relevant",
    "ranked_low": "the first relevant chunk ranks low: {text}",
    "missed_id": "relevant chunk {text} was not retrieved",
    "missed_span": "reference passage reached by no retrieved chunk: {text}",
    "off_reference": "retrieved chunk {chunk} reaches no reference passage: {text}",
    "contradicted": "{text} - the chunks say otherwise{quote}",
    "silent": "{text} - no chunk states it",
    "not_told_apart": "{text} - not supported; the chunks speak of it without stating it{quote}",
    "irrelevant_chunk": "{text} - wrong per the reference, taken from chunk {chunk}, which is not relevant{quote}",
    "relevant_chunk": "{text} - wrong per the reference, supported by chunk {chunk}{quote}",
    "from_chunks": "{text} - the chunks support it, the reference does not",
    "left_out": "reference claim the chunks hold, left out of the response: {text}",
    "wrong_answer": "the chunks hold the answer {text}; the response gives another",
    "wrong_decline": "declined, though the chunks hold: {text}",
    "declined_in_scope": "declined an in-scope question: {text}",
    "fair_decline": "declined; the chunks lack the answer: {text}",
    "answered_out_of_scope": "answered an out-of-scope question: {text}",
    "missing": "{text}",
    "extra": "{text}",
    "name": "{text}",
    "arguments": "{text}",
    "failed": "{text}",
    "undetermined": "{text}",
}
_QUOTED = {"missed", "contradicted", "silent", "not_told_apart", "irrelevant_chunk", "relevant_chunk",
           "from_chunks", "left_out", "wrong_answer", "wrong_decline", "answered_out_of_scope"}


@dataclass(frozen=True)
class EvidenceItem:
    """One piece of stored evidence behind a finding: a claim, a chunk, a tool call or a
    reason, the metric whose trail holds it, and what it shows (``kind``).

    ``chunk``: the rank of the chunk involved (1 = first retrieved); ``quote``: the chunk's
    sentence that speaks of the claim, where one does; ``note``: what else the evidence says."""

    kind: str
    text: str
    metric: str
    chunk: int | None = None
    quote: str = ""
    note: str = ""

    def line(self, width: int = 160) -> str:
        """The item in one sentence, as the text output prints it."""
        text = f'"{_clip(self.text, width)}"' if self.kind in _QUOTED else _clip(self.text, width)
        quote = ""
        if self.quote:
            where = f" (chunk {self.chunk})" if self.chunk is not None and self.kind in (
                "contradicted", "not_told_apart") else ""
            quote = f': "{_clip(self.quote, 120)}"{where}'
        chunk = "" if self.chunk is None else str(self.chunk)
        out = _LINES.get(self.kind, "{text}").format(text=text, quote=quote, chunk=chunk)
        return out + (f" ({self.note})" if self.note else "")

    def to_dict(self) -> dict[str, Any]:
        return {"kind": self.kind, "text": self.text, "metric": self.metric, "chunk": self.chunk,
                "quote": self.quote, "note": self.note, "line": self.line()}


@dataclass(frozen=True)
class Finding:
    """One cause found in one sample's evidence. ``explains``: the failing metrics it accounts
    for; ``strong``: a metric that measures this cause itself fails (context_recall for a
    retrieval miss, faithfulness for an unsupported claim...); ``secondary_only``: never the
    primary cause (a decline the missing chunks justify)."""

    cause: str
    evidence: tuple[EvidenceItem, ...]
    metrics: tuple[str, ...]
    explains: tuple[str, ...] = ()
    strong: bool = False
    secondary_only: bool = False

    @property
    def kinds(self) -> dict[str, int]:
        out: dict[str, int] = {}
        for item in self.evidence:
            out[item.kind] = out.get(item.kind, 0) + 1
        return out

    def to_dict(self, role: str) -> dict[str, Any]:
        return {"cause": self.cause, "role": role, "kinds": self.kinds, "metrics": list(self.metrics),
                "explains": list(self.explains), "evidence": [i.to_dict() for i in self.evidence]}


@dataclass(frozen=True)
class SampleDiagnosis:
    """A failing sample: its failing metrics, one primary cause (a cause of :data:`CAUSES`, or
    :data:`UNDIAGNOSED`), the findings (the primary's first), and the metrics the run lacks that
    would tell more (``needs``, with ``notes`` in words)."""

    sample_id: str
    question: str
    key: tuple[str, ...]
    failing: tuple[FailingMetric, ...]
    primary: str
    findings: tuple[Finding, ...]
    needs: tuple[str, ...] = ()
    notes: tuple[str, ...] = ()
    topic: int | None = None

    @property
    def primary_finding(self) -> Finding | None:
        return self.findings[0] if self.findings and self.findings[0].cause == self.primary else None

    @property
    def causes(self) -> tuple[str, ...]:
        """Every cause found, the primary first."""
        return tuple(dict.fromkeys([self.primary, *(f.cause for f in self.findings)]))

    def to_dict(self) -> dict[str, Any]:
        primary = self.primary_finding
        return {
            "id": self.sample_id, "question": self.question,
            "failing": [f.to_dict() for f in self.failing], "primary": self.primary,
            "findings": [f.to_dict("primary" if f is primary else "secondary") for f in self.findings],
            "needs": list(self.needs), "notes": list(self.notes), "topic": self.topic,
        }


@dataclass(frozen=True)
class Topic:
    """A group of failing samples whose questions are close, named by its most distinctive words."""

    index: int
    words: tuple[str, ...]
    samples: tuple[str, ...]

    @property
    def label(self) -> str:
        return " ".join(self.words) or "(no words)"

    def to_dict(self) -> dict[str, Any]:
        return {"id": self.index, "words": list(self.words), "samples": list(self.samples)}


@dataclass(frozen=True)
class TopicGroup:
    """A cause's samples in one topic, with the one nearest the topic's centre as the example."""

    topic: int
    words: tuple[str, ...]
    samples: tuple[str, ...]
    example: str

    def to_dict(self) -> dict[str, Any]:
        return {"topic": self.topic, "words": list(self.words), "count": len(self.samples),
                "samples": list(self.samples), "example": self.example}


@dataclass(frozen=True)
class CauseCount:
    """How many failing samples have this primary cause, with a bootstrap 95% CI of the count
    over the run's samples; ``secondary``: samples where it is found but not primary."""

    cause: str
    count: int
    ci_low: float | None
    ci_high: float | None
    share: float
    secondary: int
    kinds: Mapping[str, int]
    example: str | None
    topics: tuple[TopicGroup, ...] = ()

    def to_dict(self) -> dict[str, Any]:
        return {"cause": self.cause, "meaning": MEANINGS[self.cause], "count": self.count,
                "ci95": [self.ci_low, self.ci_high], "share": self.share, "secondary": self.secondary,
                "kinds": dict(self.kinds), "example": self.example,
                "topics": [t.to_dict() for t in self.topics]}


@dataclass(frozen=True)
class UnmeasuredCause:
    """A cause the run cannot find: the metrics it needs are not among the run's."""

    cause: str
    needs: tuple[tuple[str, ...], ...]
    hint: str

    def to_dict(self) -> dict[str, Any]:
        return {"cause": self.cause, "needs": [list(g) for g in self.needs], "hint": self.hint}


@dataclass(frozen=True)
class Diagnosis:
    """Why a run's samples fail: the failing samples with their causes, the count of each cause
    (ordered by count), the topics of the failing questions, and what the run cannot tell."""

    run_id: str
    n_samples: int
    thresholds: Mapping[str, Threshold]
    samples: tuple[SampleDiagnosis, ...]
    causes: tuple[CauseCount, ...]
    unmeasured: tuple[UnmeasuredCause, ...]
    topics: tuple[Topic, ...] = ()
    topic_method: str = ""
    keys: Mapping[tuple[str, ...], str] = field(default_factory=dict, repr=False)
    """Every sample's pairing key (conversation turn or id) -> its id, failing or not."""
    seed: int = 0
    not_scored: Mapping[tuple[str, ...], tuple[str, ...]] = field(default_factory=dict, repr=False)
    """A sample's pairing key -> the run's metric keys that did not measure it (skipped, or no
    score at all); only the samples with one. A change is judged only on what both runs measured."""
    passing_unsupported: Mapping[str, tuple[str, ...]] = field(default_factory=dict)
    """faithfulness key -> the samples that pass its threshold although a claim of theirs was
    judged unsupported (not failing, so in no cause: said beside the causes)."""

    def measured(self, key: tuple[str, ...]) -> frozenset[str]:
        """The metric keys that measured the sample of this pairing key in this run."""
        return frozenset(self.thresholds) - frozenset(self.not_scored.get(key, ()))

    def cause(self, name: str) -> CauseCount | None:
        return next((c for c in self.causes if c.cause == name), None)

    def sample(self, sample_id: str) -> SampleDiagnosis | None:
        return next((s for s in self.samples if s.sample_id == sample_id), None)

    def to_dict(self) -> dict[str, Any]:
        return {
            "format": DIAGNOSIS_FORMAT, "run_id": self.run_id, "samples": self.n_samples,
            "failing": len(self.samples),
            "thresholds": {k: t.to_dict() for k, t in self.thresholds.items()},
            "causes": [c.to_dict() for c in self.causes],
            "not_measured": [u.to_dict() for u in self.unmeasured],
            "topics": {"method": self.topic_method, "groups": [t.to_dict() for t in self.topics]},
            "by_sample": [s.to_dict() for s in self.samples],
            "passing_with_unsupported_claims": {k: list(v) for k, v in self.passing_unsupported.items()},
            "seed": self.seed,
        }
