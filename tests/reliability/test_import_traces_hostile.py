"""``ragsight import-traces`` on hostile exports, run as the docs show it
(``ragsight import-traces FILE --out samples.jsonl``). Each file is written here as a careless or
hostile source would write it: span parent links that loop, bytes that are not UTF-8, JSON nested
thousands deep, numbers out of range (1e400, integers of 5,000 digits, NaN), OTLP fields of the
wrong type, lone surrogates. Every one ends in a clean import (the bad part left out or repaired,
named with its span or line and field) or one line ``error: ...`` with exit status 2, never a
traceback; the samples file is strict JSON in UTF-8, written atomically (a failure leaves the
previous file byte-identical), and a chain of 10,000 spans imports in linear time."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

import ragsight
from ragsight.cli import main

TID = "5b8efff798038103d269b633813fc60c"  # the good trace every importing file also holds
BAD = "0af7651916cd43dd8448eb211c80319c"  # the hostile one
PREVIOUS = b'{"id": "kept", "question": "from the run before"}\n'
DIGITS_5000 = "1" + "0" * 4999


def _sid(n: int) -> str:
    return f"{n:016x}"


def span(trace: str, n: int, parent: int | None, kind: str, attributes: dict[str, Any],
         **extra: Any) -> dict[str, Any]:
    """One span as the OpenTelemetry SDK's ``span.to_json()`` writes it (OpenInference names)."""
    out: dict[str, Any] = {
        "name": kind.lower(), "context": {"trace_id": f"0x{trace}", "span_id": f"0x{_sid(n)}"},
        "parent_id": None if parent is None else f"0x{_sid(parent)}",
        "start_time": "2026-01-01T09:00:00.000000Z", "end_time": "2026-01-01T09:00:01.250000Z",
        "attributes": {"openinference.span.kind": kind, **attributes},
    }
    out.update(extra)
    return out


def rag(trace: str, question: str = "How many days of annual leave?", base: int = 1,
        root_extra: dict[str, Any] | None = None, retriever_attrs: dict[str, Any] | None = None
        ) -> list[dict[str, Any]]:
    """A good RAG request: a CHAIN root with question and answer, a RETRIEVER child."""
    return [
        span(trace, base, None, "CHAIN", {"input.value": question, "output.value": "25 days."},
             **(root_extra or {})),
        span(trace, base + 1, base, "RETRIEVER", {
            "input.value": question, "retrieval.documents.0.document.content": "Employees get 25 days.",
            "retrieval.documents.0.document.id": "doc-1", "retrieval.documents.0.document.score": 0.8,
            **(retriever_attrs or {})}),
    ]


def jsonl(spans: list[dict[str, Any]]) -> bytes:
    return "".join(json.dumps(s) + "\n" for s in spans).encode()


def otlp_value(value: Any) -> dict[str, Any]:
    if isinstance(value, str):
        return {"stringValue": value}
    if isinstance(value, float):
        return {"doubleValue": value}
    return {"intValue": str(value)}


def otlp_span(trace: str, n: int, parent: int | None, kind: str, attributes: dict[str, Any],
              **extra: Any) -> dict[str, Any]:
    """One span as the OTLP JSON file exporter writes it."""
    out: dict[str, Any] = {
        "traceId": trace, "spanId": _sid(n), "parentSpanId": "" if parent is None else _sid(parent),
        "name": kind.lower(), "startTimeUnixNano": "1767258000000000000", "endTimeUnixNano": "1767258001250000000",
        "attributes": [{"key": "openinference.span.kind", "value": {"stringValue": kind}}]
        + [{"key": k, "value": otlp_value(v)} for k, v in attributes.items()],
    }
    out.update(extra)
    return out


def otlp_rag(trace: str = TID) -> list[dict[str, Any]]:
    return [otlp_span(trace, 1, None, "CHAIN", {"input.value": "How many days of annual leave?",
                                                "output.value": "25 days."}),
            otlp_span(trace, 2, 1, "RETRIEVER", {"retrieval.documents.0.document.content": "Employees get 25 days."})]


