"""``ragsight monitor`` end to end in this process: the real OpenTelemetry SDK and its OTLP/HTTP
exporter send RAG requests to the receiver on 127.0.0.1; the scripted world judges the sampled
ones in micro-batches; the results are runs of the store, the windows and alerts follow, and the
receiver keeps serving through garbage, limits and missing tokens."""

from __future__ import annotations

import gzip
import http.client
import json
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any, ClassVar

import pytest

pytest.importorskip("opentelemetry.exporter.otlp.proto.http")

from ragsight.errors import ConfigError
from ragsight.judge import Judge, JudgeSpec
from ragsight.monitor import (
    EvalSettings,
    Limits,
    Monitor,
    MonitorConfig,
    is_sampled,
    parse_alert,
)
from ragsight.result import load_result
from ragsight.store import Store
from tests.fakes.scripted_world import provider
from tests.integration.monitor_world import (
    close_all,
    send_requests,
    status_json,
    tracer_for,
    wait_for,
)


@pytest.fixture(autouse=True)
def _exporters_closed() -> Any:
    yield
    close_all()


def config(store: Path, **kw: Any) -> MonitorConfig:
    judge = kw.pop("judge", JudgeSpec(Judge(provider())))
    evaluation = EvalSettings(metrics=["faithfulness"], judge=judge, batch_size=kw.pop("batch_size", 4),
                              poll_s=0.05, max_cost_per_day=kw.pop("max_cost_per_day", None), retry_s=0.2)
    return MonitorConfig(store=str(store), port=0, settle_s=kw.pop("settle_s", 0.3), tick_s=0.05,
                         evaluation=evaluation, **kw)


@pytest.fixture
def running(tmp_path: Path) -> Any:
    made: list[Monitor] = []

    def start(**kw: Any) -> Monitor:
        m = Monitor(config(tmp_path / "prod.db", **kw))
        m.start()
        made.append(m)
        return m

    yield start
    for m in made:
        m.stop()


def post(port: int, body: bytes, headers: dict[str, str] | None = None, path: str = "/v1/traces") -> tuple[int, bytes]:
    conn = http.client.HTTPConnection("127.0.0.1", port, timeout=10)
    try:
        conn.request("POST", path, body=body, headers={"Content-Type": "application/x-protobuf", **(headers or {})})
        r = conn.getresponse()
        return r.status, r.read()
    finally:
        conn.close()


def test_sdk_traces_are_stored_sampled_judged_and_land_as_runs(tmp_path: Path, running: Any) -> None:
    m = running(sample=0.5, seed=3)
    tracer, sent = tracer_for(m.port)
    ids = send_requests(tracer, 12)
    assert len(sent.acknowledged()) == 36  # 3 spans a request, each acknowledged
    chosen = [t for t in ids if is_sampled(t, 3, 0.5)]
    assert 0 < len(chosen) < 12
    store = str(tmp_path / "prod.db")
    # every request assembled (an unsampled one may still be settling when the sampled ones are judged)
    wait_for(lambda: (now := status_json(store))["evaluated"] == len(chosen) and now["open"] == 0)
    s = status_json(store)
    assert (s["received"], s["sampled"], s["pending"], s["unsampled"]) == (12, len(chosen), 0, 12 - len(chosen))
    assert all(isinstance(s[k], int) for k in ("received", "sampled", "evaluated", "pending"))
    with Store(store, create=False) as st:
        runs = [r for r in st.runs() if r.metadata.get("source") == "ragsight monitor"]
        judged = {sid for r in runs for sid in st.sample_ids(r.id)}
        assert judged == set(chosen)
        result = load_result(st, runs[0].id)
        assert "faithfulness" in result.summary
        one = runs[0].id
        sid = st.sample_ids(one)[0]
        calls = st.judge_calls(one, sid)
        assert calls and st.sample(one, sid).question.startswith(("What", "Can", "How"))
    w = s["windows"][-1]
    assert w["metrics"]["faithfulness"]["n_scored"] + w["metrics"]["faithfulness"]["counts"]["undetermined"] \
        + w["metrics"]["faithfulness"]["counts"]["failed"] == len(chosen)


