"""The command line of the monitor: ``ragsight monitor`` in a process of its own (the real OTLP
exporter sends to it; SIGTERM stops it cleanly), ``monitor status --json`` and ``monitor check``'s
exit status, and the refusals (another address without a token, a missing extra)."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

pytest.importorskip("opentelemetry.exporter.otlp.proto.http")

from ragsight.cli import main
from ragsight.store import Store
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


def cli(*args: str, timeout: float = 60) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "ragsight.cli", *args], capture_output=True, text=True,
                          timeout=timeout, env={**os.environ, "PYTHONPATH": os.pathsep.join(sys.path)})


def test_the_command_receives_until_sigterm_and_status_reports_it(tmp_path: Path,
                                                                 capsys: pytest.CaptureFixture[str]) -> None:
    from tests.unit.test_report_data import put_run

    store, runs = tmp_path / "prod.db", tmp_path / "runs.db"
    with Store(runs) as st:  # a baseline in another store, compared on what it scored (no --metrics)
        put_run(st, "eval-x", {"faithfulness": {f"s{i}": 0.9 for i in range(12)}})
    proc = subprocess.Popen([sys.executable, "-m", "ragsight.cli", "monitor", "--otlp", "127.0.0.1:0", "--store",
                             str(store), "--sample", "0", "--settle", "0.2", "--judge", "openai:m",
                             "--base-url", "http://127.0.0.1:9/v1", "--baseline", "eval-x", "--baseline-store",
                             str(runs)],
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                            env={**os.environ, "PYTHONPATH": os.pathsep.join(sys.path), "OPENAI_API_KEY": "sk-test"})
    assert proc.stdout is not None
    line = proc.stdout.readline()
    assert "receiving OTLP traces on http://127.0.0.1:" in line, line
    port = int(line.split("http://127.0.0.1:")[1].split("/")[0])
    tracer, sent = tracer_for(port)
    send_requests(tracer, 3)
    assert len(sent.acknowledged()) == 9

    wait_for(lambda: status_json(str(store))["unsampled"] == 3, 30)
    proc.send_signal(signal.SIGTERM)
    out, err = proc.communicate(timeout=60)
    assert proc.returncode == 0, err
    assert "stopped; 3 requests stored" in out
    assert "ragsight monitor: baseline run eval-x: faithfulness 0.900 (12 scored)" in err
    r = cli("monitor", "status", "--store", str(store), "--json")
    s = json.loads(r.stdout)
    for key in ("received", "sampled", "evaluated", "pending"):
        assert type(s[key]) is int
    assert (s["received"], s["sampled"], s["evaluated"], s["pending"]) == (3, 0, 0, 0)
    assert s["settings"]["sample"] == 0.0 and s["budget"]["limit_usd"] is None
    assert s["baseline"]["run_id"] == "eval-x" and s["baseline"]["metrics"]["faithfulness"]["n_scored"] == 12
    assert main(["monitor", "status", "--store", str(store)]) == 0
    assert "requests received 3; sampled 0" in capsys.readouterr().out


def test_check_exits_1_when_the_latest_window_is_in_alert(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    path = tmp_path / "prod.db"
    with Store(path) as st:
        for i in range(12):
            st.conn.execute("INSERT INTO monitor_scores VALUES (?,?,?,?,?)",
                            (f"t{i}", "faithfulness", "scored", 0.5 + (i % 3) / 10, 7200.0 + i))
    assert main(["monitor", "check", "--store", str(path), "--alert", "faithfulness<0.7", "--window", "1h"]) == 1
    assert "ALERT below: faithfulness 0.600" in capsys.readouterr().out
    assert main(["monitor", "check", "--store", str(path), "--alert", "faithfulness<0.5", "--window", "1h"]) == 0
    assert main(["monitor", "check", "--store", str(path), "--alert", "faithfulness<0.7", "--min-scored", "13"]) == 0
    capsys.readouterr()
    assert main(["monitor", "check", "--store", str(path), "--alert", "faithfulness<0.7", "--json"]) == 1
    got = json.loads(capsys.readouterr().out)
    assert got["alerts"][0]["kind"] == "below" and got["alerts"][0]["n_scored"] == 12
    assert main(["monitor", "check", "--store", str(path)]) == 0  # no rule: none below
    with Store(path) as st:  # the monitor's own rules, as it saved them when it started
        st.conn.execute("""INSERT INTO monitor_state VALUES ('setting:alerts', '["faithfulness<0.7"]')""")
    assert main(["monitor", "check", "--store", str(path)]) == 1


def test_refusals_are_one_line_errors(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    store = str(tmp_path / "x.db")
    assert main(["monitor", "--otlp", "0.0.0.0:0", "--store", store, "--judge", "openai:m"]) == 2
    assert "--token" in capsys.readouterr().err
    assert main(["monitor", "--otlp", "nowhere", "--store", store]) == 2
    assert "HOST:PORT" in capsys.readouterr().err
    assert main(["monitor", "--store", store, "--sample", "2", "--judge", "openai:m"]) == 2
    assert main(["monitor", "--store", store, "--alert", "faithfulness", "--judge", "openai:m"]) == 2
    assert "METRIC<VALUE" in capsys.readouterr().err
    assert main(["monitor", "--store", store, "--judge", "openai:unpriced-model", "--max-cost-per-day", "1"]) == 2
    assert "--price unpriced-model=IN/OUT" in capsys.readouterr().err
    assert main(["monitor", "status", "--store", str(tmp_path / "missing.db")]) == 2


def test_a_missing_extra_is_named(monkeypatch: pytest.MonkeyPatch) -> None:
    from ragsight.errors import MissingExtraError
    from ragsight.monitor import proto

    monkeypatch.setitem(sys.modules, "opentelemetry.proto.collector.trace.v1", None)
    with pytest.raises(MissingExtraError, match=r"ragsight\[monitor\]"):
        proto()


def test_check_against_a_baseline_run_and_the_refusals_naming_run_and_metric(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    from tests.unit.test_report_data import put_run

    prod, runs = tmp_path / "prod.db", tmp_path / "runs.db"
    with Store(prod) as st:
        for i in range(12):
            st.conn.execute("INSERT INTO monitor_scores VALUES (?,?,?,?,?)",
                            (f"t{i}", "faithfulness", "scored", 0.5 + (i % 3) / 10, 7200.0 + i))
    with Store(runs) as st:
        put_run(st, "eval-high", {"faithfulness": {f"s{i}": 0.9 + (i % 2) / 10 for i in range(12)}})
        put_run(st, "eval-same", {"faithfulness": {f"s{i}": 0.5 + (i % 3) / 10 for i in range(12)}})
        put_run(st, "eval-other", {"answer_relevancy": {f"s{i}": 0.9 for i in range(12)}})
    base = ["monitor", "check", "--store", str(prod), "--baseline-store", str(runs), "--window", "1h"]
    assert main([*base, "--baseline", "eval-high", "--metrics", "faithfulness", "--json"]) == 1
    got = json.loads(capsys.readouterr().out)
    (alert,) = got["alerts"]
    assert got["baseline_run"] == "eval-high"
    assert alert["kind"] == "baseline" and alert["baseline_run"] == "eval-high" and alert["n_scored"] == 12
    assert 0 < alert["p_value"] < 0.01 and alert["test"] == "one-sided Welch t-test"
    assert main([*base, "--baseline", "eval-same", "--metrics", "faithfulness"]) == 0
    assert "no alert" in capsys.readouterr().out
    # refused before anything, naming the run, the metric, the store
    assert main([*base, "--baseline", "eval-missing", "--metrics", "faithfulness"]) == 2
    err = capsys.readouterr().err
    assert "no run 'eval-missing'" in err and len(err.strip().splitlines()) == 1
    assert main([*base, "--baseline", "eval-other", "--metrics", "faithfulness"]) == 2
    assert "run eval-other" in (err := capsys.readouterr().err) and "did not score faithfulness" in err
    assert main(["monitor", "check", "--store", str(prod), "--baseline", "eval-high"]) == 2  # not in prod.db
    assert "no run 'eval-high'" in capsys.readouterr().err
    assert main(["monitor", "check", "--store", str(prod), "--baseline-store", str(runs)]) == 2
    assert "give the run too" in capsys.readouterr().err
    assert main(["monitor", "--store", str(tmp_path / "new.db"), "--baseline", "eval-high", "--judge", "openai:m",
                 "--metrics", "faithfulness"]) == 2
    assert "no store at" in capsys.readouterr().err
    assert not (tmp_path / "new.db").exists()
