"""Trace files written in each exporter's shape (tests/fixtures/traces/) become samples whose
fields are checked exactly; malformed or partial traces are named with what is missing, and the
other traces still import."""

from __future__ import annotations

import base64
import json
from pathlib import Path
from typing import Any

import pytest

import ragsight
from ragsight.cli import main
from ragsight.errors import InputError
from ragsight.integrations import import_traces, traces_from_records
from ragsight.sample import Dataset
from tests.scripted import RagScript

TRACES = Path(__file__).resolve().parents[1] / "fixtures" / "traces"

LEAVE_ROW = {
    "id": "5b8efff798038103d269b633813fc60c",
    "question": "How many days of annual leave do employees get?",
    "contexts": ["Full-time employees receive 25 days of annual leave per year.",
                 "Unused leave expires at the end of March."],
    "retrieved_ids": ["handbook-03#1", "17"],
    "response": "Employees get 25 days of annual leave.",
    "metadata": {
        "trace_id": "5b8efff798038103d269b633813fc60c", "span_id": "eee19b7ec3c1b174", "trace_name": "query",
        "retriever_span_ids": ["eee19b7ec3c1b175"], "llm_span_id": "eee19b7ec3c1b176",
        "contexts_from": "retriever", "retrieval_scores": [0.82, 0.41],
        "documents": [{"id": "handbook-03#1", "score": 0.82, "metadata": {"file": "03-leave.md"}},
                      {"id": "17", "score": 0.41, "metadata": {}}],
        "latency_s": 1.25, "source": "openinference",
    },
}


def test_otlp_json_one_sample_per_rag_request_fields_exact() -> None:
    got = import_traces(TRACES / "openinference.otlp.json")
    assert got.format == "otlp" and got.traces == 4
    assert got.rows == [
        LEAVE_ROW,
        {
            "id": "a3ce929d0e0e47364bf92f3577b34da6",
            "question": "When does the Oslo office open?",  # from the JSON input.value
            "contexts": ["The Oslo office opens at 8 am."],
            "retrieved_ids": ["handbook-12#1"],
            "metadata": {
                "trace_id": "a3ce929d0e0e47364bf92f3577b34da6", "span_id": "53995c3f42cd8ad8",
                "trace_name": "query", "retriever_span_ids": ["53995c3f42cd8ad9"], "llm_span_id": None,
                "contexts_from": "retriever", "retrieval_scores": [None],
                "documents": [{"id": "handbook-12#1", "score": None, "metadata": {}}],
                "latency_s": 0.5, "source": "openinference",
            },
        },
    ]
    assert [str(p) for p in got.problems] == [
        "file: record 1: resourceSpans.0.scopeSpans.0.spans.8: span 'orphan' has no trace id; skipped",
        "trace 0af7651916cd43dd8448eb211c80319c: retriever span b7ad6b7169203332 has no text at "
        "retrieval.documents.1.document.content; not imported",
        "trace a3ce929d0e0e47364bf92f3577b34da6: no answer: no output.value on the root span "
        "53995c3f42cd8ad8 and no LLM span output; imported without it",
    ]
    assert dict(got.skipped) == {"malformed or partial (each listed under problems)": 1,
                                 "no RETRIEVER span: not a RAG request": 1}


def test_sdk_spans_jsonl_reranker_documents_are_what_the_generator_saw() -> None:
    got = import_traces(TRACES / "openinference.spans.jsonl")
    assert got.format == "spans" and got.traces == 1
    assert got.rows == [{
        "id": "3f9c0a1b2c3d4e5f60718293a4b5c6d7",
        "question": "Can I work from abroad?",
        "contexts": ["Remote work from abroad is allowed for up to 30 days a year.",
                     "Working abroad needs your manager's written approval."],
        "retrieved_ids": ["n1", "n3"],
        "response": "Yes, for up to 30 days a year with approval.",
        "metadata": {
            "trace_id": "3f9c0a1b2c3d4e5f60718293a4b5c6d7", "span_id": "1a2b3c4d5e6f7081",
            "trace_name": "RetrieverQueryEngine.query", "retriever_span_ids": ["1a2b3c4d5e6f7082"],
            "llm_span_id": None, "contexts_from": "reranker", "retrieval_scores": [0.98, 0.93],
            "documents": [{"id": "n1", "score": 0.98, "metadata": {}}, {"id": "n3", "score": 0.93, "metadata": {}}],
            "latency_s": 2.5, "source": "openinference",
        },
    }]
    assert [str(p) for p in got.problems] == [
        "file: line 4 is not valid JSON (Unterminated string starting at); skipped"]