def test_garbage_gets_400_and_the_receiver_keeps_serving(tmp_path: Path, running: Any) -> None:
    m = running(sample=0.0)
    assert post(m.port, b"\xff\xfe garbage")[0] == 400
    assert post(m.port, b"{nope", {"Content-Type": "application/json"})[0] == 400
    assert post(m.port, gzip.compress(b"junk"), {"Content-Encoding": "gzip"})[0] == 400
    assert post(m.port, b"", path="/v1/metrics")[0] == 404
    tracer, sent = tracer_for(m.port, gzip=False)
    send_requests(tracer, 2)
    assert len(sent.acknowledged()) == 6
    wait_for(lambda: status_json(str(tmp_path / "prod.db"))["unsampled"] == 2)
    assert m.receiver.counters["refused_malformed"] == 3


def test_limits_answer_413(tmp_path: Path, running: Any) -> None:
    m = running(sample=0.0, limits=Limits(max_bytes=4096, max_spans=2))
    assert post(m.port, b"x" * 5000)[0] == 413
    tracer, sent = tracer_for(m.port)
    send_requests(tracer, 1)  # one span a request: within the limits
    assert len(sent.acknowledged()) == 3
    from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import ExportTraceServiceRequest
    from opentelemetry.proto.trace.v1.trace_pb2 import ResourceSpans, ScopeSpans, Span

    spans = [Span(trace_id=b"\1" * 16, span_id=bytes([i + 1]) * 8, name="x") for i in range(3)]
    body = ExportTraceServiceRequest(resource_spans=[ResourceSpans(scope_spans=[ScopeSpans(spans=spans)])])
    assert post(m.port, body.SerializeToString())[0] == 413
    assert post(m.port, gzip.compress(b"\0" * 100_000), {"Content-Encoding": "gzip"})[0] == 413
    assert status_json(str(tmp_path / "prod.db"))["received"] == 1  # nothing of the refused ones


def test_default_bind_is_loopback_and_elsewhere_needs_a_token(tmp_path: Path) -> None:
    assert MonitorConfig(store="x").host == "127.0.0.1"
    with pytest.raises(ConfigError, match="--token"):
        Monitor(config(tmp_path / "a.db", host="0.0.0.0"))
    m = Monitor(config(tmp_path / "b.db", host="0.0.0.0", token="s3cret", sample=0.0))
    m.start()
    try:
        assert post(m.port, b"")[0] == 401
        assert post(m.port, b"", {"Authorization": "Bearer wrong"})[0] == 401
        tracer, sent = tracer_for(m.port, token="s3cret")
        send_requests(tracer, 1)
        assert len(sent.acknowledged()) == 3
        bad_tracer, refused = tracer_for(m.port, token="nope", timeout=2)
        send_requests(bad_tracer, 1)
        assert refused.acknowledged() == set()
    finally:
        m.stop()


def test_json_export_is_answered_in_json(tmp_path: Path, running: Any) -> None:
    m = running(sample=0.0)
    doc = {"resourceSpans": [{"scopeSpans": [{"spans": [
        {"traceId": "ab" * 16, "spanId": "01" * 8, "name": "rag", "startTimeUnixNano": "1700000000000000000",
         "endTimeUnixNano": "1700000001000000000"}]}]}]}
    status, body = post(m.port, json.dumps(doc).encode(), {"Content-Type": "application/json"})
    assert (status, json.loads(body)) == (200, {})
    assert status_json(str(tmp_path / "prod.db"))["received"] == 1


class _Hook(BaseHTTPRequestHandler):
    got: ClassVar[list[dict[str, Any]]] = []
    fail_first: ClassVar[int] = 0

    def do_POST(self) -> None:
        body = self.rfile.read(int(self.headers["Content-Length"]))
        if _Hook.fail_first > 0:
            _Hook.fail_first -= 1
            self.send_response(503)
            self.send_header("Content-Length", "0")
            self.end_headers()
            return
        _Hook.got.append(json.loads(body))
        self.send_response(204)
        self.end_headers()

    def log_message(self, *args: Any) -> None:
        pass


