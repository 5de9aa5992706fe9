"""The reference pipeline's parts: chunk spans, span-overlap relevance and the IR values on a
hand-made corpus, reciprocal rank fusion by hand, and the stage cache."""

from __future__ import annotations

import math
from itertools import pairwise
from pathlib import Path

import pytest

from ragsight import Store
from ragsight.judge import Judge, ScriptedProvider
from ragsight.metrics import resolve_metrics
from ragsight.metrics.span_ir import Span, span_ir
from ragsight.pipeline import PipelineConfig, RagPipeline, reciprocal_rank_fusion
from ragsight.testset import ChunkSettings, chunk_document, fill_template, load_corpus, make_target
from tests.fakes.embedder import TableEmbedder

HANDBOOK = Path(__file__).resolve().parents[2] / "src" / "ragsight" / "data" / "handbook"


def test_every_chunk_knows_its_span_in_the_document() -> None:
    text = "Title line\n\nFirst   sentence here. Second one follows!\n\n- a list item with words\n" * 6
    chunks = chunk_document("d.md", text, ChunkSettings(size=14, overlap=7, unit="words"))
    assert len(chunks) > 3
    for c in chunks:
        assert c.start is not None and c.end is not None
        assert " ".join(text[c.start : c.end].split()) == c.text
    starts = [c.start for c in chunks]
    assert starts == sorted(starts)
    # overlap: the next chunk starts inside the previous one
    assert any(b.start < a.end for a, b in pairwise(chunks))  # type: ignore[operator]


def test_handbook_chunks_map_back_to_their_documents() -> None:
    corpus = load_corpus(HANDBOOK, ChunkSettings(64, 8, "tokens"))
    docs = {d.id: d.text for d in corpus.documents}
    for c in corpus.chunks:
        assert " ".join(docs[c.doc_id][c.start : c.end].split()) == c.text


# A hand-made corpus: reference spans R0 = a[100, 200), R1 = b[0, 50).
REF = [Span("a", 100, 200), Span("b", 0, 50)]


def test_span_overlap_relevance_and_ir_values_by_hand() -> None:
    retrieved = [
        Span("a", 0, 100),    # rank 1: ends where R0 starts (half-open): not relevant
        Span("a", 150, 260),  # rank 2: overlaps R0 by 50 characters
        Span("b", 40, 90),    # rank 3: overlaps R1 by 10
        Span("a", 180, 190),  # rank 4: inside R0 again (relevant, reaches nothing new)
        Span("c", 100, 200),  # rank 5: same offsets, other document: not relevant
    ]
    r = span_ir(retrieved, REF)
    assert r.reached == ((), (0,), (1,), (0,), ())
    assert r.relevant_ranks == [2, 3, 4]
    assert r.hit_rate == 1.0
    assert r.recall == 1.0
    assert r.precision == pytest.approx(3 / 5)
    assert r.mrr == pytest.approx(1 / 2)
    # R0 first reached at rank 2, R1 at rank 3; ideal: ranks 1 and 2
    assert r.ndcg == pytest.approx((1 / math.log2(3) + 1 / math.log2(4)) / (1 + 1 / math.log2(3)))
    # cut at k = 2: only R0 reached
    r2 = span_ir(retrieved, REF, k=2)
    assert (r2.recall, r2.precision, r2.mrr) == (0.5, 0.5, 0.5)
    assert r2.ndcg == pytest.approx((1 / math.log2(3)) / (1 + 1 / math.log2(3)))
    # min_chars: the two 10-character overlaps (ranks 3 and 4) no longer count at 11
    r3 = span_ir(retrieved, REF, min_chars=11)
    assert r3.reached == ((), (0,), (), (), ())
    assert r3.recall == 0.5
    # one chunk reaching both passages at rank 1 is the ideal (capped at 1)
    wide = span_ir([Span("a", 0, 1000)], [Span("a", 0, 10), Span("a", 500, 510)])
    assert (wide.ndcg, wide.recall, wide.precision) == (1.0, 1.0, 1.0)
    miss = span_ir([Span("z", 0, 10)], REF)
    assert (miss.hit_rate, miss.recall, miss.mrr, miss.ndcg, miss.precision) == (0, 0, 0, 0, 0)


async def test_span_metrics_score_skip_and_undetermine_with_reasons() -> None:
    from ragsight.analyses import AnalysisSettings, SampleAnalyses
    from ragsight.sample import Sample

    metrics = resolve_metrics(["span_recall", "span_mrr", "span_ndcg(k=2)"])
    ref = [s.to_dict() for s in REF]
    ok = Sample(id="q1", question="q", retrieved_ids=("a#0", "a#1", "b#0"), metadata={
        "reference_spans": ref,
        "retrieved_spans": [{"doc_id": "a", "start": 0, "end": 100}, {"doc_id": "a", "start": 150, "end": 260},
                            {"doc_id": "b", "start": 40, "end": 90}]})
    oos = Sample(id="q2", question="q", metadata={"question_type": "out_of_scope", "retrieved_spans": []})
    nospan = Sample(id="q3", question="q", metadata={"reference_spans": ref})
    partial = Sample(id="q4", question="q", metadata={"reference_spans": ref, "retrieved_spans": [None]})
    out = {}
    for s in (ok, oos, nospan, partial):
        ctx = SampleAnalyses(s, None, None, AnalysisSettings())
        out[s.id] = {m.key: await m.score(ctx) for m in metrics}
    assert out["q1"]["span_recall"].value == 1.0
    assert out["q1"]["span_mrr"].value == 0.5
    assert out["q1"]["span_ndcg(k=2)"].value == pytest.approx((1 / math.log2(3)) / (1 + 1 / math.log2(3)))
    assert out["q1"]["span_recall"].evidence.details["relevant_ranks"] == [2, 3]
    assert out["q1"]["span_recall"].evidence.details["reached"][1] == {"rank": 2, "id": "a#1", "spans": [0]}
    assert out["q2"]["span_recall"].outcome.value == "skipped"
    assert "out-of-scope" in out["q2"]["span_recall"].reason
    assert "retrieved_spans" in out["q3"]["span_mrr"].reason
    assert out["q4"]["span_mrr"].outcome.value == "undetermined"


