"""The monitor's parts without a server: OTLP bodies decoded (protobuf, JSON, gzip, limits,
garbage), the sampling decision, OpenLLMetry spans read as OpenInference ones, a request's
assembly and the windows and alerts."""

from __future__ import annotations

import gzip
import json
import math
import random

import pytest

pytest.importorskip("opentelemetry.proto")

from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import ExportTraceServiceRequest
from opentelemetry.proto.common.v1.common_pb2 import AnyValue, KeyValue
from opentelemetry.proto.trace.v1.trace_pb2 import ResourceSpans, ScopeSpans, Span

from ragsight.errors import ConfigError
from ragsight.monitor import (
    DecodeError,
    TooLarge,
    decode_request,
    find_alerts,
    is_sampled,
    parse_alert,
    parse_window,
    windows,
)
from ragsight.monitor._assemble import assemble_due
from ragsight.monitor._genai import as_openinference
from ragsight.monitor._ledger import record_spans
from ragsight.store import Store

TRACE = bytes(range(16))
LIMITS = {"max_bytes": 1 << 20, "max_spans": 100}


def kv(key: str, value: str) -> KeyValue:
    return KeyValue(key=key, value=AnyValue(string_value=value))


def span(span_id: int, parent: int | None, attrs: dict[str, str], trace: bytes = TRACE, start: int = 1_700_000_000,
         name: str = "s") -> Span:
    return Span(trace_id=trace, span_id=span_id.to_bytes(8, "big"),
                parent_span_id=parent.to_bytes(8, "big") if parent else b"", name=name,
                start_time_unix_nano=start * 10**9, end_time_unix_nano=(start + 1) * 10**9,
                attributes=[kv(k, v) for k, v in attrs.items()])


def rag_spans(trace: bytes = TRACE, question: str = "What is the refund window?",
              answer: str = "Refunds are accepted within 30 days.") -> list[Span]:
    return [
        span(1, None, {"openinference.span.kind": "CHAIN", "input.value": question, "output.value": answer},
             trace, name="rag"),
        span(2, 1, {"openinference.span.kind": "RETRIEVER", "input.value": question,
                    "retrieval.documents.0.document.content": "Refunds within 30 days of purchase.",
                    "retrieval.documents.0.document.id": "doc-1"}, trace, name="retrieve"),
    ]


def request(spans: list[Span]) -> bytes:
    return ExportTraceServiceRequest(resource_spans=[ResourceSpans(scope_spans=[ScopeSpans(spans=spans)])]
                                     ).SerializeToString()


def test_protobuf_gzip_and_json_decode_to_the_same_spans() -> None:
    body = request(rag_spans())
    got, as_json = decode_request(body, "application/x-protobuf", "", **LIMITS)
    assert not as_json and [(s.trace_id, s.span_id, s.parent_id) for s in got] == [
        (TRACE.hex(), "0000000000000001", None), (TRACE.hex(), "0000000000000002", "0000000000000001")]
    zipped, _ = decode_request(gzip.compress(body), "application/x-protobuf", "gzip", **LIMITS)
    assert [s.data for s in zipped] == [s.data for s in got]
    doc = {"resourceSpans": [{"scopeSpans": [{"spans": [
        {"traceId": TRACE.hex(), "spanId": "0000000000000001", "name": "rag", "startTimeUnixNano": "1",
         "endTimeUnixNano": "2", "attributes": [{"key": "input.value", "value": {"stringValue": "q"}}]}]}]}]}
    from_json, as_json = decode_request(json.dumps(doc).encode(), "application/json", "", **LIMITS)
    assert as_json and from_json[0].trace_id == TRACE.hex() and from_json[0].parent_id is None
    decoded = Span.FromString(from_json[0].data)
    assert decoded.attributes[0].value.string_value == "q"


@pytest.mark.parametrize(("body", "ctype", "encoding"), [
    (b"\xff\x00garbage", "application/x-protobuf", ""),
    (b"{not json", "application/json", ""),
    (b'{"resourceSpans": 3}', "application/json", ""),
    (json.dumps({"resourceSpans": [{"scopeSpans": [{"spans": [{"traceId": "zz", "spanId": "01"}]}]}]}).encode(),
     "application/json", ""),
    (b"not gzip", "application/x-protobuf", "gzip"),
    (b"x", "text/plain", ""),
    (b"x", "application/x-protobuf", "br"),
])
def test_a_body_that_is_not_an_otlp_export_is_a_decode_error(body: bytes, ctype: str, encoding: str) -> None:
    with pytest.raises(DecodeError):
        decode_request(body, ctype, encoding, **LIMITS)


