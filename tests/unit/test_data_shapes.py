"""Data in the shapes other tools write loads into the right fields.

Each tool's rows are written exactly as that tool writes them: the files in
``tests/fixtures/shapes/`` (ragas's by ragas itself, see ``make_ragas_fixtures.py``; the others
by the writer code of DeepEval's ``save_as``, TruLens's records export, promptfoo's
``--output results.json``), or built here with the real library where it is light and offline
(Hugging Face ``datasets``, pandas, LangChain's ``Document`` and LlamaIndex's ``NodeWithScore``
at the end of this file). Libraries that are neither (ragas in this environment, DeepEval) are
stood in for by faithful minimal objects with the same attributes, since the loader reads them
duck-typed.
"""

from __future__ import annotations

import json
import warnings
from pathlib import Path
from typing import Any

import pandas as pd
import pydantic
import pytest

import ragsight
from ragsight import Dataset, Sample
from ragsight.sample import SampleWarning
from tests.scripted import RagScript

SHAPES = Path(__file__).resolve().parents[1] / "fixtures" / "shapes"
Q1 = "How many cabin bags does Aurora Airways allow?"
Q2 = "Can I bring a pet on board?"
RETRIEVED_1 = ("Aurora Airways allows one cabin bag.", "It may weigh eight kilograms.")
GOLD_1 = ("Aurora Airways allows one cabin bag weighing up to eight kilograms.",)


def core(s: Sample) -> tuple[Any, ...]:
    return (s.question, s.contexts, s.response, s.reference, s.reference_contexts)


# ---- ragas 0.1 and 0.2+ ------------------------------------------------------------------------


@pytest.mark.parametrize("name", ["ragas_0_2.jsonl", "ragas_0_2.csv"])
def test_ragas_0_2_files_as_ragas_writes_them(name: str) -> None:
    ds = Dataset.load(SHAPES / name)  # no SampleWarning: warnings are errors in this suite
    assert not ds.problems
    one, two = ds.samples
    assert core(one) == (Q1, RETRIEVED_1, "One cabin bag, up to 8 kg.", "One cabin bag of eight kilograms.", GOLD_1)
    assert one.retrieved_ids == ("d1", "2")  # ragas allows int ids: written as decimal text
    assert one.relevant_ids == ("d1",)
    assert one.metadata == {"persona_name": "frequent flyer"}
    assert two.reference_contexts is None and two.retrieved_ids is None
    assert ds.sources["question"] == ("user_input",)
    assert ds.sources["contexts"] == ("retrieved_contexts",)


def test_ragas_0_1_columns_from_a_hugging_face_dataset_and_its_csv(tmp_path: Path,
                                                                   monkeypatch: pytest.MonkeyPatch) -> None:
    for var in ("HF_DATASETS_OFFLINE", "HF_HUB_OFFLINE", "HF_HUB_DISABLE_TELEMETRY"):
        monkeypatch.setenv(var, "1")  # no network, no telemetry, whatever the library would do
    monkeypatch.setenv("HF_HOME", str(tmp_path / "hf"))
    datasets = pytest.importorskip("datasets")
    hf = datasets.Dataset.from_dict({
        "question": [Q1], "answer": ["One cabin bag, up to 8 kg."], "contexts": [list(RETRIEVED_1)],
        "ground_truth": ["One cabin bag of eight kilograms."]})
    direct = Dataset.load(hf)  # the Dataset object itself
    assert core(direct[0]) == (Q1, RETRIEVED_1, "One cabin bag, up to 8 kg.", "One cabin bag of eight kilograms.", None)
    # datasets writes a list column into CSV as numpy prints it: ['a' 'b'], no comma. Python would
    # read that as ONE concatenated string; the loader must give back the two chunks.
    hf.to_csv(str(tmp_path / "r.csv"))
    assert "['Aurora Airways allows one cabin bag.' 'It may weigh eight kilograms.']" in (tmp_path / "r.csv").read_text()
    assert Dataset.load(tmp_path / "r.csv")[0].contexts == RETRIEVED_1
    hf.to_json(str(tmp_path / "r.jsonl"))
    assert core(Dataset.load(tmp_path / "r.jsonl")[0]) == core(direct[0])


def test_ragas_0_1_ground_truths_list_is_acceptable_answers() -> None:
    ds = Dataset.load([{"question": Q1, "answer": "One.", "contexts": list(RETRIEVED_1),
                        "ground_truths": ["One cabin bag.", "A single cabin bag."]}])
    assert ds[0].reference == ("One cabin bag.", "A single cabin bag.")