def test_reciprocal_rank_fusion_values_by_hand() -> None:
    fused = reciprocal_rank_fusion([["a", "b", "c"], ["b", "d"], ["c", "a", "a"]], k=60)
    # a: 1/61 + 1/62; b: 1/62 + 1/61; c: 1/63 + 1/61; d: 1/62 (a repeat counts once)
    expected = {"a": 1 / 61 + 1 / 62, "b": 1 / 62 + 1 / 61, "c": 1 / 63 + 1 / 61, "d": 1 / 62}
    assert dict(fused) == pytest.approx(expected)
    # a and b tie exactly: a has rank 1 in an earlier ranking than b's rank 1
    assert [i for i, _ in fused] == ["a", "b", "c", "d"]
    assert reciprocal_rank_fusion([["x"]], k=0) == [("x", 1.0)]


def _generator(calls: list[str]) -> Judge:
    def answer(v: dict) -> dict:
        calls.append("answer")
        return {"answer": "Twenty-five days."}

    def rewrite(v: dict) -> dict:
        calls.append("rewrite")
        return {"queries": ["annual leave allowance", "holiday days per year"]}

    return Judge(ScriptedProvider({"rag_answer": answer, "rag_rewrite": rewrite}))


async def test_pipeline_answers_with_spans_and_pays_once(tmp_path: Path) -> None:
    calls: list[str] = []
    emb = TableEmbedder(dim=16)
    store = Store(tmp_path / "s.db")
    cfg = PipelineConfig(chunk_size=96, chunk_overlap=16, top_k=3, retrieval="fusion", fusion_queries=2)
    p = RagPipeline(HANDBOOK, store=store, embedders={"local": emb}, generators={"local": _generator(calls)})
    a = await p.answer("How many days of annual leave do I get?", cfg)
    assert a.answer == "Twenty-five days."
    assert a.rewrites == ("annual leave allowance", "holiday days per year")
    assert len(a.contexts) == 3 and [c.rank for c in a.contexts] == [1, 2, 3]
    docs = {d.id: d.text for d in p.documents}
    for c in a.contexts:
        assert " ".join(docs[c.doc_id][c.start : c.end].split()) == c.text  # type: ignore[index]
    reply = a.to_reply()
    assert set(reply["contexts"][0]) >= {"id", "text", "doc_id", "start", "end"}
    assert calls == ["rewrite", "answer"] and a.generator_calls == 2
    embedded = sum(len(c) for c in emb.calls)
    # a new pipeline on the same store: every stage from the cache, the same cost reported
    p2 = RagPipeline(HANDBOOK, store=store, embedders={"local": emb}, generators={"local": _generator(calls)})
    b = await p2.answer("How many days of annual leave do I get?", cfg)
    assert calls == ["rewrite", "answer"] and b.generator_calls == 0
    assert sum(len(c) for c in emb.calls) == embedded
    assert (b.answer, b.contexts, b.prompt_tokens, b.completion_tokens) == (
        a.answer, a.contexts, a.prompt_tokens, a.completion_tokens)
    assert b.prompt_tokens > 0
    # another top-k: retrieval only, no new generator call for the rewrites
    c = await p2.answer("How many days of annual leave do I get?", {**cfg.to_dict(), "top_k": 2}, generate=False)
    assert c.answer is None and len(c.contexts) == 2 and calls.count("rewrite") == 1
    for m in ("dense", "bm25", "hybrid"):
        r = await p2.answer("annual leave days", {**cfg.to_dict(), "retrieval": m}, generate=False)
        assert 0 < len(r.contexts) <= 3, m
    await p.aclose()
    await p2.aclose()
    store.close()


def test_pipeline_config_errors_name_the_setting() -> None:
    with pytest.raises(Exception, match="top_kk"):
        PipelineConfig.from_mapping({"top_kk": 3})
    with pytest.raises(Exception, match="chunk_overlap"):
        PipelineConfig(chunk_size=50, chunk_overlap=50)
    with pytest.raises(Exception, match="retrieval 'sparse'"):
        PipelineConfig(retrieval="sparse")


async def test_targets_receive_the_configuration() -> None:
    seen = {}

    def fn(question: str, top_k: int, chunk_size: int) -> dict:
        seen.update(question=question, top_k=top_k, chunk_size=chunk_size)
        return {"answer": "x", "contexts": [{"id": "c1", "text": "t", "doc_id": "d", "start": 3, "end": 9}]}

    reply = await make_target(fn, config={"top_k": 3, "chunk_size": 256})("q?")
    assert seen == {"question": "q?", "top_k": 3, "chunk_size": 256}
    assert reply.context_spans == ({"doc_id": "d", "start": 3, "end": 9},)
    body = fill_template({"query": "{question}", "opts": {"k": "{top_k}", "note": "k={top_k}"}},
                         {"question": "q?", "top_k": 3})
    assert body == {"query": "q?", "opts": {"k": 3, "note": "k=3"}}
    with pytest.raises(Exception, match="top_p"):
        fill_template({"x": "{top_p}"}, {"question": "q"})