def test_a_span_without_ids_is_refused() -> None:
    with pytest.raises(DecodeError, match="trace id"):
        decode_request(request([Span(name="x")]), "application/x-protobuf", "", **LIMITS)


def test_limits_on_spans_and_on_what_gzip_inflates_to() -> None:
    many = [span(i + 1, None, {}, name="x") for i in range(5)]
    with pytest.raises(TooLarge, match="more than 4 spans"):
        decode_request(request(many), "application/x-protobuf", "", max_bytes=1 << 20, max_spans=4)
    bomb = gzip.compress(b"\0" * (2 << 20))  # 2 MB of zeros in a few kB
    assert len(bomb) < 10_000
    with pytest.raises(TooLarge, match="inflates"):
        decode_request(bomb, "application/x-protobuf", "gzip", max_bytes=1 << 20, max_spans=10)


def test_sampling_is_a_function_of_the_trace_id_and_the_seed() -> None:
    ids = [f"{random.Random(i).getrandbits(128):032x}" for i in range(4000)]
    first = [t for t in ids if is_sampled(t, seed=7, rate=0.25)]
    again = [t for t in reversed(ids) if is_sampled(t, seed=7, rate=0.25)]
    assert sorted(first) == sorted(again)  # any order, same decisions
    assert abs(len(first) / len(ids) - 0.25) < 0.03
    other = {t for t in ids if is_sampled(t, seed=8, rate=0.25)}
    assert other != set(first)  # the seed changes which
    assert {t for t in ids if is_sampled(t.upper(), 7, 0.25)} == set(first)
    assert all(is_sampled(t, 7, 1.0) for t in ids[:10]) and not any(is_sampled(t, 7, 0.0) for t in ids[:10])


def test_openllmetry_spans_are_read_as_openinference() -> None:
    def attrs(**kw: str) -> list[dict[str, object]]:
        return [{"key": k.replace("__", "."), "value": {"stringValue": v}} for k, v in kw.items()]

    docs = json.dumps([{"page_content": "Refunds within 30 days.", "metadata": {"source": "faq"}, "id": "d1"}])
    doc = {"resourceSpans": [{"scopeSpans": [{"spans": [
        {"traceId": TRACE.hex(), "spanId": "01" * 8, "name": "rag.workflow",
         "attributes": attrs(traceloop__span__kind="workflow", traceloop__entity__input='{"question": "Refund?"}',
                             traceloop__entity__output="30 days.")},
        {"traceId": TRACE.hex(), "spanId": "02" * 8, "parentSpanId": "01" * 8,
         "attributes": attrs(traceloop__span__kind="task", traceloop__entity__name="retrieve_docs",
                             traceloop__entity__output=docs)},
        {"traceId": TRACE.hex(), "spanId": "03" * 8, "parentSpanId": "01" * 8,
         "attributes": attrs(gen_ai__system="openai", gen_ai__prompt__0__role="user", gen_ai__prompt__0__content="Refund?",
                             gen_ai__completion__0__content="Within 30 days.")},
    ]}]}]}
    from ragsight.integrations import traces_from_records

    rows = traces_from_records([as_openinference(doc)], "otlp").rows
    assert len(rows) == 1
    assert rows[0]["question"] == "Refund?" and rows[0]["contexts"] == ["Refunds within 30 days."]
    assert rows[0]["response"] == "30 days." and rows[0]["retrieved_ids"] == ["d1"]