class SingleTurnSample(pydantic.BaseModel):
    """ragas.dataset_schema.SingleTurnSample's fields and to_dict (ragas 0.4.3)."""

    user_input: str | None = None
    retrieved_contexts: list[str] | None = None
    reference_contexts: list[str] | None = None
    retrieved_context_ids: list[str | int] | None = None
    reference_context_ids: list[str | int] | None = None
    response: str | None = None
    multi_responses: list[str] | None = None
    reference: str | None = None
    rubrics: dict[str, str] | None = None
    persona_name: str | None = None
    query_style: str | None = None
    query_length: str | None = None

    def to_dict(self) -> dict[str, Any]:
        return self.model_dump(exclude_none=True)


class EvaluationDataset:
    """ragas.EvaluationDataset's duck: samples, iteration over samples, to_list, to_pandas."""

    def __init__(self, samples: list[SingleTurnSample]) -> None:
        self.samples = samples

    def __iter__(self) -> Any:
        return iter(self.samples)

    def __len__(self) -> int:
        return len(self.samples)

    def to_list(self) -> list[dict[str, Any]]:
        return [s.to_dict() for s in self.samples]

    def to_pandas(self) -> pd.DataFrame:
        return pd.DataFrame(self.to_list())


def test_a_ragas_evaluation_dataset_object_loads_directly() -> None:
    ds = EvaluationDataset([SingleTurnSample(user_input=Q1, retrieved_contexts=list(RETRIEVED_1),
                                             response="One.", reference="One cabin bag.",
                                             retrieved_context_ids=[7, "d2"], query_style="casual")])
    loaded = Dataset.load(ds)
    assert loaded[0].question == Q1 and loaded[0].contexts == RETRIEVED_1
    assert loaded[0].retrieved_ids == ("7", "d2")
    assert loaded[0].metadata == {"query_style": "casual"}
    # its samples as a plain list load the same way (objects with to_dict)
    assert core(Dataset.load(list(ds))[0]) == core(loaded[0])


def test_the_real_ragas_evaluation_dataset_when_installed() -> None:
    ragas = pytest.importorskip("ragas")  # only in the ragas environment (.venv-ragas)
    ds = ragas.EvaluationDataset(samples=[ragas.SingleTurnSample(
        user_input=Q1, retrieved_contexts=list(RETRIEVED_1), response="One.", reference="One cabin bag.")])
    assert Dataset.load(ds)[0].contexts == RETRIEVED_1


# ---- DeepEval ------------------------------------------------------------------------------------


@pytest.mark.parametrize("name", ["deepeval.json", "deepeval.csv", "deepeval.jsonl"])
def test_deepeval_goldens_as_save_as_writes_them(name: str) -> None:
    ds = Dataset.load(SHAPES / name)
    assert not ds.problems
    one, two = ds.samples
    # actual_output is the response; retrieval_context the retrieved chunks (CSV and JSONL join them
    # with "|"); context is DeepEval's GOLD context: reference_contexts, never the retrieved ones
    assert core(one) == (Q1, RETRIEVED_1, "One cabin bag, up to 8 kg.", "One cabin bag of eight kilograms.", GOLD_1)
    assert one.metadata["topic"] == "baggage"
    assert core(two) == (Q2, ("Pets travel in the hold, in an approved crate.",), "Pets travel in the hold.",
                         "Only in the hold, in an approved crate.", None)
    assert ds.sources["response"] == ("actual_output",)
    assert ds.sources["reference_contexts"] == ("context",)


def test_deepeval_faithfulness_is_judged_against_the_retrieved_context_not_the_gold_one() -> None:
    script = RagScript()  # the response is one short statement: its own claim
    script.verdicts[("One cabin bag, up to 8 kg.", "contexts")] = True
    judge = script.judge()
    rows = json.loads((SHAPES / "deepeval.json").read_text())[:1]
    result = ragsight.evaluate(rows, ["faithfulness"], judge=judge)
    assert result.scores[result.samples[0].id]["faithfulness"].value == 1.0
    (verify,) = judge.calls_for("verify_claims")
    source = "\n".join(m.content for m in verify.messages)
    assert "It may weigh eight kilograms." in source
    assert "weighing up to eight kilograms" not in source  # the gold context stays out


