"""A real LCEL chain, built from langchain-core's own test doubles (FakeListChatModel,
DeterministicFakeEmbedding, InMemoryVectorStore), evaluated end to end, offline: the retrieved
documents come through LangChain's callbacks and their ids reach the IR metrics."""

from __future__ import annotations

import importlib.util
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

if importlib.util.find_spec("langchain_core") is None:
    pytest.skip("the langchain extra is not installed", allow_module_level=True)

from langchain_core.documents import Document
from langchain_core.embeddings import DeterministicFakeEmbedding
from langchain_core.language_models import FakeListChatModel
from langchain_core.output_parsers import StrOutputParser
from langchain_core.prompts import ChatPromptTemplate
from langchain_core.runnables import RunnableLambda, RunnableParallel, RunnablePassthrough
from langchain_core.vectorstores import InMemoryVectorStore

import ragsight
from ragsight.errors import MissingExtraError
from ragsight.integrations import PipelineWarning, answer_with_langchain
from tests.fakes.offline import loopback_only
from tests.scripted import RagScript

DOCS = {
    "leave-1": "Full-time employees receive 25 days of annual leave per year.",
    "office-1": "The Oslo office opens at 8 am.",
    "travel-1": "Travel is approved by the line manager.",
    "expenses-1": "Receipts are needed above 200 NOK.",
}
TESTSET = [
    {"id": "t1", "question": "How many days of annual leave do employees get?", "reference": "25 days.",
     "relevant_ids": ["leave-1"]},
    {"id": "t2", "question": "When does the Oslo office open?", "reference": "At 8 am.",
     "relevant_ids": ["office-1"]},
    {"id": "t3", "question": "Who approves travel?", "reference": "The line manager.",
     "relevant_ids": ["travel-1"]},
]