def otlp(spans: list[Any], scope: Any = None, resource: Any = None) -> dict[str, Any]:
    return {"resourceSpans": [resource if resource is not None else
                              {"resource": {}, "scopeSpans": [scope if scope is not None else {"spans": spans}]}]}


def otlp_doc(*docs: Any) -> bytes:
    return "\n".join(json.dumps(d) for d in docs).encode() + b"\n"


def langfuse(trace_id: str, **over: Any) -> dict[str, Any]:
    out: dict[str, Any] = {
        "id": trace_id, "name": "rag", "input": "How many days of annual leave?", "output": "25 days.",
        "timestamp": "2026-01-01T09:00:00.000Z",
        "observations": [{"id": f"{trace_id}-r", "traceId": trace_id, "type": "RETRIEVER", "name": "retrieve",
                          "startTime": "2026-01-01T09:00:00.100Z", "endTime": "2026-01-01T09:00:00.300Z",
                          "output": [{"page_content": "Employees get 25 days.", "metadata": {"id": "doc-1"}}]}],
    }
    out.update(over)
    return out


def lf_lines(*traces: dict[str, Any]) -> bytes:
    return "".join(json.dumps(t) + "\n" for t in traces).encode()


def nested(depth: int, leaf: str = '"x"') -> str:
    return "[" * depth + leaf + "]" * depth


def cycle(n: int) -> bytes:
    """The good trace, and a trace whose n spans' parent links loop (no root)."""
    bad = [span(BAD, i, (i % n) + 1, "CHAIN" if i > 1 else "RETRIEVER",
                {"input.value": "q", "retrieval.documents.0.document.content": "d"}) for i in range(1, n + 1)]
    return jsonl(rag(TID) + bad)


@dataclass(frozen=True)
class Case:
    """A hostile file and what must come of it: ``error`` (exit 2, one line naming the file and
    this text) or an import of the good trace, with ``said`` in the printed problems."""

    name: str
    content: bytes
    said: str
    error: bool = False
    check: Callable[[list[dict[str, Any]]], bool] = lambda rows: [r["id"] for r in rows] == [TID]


