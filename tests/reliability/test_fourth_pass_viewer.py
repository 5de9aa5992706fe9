"""The viewer under attack, over real sockets on 127.0.0.1: a request that hides another in its
body (request smuggling past the Origin and Host checks), a full URL as the request target, slow
and vanishing clients, a token redirect that rebuilds its query, ports out of range, files that
are not stores, an empty search. Each test fails on the viewer before its fix."""

from __future__ import annotations

import contextlib
import json
import re
import socket
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from ragsight import cli
from ragsight.errors import ConfigError
from ragsight.store import Store
from ragsight.view import ViewServer, make_server

ROWS = [{"id": f"s{i}", "question": f"Question {i} about warranty?", "retrieved_ids": ["d1", "d2"],
         "relevant_ids": ["d1"]} for i in range(3)]


@pytest.fixture(scope="module")
def store(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A store with one run of three samples and two metrics, written by ``ragsight evaluate``."""
    folder = tmp_path_factory.mktemp("viewer")
    data, path = folder / "data.jsonl", folder / "runs.db"
    data.write_text("".join(json.dumps(r) + "\n" for r in ROWS), encoding="utf-8")
    assert cli.main(["evaluate", str(data), "--metrics", "hit_rate,mrr", "--store", str(path), "--quiet"]) == 0
    return path


def run_id(path: Path) -> str:
    with Store(path) as st:
        return st.runs()[0].id


def label_count(path: Path) -> int:
    with Store(path) as st:
        return len(st.labels())


@pytest.fixture
def server(store: Path, tmp_path: Path) -> Iterator[ViewServer]:
    srv = make_server(str(store), "127.0.0.1", 0, index_path=str(tmp_path / "index"))
    srv.start()
    yield srv
    srv.shutdown()
    srv.server_close()
    srv.app.close()


def exchange(port: int, data: bytes, wait: float = 3.0, host: str = "127.0.0.1") -> tuple[bytes, bool]:
    """Send ``data`` on one connection and read until the server closes it or stays silent for
    ``wait`` seconds: what came back, and whether the server closed the connection."""
    with socket.create_connection((host, port), timeout=wait) as sock:
        with contextlib.suppress(OSError):  # the server may close before it read everything: the point
            sock.sendall(data)
        got = b""
        while True:
            try:
                chunk = sock.recv(65536)
            except TimeoutError:
                return got, False
            except ConnectionResetError:
                return got, True
            if not chunk:
                return got, True
            got += chunk


def statuses(answer: bytes) -> list[int]:
    return [int(m) for m in re.findall(rb"HTTP/1\.[01] (\d{3}) ", answer)]


def label_request(port: int, rid: str, extra: str = "") -> bytes:
    body = json.dumps({"run": rid, "sample": "s1", "metric": "hit_rate", "claim": None, "value": 0,
                       "who": "mallory"}).encode()
    return (f"POST /api/labels HTTP/1.1\r\nHost: 127.0.0.1:{port}\r\nContent-Type: application/json\r\n"
            f"{extra}Content-Length: {len(body)}\r\n\r\n").encode() + body


# ---- request smuggling -------------------------------------------------------------------------


def test_a_body_over_the_limit_is_refused_and_the_connection_closed(store: Path, server: ViewServer) -> None:
    """A page of another site posts text/plain (no preflight) with a body over 64 kB that holds a
    label request without Origin: before, the 413 left the body on the socket, the hidden request
    was read as the next one and its label stored."""
    port, before = server.port, label_count(store)
    hidden = label_request(port, run_id(store))
    body = hidden + b"x" * (70 * 1024 - len(hidden))
    outer = (f"POST /api/labels HTTP/1.1\r\nHost: 127.0.0.1:{port}\r\nOrigin: http://evil.example\r\n"
             f"Content-Type: text/plain\r\nContent-Length: {len(body)}\r\n\r\n").encode() + body
    answer, closed = exchange(port, outer)
    assert statuses(answer) == [413], answer[:500]
    assert b"Connection: close" in answer and closed
    assert label_count(store) == before


@pytest.mark.parametrize("length", ["-1", "abc", "1_0", "+5", "5, 5"])
def test_a_content_length_that_is_not_a_count_is_refused_and_closed(store: Path, server: ViewServer,
                                                                    length: str) -> None:
    port, before = server.port, label_count(store)
    outer = (f"POST /api/labels HTTP/1.1\r\nHost: 127.0.0.1:{port}\r\nContent-Type: text/plain\r\n"
             f"Content-Length: {length}\r\n\r\n").encode() + label_request(port, run_id(store))
    answer, closed = exchange(port, outer)
    assert len(statuses(answer)) == 1 and statuses(answer)[0] in (400, 413), answer[:500]
    assert closed and label_count(store) == before


def test_two_content_lengths_are_refused_and_closed(store: Path, server: ViewServer) -> None:
    port, before = server.port, label_count(store)
    outer = (f"POST /api/labels HTTP/1.1\r\nHost: 127.0.0.1:{port}\r\nContent-Type: text/plain\r\n"
             "Content-Length: 0\r\nContent-Length: 300\r\n\r\n").encode() + label_request(port, run_id(store))
    answer, closed = exchange(port, outer)
    assert len(statuses(answer)) == 1 and statuses(answer)[0] == 400 and closed, answer[:500]
    assert label_count(store) == before


def test_a_chunked_body_is_refused_and_closed(store: Path, server: ViewServer) -> None:
    port, before = server.port, label_count(store)
    hidden = label_request(port, run_id(store))
    outer = (f"POST /api/labels HTTP/1.1\r\nHost: 127.0.0.1:{port}\r\nContent-Type: text/plain\r\n"
             "Transfer-Encoding: chunked\r\n\r\n").encode() + b"%x\r\n" % len(hidden) + hidden + b"\r\n0\r\n\r\n"
    answer, closed = exchange(port, outer)
    assert len(statuses(answer)) == 1 and statuses(answer)[0] in (400, 501), answer[:500]
    assert closed and label_count(store) == before


def test_a_smuggled_get_does_not_pass_the_host_check(store: Path, server: ViewServer) -> None:
    """DNS rebinding: the outer request carries the attacker's Host (refused), its body a GET
    with the right Host. Only the refusal comes back, and the connection ends."""
    port = server.port
    inner = f"GET / HTTP/1.1\r\nHost: 127.0.0.1:{port}\r\n\r\n".encode()
    outer = (f"POST / HTTP/1.1\r\nHost: rebind.example:{port}\r\nContent-Type: text/plain\r\n"
             f"Content-Length: {70 * 1024}\r\n\r\n").encode() + inner + b" " * (70 * 1024 - len(inner))
    answer, closed = exchange(port, outer)
    assert statuses(answer) == [413] and closed, answer[:500]
    assert run_id(store).encode() not in answer


def test_a_full_url_as_the_target_is_refused(store: Path, server: ViewServer) -> None:
    port = server.port
    answer, _ = exchange(port, f"GET http://evil.example/ HTTP/1.1\r\nHost: 127.0.0.1:{port}\r\n"
                               "Connection: close\r\n\r\n".encode())
    assert statuses(answer) == [400], answer[:500]
    assert run_id(store).encode() not in answer
    answer, _ = exchange(port, f"GET //evil.example/ HTTP/1.1\r\nHost: 127.0.0.1:{port}\r\n"
                               "Connection: close\r\n\r\n".encode())
    assert statuses(answer)[0] in (400, 404) and run_id(store).encode() not in answer, answer[:500]


def test_a_good_request_still_keeps_its_connection(store: Path, server: ViewServer) -> None:
    port = server.port
    one = f"GET / HTTP/1.1\r\nHost: 127.0.0.1:{port}\r\n\r\n".encode()
    answer, closed = exchange(port, one + one, wait=2.0)
    assert statuses(answer) == [200, 200] and not closed


# ---- slow and vanishing clients ----------------------------------------------------------------


def test_idle_clients_are_dropped_and_a_cap_bounds_the_threads(store: Path, tmp_path: Path,
                                                               monkeypatch: pytest.MonkeyPatch) -> None:
    """200 clients that connect and say nothing: they hold no handler thread (one thread holds the
    connections that wait for a request), those beyond the cap of held connections are answered
    503, a real request is answered while they are there, and the silent ones are dropped at the
    idle timeout."""
    monkeypatch.setattr(ViewServer, "idle_timeout_s", 3.0)  # longer than 200 connections take under load
    monkeypatch.setattr(ViewServer, "max_connections", 150)
    srv = make_server(str(store), "127.0.0.1", 0, index_path=str(tmp_path / "index"))
    assert srv.request_queue_size >= 64
    srv.start()
    base = threading.active_count()
    socks = []
    try:
        for _ in range(200):
            socks.append(socket.create_connection(("127.0.0.1", srv.port), timeout=5))
        time.sleep(0.3)
        assert threading.active_count() - base <= srv.max_handlers
        busy = socks[-1].recv(4096)
        assert statuses(busy) == [503] and b"Connection: close" in busy
        answer, _ = exchange(srv.port, f"GET / HTTP/1.1\r\nHost: 127.0.0.1:{srv.port}\r\n"
                                        "Connection: close\r\n\r\n".encode())
        assert statuses(answer) in ([200], [503])  # the cap is full: 503 said at once, never a wait
        for s in socks[100:]:
            s.close()  # room again: a real request is answered beside 100 silent clients
        time.sleep(0.3)
        answer, _ = exchange(srv.port, f"GET / HTTP/1.1\r\nHost: 127.0.0.1:{srv.port}\r\n"
                                        "Connection: close\r\n\r\n".encode())
        assert statuses(answer) == [200]
        time.sleep(3.5)  # past the idle timeout: the silent connections are closed
        assert socks[0].recv(4096) == b""
        answer, _ = exchange(srv.port, f"GET / HTTP/1.1\r\nHost: 127.0.0.1:{srv.port}\r\n"
                                        "Connection: close\r\n\r\n".encode())
        assert statuses(answer) == [200]
    finally:
        for s in socks:
            s.close()
        srv.shutdown()
        srv.server_close()
        srv.app.close()


VIEW_QUIET = """
import socket, struct, sys, time
from ragsight.view import make_server
srv = make_server(sys.argv[1], "127.0.0.1", 0, index_path=":memory:")
srv.start()
for i in range(20):
    s = socket.create_connection(("127.0.0.1", srv.port))
    s.sendall(b"GET / HTTP/1.1\\r\\nHost: 127.0.0.1:%d\\r\\n" % srv.port)  # half a request
    s.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))
    s.close()  # reset
    s = socket.create_connection(("127.0.0.1", srv.port))
    s.sendall(b"GET / HTTP/1.1\\r\\nHost: 127.0.0.1:%d\\r\\n\\r\\n" % srv.port)
    s.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))
    s.close()  # gone before the answer
