"""A large JSONL file is not held in memory: its samples are read again from the file
when a run goes through them. The data set read that way equals the one read whole, row by row,
problem by problem; a run over it gives the same scores, outcomes and evidence; a file changed
under a run stops it with the file named; conversations and Phoenix span exports are read whole."""

from __future__ import annotations

import hashlib
import json
import os
import warnings
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import pytest

import ragsight
import ragsight.dataset._dataset as dataset_module
from ragsight.dataset._dataset import Dataset
from ragsight.dataset._lazy import FileSamples
from ragsight.errors import InputError
from ragsight.judge import ScriptedProvider

METRICS = ["faithfulness", "context_recall", "exact_match", "token_f1", "hit_rate", "mrr"]


def _h(*parts: object) -> int:
    return int(hashlib.sha256("|".join(map(str, parts)).encode()).hexdigest()[:8], 16)


def _judge() -> ScriptedProvider:
    def extract(v: Mapping[str, Any]) -> Any:
        return {"claims": [s.strip() + "." for s in str(v["raw_text"]).split(".") if s.strip() and "know" not in s]}

    def verify(v: Mapping[str, Any]) -> Any:
        return {"verdicts": [{"id": i, "supported": _h(c, v["target"]) % 3 != 0, "chunks": [1], "reason": f"r{i}"}
                             for i, c in enumerate(v["claim_list"], start=1)]}

    return ScriptedProvider({"extract_claims": extract, "verify_claims": verify})


def _messy(path: Path) -> None:
    """Rows as careless sources write them: a BOM, ragas and DeepEval names, a repeated question
    without an id (made unique), a repeated id (a problem), bad JSON, a list, a misspelt field, a
    CR line end, a huge number, a line that is not UTF-8, rows without id, graded relevance."""
    lines = [
        "\ufeff" + json.dumps({"question": "What is A?", "response": "A is a letter.", "contexts": ["A is a letter."]}),
        json.dumps({"question": "What is A?", "response": "A again.", "contexts": ["x"]}),
        "",
        json.dumps({"id": "s1", "user_input": "Q1", "answer": "R1. It is so.", "retrieved_contexts": ["c1", "c2"],
                    "ground_truth": "G"}),
        json.dumps({"id": "s1", "question": "Q dup", "response": "R"}),
        "{not json",
        json.dumps({"response": "no question here"}),
        json.dumps({"input": "Q2", "actual_output": "R2", "retrieval_context": ["c"], "expected_output": "R2"}),
        json.dumps([1, 2]),
        json.dumps({"id": "s3", "question": "Q3", "response": "R3", "metadata": {"k": 1}, "respnse": "x"}) + "\r",
        json.dumps({"id": "s4", "question": "Q4", "response": "R4", "big": 10**40}),
        json.dumps({"response": "again no question"}),
    ]
    data = "\n".join(lines).encode() + b'\n{"id": "s5", "question": "caf\xe9"}\n'
    data += json.dumps({"id": "s6", "question": "Q6", "relevant_ids": {"a": 2}, "retrieved_ids": ["a", "b"]}).encode()
    path.write_bytes(data)  # no line end after the last row


def _both(path: Path, monkeypatch: pytest.MonkeyPatch) -> tuple[Dataset, Dataset]:
    with warnings.catch_warnings(record=True) as whole_warnings:
        warnings.simplefilter("always")
        whole = Dataset.load(path)
    monkeypatch.setattr(dataset_module, "LAZY_FILE_BYTES", 0)
    with warnings.catch_warnings(record=True) as lazy_warnings:
        warnings.simplefilter("always")
        lazy = Dataset.load(path)
    assert [str(w.message) for w in lazy_warnings] == [str(w.message) for w in whole_warnings]
    return whole, lazy