CASES = [
    # ---- span parent links that loop
    Case("cycle_of_two", cycle(2), f"{BAD}: the parent links of its spans loop (0000000000000001 -> "
         "0000000000000002 -> 0000000000000001): not a tree of spans; not imported"),
    Case("self_parent", jsonl([*rag(TID), span(BAD, 7, 7, "RETRIEVER", {"input.value": "q", "retrieval.documents.0.document.content": "d"})]),
         "the parent links of its spans loop (0000000000000007 -> 0000000000000007)"),
    Case("cycle_of_1000", cycle(1000), "-> ... (1000 spans) ->"),
    Case("loop_below_a_root", jsonl(rag(TID) + rag(BAD) + [
        span(BAD, 20, 21, "LLM", {}), span(BAD, 21, 22, "LLM", {}), span(BAD, 22, 20, "LLM", {})]),
        "the parent links of its spans loop (0000000000000014 -> 0000000000000015 -> 0000000000000016"),
    Case("otlp_cycle", otlp_doc(otlp([*otlp_rag(), otlp_span(BAD, 1, 2, "CHAIN", {"input.value": "q"}), otlp_span(BAD, 2, 1, "RETRIEVER", {})])),
         f"trace {BAD}: the parent links of its spans loop"),
    # ---- bytes that are not UTF-8
    Case("latin1_line_in_jsonl", jsonl(rag(TID)) + '{"name": "caf\u00e9"}\n'.encode("latin-1"),
         "file: line 3 is not UTF-8 text; skipped"),
    Case("latin1_otlp_document", json.dumps(otlp(otlp_rag()), indent=1).replace(
        "annual", "\u00e9annual").encode("latin-1"), "not UTF-8 text (line", error=True),
    Case("binary_garbage", bytes(range(256)) * 4, "not UTF-8 text", error=True),
    Case("invalid_continuation_in_span_id", jsonl(rag(TID)) + b'{"context": {"trace_id": "\xc3\x28"}}\n',
         "line 3 is not UTF-8 text"),
    Case("line_separator_in_a_string_beside_a_broken_line", "".join(
        json.dumps(s, ensure_ascii=False) + "\n" for s in rag(TID, question="Annual\u2028leave?")).encode()
        + b'{"broken\n', "file: line 3 is not valid JSON",
        check=lambda rows: [r["question"] for r in rows] == ["Annual\u2028leave?"]),
    Case("utf16_with_bom", json.dumps(otlp(otlp_rag())).encode("utf-16"), "1 sample written"),
    # ---- JSON nested thousands deep
    Case("array_nested_100000_deep", nested(100_000).encode(), "nested too deep to read", error=True),
    Case("object_nested_50000_deep_line", jsonl(rag(TID)) + ('{"a":' * 50_000 + "1" + "}" * 50_000).encode()
         + b"\n", "line 3 is JSON nested too deep to read"),
    Case("attribute_nested_500_deep", jsonl(rag(TID)) + json.dumps(span(BAD, 1, None, "RETRIEVER", {
        "input.value": "q", "deep": json.loads(nested(500))})).encode() + b"\n",
        "record 3: span nested more than 100 levels deep"),
    Case("input_value_json_nested_100000_deep", jsonl(rag(TID, question=nested(100_000))),
         "1 sample written", check=lambda rows: [r["question"][:3] for r in rows] == ["[[["]),
    Case("arrays_around_spans_500_deep", ("[" * 500 + json.dumps(rag(TID)) + "]" * 500).encode(),
         "nothing in it can be read (arrays nested more than 100 levels deep)", error=True),
    Case("langfuse_output_nested_500_deep", lf_lines(langfuse("t-good"), langfuse(
        "t-deep", output=json.loads(nested(500)))), "record 2 is nested more than 100 levels deep",
        check=lambda rows: [r["id"] for r in rows] == ["t-good"]),
    # ---- numbers out of range
    Case("start_time_1e400", jsonl(rag(TID)).replace(b'"2026-01-01T09:00:00.000000Z"', b"1e400", 1),
         f"trace {TID}: span 0000000000000001: start_time Infinity is not a finite time; left out; imported without it",
         check=lambda rows: [r["metadata"]["latency_s"] for r in rows] == [None]),
    Case("otlp_time_5000_digit_number", otlp_doc(otlp(otlp_rag())).replace(
        b'"1767258000000000000"', DIGITS_5000.encode(), 1),
         "span 0000000000000001: startTimeUnixNano Infinity is not a finite time"),
    Case("otlp_time_5000_digit_string", otlp_doc(otlp(otlp_rag())).replace(
        b'"1767258000000000000"', f'"{DIGITS_5000}"'.encode(), 1),
         f"startTimeUnixNano {DIGITS_5000[:37]}... is not a finite time"),
    Case("start_time_4000_digit_integer", jsonl(rag(TID)).replace(
        b'"2026-01-01T09:00:00.000000Z"', ("9" * 4000).encode(), 1), "start_time 999"),
    Case("langfuse_latency_1e400", lf_lines(langfuse("t-good")).replace(b'"timestamp"', b'"latency": 1e400, "timestamp"'),
         "trace t-good: latency Infinity is not a finite number; taken from the observations' times",
         check=lambda rows: [r["metadata"]["latency_s"] for r in rows] == [0.2]),
    Case("nan_document_score", jsonl(rag(TID)).replace(b'"retrieval.documents.0.document.score": 0.8',
                                                       b'"retrieval.documents.0.document.score": NaN'),
         "retriever span 0000000000000002: retrieval.documents.0.document.score is NaN, not a finite number; "
         "written as null", check=lambda rows: [r["metadata"]["retrieval_scores"] for r in rows] == [[None]]),
    Case("infinite_otlp_double_score", otlp_doc(otlp([*otlp_rag()[:1], otlp_span(
        TID, 2, 1, "RETRIEVER", {"retrieval.documents.0.document.content": "Employees get 25 days.",
                                 "retrieval.documents.0.document.score": float("inf")})])),
         "retrieval.documents.0.document.score is Infinity, not a finite number"),
    Case("nan_tokens_in_document_metadata", jsonl(rag(TID, retriever_attrs={
        "retrieval.documents.0.document.metadata": '{"tokens": NaN, "total": Infinity}'})),
         "field metadata.documents.0.metadata.tokens is NaN, not a finite number; written as null"),
    Case("langfuse_nan_latency_and_tokens", lf_lines(langfuse("t-good", latency=float("nan"), observations=[
        {**langfuse("t-good")["observations"][0], "output": [{"page_content": "Employees get 25 days.",
                                                              "metadata": {"tokens": float("inf")}, "score": float("nan")}]}])),
         "latency NaN is not a finite number; taken from the observations' times",
         check=lambda rows: [r["metadata"]["latency_s"] for r in rows] == [0.2]),
    Case("langfuse_start_time_4000_digits", lf_lines(langfuse("t-good", latency=None, timestamp=None, observations=[
        {**langfuse("t-good")["observations"][0], "startTime": int("9" * 4000)}])),
         "trace t-good: observation t-good-r: startTime 9999999999999999999999999999999999999... is not a time",
         check=lambda rows: [r["id"] for r in rows] == ["t-good"]),
    Case("document_number_5000_digits", jsonl(rag(TID) + rag(BAD, retriever_attrs={
        f"retrieval.documents.{DIGITS_5000}.document.content": "d"})),
         "more than 100,000 is not a retriever's list; not imported"),
    Case("llm_message_number_5000_digits", jsonl([*rag(TID), span(TID, 3, 1, "LLM", {f"llm.output_messages.{DIGITS_5000}.message.content": "the last message", "llm.output_messages.2.message.content": "an earlier one"})]).replace(
        b', "output.value": "25 days."', b"", 1),
         "1 sample written", check=lambda rows: [r["response"] for r in rows] == ["the last message"]),
    # ---- OTLP fields of the wrong type, null everywhere
    Case("resource_spans_a_string", otlp_doc(otlp(otlp_rag()), {"resourceSpans": "oops"}),
         "file: record 2: resourceSpans is text, not a list; skipped"),
    Case("resource_spans_an_object", otlp_doc(otlp(otlp_rag()), {"resourceSpans": {"scopeSpans": []}}),
         "record 2: resourceSpans is an object, not a list"),
    Case("resource_spans_null_entry", otlp_doc({"resourceSpans": [None, *otlp(otlp_rag())["resourceSpans"]]}),
         "record 1: resourceSpans.0 is null, not an object"),
    Case("scope_spans_a_string", otlp_doc(otlp(otlp_rag()), otlp([], resource={"scopeSpans": "x"})),
         "record 2: resourceSpans.0: scopeSpans is text, not a list"),
    Case("scope_spans_null_entry", otlp_doc(otlp(otlp_rag()), otlp([], resource={"scopeSpans": [None]})),
         "record 2: resourceSpans.0.scopeSpans.0 is null, not an object"),
    Case("spans_an_object", otlp_doc(otlp(otlp_rag()), otlp([], scope={"spans": {"a": 1}})),
         "record 2: resourceSpans.0.scopeSpans.0: spans is an object, not a list"),
    Case("spans_null_and_numbers", otlp_doc(otlp([*otlp_rag(), None, 5, "span"])),
         "resourceSpans.0.scopeSpans.0.spans.2 is null, not a span object"),
    Case("array_value_a_list", otlp_doc(otlp([otlp_rag()[0], {**otlp_rag()[1], "attributes": [
        *otlp_rag()[1]["attributes"], {"key": "tags", "value": {"arrayValue": ["a", "b"]}}]}])),
         "span 0000000000000002: attribute tags is not an OTLP value (its arrayValue is a list, not an object "
         "with values); left out; imported without it"),
    Case("kvlist_entry_with_a_list_key", otlp_doc(otlp([otlp_rag()[0], {**otlp_rag()[1], "attributes": [
        *otlp_rag()[1]["attributes"], {"key": "m", "value": {"kvlistValue": {"values": [{"key": ["k"]}]}}}]}])),
         "attribute m is not an OTLP value (an entry of its kvlistValue is not"),
    Case("kvlist_values_null_entries", otlp_doc(otlp([otlp_rag()[0], {**otlp_rag()[1], "attributes": [
        *otlp_rag()[1]["attributes"], {"key": "m", "value": {"kvlistValue": {"values": [None]}}}]}])),
         "attribute m is not an OTLP value"),
    Case("array_values_a_number", otlp_doc(otlp([otlp_rag()[0], {**otlp_rag()[1], "attributes": [
        *otlp_rag()[1]["attributes"], {"key": "v", "value": {"arrayValue": {"values": 5}}}]}])),
         "attribute v is not an OTLP value (its arrayValue.values is a number, not a list)"),
    Case("attribute_entries_null_and_keyless", otlp_doc(otlp([otlp_rag()[0], {**otlp_rag()[1], "attributes": [
        None, {"value": {"stringValue": "x"}}, *otlp_rag()[1]["attributes"]]}])),
         'span 0000000000000002: attributes.0 is not {"key": text, "value": ...} (it is null)'),
    Case("ids_and_times_of_wrong_types", jsonl([*rag(TID), span(BAD, 1, None, "CHAIN", {}, context={"trace_id": {"x": 1}, "span_id": [1]}), {"traceId": 1.5, "spanId": True, "name": None}]),
         "record 3: span 'chain' has no trace id"),
    Case("langfuse_observations_a_number", lf_lines(langfuse("t-good"), langfuse("t-bad", observations=5)),
         "file: record 2 (trace t-bad): observations is a number, not a list; skipped",
         check=lambda rows: [r["id"] for r in rows] == ["t-good"]),
    Case("langfuse_ids_of_wrong_types", lf_lines(langfuse("t-good"), {**langfuse("x"), "id": [1]},
                                                 {"traceId": None, "type": "SPAN"}),
         "record 2: a trace has no id (text)", check=lambda rows: [r["id"] for r in rows] == ["t-good"]),
    Case("langfuse_observation_entries_null", lf_lines(langfuse("t-good"), langfuse("t-bad", observations=[None, 3])),
         "file: record 2 (trace t-bad): observations.0 is null, not an observation; skipped",
         check=lambda rows: [r["id"] for r in rows] == ["t-good"]),
    # ---- lone surrogates
    Case("lone_surrogate_in_question", jsonl(rag(TID, question="Annual leave?\ud800")),
         "field question holds a lone surrogate (invalid UTF-16); replaced with U+FFFD",
         check=lambda rows: [r["question"] for r in rows] == ["Annual leave?\ufffd"]),
    Case("lone_surrogate_in_trace_id", jsonl(rag("t\udc80x")), "field id holds a lone surrogate",
         check=lambda rows: [r["id"] for r in rows] == ["t\ufffdx"]),
    Case("lone_surrogate_in_metadata_key", jsonl(rag(TID, retriever_attrs={
        "retrieval.documents.0.document.metadata": json.dumps({"a\udbff": 1})})),
         "a key of metadata.documents.0.metadata holds a lone surrogate"),
    Case("lone_surrogate_in_langfuse_answer", lf_lines(langfuse("t-good", output="25\udfff days")),
         "field response holds a lone surrogate",
         check=lambda rows: [r["response"] for r in rows] == ["25\ufffd days"]),
]