time.sleep(1.0)
srv.shutdown(); srv.server_close(); srv.app.close()
print("done")
"""


def test_clients_that_vanish_leave_no_traceback(store: Path) -> None:
    proc = subprocess.run([sys.executable, "-c", VIEW_QUIET, str(store)], capture_output=True, text=True,
                          timeout=120)
    assert proc.returncode == 0 and proc.stdout.strip() == "done", proc.stderr
    assert "Traceback" not in proc.stderr and "Error" not in proc.stderr, proc.stderr[:2000]


# ---- the token redirect, the port, the store ---------------------------------------------------


def test_the_token_redirect_keeps_the_query_encoded(store: Path, tmp_path: Path) -> None:
    srv = make_server(str(store), "127.0.0.2", 0, index_path=str(tmp_path / "index"))
    srv.start()
    try:
        token, port = srv.app.token, srv.port
        assert token
        target = f"/run/{run_id(store)}?q=a%26metric%3Dmrr&x=%0d%0aSet-Cookie:%20evil=1&token={token}"
        answer, _ = exchange(port, f"GET {target} HTTP/1.1\r\nHost: 127.0.0.2:{port}\r\n"
                                   "Connection: close\r\n\r\n".encode(), host="127.0.0.2")
    finally:
        srv.shutdown()
        srv.server_close()
        srv.app.close()
    head = answer.split(b"\r\n\r\n", 1)[0].decode("latin-1")
    assert statuses(answer) == [303], head
    assert "evil=1" not in "".join(line for line in head.split("\r\n") if line.lower().startswith("set-cookie"))
    (location,) = [line.split(": ", 1)[1] for line in head.split("\r\n") if line.startswith("Location:")]
    assert location == f"/run/{run_id(store)}?q=a%26metric%3Dmrr&x=%0D%0ASet-Cookie%3A+evil%3D1"


@pytest.mark.parametrize("port", [70000, -1, 65536])
def test_a_port_out_of_range_is_a_clear_error(store: Path, port: int, capsys: pytest.CaptureFixture[str],
                                              monkeypatch: pytest.MonkeyPatch) -> None:
    _no_serving(monkeypatch)
    with pytest.raises(ConfigError, match="0 to 65535"):
        make_server(str(store), "127.0.0.1", port)
    assert cli.main(["view", "--store", str(store), "--port", str(port)]) == 2
    err = capsys.readouterr().err
    assert "0 to 65535" in err and "Traceback" not in err


def _no_serving(monkeypatch: pytest.MonkeyPatch) -> None:
    """A viewer that would start serving stops at once (as on Ctrl-C), so a refusal that is
    missing fails the test instead of hanging it."""
    def stop(self: ViewServer, *args: object) -> None:
        raise KeyboardInterrupt

    monkeypatch.setattr(ViewServer, "serve_forever", stop)


@pytest.mark.parametrize("kind", ["empty", "text", "other sqlite"])
def test_view_refuses_a_file_that_is_not_a_store(tmp_path: Path, kind: str, capsys: pytest.CaptureFixture[str],
                                                 monkeypatch: pytest.MonkeyPatch) -> None:
    _no_serving(monkeypatch)
    path = tmp_path / "notes.db"
    if kind == "empty":
        path.write_bytes(b"")
    elif kind == "text":
        path.write_text("my notes\n", encoding="utf-8")
    else:
        import sqlite3

        conn = sqlite3.connect(path)
        conn.execute("CREATE TABLE t (x)")
        conn.commit()
        conn.close()
    before = path.read_bytes()
    assert cli.main(["view", "--store", str(path), "--port", "0"]) == 2
    err = capsys.readouterr().err
    assert "is not a ragsight store" in err and "Traceback" not in err, err
    assert path.read_bytes() == before
    assert sorted(p.name for p in tmp_path.iterdir()) == ["notes.db"]


def test_view_of_dev_null_is_refused_and_writes_nothing(capsys: pytest.CaptureFixture[str],
                                                        monkeypatch: pytest.MonkeyPatch) -> None:
    _no_serving(monkeypatch)
    beside = [Path("/dev/null-journal"), Path("/dev/null-wal")]

    def state() -> list[float | None]:  # (another program may have left one: it must not change)
        return [p.stat().st_mtime if p.exists() else None for p in beside]

    before = state()
    assert cli.main(["view", "--store", "/dev/null", "--port", "0"]) == 2
    err = capsys.readouterr().err
    assert "is not a ragsight store" in err, err
    assert state() == before


def test_a_search_with_no_word_says_so(store: Path, server: ViewServer) -> None:
    port = server.port
    for q in ("%21%21%21", "%22%22"):
        answer, _ = exchange(port, f"GET /run/{run_id(store)}?q={q} HTTP/1.1\r\nHost: 127.0.0.1:{port}\r\n"
                                   "Connection: close\r\n\r\n".encode())
        assert statuses(answer) == [200]
        assert "has no word to search for" in answer.decode("utf-8"), q
