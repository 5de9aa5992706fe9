"""A LangChain or LlamaIndex pipeline FACTORY as a sweep target: ``make_pipeline(**config)``
builds the user's pipeline for each configuration (chunk size, top-k), the sweep asks it every
question through the integrations' adapters, and the retrieved chunks reach the span metrics as
document spans. Built from the real libraries' own test doubles (langchain-core's
DeterministicFakeEmbedding and FakeListChatModel, llama-index-core's MockEmbedding and MockLLM),
offline: no network, no tiktoken download, no LangSmith."""

from __future__ import annotations

import importlib.util
import json
import re
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from ragsight import Store
from ragsight.cli import main
from ragsight.judge import Judge, ScriptedProvider
from ragsight.metrics.span_ir import Span
from ragsight.sweep import sweep
from ragsight.testset import load_corpus
from tests.fakes.offline import loopback_only
from tests.unit.test_sweep import make_world

HAS_LANGCHAIN = importlib.util.find_spec("langchain_core") is not None
HAS_LLAMAINDEX = importlib.util.find_spec("llama_index") is not None
SPAN_METRICS = ["span_hit_rate", "span_recall", "span_mrr"]


def norm(text: str) -> str:
    return "".join(c.lower() for c in text if c.isalnum())


def sentences(text: str, size: int) -> list[tuple[int, str]]:
    """The user's own splitter: sentences packed up to ``size`` characters, each chunk with its
    start offset in the raw file (what LangChain's splitters record as ``start_index``)."""
    out: list[tuple[int, str]] = []
    start, current = 0, ""
    for m in re.finditer(r"[^.]+\.?\s*", text):
        piece = m.group(0)
        if current and len(current) + len(piece) > size:
            out.append((start, current.strip()))
            start, current = m.start(), ""
        current += piece
    if current.strip():
        out.append((start, current.strip()))
    return out


