"""Files as ragas, DeepEval and Hugging Face ``datasets`` write them with their own writers
(``tests/fixtures/peers``, made by ``make_peers.py`` there), read by ragsight alone: each reads as
the same conversations as the tool's lossless JSON form, and a guess is warned."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from ragsight import Dataset
from ragsight.sample import Sample, SampleWarning

PEERS = Path(__file__).resolve().parents[1] / "fixtures" / "peers"
PYTHON_TEXT = "written as Python text in a cell"
ARROW_NULLS = "null were read as not given"
ONE_EXCHANGE = "read as conversations of one exchange"


def load(name: str, warns: str | None = None) -> Dataset:
    if warns is None:
        ds = Dataset.load(PEERS / name)
    else:
        with pytest.warns(SampleWarning, match=warns):
            ds = Dataset.load(PEERS / name)
    assert ds.errors == [], ds.errors
    return ds


def calls(value: Any) -> list[tuple[str, dict[str, Any]]] | None:
    return None if value is None else [(c.name, dict(c.args)) for c in value]


def view(s: Sample) -> dict[str, Any]:
    """What the metrics read of a sample."""
    return {"id": s.id, "conversation_id": s.conversation_id, "turn": s.turn, "question": s.question,
            "response": s.response, "reference": s.reference, "contexts": s.contexts,
            "tool_calls": calls(s.tool_calls), "reference_tool_calls": calls(s.reference_tool_calls),
            "expected_outcome": s.expected_outcome,
            "history": [(t.role, t.content, calls(t.tool_calls)) for t in s.history or ()]}


def test_the_peer_files_were_written_by_the_pinned_versions() -> None:
    versions = json.loads((PEERS / "versions.json").read_text())
    assert versions["ragas"] == "0.4.3" and versions["deepeval"] == "4.3.1"
    # the cells really are what the tools write: Python text, JSON text, numpy arrays
    assert "[HumanMessage(content=" in (PEERS / "ragas_multiturn_objects.csv").read_text()
    assert "[{'content': " in (PEERS / "ragas_multiturn.csv").read_text()
    assert '"inputParameters"' in (PEERS / "deepeval_tools.csv").read_text()
    assert "[ 7 12]" in (PEERS / "ragas_ids_hf.csv").read_text()


@pytest.mark.parametrize("name", ["ragas_multiturn.csv", "ragas_multiturn_pandas.csv",
                                  "ragas_multiturn_objects.csv"])
def test_a_ragas_conversation_in_csv_reads_as_its_jsonl(name: str) -> None:
    reference = [view(s) for s in load("ragas_multiturn.jsonl")]
    got = [view(s) for s in load(name, warns=PYTHON_TEXT)]
    assert got == reference
    weather = {s["id"]: s for s in got}["c-edddb88354dc"]
    assert weather["tool_calls"] == [("get_weather", {"city": "Paris"}),
                                     ("get_weather", {"city": "Rome", "unit": "C"})]
    assert weather["expected_outcome"] == "The user learns the weather in Paris and in Rome."
    assert [s["question"] for s in got if s["turn"] is not None] == [
        "What's the weather in Paris?", "And in Rome, in Celsius?", "Find me a flight from Oslo to Tromsdal on 3 May."]


def test_the_pandas_index_column_of_to_csv_is_not_metadata() -> None:
    for s in load("ragas_multiturn_pandas.csv", warns=PYTHON_TEXT):
        assert "" not in s.metadata and "Unnamed: 0" not in s.metadata


def test_a_hugging_face_parquet_file_reads_without_its_arrow_null_padding() -> None:
    reference = [view(s) for s in load("ragas_multiturn.jsonl")]
    got = [view(s) for s in load("ragas_multiturn_hf.parquet", warns=ARROW_NULLS)]
    assert got == reference  # {'city': 'Paris', 'unit': None, 'origin': None, ...} was read as given


def test_the_tool_metrics_score_the_parquet_file_as_the_jsonl_file() -> None:
    import ragsight

    metrics = ["conversation_tool_call_accuracy", "conversation_tool_call_f1"]

    def scores(name: str) -> dict[str, list[float]]:
        with pytest.warns(SampleWarning) if name.endswith(".parquet") else _no_warning():
            result = ragsight.evaluate(str(PEERS / name), metrics=metrics,
                                       options=ragsight.RunOptions(show_progress=False))
        df = result.to_pandas()
        conv = df[df["turn"].isna()]
        return {m: [round(float(v), 3) for v in conv[m]] for m in metrics}

    jsonl = scores("ragas_multiturn.jsonl")
    assert jsonl == {"conversation_tool_call_accuracy": [1.0, 0.667], "conversation_tool_call_f1": [1.0, 0.0]}
    assert scores("ragas_multiturn_hf.parquet") == jsonl  # was [0.8, 0.8] / [0.0, 0.0]


class _no_warning:
    def __enter__(self) -> None:
        return None

    def __exit__(self, *exc: object) -> None:
        return None


def test_a_null_argument_in_json_is_kept() -> None:
    row = {"user_input": [{"content": "Weather?", "type": "human"},
                          {"content": "", "type": "ai", "tool_calls": [{"name": "w", "args": {"unit": None}}]},
                          {"content": "sunny", "type": "tool"}, {"content": "Sunny.", "type": "ai"}],
           "reference_tool_calls": [{"name": "w", "args": {}}]}
    conv = Dataset.load([row])[-1]
    assert calls(conv.tool_calls) == [("w", {"unit": None})]  # only Arrow pads: here null is meant


@pytest.mark.parametrize("name", ["deepeval_conversations.csv", "deepeval_conversations.json"])
def test_a_deepeval_conversational_golden_reads_as_its_jsonl(name: str) -> None:
    reference = [view(s) for s in load("deepeval_conversations.jsonl")]
    got = [view(s) for s in load(name)]
    assert got == reference
    assert [s["id"] for s in got] == ["refunds:0", "refunds:1", "refunds"]
    assert got[0]["contexts"] == ("All customers are eligible for a 30 day full refund.",)
    assert got[1]["tool_calls"] == [("lookup_policy", {"topic": "returns"})]
    assert got[1]["contexts"] == ("Returns are free of charge.",)  # the tool's output


@pytest.mark.parametrize("name", ["deepeval_tools.csv", "deepeval_tools.json", "deepeval_tools.jsonl"])
def test_deepeval_tools_called_and_expected_tools_are_the_calls_and_reference_calls(name: str) -> None:
    got = {s.id: s for s in load(name, warns=ONE_EXCHANGE)}
    weather = next(s for s in got.values() if s.turn == 0 and s.question == "What's the weather in Paris?")
    assert calls(weather.tool_calls) == [("get_weather", {"city": "Paris"})]
    assert calls(weather.reference_tool_calls) == [("get_weather", {"city": "Paris"})]
    assert weather.response == "It is sunny in Paris."
    # the retrieval context DeepEval wrote (one string joined with '|'), then the tool's output
    assert weather.contexts == ("Paris: sunny, 21 C.",)
    book = next(s for s in got.values() if s.turn == 0 and s.question == "Book the 08:10 flight to Tromsdal.")
    assert calls(book.tool_calls) == [("search_flights", {"destination": "Tromsdal"}),
                                      ("book_flight", {"flight": "AS 102"})]
    assert calls(book.reference_tool_calls) == [("book_flight", {"flight": "AS 102"})]
    assert book.id == f"{book.conversation_id}:0" and book.conversation_id in got


def test_the_tool_metrics_read_deepeval_test_cases() -> None:
    import ragsight

    with pytest.warns(SampleWarning, match=ONE_EXCHANGE):
        result = ragsight.evaluate(str(PEERS / "deepeval_tools.csv"), metrics=["tool_call_accuracy", "tool_call_f1"],
                                   options=ragsight.RunOptions(show_progress=False))
    df = result.to_pandas()
    turns = df[df["turn"] == 0].set_index("question")
    assert turns.loc["What's the weather in Paris?", "tool_call_accuracy"] == 1.0
    # an extra call (search_flights) before the expected book_flight: in order, the first call is
    # paired with book_flight (0) and book_flight is extra; F1 counts the match: 2*1/(2+1)
    assert turns.loc["Book the 08:10 flight to Tromsdal.", "tool_call_accuracy"] == 0.0
    assert turns.loc["Book the 08:10 flight to Tromsdal.", "tool_call_f1"] == pytest.approx(2 / 3)
    assert set(df["tool_call_accuracy__outcome"][df["turn"] == 0]) == {"scored"}


def test_a_deepeval_test_case_with_gold_context_says_where_the_context_went() -> None:
    row = {"input": "Weather?", "actual_output": "Sunny.", "context": ["Paris is sunny."],
           "tools_called": [{"name": "w", "input_parameters": {"city": "Paris"}}]}
    with pytest.warns(SampleWarning, match="has no place in a conversation"):
        got = Dataset.load([row])
    assert got[-1].metadata["context"] == ["Paris is sunny."]


def test_hugging_face_csv_writes_integer_id_lists_as_numpy_and_they_are_read() -> None:
    got = load("ragas_ids_hf.csv")
    assert [(s.retrieved_ids, s.relevant_ids) for s in got] == [(("7", "12"), ("7",)), (("3",), ("3", "9"))]


def test_a_numpy_array_shortened_with_dots_is_a_row_problem(tmp_path: Path) -> None:
    path = tmp_path / "ids.csv"
    path.write_text('user_input,response,retrieved_context_ids\nq?,a,[   0    1    2 ... 1997 1998 1999]\n')
    got = Dataset.load(path)
    assert len(got) == 0
    (problem,) = got.errors
    assert problem.field == "retrieved_context_ids" and "shortened with '...'" in problem.message


@pytest.mark.parametrize("cell", [
    "[HumanMessage(content=__import__('os').system('touch /tmp/ragsight-ran'))]",
    "[HumanMessage(content='hi', type='human'), Evil(content='x')]",
    "[HumanMessage(content='hi', **kwargs)]",
    "[{'content': 'hi', 'type': 'human'}, {'content': open('/etc/passwd').read(), 'type': 'ai'}]",
])
def test_python_text_is_read_from_its_syntax_tree_and_never_run(cell: str, tmp_path: Path) -> None:
    path = tmp_path / "chats.csv"
    path.write_text("user_input,reference\n" + json.dumps(cell) + ",x\n")
    got = Dataset.load(path)
    assert len(got) == 0 and not Path("/tmp/ragsight-ran").exists()
    (problem,) = got.errors
    assert problem.field == "user_input"
    assert "as Python prints them" in problem.message and "to_jsonl()" in problem.message