@pytest.fixture(autouse=True)
def _offline(monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    for name in ("LANGCHAIN_TRACING_V2", "LANGSMITH_TRACING", "LANGCHAIN_API_KEY", "LANGSMITH_API_KEY"):
        monkeypatch.delenv(name, raising=False)
    with loopback_only() as refused:
        yield
    assert refused == [], f"LangChain tried to reach {refused}"


def _retriever(k: int = 2) -> Any:
    store = InMemoryVectorStore(DeterministicFakeEmbedding(size=64))
    store.add_documents([Document(page_content=t, metadata={"file": i.split("-")[0] + ".md", "chunk": i})
                         for i, t in DOCS.items()], ids=list(DOCS))
    return store.as_retriever(search_kwargs={"k": k})


def _chain(responses: list[str], k: int = 2) -> Any:
    prompt = ChatPromptTemplate.from_template("Answer from the context.\n{context}\nQuestion: {question}")

    def join(docs: list[Document]) -> str:
        return "\n".join(d.page_content for d in docs)

    return ({"context": _retriever(k) | RunnableLambda(join), "question": RunnablePassthrough()}
            | prompt | FakeListChatModel(responses=responses) | StrOutputParser())


def _expected_ids(question: str, k: int = 2) -> list[str]:
    return [d.id for d in _retriever(k).invoke(question)]


def test_lcel_chain_rows_hold_what_it_retrieved_and_answered() -> None:
    run = answer_with_langchain(_chain(["25 days.", "At 8 am.", "The line manager."]), TESTSET, concurrency=1)
    assert run.pipeline == "langchain:RunnableSequence" and run.failed == []
    for row, case, answer in zip(run.rows, TESTSET, ["25 days.", "At 8 am.", "The line manager."]):
        ids = _expected_ids(case["question"])
        assert row["id"] == case["id"] and row["question"] == case["question"]
        assert row["reference"] == case["reference"] and row["relevant_ids"] == case["relevant_ids"]
        assert row["response"] == answer
        assert row["retrieved_ids"] == ids
        assert row["contexts"] == [DOCS[i] for i in ids]
        meta = row["metadata"]
        assert meta["pipeline"] == "langchain:RunnableSequence" and meta["error"] is None
        assert meta["documents"] == [{"id": i, "score": None,
                                      "metadata": {"file": i.split("-")[0] + ".md", "chunk": i}} for i in ids]
        assert meta["retriever_runs"] == 1 and meta["langchain_run_id"]


def test_retrieved_ids_reach_the_ir_metrics() -> None:
    run = answer_with_langchain(_chain(["a"] * 3, k=2), TESTSET, concurrency=1)
    # the fake embeddings rank by hash, not meaning: t1 finds its document second, t2 and t3 miss
    assert [r["retrieved_ids"] for r in run.rows] == [
        ["travel-1", "leave-1"], ["leave-1", "expenses-1"], ["expenses-1", "office-1"]]
    result = ragsight.evaluate(run.rows, ["hit_rate", "mrr"])
    assert {sid: s["hit_rate"].value for sid, s in result.scores.items()} == {"t1": 1.0, "t2": 0.0, "t3": 0.0}
    assert {sid: s["mrr"].value for sid, s in result.scores.items()} == {"t1": 0.5, "t2": 0.0, "t3": 0.0}


def test_judged_metrics_on_the_chain_with_the_scripted_judge() -> None:
    answer = "Employees get 25 days of leave. Leave can be carried over."
    run = answer_with_langchain(_chain([answer], k=2), TESTSET[:1], concurrency=1)
    assert run.rows[0]["contexts"] == [DOCS["travel-1"], DOCS["leave-1"]]
    script = RagScript(claims={answer: ["Employees get 25 days of leave.", "Leave can be carried over."]},
                       verdicts={("Employees get 25 days of leave.", "contexts"): True,
                                 ("Leave can be carried over.", "contexts"): False})
    result = ragsight.evaluate(run.rows, ["faithfulness"], judge=script.judge())
    score = result.scores["t1"]["faithfulness"]
    assert score.value == 0.5
    assert [(c.claim, c.supported) for c in score.evidence.claims] == [
        ("Employees get 25 days of leave.", True), ("Leave can be carried over.", False)]


def test_concurrent_questions_get_their_own_documents() -> None:
    # an LLM that repeats the question: each row's answer and documents must be its own
    echo = RunnableLambda(lambda p: p.to_string().rsplit("Question: ", 1)[-1])
    prompt = ChatPromptTemplate.from_template("{context}\nQuestion: {question}")
    chain = ({"context": _retriever(1), "question": RunnablePassthrough()} | prompt | echo)
    many = [{"id": f"q{i}", "question": c["question"] + f" ({i})"} for i, c in enumerate(TESTSET * 4)]
    run = answer_with_langchain(chain, many, concurrency=6)
    for row in run.rows:
        assert row["response"] == row["question"]
        assert row["retrieved_ids"] == _expected_ids(row["question"], k=1)


def test_dict_output_input_key_and_metadata_ids() -> None:
    retriever = _retriever(2)
    chain = RunnableParallel(
        answer=RunnableLambda(lambda x: "From the handbook."),
        docs=RunnableLambda(lambda x: x["query"]) | retriever,
    )
    run = answer_with_langchain(chain, TESTSET[:1], input_key="query", answer_key="answer", ids="chunk")
    row = run.rows[0]
    assert row["response"] == "From the handbook."
    assert row["retrieved_ids"] == _expected_ids(TESTSET[0]["question"])  # read from metadata["chunk"]


def test_a_failing_question_is_recorded_and_the_rest_go_on(tmp_path: Path) -> None:
    def flaky(question: str) -> str:
        if "Oslo" in question:
            raise RuntimeError("the LLM provider is down")
        return "fine"

    with pytest.warns(PipelineWarning) as said:
        run = answer_with_langchain(RunnableLambda(flaky), TESTSET)
    assert str(said[0].message) == (
        "langchain:flaky: 1 of 3 questions raised in the pipeline (RuntimeError: the LLM provider is "
        "down); their rows have no response and the error in metadata.error (run.failed lists them)")
    assert run.failed == [run.rows[1]]
    assert [r["metadata"]["error"] for r in run.rows] == [
        None, "RuntimeError: the LLM provider is down", None]
    assert [r.get("response") for r in run.rows] == ["fine", None, "fine"]
    assert run.rows[0]["contexts"] == [] and "retrieved_ids" not in run.rows[0]
    path = run.write_jsonl(tmp_path / "answers.jsonl")
    result = ragsight.evaluate(str(path), ["faithfulness"], judge=RagScript(
        claims={"fine": ["fine"]}, verdicts={("fine", "contexts"): False}).judge())
    skipped = result.scores["t2"]["faithfulness"]
    assert skipped.outcome.value == "skipped"
    # the reason is the pipeline's error, not only the field it left empty
    assert skipped.reason == ("the pipeline failed on this question (metadata.error: RuntimeError: "
                              "the LLM provider is down): sample has no response, contexts")


def test_testset_from_a_file(tmp_path: Path) -> None:
    path = tmp_path / "ts.jsonl"
    path.write_text('{"user_input": "Who approves travel?", "ground_truth": "The manager."}\n')
    run = answer_with_langchain(RunnableLambda(lambda q: "The manager."), str(path))
    assert run.rows[0]["question"] == "Who approves travel?" and run.rows[0]["reference"] == "The manager."


def test_without_langchain_the_error_names_the_extra(monkeypatch: pytest.MonkeyPatch) -> None:
    import sys

    monkeypatch.setitem(sys.modules, "langchain_core.callbacks", None)
    with pytest.raises(MissingExtraError, match=r"pip install 'ragsight\[langchain\]'"):
        answer_with_langchain(object(), TESTSET)