class LLMTestCase(pydantic.BaseModel):
    """deepeval.test_case.LLMTestCase's public fields."""

    input: str
    actual_output: str | None = None
    expected_output: str | None = None
    context: list[str] | None = None
    retrieval_context: list[str] | None = None
    additional_metadata: dict[str, Any] | None = None
    tools_called: list[Any] | None = None
    name: str | None = None


def test_deepeval_test_case_objects_load() -> None:
    cases = [LLMTestCase(input=Q1, actual_output="One.", expected_output="One cabin bag.",
                         context=list(GOLD_1), retrieval_context=list(RETRIEVED_1), name="bags")]
    s = Dataset.load(cases)[0]
    assert core(s) == (Q1, RETRIEVED_1, "One.", "One cabin bag.", GOLD_1)
    assert s.metadata == {"name": "bags"}


def test_deepeval_camel_case_names_from_the_confident_api() -> None:
    s = Dataset.load([{"input": Q1, "actualOutput": "One.", "expectedOutput": "One cabin bag.",
                       "retrievalContext": list(RETRIEVED_1), "additionalMetadata": {"k": 1}}])[0]
    assert core(s) == (Q1, RETRIEVED_1, "One.", "One cabin bag.", None)
    assert s.metadata == {"k": 1}


def test_a_deepeval_test_run_file(tmp_path: Path) -> None:
    """DeepEval's saved test run (TestRun.model_dump(by_alias=True), as in
    .deepeval/.latest_test_run.json): the cases under testCases, camelCase, context gold."""
    run = {"testFile": "test_rag.py", "testCases": [
        {"name": "test_case_0", "input": Q1, "actualOutput": "One.", "expectedOutput": "One cabin bag.",
         "retrievalContext": list(RETRIEVED_1), "context": list(GOLD_1), "success": True,
         "metricsData": [{"name": "Faithfulness", "threshold": 0.5, "success": True, "score": 1.0,
                          "reason": "ok", "strictMode": False, "evaluationModel": "gpt-4o"}],
         "runDuration": 2.1, "evaluationCost": 0.001, "order": 0}],
        "conversationalTestCases": [], "metricsScores": [], "hyperparameters": None, "testPassed": 1,
        "testFailed": 0, "runDuration": 3.2, "evaluationCost": 0.001}
    (tmp_path / "latest_test_run.json").write_text(json.dumps(run))
    ds = Dataset.load(tmp_path / "latest_test_run.json")
    assert ds.problems == []
    (s,) = ds.samples
    assert core(s) == (Q1, RETRIEVED_1, "One.", "One cabin bag.", GOLD_1)
    assert s.metadata["metricsData"][0]["score"] == 1.0


# ---- TruLens -------------------------------------------------------------------------------------


def test_trulens_records_export() -> None:
    ds = Dataset.load(SHAPES / "trulens_records.csv")
    assert not ds.problems
    one, two = ds.samples
    # input and output are JSON-encoded in the export; the contexts are the retriever call's return
    assert (one.question, one.response) == (Q1, "One cabin bag, up to 8 kg.")
    assert one.contexts == RETRIEVED_1
    assert two.contexts == ("Pets travel in the hold, in an approved crate.",)
    assert one.metadata["record_id"] == "record_hash_1" and one.metadata["Groundedness"] == "1.0"
    assert one.id.startswith("q-")  # a record id names one call, not the question: never the id
    assert ds.sources["contexts"] == ("record_json (the retriever call's return value)",)


def test_trulens_ground_truth_dataframe() -> None:
    df = pd.DataFrame([{"ground_truth_id": "gt_1", "dataset_id": "ds_1", "query": Q1, "query_id": "q1",
                        "expected_response": "One cabin bag of eight kilograms.",
                        "expected_chunks": [{"text": GOLD_1[0], "title": "baggage.md", "expected_score": 1.0}],
                        "meta": {"difficulty": "easy"}}])
    s = Dataset.load(df)[0]
    assert (s.id, s.question, s.reference, s.reference_contexts) == ("q1", Q1, "One cabin bag of eight kilograms.",
                                                                     GOLD_1)
    assert s.metadata["difficulty"] == "easy"


# ---- Phoenix / OpenInference -----------------------------------------------------------------------