@pytest.fixture(autouse=True)
def _offline(monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    for name in ("LANGCHAIN_TRACING_V2", "LANGSMITH_TRACING", "LANGCHAIN_API_KEY", "LANGSMITH_API_KEY"):
        monkeypatch.delenv(name, raising=False)
    old_tokenizer = None
    if HAS_LLAMAINDEX:
        import tiktoken
        from llama_index.core import Settings

        def no_tiktoken(*args: Any, **kwargs: Any) -> Any:
            raise AssertionError("tiktoken was asked for an encoding (it would download one)")

        monkeypatch.setattr(tiktoken, "get_encoding", no_tiktoken)
        monkeypatch.setattr(tiktoken, "encoding_for_model", no_tiktoken)
        old_tokenizer = Settings._tokenizer
        Settings.tokenizer = str.split
    try:
        with loopback_only() as refused:
            yield
    finally:
        if HAS_LLAMAINDEX:
            from llama_index.core import Settings

            Settings._tokenizer = old_tokenizer
    assert refused == [], f"a library tried to reach {refused}"


# ---- the users' factories ------------------------------------------------------------------------

BUILT: list[dict[str, Any]] = []  # the settings each factory call received


def make_langchain(chunk_size: int, top_k: int, docs: str) -> Any:
    """A user's LCEL chain: their splitter, an in-memory vector store, a fake chat model."""
    from langchain_core.documents import Document
    from langchain_core.embeddings import DeterministicFakeEmbedding
    from langchain_core.language_models import FakeListChatModel
    from langchain_core.output_parsers import StrOutputParser
    from langchain_core.prompts import ChatPromptTemplate
    from langchain_core.runnables import RunnableLambda, RunnablePassthrough
    from langchain_core.vectorstores import InMemoryVectorStore

    BUILT.append({"chunk_size": chunk_size, "top_k": top_k})
    store = InMemoryVectorStore(DeterministicFakeEmbedding(size=32))
    chunks = []
    for path in sorted(Path(docs).glob("*.md")):
        for start, text in sentences(path.read_text("utf-8"), chunk_size):
            chunks.append(Document(page_content=text, id=f"{path.name}@{start}",
                                   metadata={"source": str(path), "start_index": start}))
    store.add_documents(chunks)
    prompt = ChatPromptTemplate.from_template("{context}\nQuestion: {question}")

    def join(found: list[Any]) -> str:
        return "\n".join(d.page_content for d in found)

    return ({"context": store.as_retriever(search_kwargs={"k": top_k}) | RunnableLambda(join),
             "question": RunnablePassthrough()}
            | prompt | FakeListChatModel(responses=["From the handbook."]) | StrOutputParser())


def make_llamaindex(chunk_size: int, top_k: int, docs: str) -> Any:
    """A user's LlamaIndex query engine: SentenceSplitter, VectorStoreIndex, MockLLM."""
    from llama_index.core import Document, VectorStoreIndex
    from llama_index.core.embeddings import MockEmbedding
    from llama_index.core.llms import MockLLM
    from llama_index.core.node_parser import SentenceSplitter

    class WordEmbedding(MockEmbedding):
        """A vector that depends on the text (offline, no model): counts of a few words."""

        def _vector(self, text: str) -> list[float]:
            words = text.lower().split()
            return [1.0 + sum(w.startswith(k) for w in words) for k in ("leave", "class", "password", "week")]

        def _get_text_embedding(self, text: str) -> list[float]:
            return self._vector(text)

        def _get_query_embedding(self, query: str) -> list[float]:
            return self._vector(query)

        async def _aget_query_embedding(self, query: str) -> list[float]:
            return self._vector(query)

    BUILT.append({"chunk_size": chunk_size, "top_k": top_k})
    documents = [Document(text=p.read_text("utf-8"), id_=p.name, metadata={"file_name": p.name})
                 for p in sorted(Path(docs).glob("*.md"))]
    splitter = SentenceSplitter(chunk_size=chunk_size, chunk_overlap=0, tokenizer=str.split)
    index = VectorStoreIndex.from_documents(documents, embed_model=WordEmbedding(embed_dim=4),
                                            transformations=[splitter])
    return index.as_query_engine(llm=MockLLM(max_tokens=4), similarity_top_k=top_k)


def spec(docs: Path, ts: Path, sizes: list[int], **extra: Any) -> dict[str, Any]:
    return {"name": "lc", "documents": [str(docs)], "testset": str(ts),
            "pipeline": {"factory": "callable"}, "fixed": {"docs": str(docs)},
            "grid": {"chunk_size": sizes, "top_k": [1, 2]}, "baseline": {"chunk_size": sizes[0], "top_k": 1},
            "metrics": SPAN_METRICS, "concurrency": 1, **extra}


def check_runs(store_path: Path, result: Any, docs: Path) -> list[dict[str, Any]]:
    """Pairing, and the spans of what each configuration retrieved: every span holds its chunk's
    text in the document as ragsight reads it, and the span metrics agree with those spans."""
    texts = {d.id: d.text for d in load_corpus(docs).documents}
    rows = [json.loads(line) for line in (store_path.parent / "ts.jsonl").read_text().splitlines()]
    reference = {r["id"]: [Span(**s) for s in r["metadata"].get("reference_spans", [])] for r in rows}
    every = []
    with Store(store_path) as st:
        for run in result.runs:
            samples = {s.id: s for s in st.samples(run.run_id)}
            assert sorted(samples) == ["q1", "q2", "q3", "q4", "q5"]  # the same questions: paired
            scores = result.runs[result.runs.index(run)].result.scores
            for sid, s in samples.items():
                meta = s.metadata
                assert meta["config_id"] == run.config.id and meta["sweep"] == result.spec.name
                spans = meta["retrieved_spans"]
                assert len(spans) == len(s.contexts) == run.config.params["top_k"]
                for span, text in zip(spans, s.contexts):
                    assert norm(texts[span["doc_id"]][span["start"]:span["end"]]) == norm(text)
                if sid == "q5":  # out of scope: the span metrics skip it, with the reason
                    assert scores[sid]["span_hit_rate"].outcome.value == "skipped"
                    continue
                got = [Span(**x) for x in spans]
                hit = any(g.overlap(r) > 0 for g in got for r in reference[sid])
                assert scores[sid]["span_hit_rate"].value == (1.0 if hit else 0.0), (run.config.label, sid)
                every.append({"config": run.config.label, "id": sid, "ids": list(s.retrieved_ids or ()), "hit": hit})
    return every


@pytest.mark.skipif(not HAS_LANGCHAIN, reason="the langchain extra is not installed")
def test_a_langchain_factory_swept_from_python(tmp_path: Path) -> None:
    docs, ts = make_world(tmp_path)
    BUILT.clear()
    result = sweep(spec(docs, ts, [60, 140]), factory=make_langchain, store=str(tmp_path / "s.db"))
    assert [{"chunk_size": c, "top_k": k} for c in (60, 140) for k in (1, 2)] == BUILT  # once per configuration
    assert [r.status for r in result.runs] == ["completed"] * 4 and result.target_calls == 20
    every = check_runs(tmp_path / "s.db", result, docs)
    # the ids are what the user's retriever returned for that configuration (its Document ids)
    chain = make_langchain(60, 2, str(docs))
    retriever = chain.first.steps__["context"].first
    expected = [d.id for d in retriever.invoke("How many days of annual leave?")]
    assert next(e["ids"] for e in every if e["config"] == "chunk_size=60 top_k=2" and e["id"] == "q1") == expected
    # the chunks differ by configuration, the questions do not
    assert len({tuple(e["ids"]) for e in every if e["id"] == "q1"}) > 1
    # run again: every configuration is reused, nothing is built or asked
    BUILT.clear()
    again = sweep(spec(docs, ts, [60, 140]), factory=make_langchain, store=str(tmp_path / "s.db"))
    assert [r.status for r in again.runs] == ["reused"] * 4 and BUILT == [] and again.target_calls == 0


@pytest.mark.skipif(not HAS_LANGCHAIN, reason="the langchain extra is not installed")
def test_a_langchain_factory_judged_answers_carry_the_chains_contexts(tmp_path: Path) -> None:
    docs, ts = make_world(tmp_path)

    def verify(v: Any) -> Any:
        return {"verdicts": [{"id": i + 1, "supported": False, "chunks": [], "reason": "scripted"}
                             for i, _ in enumerate(v["claim_list"])]}

    judge = Judge(ScriptedProvider({"verify_claims": verify,
                                    "extract_claims": lambda v: {"claims": ["The handbook says so."]}}))
    data = spec(docs, ts, [60], metrics=[*SPAN_METRICS, "faithfulness"], judge_questions=1, judge_out_of_scope=0)
    data["grid"] = {"top_k": [1, 2]}
    data["fixed"]["chunk_size"] = 60
    data["baseline"] = {"top_k": 1}
    result = sweep(data, factory=make_langchain, store=str(tmp_path / "s.db"), judge=judge)
    for run in result.runs:
        scores = run.result.scores
        faith = scores["q1"]["faithfulness"]
        assert faith.outcome.value == "scored" and faith.value == 0.0  # "From the handbook." unsupported
        assert scores["q2"]["faithfulness"].outcome.value == "skipped"  # not a judged question
    with Store(tmp_path / "s.db") as st:
        q1 = {s.id: s for s in st.samples(result.runs[1].run_id)}["q1"]
    assert q1.response == "From the handbook." and len(q1.contexts) == 2
    assert [d["metadata"]["start_index"] for d in q1.metadata["documents"]] == [
        int(i.split("@")[1]) for i in q1.retrieved_ids]


@pytest.mark.skipif(not HAS_LANGCHAIN, reason="the langchain extra is not installed")
def test_a_langchain_factory_from_a_sweep_file_on_the_command_line(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    docs, _ts = make_world(tmp_path)
    (tmp_path / "user_chain.py").write_text(
        "from tests.integration.test_sweep_factories import make_langchain as make_pipeline\n", "utf-8")
    (tmp_path / "mine.toml").write_text(
        'name = "mine"\ndocuments = "docs"\ntestset = "ts.jsonl"\n'
        'metrics = ["span_hit_rate", "span_recall", "span_mrr"]\nbaseline = {chunk_size = 60, top_k = 1}\n\n'
        '[pipeline]\nfactory = "user_chain:make_pipeline"\n\n'
        f'[fixed]\ndocs = "{docs.as_posix()}"\n\n[grid]\nchunk_size = [60, 140]\ntop_k = [1, 2]\n', "utf-8")
    monkeypatch.chdir(tmp_path)
    monkeypatch.setattr(sys, "path", [str(tmp_path), *sys.path])
    assert main(["sweep", "mine.toml", "--dry-run", "--store", "s.db"]) == 0
    out = capsys.readouterr().out
    assert "calls to the system under test: 20" in out
    assert "the factory builds one pipeline per configuration to run (4)" in out
    assert main(["sweep", "mine.toml", "--store", "s.db"]) == 0
    captured = capsys.readouterr()
    assert "[4/4] chunk_size=140 top_k=2: done: 5 answered, 0 failed, 5 target calls" in captured.err
    assert "span_hit_rate" in captured.out
    with Store(tmp_path / "s.db") as st:
        runs = [r for r in st.runs() if (r.metadata or {}).get("sweep") == "mine"]
    assert len(runs) == 4 and {r.status for r in runs} == {"completed"}


@pytest.mark.skipif(not HAS_LLAMAINDEX, reason="the llamaindex extra is not installed")
def test_a_llamaindex_factory_swept_from_python(tmp_path: Path) -> None:
    docs, ts = make_world(tmp_path)
    BUILT.clear()
    data = spec(docs, ts, [12, 40], name="li")
    result = sweep(data, factory=make_llamaindex, store=str(tmp_path / "s.db"))
    assert [{"chunk_size": c, "top_k": k} for c in (12, 40) for k in (1, 2)] == BUILT
    assert [r.status for r in result.runs] == ["completed"] * 4
    every = check_runs(tmp_path / "s.db", result, docs)
    # node ids differ between the two chunkings; the hits are measured on the same reference spans
    assert {tuple(e["ids"]) for e in every if e["config"] == "chunk_size=12 top_k=1"}.isdisjoint(
        {tuple(e["ids"]) for e in every if e["config"] == "chunk_size=40 top_k=1"})
    # the password question finds its passage with either chunking (the word vectors see "password")
    assert all(e["hit"] for e in every if e["id"] == "q3")


def test_factory_definitions_are_checked(tmp_path: Path) -> None:
    from ragsight.errors import ConfigError
    from ragsight.sweep import load_sweep

    docs, ts = make_world(tmp_path)
    base = spec(docs, ts, [60])
    with pytest.raises(ConfigError, match="takes a target or a factory, not both"):
        load_sweep({**base, "pipeline": {"factory": "a:b", "target": "c:d"}})
    with pytest.raises(ConfigError, match="framework must be langchain or llamaindex"):
        load_sweep({**base, "pipeline": {"factory": "a:b", "framework": "haystack"}})
    with pytest.raises(ConfigError, match="input_key go with a factory"):
        load_sweep({**base, "pipeline": {"target": "a:b", "input_key": "q"}})
    with pytest.raises(ConfigError, match=r"pass it, sweep\(\.\.\., factory=make_pipeline\)"):
        sweep(base, store=str(tmp_path / "s.db"))
    with pytest.raises(ConfigError, match="factory 'no_such_module_x:make': cannot import module"):
        sweep({**base, "pipeline": {"factory": "no_such_module_x:make"}}, store=str(tmp_path / "s.db"))
    with pytest.raises(ConfigError, match="the factory returned a int: return a LangChain runnable"):
        sweep(base, factory=lambda **config: 42, store=str(tmp_path / "s.db"))
    with pytest.raises(ConfigError, match="could not be called with the settings of configuration 'top_k=1'"):
        sweep({**base, "grid": {"top_k": [1, 2]}, "baseline": {"top_k": 1}},
              factory=lambda chunk_size: None, store=str(tmp_path / "s2.db"))


@pytest.mark.skipif(not HAS_LANGCHAIN, reason="the langchain extra is not installed")
def test_the_factory_example_of_docs_sweep_md_runs_as_written(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    page = (Path(__file__).resolve().parents[2] / "docs" / "sweep.md").read_text("utf-8")
    (code,) = [b for b in re.findall(r"```python\n(.*?)```", page, re.S) if "factory=make_pipeline" in b]
    monkeypatch.chdir(tmp_path)
    exec(compile(code, "docs/sweep.md", "exec"), {"__name__": "docs_example"})
    out = capsys.readouterr().out
    labels = ["chunk_size=400 top_k=2", "chunk_size=400 top_k=4", "chunk_size=1200 top_k=2",
              "chunk_size=1200 top_k=4"]
    assert str([(label, "completed") for label in labels]) in out
    assert "span_recall" in out
    with Store(tmp_path / "runs.db") as st:
        runs = [r for r in st.runs() if r.metadata.get("sweep") == "my-chain"]
        samples = st.samples(runs[0].id)
        scores = st.scores(runs[0].id)
    assert len(runs) == 4 and len(samples) == 22  # the handbook test set, paired
    in_scope = [s for s in samples if not s.out_of_scope]
    # every retrieved chunk of the handbook was placed, so every in-scope question is scored
    assert all(None not in s.metadata["retrieved_spans"] for s in in_scope)
    assert {scores[s.id]["span_recall"].outcome.value for s in in_scope} == {"scored"}
