"""Nothing acknowledged is lost: a monitor killed with SIGKILL while the real OTLP exporter sends
and while a batch is being judged keeps every span it answered 200 for; started again on the same
store it assembles, samples and judges the rest, each sampled request judged once."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import threading
import time
from pathlib import Path
from typing import Any

import pytest

pytest.importorskip("opentelemetry.exporter.otlp.proto.http")

from ragsight.store import Store
from tests.integration.monitor_world import (
    close_all,
    send_requests,
    status_json,
    tracer_for,
    wait_for,
)

CHILD = Path(__file__).with_name("monitor_child.py")


@pytest.fixture(autouse=True)
def _exporters_closed() -> Any:
    yield
    close_all()


def start(store: Path, *args: str) -> tuple[subprocess.Popen[str], int]:
    proc = subprocess.Popen([sys.executable, str(CHILD), str(store), *args], stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True, env={**os.environ, "PYTHONPATH": os.pathsep.join(sys.path)})
    assert proc.stdout is not None
    line = proc.stdout.readline()
    if not line.startswith("PORT "):
        proc.kill()
        raise AssertionError(f"the monitor did not start: {line!r} {proc.stderr.read() if proc.stderr else ''}")
    return proc, int(line.split()[1])


def close(proc: subprocess.Popen[str]) -> None:
    for f in (proc.stdout, proc.stderr):
        if f is not None:
            f.close()


def stored_spans(store: Path) -> set[tuple[str, str]]:
    with Store(str(store), create=False) as st:
        return {(str(t), str(s)) for t, s in st.conn.execute("SELECT trace_id, span_id FROM monitor_spans")}


def test_kill_9_loses_no_acknowledged_span_and_a_restart_finishes_the_work(tmp_path: Path) -> None:
    store = tmp_path / "prod.db"
    proc, port = start(store, "--delay", "0.05")
    tracer, sent = tracer_for(port, timeout=1)
    send_requests(tracer, 8)  # these complete; a batch starts judging them slowly
    wait_for(lambda: status_json(str(store))["pending"] > 0 or status_json(str(store))["evaluated"] > 0, 20)
    killed = threading.Event()

    def keep_sending() -> None:
        n = 8
        while not killed.is_set():
            send_requests(tracer, 1, offset=n)
            n += 1

    sending = threading.Thread(target=keep_sending)
    sending.start()
    time.sleep(0.5)  # mid-stream, mid-batch
    proc.send_signal(signal.SIGKILL)
    proc.wait(10)
    close(proc)
    killed.set()
    sending.join(60)
    acked = sent.acknowledged()
    assert len(acked) >= 24  # the first 8 requests at least
    assert acked <= stored_spans(store)  # every span answered 200 is in the store
    before = status_json(str(store))
    assert before["evaluated"] < before["received"]  # killed with work left
    proc, port = start(store)
    try:
        tracer2, sent2 = tracer_for(port)
        send_requests(tracer2, 2, offset=100)
        # a trace the kill cut short (its root span never acknowledged) is read after max_open_s
        wait_for(lambda: (lambda s: s["pending"] == 0 and s["open"] == 0 and s["received"] >= before["received"] + 2)(
            status_json(str(store))), 60)
    finally:
        proc.send_signal(signal.SIGTERM)
        out, err = proc.communicate(timeout=60)
    assert "STOPPED" in out, err
    after = status_json(str(store))
    assert acked | sent2.acknowledged() <= stored_spans(store)
    with Store(str(store), create=False) as st:
        judged = st.conn.execute("SELECT sample_id, count(*) FROM samples s JOIN runs r ON r.id = s.run_id"
                                 " WHERE s.finished=1 GROUP BY sample_id HAVING count(*) > 1").fetchall()
        assert judged == []  # no request judged twice
        evaluated = {str(r[0]) for r in st.conn.execute("SELECT trace_id FROM monitor_requests WHERE state='evaluated'")}
        finished = {str(r[0]) for r in st.conn.execute("SELECT sample_id FROM samples WHERE finished=1")}
        assert evaluated == finished
        statuses = {str(r[0]) for r in st.conn.execute("SELECT status FROM runs")}
        assert statuses <= {"completed"}  # the batch the kill cut was resumed to its end
    assert after["not_evaluated"] == 0 and after["sampled"] == after["received"]
    assert after["evaluated"] == after["sampled"] - after["skipped"]
    assert after["evaluated"] > before["evaluated"]
    # every trace with a stored span is a request, and one the client sent: its acknowledged
    # traces, and any whose span was stored while its answer was cut off (by the kill, or by the
    # client's time-out on a busy machine)
    acked_traces = {t for t, _ in acked | sent2.acknowledged()}
    produced = {t for t, _, _ in sent.results + sent2.results}
    stored_traces = {t for t, _ in stored_spans(store)}
    assert acked_traces <= stored_traces <= produced
    assert len(stored_traces) == after["received"]


def test_sigterm_stops_cleanly_and_a_restart_goes_on(tmp_path: Path) -> None:
    store = tmp_path / "prod.db"
    proc, port = start(store, "--delay", "0.2")
    tracer, sent = tracer_for(port)
    send_requests(tracer, 6)
    wait_for(lambda: status_json(str(store))["pending"] > 0, 20)
    proc.send_signal(signal.SIGTERM)
    out, err = proc.communicate(timeout=60)
    assert proc.returncode == 0 and "STOPPED" in out, err
    assert sent.acknowledged() <= stored_spans(store)
    mid = status_json(str(store))
    assert mid["received"] == 6 and mid["evaluated"] < 6
    proc, port = start(store)
    try:
        wait_for(lambda: status_json(str(store))["evaluated"] == 6, 60)
    finally:
        proc.send_signal(signal.SIGTERM)
        proc.communicate(timeout=60)