def test_langfuse_export_fields_exact() -> None:
    got = import_traces(TRACES / "langfuse.json")
    assert got.format == "langfuse" and got.traces == 2
    assert got.rows == [{
        "id": "7f3c2a9e-1b4d-4e8a-9c6f-2d1e0b3a4c5d",
        "question": "What is the per diem in Oslo?",
        "contexts": ["The per diem in Oslo is 800 NOK.", "Receipts are needed above 200 NOK."],
        "retrieved_ids": ["travel-2", "travel-5"],
        "response": "The per diem in Oslo is 800 NOK.",  # the trace has no output: the generation's
        "metadata": {
            "trace_id": "7f3c2a9e-1b4d-4e8a-9c6f-2d1e0b3a4c5d", "trace_name": "rag-chain",
            "retriever_observation_ids": ["obs-ret"], "generation_observation_id": "obs-gen",
            "retrieval_scores": [None, None],
            "documents": [{"id": "travel-2", "score": None, "metadata": {"source": "05-travel.md"}},
                          {"id": "travel-5", "score": None, "metadata": {"source": "05-travel.md"}}],
            "latency_s": 1.734, "source": "langfuse", "sessionId": "sess-42", "userId": "u-7",
        },
    }]
    assert [str(p) for p in got.problems] == [
        "trace c0ffee00-0000-4000-8000-000000000002: retriever observation obs-ret-2 has no readable "
        "documents in its output (a list of documents with page_content, text or content); not imported"]


def test_langfuse_observations_exported_alone_are_grouped_by_trace() -> None:
    trace = json.loads((TRACES / "langfuse.json").read_text())["data"][0]
    got = traces_from_records(trace["observations"])  # one JSON line per observation
    assert got.format == "langfuse" and len(got.rows) == 1
    row = got.rows[0]
    assert row["question"] == "What is the per diem in Oslo?"  # from the root observation
    assert row["response"] == "The per diem in Oslo is 800 NOK."
    assert row["metadata"]["latency_s"] == 1.734  # from the observations' times


def _otlp_kv(attrs: dict[str, Any]) -> list[dict[str, Any]]:
    def value(v: Any) -> dict[str, Any]:
        return {"doubleValue": v} if isinstance(v, float) else {"stringValue": v}
    return [{"key": k, "value": value(v)} for k, v in attrs.items()]


FLAT = {"openinference.span.kind": "RETRIEVER", "input.value": "q?",
        "retrieval.documents.0.document.id": "d1", "retrieval.documents.0.document.content": "Text one.",
        "retrieval.documents.0.document.score": 0.5}


@pytest.mark.parametrize("record", [
    # OTLP with base64 ids (the protobuf JSON mapping) instead of hex
    {"resourceSpans": [{"scopeSpans": [{"spans": [{
        "traceId": base64.b64encode(bytes.fromhex("0102030405060708090a0b0c0d0e0f10")).decode(),
        "spanId": base64.b64encode(bytes.fromhex("1112131415161718")).decode(),
        "startTimeUnixNano": "1000000000", "endTimeUnixNano": "1500000000", "attributes": _otlp_kv(FLAT)}]}]}]},
    # Phoenix's REST span: nested attributes, span_kind beside them
    {"context": {"trace_id": "0102030405060708090a0b0c0d0e0f10", "span_id": "1112131415161718"},
     "parent_id": None, "span_kind": "RETRIEVER", "start_time": "1970-01-01T00:00:01+00:00",
     "end_time": "1970-01-01T00:00:01.500000+00:00",
     "attributes": {"input": {"value": "q?"}, "retrieval": {"documents": [
         {"document": {"id": "d1", "content": "Text one.", "score": 0.5}}]}}},
    # a Phoenix spans-dataframe record (pandas JSON: epoch milliseconds)
    {"context.trace_id": "0102030405060708090a0b0c0d0e0f10", "context.span_id": "1112131415161718",
     "parent_id": None, "span_kind": "RETRIEVER", "start_time": 1767225601000, "end_time": 1767225601500,
     "attributes.input.value": "q?",
     "attributes.retrieval.documents": [{"document.id": "d1", "document.content": "Text one.", "document.score": 0.5}]},
])
def test_every_span_shape_gives_the_same_sample(record: dict[str, Any]) -> None:
    got = traces_from_records([record])
    # a retriever alone answers nothing, and says so
    assert [(p.message[:10], p.imported) for p in got.problems] == [("no answer:", True)]
    row = got.rows[0]
    assert (row["id"], row["question"], row["contexts"], row["retrieved_ids"]) == (
        "0102030405060708090a0b0c0d0e0f10", "q?", ["Text one."], ["d1"])
    assert row["metadata"]["span_id"] == "1112131415161718"
    assert row["metadata"]["retrieval_scores"] == [0.5]
    assert "response" not in row
    assert row["metadata"]["latency_s"] == pytest.approx(0.5)