def run(args: list[str], capsys: pytest.CaptureFixture[str]) -> tuple[int, str, str]:
    code = main(args)
    printed = capsys.readouterr()
    return code, printed.out, printed.err


def strict_rows(path: Path) -> list[dict[str, Any]]:
    """The samples file read as strict JSON in UTF-8: NaN or Infinity fails here."""
    def refuse(token: str) -> Any:
        raise AssertionError(f"{token} in the samples file")
    text = path.read_bytes().decode("utf-8")  # strict: a surrogate written as UTF-8 fails here
    return [json.loads(line, parse_constant=refuse) for line in text.split("\n") if line]


@pytest.mark.parametrize("case", CASES, ids=[c.name for c in CASES])
def test_hostile_export_ends_in_a_clean_import_or_one_line_error(
    case: Case, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    src = tmp_path / "export.json"
    src.write_bytes(case.content)
    out = tmp_path / "samples.jsonl"
    out.write_bytes(PREVIOUS)
    code, printed, errors = run(["import-traces", str(src), "--out", str(out)], capsys)
    said = printed + errors
    assert "Traceback" not in said
    if case.error:
        assert code == 2, said
        assert errors.startswith(f"error: {src}: ") and case.said in errors, errors
        assert len(errors.strip().splitlines()) == 1, errors
        assert out.read_bytes() == PREVIOUS  # nothing written over the previous samples
        return
    assert code == 0, said
    assert case.said in said, said
    rows = strict_rows(out)
    assert case.check(rows), rows
    assert not list(tmp_path.glob(".samples.jsonl.*")), "a temporary file was left"


def test_the_suite_covers_each_class_of_hostile_input() -> None:
    """At least 30 files, and each class of the adversarial pass among them."""
    assert len(CASES) >= 30
    names = " ".join(c.name for c in CASES)
    for word in ("cycle", "loop", "latin1", "utf16", "deep", "1e400", "5000_digit", "nan", "a_string",
                 "null", "surrogate", "langfuse"):
        assert word in names, word


def test_a_lone_surrogate_no_longer_empties_the_previous_samples_file(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """The case the adversarial pass found: the output was opened in place, then the write
    failed on the surrogate and left an empty file. Now the text is repaired and said so; and
    should writing fail anyway, the previous file stays as it was."""
    src = tmp_path / "spans.jsonl"
    src.write_bytes(jsonl(rag(TID, question="Leave?\ud800")))
    out = tmp_path / "samples.jsonl"
    out.write_bytes(PREVIOUS)
    code, printed, errors = run(["import-traces", str(src), "--out", str(out)], capsys)
    assert code == 0, errors
    assert "Repaired 1 x lone surrogate (invalid UTF-16) replaced with U+FFFD" in printed
    assert f"trace {TID}: field question holds a lone surrogate" in errors
    assert strict_rows(out)[0]["question"] == "Leave?\ufffd"


def test_a_failed_write_leaves_the_previous_file_byte_identical(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    src = tmp_path / "spans.jsonl"
    src.write_bytes(jsonl(rag(TID)))
    out = tmp_path / "samples.jsonl"
    out.write_bytes(PREVIOUS)

    def disk_full(fd: int) -> None:  # the write fails as on a full disk, after the rows are written
        raise OSError(28, "No space left on device")

    monkeypatch.setattr(os, "fsync", disk_full)
    code, _, errors = run(["import-traces", str(src), "--out", str(out)], capsys)
    assert code == 2
    assert errors.strip() == (f"error: cannot write {out} (No space left on device); a previous file there "
                              "is unchanged")
    assert out.read_bytes() == PREVIOUS
    assert sorted(p.name for p in tmp_path.iterdir()) == ["samples.jsonl", "spans.jsonl"]


OUT_CASES = [
    ("missing_folder", lambda d: d / "no" / "such" / "s.jsonl", "does not exist"),
    ("a_folder", lambda d: d, "is a folder; give a file name"),
    ("folder_is_a_file", lambda d: d / "spans.jsonl" / "s.jsonl", "is not a folder"),
    ("empty", lambda d: "", "--out is empty"),
    ("the_trace_file", lambda d: d / "spans.jsonl", "is the trace file itself"),
    ("a_hard_link_to_the_trace_file", lambda d: d / "link.jsonl", "is the trace file itself"),
    ("a_pipe", lambda d: d / "pipe", "exists and is not a regular file"),
]


@pytest.mark.parametrize(("name", "where", "said"), OUT_CASES, ids=[c[0] for c in OUT_CASES])
def test_out_is_checked_before_the_trace_file_is_read(
    name: str, where: Callable[[Path], Any], said: str, tmp_path: Path, capsys: pytest.CaptureFixture[str],
    monkeypatch: pytest.MonkeyPatch
) -> None:
    src = tmp_path / "spans.jsonl"
    src.write_bytes(jsonl(rag(TID)))
    if name == "a_hard_link_to_the_trace_file":
        os.link(src, tmp_path / "link.jsonl")
    if name == "a_pipe":
        os.mkfifo(tmp_path / "pipe")
    read: list[Path] = []
    before = Path.read_bytes

    def spy(self: Path) -> bytes:
        read.append(self)
        return before(self)

    monkeypatch.setattr(Path, "read_bytes", spy)
    code, _, errors = run(["import-traces", str(src), "--out", str(where(tmp_path))], capsys)
    assert code == 2 and said in errors, errors
    assert len(errors.strip().splitlines()) == 1 and errors.startswith("error: ")
    assert src not in read  # refused before any work
    assert src.read_bytes() == jsonl(rag(TID))


@pytest.mark.skipif(os.name != "posix" or os.geteuid() == 0, reason="root writes in any folder")
def test_out_in_a_folder_without_write_permission(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    src = tmp_path / "spans.jsonl"
    src.write_bytes(jsonl(rag(TID)))
    locked = tmp_path / "locked"
    locked.mkdir(mode=0o500)
    try:
        code, _, errors = run(["import-traces", str(src), "--out", str(locked / "s.jsonl")], capsys)
    finally:
        locked.chmod(0o700)
    assert code == 2 and "no permission to write in" in errors


def chain(n: int) -> bytes:
    """One trace whose spans form one parent chain n long: an HTTP span (no OpenInference kind)
    at the top, n - 2 CHAIN spans, and the RETRIEVER at the bottom (the shape that was cubic)."""
    top = span(TID, 1, None, "CHAIN", {})
    top["attributes"] = {"http.method": "POST"}
    spans = [top]
    spans += [span(TID, i, i - 1, "CHAIN", {"input.value": "How many days of annual leave?"})
              for i in range(2, n)]
    spans.append(span(TID, n, n - 1, "RETRIEVER", {"retrieval.documents.0.document.content": "25 days."}))
    return jsonl(spans)


@pytest.mark.parametrize("n", [1_000, 10_000])
def test_a_long_span_chain_imports_in_linear_time(n: int, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """1,000 spans in one chain took 38.6 s (cubic); 10,000 now take well under a second on a
    quiet machine. The bound is loose (30 s) so that a loaded machine does not fail the test;
    the cubic walk would need hours for 10,000."""
    src = tmp_path / "chain.jsonl"
    src.write_bytes(chain(n))
    t0 = time.perf_counter()
    code, _printed, errors = run(["import-traces", str(src), "--out", str(tmp_path / "s.jsonl")], capsys)
    took = time.perf_counter() - t0
    assert code == 0, errors
    rows = strict_rows(tmp_path / "s.jsonl")
    assert rows[0]["metadata"]["span_id"] == _sid(2)  # the top-most CHAIN below the HTTP span
    assert took < 30, f"{n} spans took {took:.1f} s"


def test_the_installed_command_prints_no_traceback(tmp_path: Path) -> None:
    """The entry point as a user runs it, on the input that recursed deepest."""
    src = tmp_path / "deep.json"
    src.write_text(nested(100_000), encoding="utf-8")
    env = {**os.environ, "PYTHONPATH": str(Path(ragsight.__file__).resolve().parents[1])}  # the code under test
    done = subprocess.run([sys.executable, "-m", "ragsight.cli", "import-traces", str(src), "--out",
                           str(tmp_path / "s.jsonl")], capture_output=True, text=True, env=env, timeout=120)
    assert done.returncode == 2
    assert done.stderr.strip() == (f"error: {src}: the JSON is nested too deep to read (a trace export nests "
                                   "about 20 levels; this one more than 100)")
    assert not (tmp_path / "s.jsonl").exists()