def test_assembly_waits_for_the_root_and_the_settle_time(tmp_path: object) -> None:
    st = Store(":memory:")
    conn = st.conn
    spans = rag_spans()
    child, root = decode_request(request([spans[1]]), "", "", **LIMITS)[0], \
        decode_request(request([spans[0]]), "", "", **LIMITS)[0]
    record_spans(conn, child, now=100.0)
    args = {"settle_s": 5.0, "max_open_s": 300.0, "seed": 0, "rate": 1.0, "max_queue": 10}
    assert assemble_due(conn, 200.0, **args) == {}  # no root yet
    record_spans(conn, root, now=201.0)
    record_spans(conn, root, now=202.0)  # an exporter sending again: kept once
    assert conn.execute("SELECT spans FROM monitor_requests").fetchone()[0] == 2
    assert assemble_due(conn, 205.0, **args) == {}  # quiet for 3 s only
    assert assemble_due(conn, 207.5, **args) == {"queued": 1}
    sample = json.loads(conn.execute("SELECT sample FROM monitor_requests").fetchone()[0])
    assert sample["question"] == "What is the refund window?" and sample["id"] == TRACE.hex()
    # a trace without a retriever is kept as skipped, with the reader's reason
    other = bytes(16 * [9])
    record_spans(conn, decode_request(request([span(5, None, {"openinference.span.kind": "LLM"}, other)]), "", "",
                                      **LIMITS)[0], now=300.0)
    assert assemble_due(conn, 310.0, **args) == {"skipped": 1}
    reason = conn.execute("SELECT reason FROM monitor_requests WHERE trace_id=?", (other.hex(),)).fetchone()[0]
    assert "RETRIEVER" in reason


def test_a_full_queue_counts_new_requests_as_not_evaluated() -> None:
    st = Store(":memory:")
    for n in range(3):
        trace = bytes([n + 1] * 16)
        record_spans(st.conn, decode_request(request(rag_spans(trace)), "", "", **LIMITS)[0], now=0.0)
    assert assemble_due(st.conn, 100.0, settle_s=1, max_open_s=300, seed=0, rate=1.0, max_queue=2) == {
        "queued": 2, "not_evaluated": 1}
    reason = st.conn.execute("SELECT reason FROM monitor_requests WHERE state='not_evaluated'").fetchone()[0]
    assert "could not keep up" in reason


def _scores(st: Store, metric: str, values_by_window: list[list[float]], w: float = 60.0) -> None:
    n = 0
    for k, values in enumerate(values_by_window):
        for v in values:
            n += 1
            st.conn.execute("INSERT INTO monitor_scores VALUES (?,?,?,?,?)",
                            (f"t{n}", metric, "scored", v, k * w + 1 + n * 1e-3))
    st.conn.execute("INSERT INTO monitor_scores VALUES ('u1', ?, 'undetermined', NULL, 1.0)", (metric,))


def test_windows_means_cis_counts_and_alerts() -> None:
    st = Store(":memory:")
    good = [0.9, 0.95, 0.85, 0.9, 1.0, 0.92, 0.88, 0.91, 0.94, 0.9]
    bad = [0.5, 0.6, 0.55, 0.4, 0.65, 0.5, 0.45, 0.6, 0.52, 0.58]
    _scores(st, "faithfulness", [good, good, bad])
    ws = windows(st.conn, 60.0)
    assert [w.start for w in ws] == [0.0, 60.0, 120.0]
    first = ws[0].metrics["faithfulness"]
    assert first.scored == 10 and first.counts["undetermined"] == 1
    assert math.isclose(first.mean or 0, sum(good) / 10)
    assert first.ci_low is not None and first.ci_high is not None and first.ci_low < first.mean < first.ci_high
    alerts = find_alerts(ws, [parse_alert("faithfulness<0.7")], min_scored=10, alpha=0.01)
    kinds = {(a.window_start, a.kind) for a in alerts}
    assert kinds == {(120.0, "below"), (120.0, "drop")}
    drop = next(a for a in alerts if a.kind == "drop")
    assert drop.detail["p_value"] < 0.01 and "p=" in drop.message
    # too few scored values: no alert at all
    assert find_alerts(ws, [parse_alert("faithfulness<0.7")], min_scored=11) == []


def test_window_and_alert_flags_are_checked() -> None:
    assert parse_window("90s") == 90 and parse_window("15m") == 900 and parse_window("1h") == 3600
    assert parse_window("1d") == 86400
    for bad in ("", "1", "0h", "1w", "h"):
        with pytest.raises(ConfigError):
            parse_window(bad)
    rule = parse_alert("faithfulness<0.7")
    assert (rule.metric, rule.op, rule.value) == ("faithfulness", "<", 0.7)
    assert parse_alert("noise_sensitivity > 0.3").fires(0.5)
    for bad in ("faithfulness", "faithfulness<", "<0.7", "faithfulness=0.7"):
        with pytest.raises(ConfigError):
            parse_alert(bad)