def test_phoenix_qa_with_reference_means_retrieved_documents() -> None:
    # get_qa_with_reference(client): input, output, reference (the retrieved documents joined),
    # indexed by context.span_id
    df = pd.DataFrame({"input": [Q1], "output": ["One cabin bag."],
                       "reference": ["\n\n".join(RETRIEVED_1)]},
                      index=pd.Index(["span_1"], name="context.span_id"))
    s = Dataset.load(df)[0]
    assert (s.question, s.response, s.reference) == (Q1, "One cabin bag.", None)
    assert s.contexts == ("\n\n".join(RETRIEVED_1),)
    assert s.metadata == {"context.span_id": "span_1"}


def test_phoenix_input_output_context() -> None:
    # get_input_output_context(client): context.trace_id, input, output, context; index context.span_id
    df = pd.DataFrame({"context.trace_id": ["t1"], "input": [Q1], "output": ["One."],
                       "context": ["Aurora Airways allows one cabin bag."]},
                      index=pd.Index(["s1"], name="context.span_id"))
    s = Dataset.load(df)[0]
    assert s.contexts == ("Aurora Airways allows one cabin bag.",) and s.reference_contexts is None


def test_phoenix_spans_dataframe_is_one_sample_per_trace() -> None:
    docs = [{"document.id": "d1", "document.content": RETRIEVED_1[0], "document.score": 0.9},
            {"document.id": "d7", "document.content": RETRIEVED_1[1], "document.score": 0.7}]
    spans = pd.DataFrame([
        {"name": "query", "span_kind": "CHAIN", "parent_id": None, "start_time": "2025-05-01T10:00:00",
         "context.trace_id": "t1", "attributes.input.value": json.dumps({"question": Q1}),
         "attributes.input.mime_type": "application/json", "attributes.output.value": "One cabin bag.",
         "attributes.retrieval.documents": None},
        {"name": "retrieve", "span_kind": "RETRIEVER", "parent_id": "s1", "start_time": "2025-05-01T10:00:01",
         "context.trace_id": "t1", "attributes.input.value": Q1, "attributes.output.value": None,
         "attributes.retrieval.documents": docs},
        {"name": "llm", "span_kind": "LLM", "parent_id": "s1", "start_time": "2025-05-01T10:00:02",
         "context.trace_id": "t1", "attributes.input.value": "prompt...", "attributes.output.value": "One cabin bag.",
         "attributes.retrieval.documents": None},
    ], index=pd.Index(["s1", "s2", "s3"], name="context.span_id"))
    (s,) = Dataset.load(spans).samples
    assert (s.question, s.response, s.contexts) == (Q1, "One cabin bag.", RETRIEVED_1)
    assert s.retrieved_ids == ("d1", "d7")
    assert s.metadata["trace_id"] == "t1"


# ---- promptfoo -----------------------------------------------------------------------------------


def test_promptfoo_results_json() -> None:
    ds = Dataset.load(SHAPES / "promptfoo_results.json")
    assert not ds.problems
    one, two = ds.samples
    # vars.query, vars.context (promptfoo's context-* assertions read it as the retrieved text),
    # response.output, and the context-recall assertion's value as the reference
    assert core(one) == (Q1, RETRIEVED_1, "One cabin bag, up to 8 kg.", "One cabin bag of eight kilograms.", None)
    assert two.contexts == ("Pets travel in the hold, in an approved crate.",)
    assert one.metadata["promptfoo"]["provider"] == "gpt-4o-mini"
    assert one.metadata["topic"] == "baggage"
    assert "id" not in one.metadata and one.id.startswith("q-")  # a result id names one call


# ---- names: mapped, and a close unknown name warned --------------------------------------------


def test_a_misspelt_field_warns_once_with_the_close_name() -> None:
    rows = [{"question": Q1, "repsonse": "One.", "contexts": ["a"]} for _ in range(3)]
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        ds = Dataset.load(rows)
    msgs = [str(w.message) for w in caught if issubclass(w.category, SampleWarning)]
    assert len(msgs) == 1
    assert "rows 1, 2, 3" in msgs[0] and "did you mean 'response'?" in msgs[0]
    assert ds[0].response is None and ds[0].metadata == {"repsonse": "One."}


def test_a_lone_context_field_is_gold_and_says_so() -> None:
    with pytest.warns(SampleWarning, match="'context' is read as the gold"):
        s = Dataset.load([{"question": Q1, "context": ["gold text"], "answer": "One."}])[0]
    assert s.reference_contexts == ("gold text",) and s.contexts is None


def test_two_names_for_one_field_keep_the_first_and_say_so() -> None:
    with pytest.warns(SampleWarning, match="'response' duplicates 'answer'"):
        s = Dataset.load([{"question": Q1, "answer": "first", "response": "second"}])[0]
    assert s.response == "first"


