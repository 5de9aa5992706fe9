"""A real LlamaIndex query engine, built from llama-index-core's own test doubles (MockLLM,
MockEmbedding) over an in-memory VectorStoreIndex, evaluated end to end, offline and without
tiktoken: the retrieved nodes come through LlamaIndex's instrumentation events and their ids
reach the IR metrics."""

from __future__ import annotations

import importlib.util
from collections.abc import Iterator
from typing import Any

import pytest

if importlib.util.find_spec("llama_index") is None:
    pytest.skip("the llamaindex extra is not installed", allow_module_level=True)

from llama_index.core import Settings, VectorStoreIndex
from llama_index.core.embeddings import MockEmbedding
from llama_index.core.instrumentation import get_dispatcher
from llama_index.core.llms import MockLLM
from llama_index.core.postprocessor import SimilarityPostprocessor
from llama_index.core.schema import Document, TextNode

import ragsight
from ragsight.errors import MissingExtraError
from ragsight.integrations import answer_with_llamaindex
from tests.fakes.offline import loopback_only

NODES = {
    "leave-1": "Full-time employees receive 25 days of annual leave per year.",
    "office-1": "The Oslo office opens at 8 am.",
    "travel-1": "Travel is approved by the line manager.",
}
TESTSET = [
    {"id": "t1", "question": "How many days of annual leave do employees get?", "relevant_ids": ["leave-1"]},
    {"id": "t2", "question": "When does the Oslo office open?", "relevant_ids": ["office-1"]},
    {"id": "t3", "question": "Who approves travel?", "relevant_ids": ["travel-1"]},
]


class _Embedding(MockEmbedding):
    """MockEmbedding with a vector that depends on the text, so ranking differs by question:
    the share of each node's words in the text (offline, no model)."""

    def _vector(self, text: str) -> list[float]:
        words = set(text.lower().replace("?", "").replace(".", "").split())
        return [len(words & set(t.lower().replace(".", "").split())) + 0.01 for t in NODES.values()]

    def _get_text_embedding(self, text: str) -> list[float]:
        return self._vector(text)

    def _get_query_embedding(self, query: str) -> list[float]:
        return self._vector(query)

    async def _aget_query_embedding(self, query: str) -> list[float]:
        return self._vector(query)


@pytest.fixture(autouse=True)
def _offline(monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    import tiktoken

    def no_tiktoken(*args: Any, **kwargs: Any) -> Any:
        raise AssertionError("tiktoken was asked for an encoding (it would download one)")

    monkeypatch.setattr(tiktoken, "get_encoding", no_tiktoken)
    monkeypatch.setattr(tiktoken, "encoding_for_model", no_tiktoken)
    old = Settings._tokenizer
    Settings.tokenizer = str.split  # LlamaIndex's default is tiktoken's
    try:
        with loopback_only() as refused:
            yield
    finally:
        Settings._tokenizer = old
    assert refused == [], f"LlamaIndex tried to reach {refused}"


def _engine(top_k: int = 2, **kwargs: Any) -> Any:
    embed = _Embedding(embed_dim=len(NODES))
    nodes = [TextNode(text=t, id_=i, metadata={"file": i.split("-")[0] + ".md"}) for i, t in NODES.items()]
    index = VectorStoreIndex(nodes, embed_model=embed)
    return index.as_query_engine(llm=MockLLM(max_tokens=6), similarity_top_k=top_k, **kwargs)


def test_query_engine_rows_hold_the_retrieved_nodes_and_the_answer() -> None:
    before = list(get_dispatcher().event_handlers)
    run = answer_with_llamaindex(_engine(), TESTSET)
    assert get_dispatcher().event_handlers == before  # the listener is removed after the run
    assert run.pipeline == "llamaindex:RetrieverQueryEngine" and run.failed == []
    assert [r["retrieved_ids"] for r in run.rows] == [
        ["leave-1", "travel-1"], ["office-1", "travel-1"], ["travel-1", "office-1"]]
    first = run.rows[0]
    assert first["response"] == "text text text text text text"  # MockLLM's answer
    assert first["contexts"] == [NODES["leave-1"], NODES["travel-1"]]
    meta = first["metadata"]
    assert [d["id"] for d in meta["documents"]] == ["leave-1", "travel-1"]
    assert meta["documents"][0]["metadata"] == {"file": "leave.md"}
    assert meta["documents"][0]["score"] > meta["documents"][1]["score"]
    assert meta["retrievals"] == 1 and meta["contexts_from"] == "source_nodes"


def test_retrieved_ids_reach_the_ir_metrics() -> None:
    # t4 asks about travel but holds the leave chunk relevant: found second, then not at all
    cases = [*TESTSET, {"id": "t4", "question": "Who approves travel?", "relevant_ids": ["office-1"]},
             {"id": "t5", "question": "Who approves travel?", "relevant_ids": ["leave-1"]}]
    run = answer_with_llamaindex(_engine(top_k=2), cases, concurrency=3)
    result = ragsight.evaluate(run.rows, ["hit_rate", "mrr"])
    assert {sid: s["mrr"].value for sid, s in result.scores.items()} == {
        "t1": 1.0, "t2": 1.0, "t3": 1.0, "t4": 0.5, "t5": 0.0}
    assert {sid: s["hit_rate"].value for sid, s in result.scores.items()} == {
        "t1": 1.0, "t2": 1.0, "t3": 1.0, "t4": 1.0, "t5": 0.0}
    # a postprocessor that drops everything below a score: the samples hold what the LLM saw,
    # and the metadata what was retrieved before
    strict = _engine(top_k=2, node_postprocessors=[SimilarityPostprocessor(similarity_cutoff=0.9)])
    run = answer_with_llamaindex(strict, TESTSET[:1])
    row = run.rows[0]
    assert row["retrieved_ids"] == ["leave-1"]
    assert row["metadata"]["retrieved_before_postprocessing"] == ["leave-1", "travel-1"]


def test_document_ids_instead_of_node_ids() -> None:
    docs = [Document(text=t, id_=f"doc-{i}") for i, t in NODES.items()]
    index = VectorStoreIndex.from_documents(docs, embed_model=_Embedding(embed_dim=len(NODES)))
    engine = index.as_query_engine(llm=MockLLM(max_tokens=3), similarity_top_k=1)
    run = answer_with_llamaindex(engine, TESTSET[:2], ids="document")
    assert [r["retrieved_ids"] for r in run.rows] == [["doc-leave-1"], ["doc-office-1"]]


def test_without_llama_index_the_error_names_the_extra(monkeypatch: pytest.MonkeyPatch) -> None:
    import sys

    monkeypatch.setitem(sys.modules, "llama_index.core.instrumentation", None)
    with pytest.raises(MissingExtraError, match=r"pip install 'ragsight\[llamaindex\]'"):
        answer_with_llamaindex(object(), TESTSET)