def test_alerts_go_to_the_log_the_webhook_retried_and_the_store(tmp_path: Path, running: Any) -> None:
    hook = ThreadingHTTPServer(("127.0.0.1", 0), _Hook)
    threading.Thread(target=hook.serve_forever, daemon=True).start()
    _Hook.got, _Hook.fail_first = [], 1  # the first POST fails: sent again
    said: list[str] = []
    try:
        m = Monitor(config(tmp_path / "prod.db", sample=1.0, alerts=(parse_alert("faithfulness<1.01"),),
                           min_scored=2, webhook=f"http://127.0.0.1:{hook.server_address[1]}/hook"),
                    say=said.append)
        m.sinks.pause_s = 0.05
        m.start()
        try:
            tracer, _ = tracer_for(m.port)
            send_requests(tracer, 6)
            wait_for(lambda: bool(_Hook.got))
        finally:
            m.stop()
    finally:
        hook.shutdown()
        hook.server_close()
    alert = _Hook.got[0]
    assert alert["kind"] == "below" and alert["metric"] == "faithfulness" and alert["n_scored"] >= 2
    assert any(line.startswith("ragsight monitor: ALERT below: faithfulness") for line in said)
    s = status_json(str(tmp_path / "prod.db"))
    assert s["alerts"] and s["alerts"][0]["delivered"] is True


def test_the_days_budget_leaves_requests_not_evaluated_with_the_reason(tmp_path: Path, running: Any) -> None:
    from tests.fakes.openai_server import FakeOpenAIServer, Reply

    with FakeOpenAIServer() as srv:
        srv.handler = lambda req: Reply.chat('{"claims": ["Refunds are accepted."]}', usage=(100_000, 0))
        judge = JudgeSpec("openai:fake-model", base_url=srv.url, prices={"fake-model": (1.0, 1.0)})
        m = running(sample=1.0, judge=judge, max_cost_per_day=0.5, batch_size=2)
        tracer, _ = tracer_for(m.port)
        send_requests(tracer, 5)
        store = str(tmp_path / "prod.db")
        wait_for(lambda: status_json(store)["pending"] == 0 and status_json(store)["sampled"] == 5)
    s = status_json(store)
    assert s["not_evaluated"] >= 1
    assert any("budget" in why for why in s["not_evaluated_reasons"])
    # calls in flight when the limit is reached may each add one call's cost ($0.10)
    assert 0 < s["budget"]["spent_usd"] < 1.0 and s["budget"]["limit_usd"] == 0.5
    assert s["evaluated"] + s["not_evaluated"] == 5


def test_the_viewer_shows_the_windows_and_opens_a_production_sample_to_label(tmp_path: Path, running: Any) -> None:
    import re

    from ragsight.view import ViewApp

    m = running(sample=1.0, alerts=(parse_alert("faithfulness<1.01"),), min_scored=2)
    tracer, _ = tracer_for(m.port)
    ids = send_requests(tracer, 5)
    store = str(tmp_path / "prod.db")
    wait_for(lambda: status_json(store)["evaluated"] == 5)
    app = ViewApp(store, index_path=":memory:")
    try:
        h = {"host": "127.0.0.1:8765"}
        home = app.handle("GET", "/", h).body.decode()
        assert 'href="/monitor"' in home
        page = app.handle("GET", "/monitor", h)
        html = page.body.decode()
        assert page.status == 200 and page.headers.get("Refresh") == "10"
        assert 'data-key="received">5<' in html and 'data-key="evaluated">5<' in html
        assert 'class="monitor-chart"' in html and "faithfulness" in html
        assert 'id="monitor-alerts"' in html and "is below 1.01" in html
        window = re.search(r'href="(/monitor/window/[^"]+)"', html)
        assert window is not None
        listing = app.handle("GET", window.group(1).replace("&amp;", "&"), h).body.decode()
        links = re.findall(r'href="(/run/[^"]+/sample/[^"]+)"', listing)
        assert {link.rsplit("/", 1)[1] for link in links} == set(ids)
        sample = app.handle("GET", links[0], h)
        assert sample.status == 200 and "faithfulness" in sample.body.decode()
        run_id, sample_id = links[0].split("/")[2], links[0].split("/")[4]
        posted = app.handle("POST", "/api/labels", {**h, "content-type": "application/json"},
                            json.dumps({"run": run_id, "sample": sample_id, "metric": "faithfulness", "claim": None,
                                        "value": 1, "who": "ana"}).encode())
        assert posted.status == 200, posted.body
    finally:
        app.close()
    with Store(store, create=False) as st:  # where calibrate reads labels from
        assert [(lb.sample_id, lb.value) for lb in st.labels(run_id)] == [(sample_id, 1.0)]


