"""Data in the shapes other tools write loads into the right fields (issue 15, items 2 and 9).

Each tool's rows are written exactly as that tool writes them: the files in
``tests/fixtures/shapes/`` (ragas's by ragas itself, see ``make_ragas_fixtures.py``; the others
by the writer code of DeepEval's ``save_as``, TruLens's records export, promptfoo's
``--output results.json``), or built here with the real library where it is light and offline
(Hugging Face ``datasets``, pandas). Libraries that are neither (ragas in this environment,
DeepEval, LangChain, LlamaIndex) are stood in for by faithful minimal objects with the same
attributes, since the loader reads them duck-typed.
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


def test_ragas_0_1_columns_from_a_hugging_face_dataset_and_its_csv(tmp_path: Path) -> None:
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
