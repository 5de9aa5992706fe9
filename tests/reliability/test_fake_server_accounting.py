"""The fake server's own accounting, which the fault tests count on: after ``settle()`` every
request a client wrote is recorded, and a connection that ended without a request is counted."""

from __future__ import annotations

import json
import socket

from tests.fakes import FakeOpenAIServer, Reply


def _post(port: int, body: dict[str, object]) -> bytes:
    data = json.dumps(body).encode()
    return (b"POST /v1/chat/completions HTTP/1.1\r\nHost: 127.0.0.1\r\n"
            b"Content-Type: application/json\r\nContent-Length: "
            + str(len(data)).encode() + b"\r\n\r\n" + data)


def test_a_request_written_then_abandoned_is_recorded_after_settle() -> None:
    with FakeOpenAIServer(handler=lambda r: Reply.hang()) as srv:
        socks = []
        for i in range(5):  # the client writes and gives up at once, never reading the answer
            s = socket.create_connection(("127.0.0.1", srv.port))
            s.sendall(_post(srv.port, {"messages": [{"role": "user", "content": str(i)}]}))
            socks.append(s)
        for s in socks:
            s.close()
        assert srv.settle(timeout=10)
        got = sorted(r.json["messages"][0]["content"] for r in srv.requests_to("/chat/completions"))
        assert got == ["0", "1", "2", "3", "4"]
        assert srv.empty_connections == 0


def test_a_connection_without_a_request_is_counted_and_settle_waits_for_it() -> None:
    with FakeOpenAIServer() as srv:
        silent = socket.create_connection(("127.0.0.1", srv.port))
        assert not srv.settle(timeout=0.3)  # accepted, nothing read yet: not settled
        silent.close()
        assert srv.settle(timeout=10)
        assert srv.requests == [] and srv.empty_connections == 1
