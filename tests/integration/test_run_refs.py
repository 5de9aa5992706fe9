"""A run named by a reference (an id, a unique prefix, or ``last``): the prefix is matched as
written, so ``%`` and ``_`` are characters of an id, not wildcards; an empty or over-long reference
is no run. Through the CLI (``show``) and the viewer's run page, over a store ``evaluate`` wrote."""

from __future__ import annotations

import http.client
import json
from collections.abc import Iterator
from pathlib import Path
from urllib.parse import quote

import pytest

from ragsight import cli
from ragsight.store import Store
from ragsight.view import ViewServer, make_server


@pytest.fixture(scope="module")
def store(tmp_path_factory: pytest.TempPathFactory) -> Path:
    folder = tmp_path_factory.mktemp("refs")
    data, path = folder / "data.jsonl", folder / "runs.db"
    data.write_text("".join(json.dumps({"id": f"s{i}", "question": f"Q{i}?", "retrieved_ids": ["d1"],
                                        "relevant_ids": ["d1"]}) + "\n" for i in range(2)), encoding="utf-8")
    assert cli.main(["evaluate", str(data), "--metrics", "hit_rate", "--store", str(path), "--quiet"]) == 0
    return path


def _run_id(path: Path) -> str:
    with Store(path) as st:
        return st.runs()[0].id


def _wildcards(run_id: str) -> list[str]:
    return ["%", "_", "%%", run_id[:3] + "%", run_id[:3] + "_", "_" * len(run_id), run_id[:-1] + "_",
            "\\", run_id[:4] + "\\"]


def test_a_ref_matches_the_id_as_written(store: Path, capsys: pytest.CaptureFixture[str]) -> None:
    run = _run_id(store)
    for ref in (run, run[:8], "last"):
        assert cli.main(["show", ref, "--store", str(store)]) == 0, ref
        assert run in capsys.readouterr().out
    for ref in [*_wildcards(run), "", "x" * 60_000]:
        assert cli.main(["show", ref, "--store", str(store)]) == 2, ref[:20]
        err = capsys.readouterr().err
        assert "error: no run '" in err and "Traceback" not in err, err[:300]
        assert len(err) < 400  # a long ref is cut where it is named


@pytest.fixture
def server(store: Path, tmp_path: Path) -> Iterator[ViewServer]:
    srv = make_server(str(store), "127.0.0.1", 0, index_path=str(tmp_path / "index"))
    srv.start()
    yield srv
    srv.shutdown()
    srv.server_close()
    srv.app.close()


def _get(port: int, path: str) -> tuple[int, str]:
    conn = http.client.HTTPConnection("127.0.0.1", port, timeout=30)
    try:
        conn.request("GET", path)
        answer = conn.getresponse()
        return answer.status, answer.read().decode("utf-8")
    finally:
        conn.close()


def test_the_viewer_answers_no_such_run_for_a_wildcard_or_an_over_long_ref(store: Path, server: ViewServer) -> None:
    run = _run_id(store)
    port = server.port
    assert _get(port, f"/run/{run[:8]}")[0] == 200
    for ref in _wildcards(run):
        status, body = _get(port, "/run/" + quote(ref, safe=""))
        assert status == 404, (ref[:20], status, body[:300])
        assert "no run" in body
    # a ref longer than a request head may be: refused as a target too long, and the viewer goes on
    status, body = _get(port, "/run/" + "y" * 60_000)
    assert (status, body.strip()) == (414, "request target too long")
    conn = http.client.HTTPConnection("127.0.0.1", port, timeout=30)
    try:
        conn.request("GET", "/run/" + "y" * 60_000)
        assert conn.getresponse().reason == "Request-URI Too Long"  # its own reason, not "Error"
    finally:
        conn.close()
    assert _get(port, f"/run/{run[:8]}")[0] == 200