# ---- contexts in every shape (item 9) ---------------------------------------------------------------


class Document(pydantic.BaseModel):
    """langchain_core.documents.Document's attributes."""

    page_content: str
    metadata: dict[str, Any] = {}
    id: str | None = None


class TextNode:
    """llama_index.core.schema.TextNode's duck: get_content(), node_id."""

    def __init__(self, text: str, node_id: str) -> None:
        self.text = text
        self.node_id = node_id

    def get_content(self, metadata_mode: Any = None) -> str:
        return self.text


class NodeWithScore:
    """llama_index.core.schema.NodeWithScore's duck: node, score."""

    def __init__(self, node: TextNode, score: float) -> None:
        self.node = node
        self.score = score


@pytest.mark.parametrize("contexts,ids", [
    ("One chunk only.", None),
    ([{"id": "d1", "text": "One chunk only."}], ("d1",)),
    ([{"page_content": "One chunk only.", "metadata": {"source": "a.md"}}], None),
    ([Document(page_content="One chunk only.", metadata={"source": "a.md"}, id="doc-1")], ("doc-1",)),
    ([NodeWithScore(TextNode("One chunk only.", "node-9"), 0.8)], ("node-9",)),
    ([TextNode("One chunk only.", "node-9")], ("node-9",)),
    ([{"node": {"id_": "n1", "text": "One chunk only."}, "score": 0.5}], ("n1",)),
    ("['One chunk only.']", None),
])
def test_contexts_in_the_shapes_users_have(contexts: Any, ids: tuple[str, ...] | None) -> None:
    s = Dataset.load([{"question": Q1, "contexts": contexts, "response": "One."}])[0]
    assert s.contexts == ("One chunk only.",)
    assert s.retrieved_ids == ids


def test_chunk_ids_do_not_override_given_retrieved_ids() -> None:
    s = Dataset.load([{"question": Q1, "contexts": [{"id": "d1", "text": "x"}], "retrieved_ids": ["7"]}])[0]
    assert s.retrieved_ids == ("7",)


def test_pandas_csv_list_cells(tmp_path: Path) -> None:
    df = pd.DataFrame({"question": [Q1], "contexts": [["it's one", 'say "two"']], "reference": ["x"]})
    df.to_csv(tmp_path / "p.csv", index=False)  # pandas writes the list as its Python repr
    assert Dataset.load(tmp_path / "p.csv")[0].contexts == ("it's one", 'say "two"')
    assert Dataset.load(pd.read_csv(tmp_path / "p.csv"))[0].contexts == ("it's one", 'say "two"')


def test_a_list_cell_is_never_evaluated_as_code(tmp_path: Path) -> None:
    marker = tmp_path / "ran"
    cell = f"['one', __import__('pathlib').Path({str(marker)!r}).touch()]"
    ds = Dataset.load([{"question": Q1, "contexts": cell}])
    assert not marker.exists()
    assert ds.errors and "does not parse" in ds.errors[0].message


def test_phoenix_spans_dataframe_under_a_web_server_span_reads_the_chain() -> None:
    """An app that sends every OpenTelemetry span to Phoenix has the web framework's span
    (span_kind UNKNOWN, no input.value) above the chain: the chain is the request."""
    docs = [{"document.id": "d1", "document.content": RETRIEVED_1[0]}]
    spans = pd.DataFrame([
        {"name": "POST /chat", "span_kind": "UNKNOWN", "parent_id": None, "start_time": "2025-05-01T10:00:00",
         "context.trace_id": "t1", "attributes.input.value": None, "attributes.output.value": None,
         "attributes.retrieval.documents": None},
        {"name": "query", "span_kind": "CHAIN", "parent_id": "s0", "start_time": "2025-05-01T10:00:00.1",
         "context.trace_id": "t1", "attributes.input.value": Q1, "attributes.output.value": "One cabin bag.",
         "attributes.retrieval.documents": None},
        {"name": "retrieve", "span_kind": "RETRIEVER", "parent_id": "s1", "start_time": "2025-05-01T10:00:01",
         "context.trace_id": "t1", "attributes.input.value": "cabin bag allowance", "attributes.output.value": None,
         "attributes.retrieval.documents": docs},
    ], index=pd.Index(["s0", "s1", "s2"], name="context.span_id"))
    (s,) = Dataset.load(spans).samples
    assert (s.question, s.response, s.contexts) == (Q1, "One cabin bag.", (RETRIEVED_1[0],))
    assert s.metadata["span_id"] == "s1"


