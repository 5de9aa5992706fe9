"""Retrieval metrics on document spans: which retrieved chunks overlap the reference passages.

A test set made by ``ragsight generate`` states each question's reference passages as document
spans (``metadata.reference_spans``: ``{"doc_id", "start", "end"}``, character offsets in the
document's text), independent of any chunking; a pipeline that says where its chunks come from
gives ``metadata.retrieved_spans`` (one span per retrieved chunk, in rank order). The same ground
truth then measures every chunk size, with no judge call:

- a retrieved chunk is **relevant** when it shares at least ``min_chars`` characters (default 1)
  with a reference span of the same document;
- ``span_hit_rate``: 1 when a relevant chunk is in the top k, else 0;
- ``span_recall``: reference spans reached by the top k (a span is reached when a relevant chunk
  overlaps it), over all reference spans;
- ``span_precision``: relevant chunks in the top k over the chunks in the top k;
- ``span_mrr``: 1 / rank of the first relevant chunk (0 when none is in the top k);
- ``span_ndcg``: each reference span gains 1 at the rank of the first chunk that reaches it,
  discounted by 1/log2(rank + 1); normalised by the ideal of one new span per rank,
  sum over i = 1..min(spans, k) of 1/log2(i + 1), and capped at 1 (one chunk that reaches two
  passages at rank 1 is as good as the ideal). With one reference span it is 1/log2(rank + 1).

``k`` is a cut-off; without it (the default) every retrieved chunk counts, so a configuration's
own top-k is what is measured. A question with no reference span (an out-of-scope question) is
skipped; a sample whose retrieved chunks have no span is skipped (the target did not say where
its chunks come from); a retrieved chunk without a span among others with spans is undetermined.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any, ClassVar

from .._score import Evidence, Score
from ..analyses import SampleAnalyses
from ..dataset import Sample
from . import register
from ._base import OUT_OF_SCOPE_SKIP, Metric

__all__ = [
    "Span",
    "SpanHitRate",
    "SpanIR",
    "SpanMRR",
    "SpanNDCG",
    "SpanPrecision",
    "SpanRecall",
    "parse_spans",
    "span_ir",
]


@dataclass(frozen=True)
class Span:
    """Characters [start, end) of document ``doc_id``."""

    doc_id: str
    start: int
    end: int

    def overlap(self, other: Span) -> int:
        if self.doc_id != other.doc_id:
            return 0
        return max(0, min(self.end, other.end) - max(self.start, other.start))

    def to_dict(self) -> dict[str, Any]:
        return {"doc_id": self.doc_id, "start": self.start, "end": self.end}


def parse_spans(value: Any, field: str) -> list[Span | None]:
    """Spans from JSON-like data: a list of ``{"doc_id", "start", "end"}`` (None stays None).
    Raises ValueError naming the field and the item."""
    if not isinstance(value, (list, tuple)):
        raise ValueError(f"{field} must be a list of {{doc_id, start, end}}, got {type(value).__name__}")
    out: list[Span | None] = []
    for i, item in enumerate(value):
        if item is None:
            out.append(None)
            continue
        if not isinstance(item, Mapping):
            raise ValueError(f"{field}[{i}] must be an object with doc_id, start and end")
        doc, start, end = item.get("doc_id"), item.get("start"), item.get("end")
        ok = all(isinstance(x, int) and not isinstance(x, bool) for x in (start, end))
        if doc is None or not ok or not 0 <= start <= end:  # type: ignore[operator]
            raise ValueError(f"{field}[{i}] needs doc_id and integer offsets 0 <= start <= end, "
                             f"got {dict(item)!r}")
        out.append(Span(str(doc), int(start), int(end)))  # type: ignore[arg-type]
    return out


@dataclass(frozen=True)
class SpanIR:
    """The span-based retrieval values of one question, with what they are made of:
    ``reached[i]`` lists the reference spans (by index) that the i-th retrieved chunk overlaps."""

    k: int
    retrieved: int
    references: int
    reached: tuple[tuple[int, ...], ...]
    hit_rate: float
    recall: float
    precision: float
    mrr: float
    ndcg: float

    @property
    def relevant_ranks(self) -> list[int]:
        return [i + 1 for i, r in enumerate(self.reached) if r]


def span_ir(
    retrieved: Sequence[Span], reference: Sequence[Span], k: int | None = None, min_chars: int = 1
) -> SpanIR:
    """Hit rate, recall, precision, MRR and NDCG of ``retrieved`` (rank order) against the
    ``reference`` spans, over the top ``k`` (all when None). ``reference`` must not be empty."""
    if not reference:
        raise ValueError("span_ir needs at least one reference span")
    top = list(retrieved if k is None else retrieved[:k])
    reached = tuple(
        tuple(j for j, ref in enumerate(reference) if chunk.overlap(ref) >= min_chars) for chunk in top
    )
    relevant = [bool(r) for r in reached]
    first_rank: dict[int, int] = {}
    for rank, spans in enumerate(reached, start=1):
        for j in spans:
            first_rank.setdefault(j, rank)
    m = len(reference)
    cut = len(top) if k is None else k
    dcg = sum(1.0 / math.log2(r + 1) for r in first_rank.values())
    idcg = sum(1.0 / math.log2(i + 1) for i in range(1, min(m, cut) + 1))
    first = next((i + 1 for i, rel in enumerate(relevant) if rel), None)
    return SpanIR(
        k=cut,
        retrieved=len(top),
        references=m,
        reached=reached,
        hit_rate=1.0 if first is not None else 0.0,
        recall=len(first_rank) / m,
        precision=sum(relevant) / len(top) if top else 0.0,
        mrr=1.0 / first if first is not None else 0.0,
        ndcg=min(1.0, dcg / idcg) if idcg > 0 else 0.0,
    )


class _SpanMetric(Metric):
    """Shared shape: the spans from the sample's metadata, the cut-off, the evidence."""

    groups = frozenset({"retrieval"})
    in_scope_only = True
    value_of: ClassVar[str]

    def __init__(self, key: str | None = None, k: int | None = None, min_chars: int = 1) -> None:
        super().__init__(key)
        if k is not None and (isinstance(k, bool) or not isinstance(k, int) or k < 1):
            raise ValueError(f"{self.name}: k must be an integer >= 1, or left out for all retrieved chunks")
        if isinstance(min_chars, bool) or not isinstance(min_chars, int) or min_chars < 1:
            raise ValueError(f"{self.name}: min_chars must be an integer >= 1")
        self.k = k
        self.min_chars = min_chars

    def params(self) -> dict[str, Any]:
        return {"k": self.k, "min_chars": self.min_chars}

    def missing(self, sample: Sample) -> str | None:
        meta = sample.metadata
        if sample.out_of_scope:
            return OUT_OF_SCOPE_SKIP
        if not meta.get("reference_spans"):
            return "sample has no metadata.reference_spans (reference passages as document spans)"
        if "retrieved_spans" not in meta:
            return ("sample has no metadata.retrieved_spans (the system did not say which document "
                    "span each retrieved chunk comes from)")
        return None

    async def compute(self, ctx: SampleAnalyses) -> Score:
        meta = ctx.sample.metadata
        try:
            reference = [s for s in parse_spans(meta["reference_spans"], "reference_spans") if s is not None]
            retrieved = parse_spans(meta["retrieved_spans"], "retrieved_spans")
        except ValueError as exc:
            return Score.failed(self.key, f"unusable spans: {exc}")
        top = retrieved if self.k is None else retrieved[: self.k]
        unknown = [i + 1 for i, s in enumerate(top) if s is None]
        if unknown:
            return Score.undetermined(
                self.key, f"retrieved chunk(s) at rank {', '.join(map(str, unknown))} have no document span",
                Evidence(details={"ranks_without_span": unknown}),
            )
        result = span_ir([s for s in top if s is not None], reference, None, self.min_chars)
        ids = list(ctx.sample.retrieved_ids or ())
        details = {
            "k": self.k,
            "retrieved": result.retrieved,
            "reference_spans": [s.to_dict() for s in reference],
            "relevant_ranks": result.relevant_ranks,
            "reached": [
                {"rank": i + 1, "id": ids[i] if i < len(ids) else None, "spans": list(r)}
                for i, r in enumerate(result.reached)
            ],
            "hit_rate": result.hit_rate,
            "recall": result.recall,
            "precision": result.precision,
            "mrr": result.mrr,
            "ndcg": result.ndcg,
        }
        value = float(getattr(result, self.value_of))
        reached = len({j for r in result.reached for j in r})
        ranks = ", ".join(map(str, result.relevant_ranks)) or "none"
        return Score.scored(
            self.key, value,
            f"{len(result.relevant_ranks)} of {result.retrieved} retrieved chunks overlap the reference "
            f"(ranks: {ranks}); {reached} of {result.references} reference spans reached",
            Evidence(details=details),
        )


class SpanHitRate(_SpanMetric):
    """1 when a retrieved chunk overlaps a reference span (see the module's docstring)."""

    name = "span_hit_rate"
    value_of = "hit_rate"


class SpanRecall(_SpanMetric):
    """Reference spans reached by the retrieved chunks, over all reference spans."""

    name = "span_recall"
    value_of = "recall"


class SpanPrecision(_SpanMetric):
    """Retrieved chunks that overlap a reference span, over the retrieved chunks."""

    name = "span_precision"
    value_of = "precision"


class SpanMRR(_SpanMetric):
    """1 / rank of the first retrieved chunk that overlaps a reference span."""

    name = "span_mrr"
    value_of = "mrr"


class SpanNDCG(_SpanMetric):
    """NDCG over reference spans (see the module's docstring)."""

    name = "span_ndcg"
    value_of = "ndcg"


for _cls in (SpanHitRate, SpanRecall, SpanPrecision, SpanMRR, SpanNDCG):
    register(_cls)