def test_the_daily_budget_resets_with_the_utc_day(tmp_path: Path) -> None:
    import json as _json

    from ragsight.monitor import Evaluator
    from ragsight.monitor._assemble import assemble_due
    from ragsight.monitor._ledger import record_spans, utc_day
    from ragsight.monitor._otlp import decode_request
    from tests.unit.test_monitor_parts import rag_spans, request

    store = str(tmp_path / "prod.db")
    day1, day2 = 1_796_600_000.0, 1_796_600_000.0 + 86_400
    with Store(store) as st:
        for n in range(4):
            spans, _ = decode_request(request(rag_spans(bytes([n + 1] * 16))), "", "", max_bytes=1 << 20,
                                      max_spans=10)
            record_spans(st.conn, spans, now=day1 - 100)
        assert assemble_due(st.conn, day1, settle_s=1, max_open_s=300, seed=0, rate=1.0, max_queue=2) == {
            "queued": 2, "not_evaluated": 2}
        st.conn.execute("INSERT INTO monitor_state VALUES (?, '0.5')", (f"spent:{utc_day(day1)}",))  # spent
    now = [day1]
    judge = JudgeSpec(Judge(provider()), prices={"scripted-world": (1.0, 1.0)})
    ev = Evaluator(store, EvalSettings(metrics=["faithfulness"], judge=judge, max_cost_per_day=0.5, poll_s=0.05),
                   clock=lambda: now[0])
    ev.start()
    try:
        wait_for(lambda: status_json(store)["pending"] == 0)
        s = status_json(store)
        assert s["evaluated"] == 0 and any("budget" in r for r in s["not_evaluated_reasons"])
        with Store(store) as st:  # two more requests the next day: a new day's budget
            for n in range(4, 6):
                spans, _ = decode_request(request(rag_spans(bytes([n + 1] * 16))), "", "", max_bytes=1 << 20,
                                          max_spans=10)
                record_spans(st.conn, spans, now=day2 - 100)
            now[0] = day2
            assert assemble_due(st.conn, day2, settle_s=1, max_open_s=300, seed=0, rate=1.0, max_queue=10) == {
                "queued": 2}
        wait_for(lambda: status_json(store)["evaluated"] == 2)
    finally:
        ev.stop()
    with Store(store, create=False) as st:
        spent = dict(st.conn.execute("SELECT key, value FROM monitor_state WHERE key LIKE 'spent:%'").fetchall())
    assert len(spent) == 2 and all(_json.loads(v) >= 0 for v in spent.values())


def test_a_window_significantly_below_a_baseline_run_is_an_alert_in_status(
        tmp_path: Path, running: Any, capsys: pytest.CaptureFixture[str]) -> None:
    from ragsight.cli import main
    from ragsight.monitor import load_baseline
    from tests.unit.test_report_data import put_run

    runs = tmp_path / "runs.db"
    with Store(runs) as st:  # a run as evaluate stores it: faithfulness all but perfect
        put_run(st, "eval-before", {"faithfulness": {f"s{i}": 1.0 for i in range(20)}})
        baseline = load_baseline(st, "eval-before", metrics=["faithfulness"], min_scored=5)
    m = running(sample=1.0, min_scored=5, alpha=0.1, baseline=baseline)
    tracer, _ = tracer_for(m.port)
    send_requests(tracer, 9)  # the scripted judge finds one of the three answers half supported
    store = str(tmp_path / "prod.db")
    wait_for(lambda: any(a["kind"] == "baseline" for a in status_json(store)["alerts"]))
    s = status_json(store)
    (a,) = [a for a in s["alerts"] if a["kind"] == "baseline"]
    assert a["metric"] == "faithfulness" and a["baseline_run"] == "eval-before" and a["baseline_n"] == 20
    assert a["n_scored"] >= 5 and a["mean"] < 1.0 and 0 < a["p_value"] < 0.1
    assert "below the baseline run eval-before" in a["message"]
    assert s["settings"]["baseline_run"] == "eval-before"
    assert s["baseline"]["metrics"]["faithfulness"] == {"mean": 1.0, "n_scored": 20}
    # monitor check reads the baseline the monitor kept, though its run is in another store
    capsys.readouterr()
    assert main(["monitor", "check", "--store", store, "--json"]) == 1
    got = json.loads(capsys.readouterr().out)
    assert got["baseline_run"] == "eval-before" and "baseline" in {a["kind"] for a in got["alerts"]}
    m.stop()  # started again without --baseline: it runs without one
    running(sample=1.0).stop()
    s = status_json(store)
    assert s["baseline"] is None and s["settings"]["baseline_run"] is None