def test_a_failed_request_is_skipped_with_its_reason() -> None:
    span = {"context": {"trace_id": "0x" + "ab" * 16, "span_id": "0x" + "cd" * 8}, "parent_id": None,
            "status": {"status_code": "ERROR", "description": "RateLimitError from the LLM"},
            "attributes": {**FLAT, "openinference.span.kind": "CHAIN"}}
    got = traces_from_records([span])
    assert got.rows == []
    assert dict(got.skipped) == {"the request failed (root span status ERROR)": 1}
    assert str(got.problems[0]) == f"trace {'ab' * 16}: the request failed: RateLimitError from the LLM; not imported"


def test_a_file_that_is_not_a_trace_export_says_what_it_expected(tmp_path: Path) -> None:
    path = tmp_path / "data.jsonl"
    path.write_text('{"question": "q", "response": "a"}\n')
    with pytest.raises(InputError, match=r"OTLP JSON .*OpenInference spans.*Langfuse"):
        import_traces(path)


def test_cli_writes_samples_that_evaluate_scores_and_link_back(tmp_path: Path,
                                                                capsys: pytest.CaptureFixture[str]) -> None:
    out = tmp_path / "samples.jsonl"
    code = main(["import-traces", str(TRACES / "openinference.otlp.json"), "--out", str(out)])
    printed = capsys.readouterr()
    assert code == 0
    assert printed.out.splitlines() == [
        f"Read 4 traces from {TRACES / 'openinference.otlp.json'} (OTLP JSON).",
        "Skipped 2 traces:",
        "  1 x malformed or partial (each listed under problems)",
        "  1 x no RETRIEVER span: not a RAG request",
        f"2 samples written to {out}.",
        f"Next: ragsight evaluate {out}",
    ]
    assert printed.err.splitlines()[0] == "Problems (3):"
    assert "retrieval.documents.1.document.content; not imported" in printed.err
    assert json.loads(out.read_text().splitlines()[0]) == LEAVE_ROW

    script = RagScript(
        claims={"Employees get 25 days of annual leave.": ["Employees get 25 days of annual leave."]},
        verdicts={("Employees get 25 days of annual leave.", "contexts"): True},
    )
    result = ragsight.evaluate(Dataset.load(out), ["faithfulness"], judge=script.judge())
    leave = next(s for s in result.samples if s.id == LEAVE_ROW["id"])
    assert leave.metadata["trace_id"] == LEAVE_ROW["id"] and leave.metadata["span_id"] == "eee19b7ec3c1b174"
    assert result.scores[leave.id]["faithfulness"].value == 1.0
    # the trace without an answer is scored nothing, and says why
    other = result.scores["a3ce929d0e0e47364bf92f3577b34da6"]["faithfulness"]
    assert other.outcome.value == "skipped" and "response" in other.reason