# ---- the real LangChain and LlamaIndex objects (htrial) -------------------------------------------


def _real_objects() -> tuple[list[Any], list[Any]]:
    """LangChain Documents as a retriever returns them, LlamaIndex NodeWithScores as a query
    engine's source_nodes hold them (nodes split from a Document, so they carry relationships)."""
    lc_documents = pytest.importorskip("langchain_core.documents")
    li_schema = pytest.importorskip("llama_index.core.schema")
    from llama_index.core.node_parser import SentenceSplitter

    docs = [lc_documents.Document(page_content=RETRIEVED_1[0], metadata={"source": "bags.md"}, id="bags-1"),
            lc_documents.Document(page_content=RETRIEVED_1[1], metadata={"source": "bags.md"}, id="bags-2")]
    splitter = SentenceSplitter(chunk_size=12, chunk_overlap=0, tokenizer=str.split)
    nodes = splitter.get_nodes_from_documents([li_schema.Document(text=" ".join(RETRIEVED_1), id_="bags")])
    scored = [li_schema.NodeWithScore(node=n, score=0.9 - i / 10) for i, n in enumerate(nodes)]
    return docs, scored


def test_real_langchain_documents_and_llamaindex_nodes_as_contexts() -> None:
    docs, scored = _real_objects()
    rows = [{"id": "lc", "question": Q1, "contexts": docs, "response": "One.", "relevant_ids": ["bags-2"]},
            {"id": "li", "question": Q1, "contexts": scored, "response": "One.",
             "relevant_ids": [scored[0].node.node_id]},
            {"id": "li-nodes", "question": Q1, "contexts": [s.node for s in scored], "response": "One."}]
    ds = Dataset.load(rows)
    assert ds.errors == []
    lc, li, li_nodes = ds.samples
    assert (lc.contexts, lc.retrieved_ids) == (RETRIEVED_1, ("bags-1", "bags-2"))
    assert li.contexts == tuple(s.node.get_content() for s in scored)
    assert " ".join(li.contexts) == " ".join(RETRIEVED_1)  # the text, without LlamaIndex's metadata header
    assert li.retrieved_ids == tuple(s.node.node_id for s in scored) == li_nodes.retrieved_ids
    result = ragsight.evaluate(rows, ["hit_rate", "mrr"])
    assert [result.scores[i]["mrr"].value for i in ("lc", "li")] == [0.5, 1.0]
    assert result.scores["li-nodes"]["mrr"].outcome.value == "skipped"  # no relevant_ids, said so


def test_real_objects_in_a_dataframe_written_to_csv_read_back(tmp_path: Path) -> None:
    """df.to_csv() writes a list of Documents as its Python repr: the text and ids come back,
    read from the syntax tree, never run; before, the whole repr was one chunk."""
    docs, scored = _real_objects()
    pd.DataFrame({"question": [Q1, Q1], "contexts": [docs, scored], "answer": ["One.", "One."]}).to_csv(
        tmp_path / "rag.csv", index=False)
    ds = Dataset.load(tmp_path / "rag.csv")
    assert ds.errors == []
    lc, li = ds.samples
    assert (lc.contexts, lc.retrieved_ids) == (RETRIEVED_1, ("bags-1", "bags-2"))
    assert li.contexts == tuple(s.node.get_content() for s in scored)
    assert li.retrieved_ids == tuple(s.node.node_id for s in scored)


def test_an_object_repr_cell_that_cannot_be_read_is_a_row_problem_and_never_runs(tmp_path: Path) -> None:
    marker = tmp_path / "ran"
    cells = [f"[Document(page_content=__import__('pathlib').Path({str(marker)!r}).touch())]",
             "[Document(id='d1', page_content='cut off",
             "[NodeWithScore(node=ImageNode(id_='i1', image='...'), score=0.5)]"]
    rows = [{"question": Q1, "contexts": c} for c in cells] + [{"question": Q2, "contexts": ["Pets fly."]}]
    ds = Dataset.load(rows)
    assert not marker.exists()
    assert [s.question for s in ds.samples] == [Q2]
    assert [(e.row, e.field) for e in ds.errors] == [(1, "contexts"), (2, "contexts"), (3, "contexts")]
    assert "[d.page_content for d in docs]" in ds.errors[0].message
