"""Phoenix spans of one chat session become one conversation, from the outside: a spans
DataFrame as ``px.Client().get_spans_dataframe()`` returns it (indexed by ``context.span_id``,
attributes flattened into ``attributes.*`` columns, ``session.id`` in ``attributes.session.id``),
loaded as a DataFrame, saved as Parquet and evaluated with ``ragsight evaluate spans.parquet``,
and written as JSON records and read by ``ragsight import-traces``: the same turns each way."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from ragsight import Dataset
from ragsight.cli import main
from tests.integration.test_conversations_cli import judge_url  # noqa: F401

pd = pytest.importorskip("pandas")
pytest.importorskip("pyarrow")

TRAIL = "The Trail is a hybrid bike."
RED = "The Trail comes in red and blue."
HOURS = "The shop opens 9 to 5."


def _trace(trace: str, start: str, question: str, answer: str, doc: str, session: str | None) -> list[dict[str, Any]]:
    t0 = pd.Timestamp(start)
    chain, retriever = trace * 8, (trace[0] + "f") * 8
    common = {"status_code": "OK", "status_message": "", "events": [], "context.trace_id": trace * 16}
    return [
        {"context.span_id": chain, "name": "query", "span_kind": "CHAIN", "parent_id": None,
         "start_time": t0, "end_time": t0 + pd.Timedelta(seconds=1), **common,
         "attributes.openinference.span.kind": "CHAIN", "attributes.input.value": question,
         "attributes.output.value": answer, "attributes.retrieval.documents": None,
         "attributes.session.id": session},
        {"context.span_id": retriever, "name": "retrieve", "span_kind": "RETRIEVER", "parent_id": chain,
         "start_time": t0 + pd.Timedelta(milliseconds=10), "end_time": t0 + pd.Timedelta(milliseconds=300),
         **common, "attributes.openinference.span.kind": "RETRIEVER", "attributes.input.value": question,
         "attributes.output.value": None,
         "attributes.retrieval.documents": [{"document.id": f"doc-{trace}", "document.content": doc,
                                             "document.score": 0.8}],
         "attributes.session.id": None},  # the session is set on the request's span only
    ]


def spans_dataframe() -> Any:
    # the later request of the session comes first in the frame: the turns follow the start times
    rows = (_trace("22", "2026-01-02T10:05:00Z", "Does it come in red?", "Yes, the Trail comes in red.", RED, "chat-7")
            + _trace("11", "2026-01-02T10:00:00Z", "Which bike is the Trail?", "A hybrid bike.", TRAIL, "chat-7")
            + _trace("33", "2026-01-02T11:00:00Z", "Opening hours?", "9 to 5.", HOURS, None))
    return pd.DataFrame(rows).set_index("context.span_id")


def test_a_phoenix_spans_dataframe_groups_a_sessions_traces_into_a_conversation() -> None:
    ds = Dataset.load(spans_dataframe())
    assert ds.problems == []
    assert [(s.id, s.conversation_id, s.turn) for s in ds.samples][:3] == [
        ("chat-7:0", "chat-7", 0), ("chat-7:1", "chat-7", 1), ("chat-7", "chat-7", None)]
    first, second = ds.samples[0], ds.samples[1]
    assert (first.question, first.contexts, first.retrieved_ids) == ("Which bike is the Trail?", (TRAIL,), ("doc-11",))
    assert (second.question, second.response, second.contexts) == (
        "Does it come in red?", "Yes, the Trail comes in red.", (RED,))
    assert [(m.role, m.content) for m in second.history or ()] == [
        ("user", "Which bike is the Trail?"), ("assistant", "A hybrid bike.")]
    assert ds.samples[2].metadata["trace_ids"] == ["1" * 32, "2" * 32]  # turn k is trace k
    # a trace without a session stays one sample, as before
    last = ds.samples[3]
    assert (last.conversation_id, last.metadata["trace_id"], last.contexts) == (None, "3" * 32, (HOURS,))


def test_a_session_of_one_trace_stays_a_sample() -> None:
    df = spans_dataframe()
    df.loc[df["context.trace_id"] == "2" * 32, "attributes.session.id"] = "chat-8"
    ds = Dataset.load(df)
    assert [(s.metadata["trace_id"], s.conversation_id, s.history) for s in ds.samples] == [
        ("2" * 32, None, None), ("1" * 32, None, None), ("3" * 32, None, None)]


def test_evaluate_a_phoenix_parquet_and_import_its_json_give_the_same_conversation(
        judge_url: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:  # noqa: F811
    df = spans_dataframe()
    spans = tmp_path / "spans.parquet"
    df.to_parquet(spans)
    out = tmp_path / "out.jsonl"
    assert main(["evaluate", str(spans), "--metrics", "faithfulness", "--judge", "openai:m", "--base-url",
                 judge_url, "--store", str(tmp_path / "runs.db"), "--out", str(out), "--quiet"]) == 0
    assert "1 conversation, 2 assistant turns + 1 single-turn sample" in " ".join(capsys.readouterr().out.split())
    rows = [json.loads(line) for line in out.read_text().splitlines()]
    assert [(r["id"], r.get("conversation_id"), r.get("turn")) for r in rows][:3] == [
        ("chat-7:0", "chat-7", 0), ("chat-7:1", "chat-7", 1), ("chat-7", "chat-7", None)]
    assert (rows[3].get("conversation_id"), rows[3]["metadata"]["trace_id"]) == (None, "3" * 32)
    assert rows[1]["history"][0]["content"] == "Which bike is the Trail?"
    assert rows[1]["scores"]["faithfulness"]["outcome"] == "scored"
    # the same frame as JSON records (df.reset_index().to_json(orient="records", lines=True, date_format="iso")),
    # through import-traces: the same conversation
    records = tmp_path / "spans.jsonl"
    df.reset_index().to_json(records, orient="records", lines=True, date_format="iso")
    samples = tmp_path / "samples.jsonl"
    assert main(["import-traces", str(records), "--out", str(samples)]) == 0
    assert "1 conversation among them" in capsys.readouterr().out
    imported = Dataset.load(samples)
    assert [(s.id, s.turn, s.question) for s in imported.samples] == [
        ("chat-7:0", 0, "Which bike is the Trail?"), ("chat-7:1", 1, "Does it come in red?"),
        ("chat-7", None, None), ("3" * 32, None, "Opening hours?")]


def test_import_traces_reads_the_parquet_file_of_a_spans_dataframe(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    spans = tmp_path / "spans.parquet"
    spans_dataframe().to_parquet(spans)
    samples = tmp_path / "samples.jsonl"
    assert main(["import-traces", str(spans), "--out", str(samples)]) == 0
    said = capsys.readouterr().out
    assert f"Read 3 traces from {spans} (span records)." in " ".join(said.split())
    assert "1 conversation among them" in said
    conv, single = [json.loads(line) for line in samples.read_text().splitlines()]
    assert conv["id"] == "chat-7" and conv["metadata"]["trace_ids"] == ["1" * 32, "2" * 32]
    assert [(t["role"], t["content"]) for t in conv["turns"]] == [
        ("user", "Which bike is the Trail?"), ("assistant", "A hybrid bike."),
        ("user", "Does it come in red?"), ("assistant", "Yes, the Trail comes in red.")]
    assert conv["turns"][3]["contexts"] == [RED] and conv["turns"][3]["retrieved_ids"] == ["doc-22"]
    assert conv["metadata"]["traces"][0]["latency_s"] == pytest.approx(1.0)  # times read from the frame
    assert (single["id"], single["contexts"]) == ("3" * 32, [HOURS])