def test_cli_when_no_trace_becomes_a_sample(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    path = tmp_path / "chat.json"
    path.write_text(json.dumps({"context": {"trace_id": "0x" + "ab" * 16, "span_id": "0x" + "cd" * 8},
                                "attributes": {"openinference.span.kind": "LLM", "input.value": "hi"}}))
    code = main(["import-traces", str(path), "--out", str(tmp_path / "s.jsonl")])
    printed = capsys.readouterr()
    assert code == 2
    assert "no trace became a sample; nothing written" in printed.err
    assert "1 x no RETRIEVER span: not a RAG request" in printed.out
    assert not (tmp_path / "s.jsonl").exists()


# ---- production traces as web services write them (htrial) ---------------------------------------


def test_console_exporter_spans_under_a_web_server_span_keep_the_users_question(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """ConsoleSpanExporter writes span.to_json() indented over many lines, one span after the
    other, children first; FastAPI's instrumentation puts an HTTP server span above the chain.
    The question is the chain's input, not the retriever's rewritten query."""
    out = tmp_path / "samples.jsonl"
    assert main(["import-traces", str(TRACES / "openinference.console.json"), "--out", str(out)]) == 0
    printed = capsys.readouterr()
    assert "1 sample written" in printed.out and "Problems" not in printed.out + printed.err
    (row,) = [json.loads(line) for line in out.read_text().splitlines()]
    assert row["question"] == "How many days of annual leave do employees get?"
    assert row["response"] == "Full-time employees get 25 days of annual leave a year."
    assert row["retrieved_ids"] == ["leave-1", "leave-2"]
    meta = row["metadata"]
    assert (meta["span_id"], meta["trace_name"]) == ("00f067aa0ba902b7", "RunnableSequence")
    assert meta["latency_s"] == pytest.approx(1.55)
    assert meta["documents"][0]["metadata"] == {"source": "03-leave.md"}


def _web_trace(chain_input: Any, *, http_status: str = "UNSET") -> list[dict[str, Any]]:
    trace = "0x" + "4b" * 16

    def span(sid: str, parent: str | None, attrs: dict[str, Any], status: str = "UNSET") -> dict[str, Any]:
        return {"name": sid, "context": {"trace_id": trace, "span_id": "0x" + sid * 8}, "parent_id":
                None if parent is None else "0x" + parent * 8, "status": {"status_code": status},
                "start_time": f"2026-01-03T14:00:0{len(sid)}.000000Z", "attributes": attrs}

    chain = {"openinference.span.kind": "CHAIN", "output.value": "25 days."}
    if chain_input is not None:
        chain["input.value"] = chain_input
    return [span("a1", None, {"http.route": "/chat"}, http_status),
            span("b2", "a1", chain),
            span("c3", "b2", {"openinference.span.kind": "RETRIEVER", "input.value": "leave days rewritten",
                              "retrieval.documents.0.document.content": "25 days."})]


def test_a_question_taken_from_the_retrievers_query_says_so() -> None:
    got = traces_from_records(_web_trace(None))
    assert got.rows[0]["question"] == "leave days rewritten"
    assert [str(p) for p in got.problems] == [
        f"trace {'4b' * 16}: no input.value on the request span {'b2' * 8}: the question is the retriever's "
        f"query (span {'c3' * 8}), which may be a rewritten one; imported"]


def test_a_request_the_web_server_span_marks_failed_is_skipped() -> None:
    got = traces_from_records(_web_trace("How many days?", http_status="ERROR"))
    assert got.rows == [] and dict(got.skipped) == {"the request failed (root span status ERROR)": 1}


def test_a_langfuse_trace_whose_root_observation_failed_is_skipped() -> None:
    trace = {"id": "t-1", "input": {"input": "How many days?"}, "output": None, "observations": [
        {"id": "root", "traceId": "t-1", "type": "CHAIN", "name": "RunnableSequence", "parentObservationId": None,
         "startTime": "2026-01-02T10:00:00.000Z", "level": "ERROR", "statusMessage": "RateLimitError: 429",
         "input": {"input": "How many days?"}, "output": None},
        {"id": "ret", "traceId": "t-1", "type": "RETRIEVER", "name": "VectorStoreRetriever",
         "parentObservationId": "root", "startTime": "2026-01-02T10:00:00.010Z", "level": "DEFAULT",
         "input": "How many days?", "output": [{"page_content": "25 days.", "metadata": {}, "type": "Document"}]},
    ]}
    got = traces_from_records([trace])
    assert got.rows == []
    assert dict(got.skipped) == {"the request failed (root observation level ERROR)": 1}
    assert [str(p) for p in got.problems] == ["trace t-1: the request failed: RateLimitError: 429; not imported"]
