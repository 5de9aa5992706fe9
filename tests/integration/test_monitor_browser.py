"""The viewer's monitor pages in a real browser (headless Chromium over the DevTools protocol,
``tests/cdp.py``), over a store the monitor wrote from traces the real OpenTelemetry exporter
sent: the windows per metric with mean, CI and counts, the chart, the alerts (a rule's and a
baseline run's), a window's requests opening their sample pages; no script error or policy
violation, and a hostile question shown as text. Screenshots go under the test's tmp_path, or
to $RAGSIGHT_TEST_ARTIFACTS when set.

Needs /usr/bin/chromium (scripts/ci_system_deps.sh installs it); skipped without it, except in CI.
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

import pytest

pytest.importorskip("opentelemetry.exporter.otlp.proto.http")

from ragsight.monitor import Monitor, load_baseline, parse_alert
from ragsight.store import Store
from ragsight.view import make_server
from tests.cdp import Browser
from tests.integration.monitor_world import (
    close_all,
    rag_request,
    send_requests,
    status_json,
    tracer_for,
    wait_for,
)
from tests.integration.test_monitor import config
from tests.integration.test_report_browser import artifacts, chromium
from tests.unit.test_report_data import put_run

pytestmark = pytest.mark.slow  # a monitor, a browser and three pages: about 10 s

HOSTILE = 'Is <img src=x onerror="document.body.dataset.pwned=1"> allowed? <script>document.title="x"</script>'


@pytest.fixture(autouse=True)
def _exporters_closed() -> Any:
    yield
    close_all()


def monitored(tmp_path: Path) -> tuple[str, list[str]]:
    """A store the monitor wrote: 10 requests judged by the scripted world (one with a hostile
    question), a below-rule alert and a baseline alert against a stored run."""
    runs = tmp_path / "runs.db"
    with Store(runs) as st:
        put_run(st, "eval-before", {"faithfulness": {f"s{i}": 1.0 for i in range(20)}})
        baseline = load_baseline(st, "eval-before", metrics=["faithfulness"], min_scored=5)
    store = str(tmp_path / "prod.db")
    m = Monitor(config(tmp_path / "prod.db", sample=1.0, alerts=(parse_alert("faithfulness<0.95"),),
                       min_scored=5, alpha=0.1, baseline=baseline))
    m.start()
    try:
        tracer, _ = tracer_for(m.port)
        ids = send_requests(tracer, 9)
        ids.append(rag_request(tracer, HOSTILE, "Refunds are accepted within 30 days of purchase.",
                               ["Refunds are accepted within 30 days of purchase with a receipt."]))
        wait_for(lambda: status_json(store)["evaluated"] == 10
                 and {a["kind"] for a in status_json(store)["alerts"]} >= {"below", "baseline"}, 60)
    finally:
        m.stop()
    return store, ids


def test_the_monitor_pages_in_a_browser(tmp_path: Path) -> None:
    path = chromium()
    store, ids = monitored(tmp_path)
    shots = artifacts(tmp_path)
    server = make_server(store, port=0)
    server.start()
    try:
        with Browser(tmp_path / "profile", path, width=1280, height=900) as b:
            base = server.url()
            b.goto(base)
            assert b.eval("document.querySelector('#monitor-link a').getAttribute('href')") == "/monitor"
            b.click("#monitor-link a")
            b.wait_for("location.pathname === '/monitor' && document.readyState === 'complete'")
            assert b.eval("document.body.dataset.js") == "ran" and b.eval("document.body.dataset.jsErrors") == ""
            counts = b.eval("Object.fromEntries(Array.from(document.querySelectorAll('#monitor-counts td'))"
                            ".map(td => [td.dataset.key, td.textContent]))")
            assert counts["received"] == "10" and counts["evaluated"] == "10" and counts["pending"] == "0"
            # the chart: one dot per window with scores, its CI a bar, red when in alert
            assert b.eval("document.querySelectorAll('svg.monitor-chart circle').length") >= 1
            assert b.eval("document.querySelector('svg.monitor-chart circle').getAttribute('fill')") == "#b42318"
            # the windows table: mean, CI and counts as the store has them
            s = status_json(store)
            w = s["windows"][-1]["metrics"]["faithfulness"]
            row = b.eval("Array.from(document.querySelector('#metric-faithfulness + svg + div table tr:nth-child(2)')"
                         ".cells).map(c => c.textContent)")
            assert row[2] == str(w["n_scored"]) and row[3] == f"{w['mean']:.3f}"
            assert row[4] == f"[{w['ci_low']:.3f}, {w['ci_high']:.3f}]" and row[8] == "alert"
            # the alerts: the rule's and the baseline run's, with its p-value
            kinds = b.eval("Array.from(document.querySelectorAll('#monitor-alerts li')).map(li => li.dataset.kind)")
            assert set(kinds) == {"below", "baseline"}
            text = b.eval("document.querySelector('#monitor-alerts li[data-kind=baseline]').textContent")
            assert "below the baseline run eval-before" in text and "one-sided Welch t-test p=" in text
            assert "eval-before" in b.eval("document.getElementById('monitor-baseline').textContent")
            assert b.console == [], b.console
            b.screenshot(shots / "monitor.png")

            # a window's requests, each opening its sample page
            b.click("#metric-faithfulness + svg + div table tr:nth-child(2) a")
            b.wait_for("location.pathname.startsWith('/monitor/window/') && document.readyState === 'complete'")
            links = b.eval("Array.from(document.querySelectorAll('#window-samples a')).map(a => a.textContent)")
            assert sorted(links) == sorted(ids)
            assert b.eval("document.body.dataset.pwned") is None
            assert b.eval("document.querySelectorAll('#window-samples img, #window-samples script').length") == 0
            assert HOSTILE[:30] in b.eval("document.getElementById('window-samples').textContent")
            assert b.eval("document.title") == "ragsight view: monitor"
            assert b.console == [], b.console
            b.screenshot(shots / "monitor-window.png")
            b.click("#window-samples a")
            b.wait_for("/^\\/run\\/monitor-[^/]+\\/sample\\//.test(location.pathname) && document.readyState === 'complete'")
            assert "faithfulness" in b.eval("document.body.textContent")
            assert re.fullmatch(r"[0-9a-f]{32}", b.eval("location.pathname.split('/').pop()"))
            assert b.console == [], b.console
    finally:
        server.shutdown()
        server.server_close()
        server.app.close()
    assert (shots / "monitor.png").stat().st_size > 10_000