def test_a_large_file_reads_as_the_same_data_set_row_by_row(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    path = tmp_path / "messy.jsonl"
    _messy(path)
    whole, lazy = _both(path, monkeypatch)
    assert isinstance(lazy.samples, FileSamples) and not isinstance(whole.samples, FileSamples)
    assert len(lazy) == len(whole) == 9
    assert list(lazy) == list(whole)
    assert [lazy[i] for i in range(len(lazy))] == list(whole.samples)
    assert lazy.samples[-1] == whole.samples[-1] and lazy.samples[2:5] == list(whole.samples[2:5])
    assert lazy.ids() == whole.ids() and lazy.ids()[:2] == ["q-731c817bde20", "q-731c817bde20-2"]
    assert lazy.problems == whole.problems
    assert [p.row for p in lazy.problems] == sorted(p.row for p in lazy.problems)
    assert lazy.sources == whole.sources and lazy.columns == whole.columns and lazy.misnamed == whole.misnamed
    with pytest.raises(IndexError):
        lazy[len(lazy)]


def test_a_run_over_a_large_file_scores_exactly_as_over_the_file_read_whole(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    path = tmp_path / "data.jsonl"
    with path.open("w") as f:
        for i in range(40):
            f.write(json.dumps({"id": f"s{i:02d}", "question": f"What about Topic{i}?",
                                "contexts": [f"Topic{i} grew by {i} percent.", f"Dana{i} runs Topic{i}."],
                                "response": f"Topic{i} grew by {i} percent. Dana{i} runs it." if i % 6 else "I do not know.",
                                "reference": f"Topic{i} grew by {i} percent.", "retrieved_ids": [f"d{i}", "x"],
                                "relevant_ids": [f"d{i}"]}) + "\n")

    def run(store: Path) -> dict[str, Any]:
        result = ragsight.evaluate(str(path), METRICS, judge=_judge(), store=str(store),
                                   options=ragsight.RunOptions(show_progress=False))
        return {sid: [(m, s.value, s.outcome, s.evidence) for m, s in scores.items()]
                for sid, scores in result.scores.items()}

    whole = run(tmp_path / "whole.db")
    monkeypatch.setattr(dataset_module, "LAZY_FILE_BYTES", 0)
    assert isinstance(Dataset.load(path).samples, FileSamples)
    lazy = run(tmp_path / "lazy.db")
    assert lazy == whole and len(lazy) == 40


def test_a_file_changed_under_a_run_stops_it_naming_the_file(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(dataset_module, "LAZY_FILE_BYTES", 0)
    path = tmp_path / "live.jsonl"
    path.write_text("".join(json.dumps({"id": f"s{i}", "question": f"Q{i}", "response": f"R{i}"}) + "\n"
                            for i in range(5)))
    ds = Dataset.load(path)
    assert [s.id for s in ds] == [f"s{i}" for i in range(5)]
    with path.open("a") as f:
        f.write(json.dumps({"id": "s5", "question": "Q5", "response": "R5"}) + "\n")
    with pytest.raises(InputError, match=r"live\.jsonl: the file changed while ragsight was reading it"):
        list(ds)
    with pytest.raises(InputError, match="changed"):
        ragsight.evaluate(ds, ["exact_match"], options=ragsight.RunOptions(show_progress=False))


def test_conversations_and_span_exports_are_read_whole(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    conv = tmp_path / "chat.jsonl"
    conv.write_text(json.dumps({"id": "flat", "question": "Q", "response": "R"}) + "\n" + json.dumps(
        {"id": "c1", "messages": [{"role": "user", "content": "Hi, which bike?"},
                                  {"role": "assistant", "content": "The Trail."}]}) + "\n")
    spans = tmp_path / "spans.jsonl"
    spans.write_text("".join(json.dumps(r) + "\n" for r in [
        {"context.trace_id": "t1", "context.span_id": "a", "parent_id": None, "span_kind": "CHAIN",
         "attributes.input.value": "Q?", "attributes.output.value": "A.", "start_time": "1"},
        {"context.trace_id": "t1", "context.span_id": "b", "parent_id": "a", "span_kind": "RETRIEVER",
         "attributes.retrieval.documents": [{"document.content": "doc"}], "start_time": "2"}]))
    for path in (conv, spans):
        whole, lazy = _both(path, monkeypatch)
        assert not isinstance(lazy.samples, FileSamples)
        assert list(lazy) == list(whole)
    assert [s.conversation_id for s in Dataset.load(conv)][1:] == ["c1"] * (len(Dataset.load(conv)) - 1)
    assert len(Dataset.load(spans)) == 1


def test_the_bench_sized_file_is_not_held(tmp_path: Path) -> None:
    """At the default size (no monkeypatch): a file of LAZY_FILE_BYTES is read from disk."""
    path = tmp_path / "big.jsonl"
    row = {"question": "Q", "response": "R " * 400, "contexts": ["c " * 400]}
    with path.open("w") as f:
        i = 0
        while f.tell() < dataset_module.LAZY_FILE_BYTES:
            f.write(json.dumps({**row, "id": f"s{i}"}) + "\n")
            i += 1
    ds = Dataset.load(path)
    assert isinstance(ds.samples, FileSamples) and len(ds) == i
    assert ds[i - 1].id == f"s{i - 1}" and os.path.getsize(path) >= dataset_module.LAZY_FILE_BYTES


def test_a_jsonl_file_past_the_whole_file_limit_is_read_row_by_row(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """The 2 GiB limit is for files read whole (JSON, CSV, and JSONL that holds conversations)."""
    monkeypatch.setattr(dataset_module, "MAX_TEXT_FILE_BYTES", 2000)
    monkeypatch.setattr(dataset_module, "LAZY_FILE_BYTES", 1000)
    flat = tmp_path / "flat.jsonl"
    flat.write_text("".join(json.dumps({"id": f"s{i}", "question": f"Question {i}?", "response": "R" * 40}) + "\n"
                            for i in range(60)))
    assert len(Dataset.load(flat)) == 60
    chat = tmp_path / "chat.jsonl"
    chat.write_text("".join(json.dumps({"id": f"c{i}", "messages": [{"role": "user", "content": "Hi " * 20},
                                                                      {"role": "assistant", "content": "Hello."}]})
                            + "\n" for i in range(30)))
    with pytest.raises(InputError, match=r"chat\.jsonl: .* GiB is more than ragsight reads whole"):
        Dataset.load(chat)
    table = tmp_path / "rows.csv"
    table.write_text("id,question\n" + "".join(f"s{i},Question number {i}?\n" for i in range(200)))
    with pytest.raises(InputError, match=r"rows\.csv: .*write flat rows as JSONL"):
        Dataset.load(table)
