"""A fault-injecting OpenAI-compatible HTTP server for tests (standard library only).

    with FakeOpenAIServer() as srv:
        srv.enqueue(Reply.error(429, headers={"Retry-After": "1"}), Reply.chat('{"ok": true}'))
        judge = OpenAIProvider("fake-model", base_url=srv.url)   # srv.url == "http://127.0.0.1:PORT/v1"
        ...
        assert srv.requests[0].json["model"] == "fake-model"

Each request is answered by, in order: the next queued :class:`Reply` (:meth:`enqueue`), else
``handler(request)`` when it returns a Reply, else the default for the path: deterministic
hash-seeded vectors for ``POST /v1/embeddings``, a model list for ``GET /v1/models``, and HTTP 418
"no reply scripted" for anything else (so a test that forgot to script a reply fails loudly).

Every request is recorded (method, path, headers, body) before it is answered, including those
answered by a reset or never answered. A connection that ends without a request (a client that
connected and gave up before writing it, e.g. its time ran out) is counted in
``empty_connections``. ``settle()`` waits until every connection accepted so far has been read,
so counts taken after it are complete. Leaving the ``with`` block wakes every hanging or
trickling reply at once, so teardown is prompt; it re-raises the first exception a handler raised.
"""

from __future__ import annotations

import collections
import contextlib
import hashlib
import json
import random
import select
import socket
import socketserver
import struct
import threading
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from types import TracebackType
from typing import Any

__all__ = ["FakeOpenAIServer", "RecordedRequest", "Reply", "embedding_for", "unused_port"]

DEFAULT_MODEL = "fake-model"


@dataclass(frozen=True)
class RecordedRequest:
    """One request as the server received it. ``headers`` has lower-case names; ``json`` is the
    parsed body, or None when the body is empty or not JSON."""

    method: str
    path: str
    headers: Mapping[str, str]
    body: bytes
    json: Any


@dataclass(frozen=True)
class Reply:
    """How to answer one request. Build with the class methods, not the constructor."""

    kind: str  # "http" | "reset" | "hang" | "trickle" | "huge" | "default"
    status: int = 200
    headers: tuple[tuple[str, str], ...] = ()
    body: bytes = b""
    interval: float = 0.0
    size: int = 0  # "huge": the content's length in bytes

    @classmethod
    def chat(
        cls,
        content: str = "",
        *,
        finish_reason: str | None = "stop",
        usage: tuple[int, int] | None = (11, 7),
        logprobs: Mapping[str, float] | None = None,
        model: str = DEFAULT_MODEL,
        headers: Mapping[str, str] | None = None,
    ) -> Reply:
        """A chat completion whose first choice says ``content``. ``usage`` is (prompt_tokens,
        completion_tokens), or None to leave usage out. ``logprobs`` are the first token's top
        candidates {token: logprob}; the first entry is the token that was chosen."""
        choice: dict[str, Any] = {
            "index": 0,
            "message": {"role": "assistant", "content": content},
            "finish_reason": finish_reason,
            "logprobs": None,
        }
        if logprobs:
            first, first_lp = next(iter(logprobs.items()))
            choice["logprobs"] = {
                "content": [
                    {
                        "token": first,
                        "logprob": first_lp,
                        "bytes": list(first.encode()),
                        "top_logprobs": [
                            {"token": t, "logprob": lp, "bytes": list(t.encode())}
                            for t, lp in logprobs.items()
                        ],
                    }
                ]
            }
        body: dict[str, Any] = {
            "id": "chatcmpl-fake",
            "object": "chat.completion",
            "created": 1_700_000_000,
            "model": model,
            "choices": [choice],
        }
        if usage is not None:
            body["usage"] = {
                "prompt_tokens": usage[0],
                "completion_tokens": usage[1],
                "total_tokens": usage[0] + usage[1],
            }
        return cls.json(body, headers=headers)

    @classmethod
    def json(
        cls, body: Any, *, status: int = 200, headers: Mapping[str, str] | None = None
    ) -> Reply:
        """Any JSON body with any status."""
        return cls._http(status, json.dumps(body).encode(), "application/json", headers)

    @classmethod
    def error(
        cls,
        status: int,
        message: str = "",
        *,
        code: str | None = None,
        headers: Mapping[str, str] | None = None,
    ) -> Reply:
        """An OpenAI-style error: ``{"error": {"message", "type", "code"}}`` with ``status``
        and extra ``headers`` (e.g. ``{"Retry-After": "1"}``)."""
        body = {
            "error": {
                "message": message or f"fake error {status}",
                "type": "invalid_request_error" if status < 500 else "server_error",
                "param": None,
                "code": code,
            }
        }
        return cls.json(body, status=status, headers=headers)

    @classmethod
    def json_schema_unsupported(cls) -> Reply:
        """The 400 a server gives when it does not know ``response_format`` json_schema."""
        return cls.error(
            400,
            "response_format json_schema is not supported by this server",
            code="unsupported_response_format",
        )

    @classmethod
    def raw(
        cls,
        body: str | bytes,
        *,
        status: int = 200,
        content_type: str = "text/html; charset=utf-8",
        headers: Mapping[str, str] | None = None,
    ) -> Reply:
        """A body sent as is (e.g. an HTML error page from a proxy: not JSON)."""
        data = body.encode() if isinstance(body, str) else body
        return cls._http(status, data, content_type, headers)

    @classmethod
    def reset(cls) -> Reply:
        """Read the request, then close the socket with a TCP reset and no response."""
        return cls(kind="reset")

    @classmethod
    def hang(cls) -> Reply:
        """Read the request and never answer (until the server stops)."""
        return cls(kind="hang")

    @classmethod
    def trickle(cls, reply: Reply | None = None, *, interval: float = 0.2) -> Reply:
        """Send ``reply`` (default: a chat completion) with its headers at once, then its body
        one byte every ``interval`` seconds, so no single read ever times out."""
        inner = reply if reply is not None else cls.chat('{"verdict": "yes"}')
        if inner.kind != "http":
            raise ValueError("trickle() wraps an HTTP reply (chat, json, error or raw)")
        return cls(
            kind="trickle",
            status=inner.status,
            headers=inner.headers,
            body=inner.body,
            interval=interval,
        )

    @classmethod
    def huge(cls, size: int, *, model: str = DEFAULT_MODEL) -> Reply:
        """A chat completion whose content is ``size`` bytes of filler, generated as it is sent
        (the server never holds it), with a correct Content-Length: a server that ignores
        ``max_tokens``. The client may hang up at any point."""
        return cls(kind="huge", size=int(size), headers=(("Content-Type", "application/json"),),
                   body=model.encode())

    @classmethod
    def default(cls) -> Reply:
        """Whatever the server does for this path when nothing is scripted."""
        return cls(kind="default")

    @classmethod
    def _http(
        cls, status: int, body: bytes, content_type: str, headers: Mapping[str, str] | None
    ) -> Reply:
        merged = [("Content-Type", content_type)]
        merged.extend((str(k), str(v)) for k, v in (headers or {}).items())
        return cls(kind="http", status=status, headers=tuple(merged), body=body)


def unused_port() -> int:
    """A local TCP port with nothing listening on it (for "connection refused" tests)."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.bind(("127.0.0.1", 0))
        port: int = sock.getsockname()[1]
    return port


def embedding_for(text: str, dim: int) -> list[float]:
    """The vector the fake server returns for ``text``: seeded by SHA-256 of the text, values in
    [-3, 3) so that it is not unit length (clients must normalise)."""
    seed = int.from_bytes(hashlib.sha256(text.encode("utf-8")).digest()[:8], "big")
    rng = random.Random(seed)
    return [round(rng.uniform(-3.0, 3.0), 6) for _ in range(dim)]


@dataclass
class _State:
    queue: collections.deque[Reply] = field(default_factory=collections.deque)
    requests: list[RecordedRequest] = field(default_factory=list)
    errors: list[BaseException] = field(default_factory=list)
    connections: set[socket.socket] = field(default_factory=set)
    unread: set[socket.socket] = field(default_factory=set)  # accepted, request not read yet
    accepting: threading.Lock = field(default_factory=threading.Lock)  # accept + count as one
    empty_connections: int = 0
    lock: threading.Lock = field(default_factory=threading.Lock)
    stopping: threading.Event = field(default_factory=threading.Event)


class _Server(ThreadingHTTPServer):
    daemon_threads = True
    request_queue_size = 128  # the default backlog of 5 drops connections with 16 calls in flight
    block_on_close = True  # server_close() joins the handler threads

    def __init__(self, owner: FakeOpenAIServer) -> None:
        self.owner = owner
        super().__init__(("127.0.0.1", 0), _Handler)

    def server_bind(self) -> None:
        # skip HTTPServer's socket.getfqdn(): a reverse DNS lookup has no place in a test
        socketserver.TCPServer.server_bind(self)
        self.server_name = "127.0.0.1"
        self.server_port = self.server_address[1]

    def handle_error(self, request: Any, client_address: Any) -> None:
        # clients that time out and hang up mid-reply are the point of this server
        pass

    def get_request(self) -> tuple[socket.socket, Any]:
        # counted on arrival (in the accepting thread), until its handler has read the request
        # or ended: settle() waits for the count to fall to 0
        state = self.owner._state
        with state.accepting:  # select() said a connection waits: accept() returns at once
            conn, addr = super().get_request()
            with state.lock:
                state.unread.add(conn)
        return conn, addr

    def process_request_thread(self, request: Any, client_address: Any) -> None:
        try:
            super().process_request_thread(request, client_address)
        finally:
            state = self.owner._state
            with state.lock:
                state.unread.discard(request)  # whatever the handler did, it is over


class _Handler(BaseHTTPRequestHandler):
    server: _Server
    timeout = 10.0  # a client that stalls mid-request cannot pin a thread forever

    def log_message(self, format: str, *args: Any) -> None:
        pass

    def setup(self) -> None:
        super().setup()
        state = self.server.owner._state
        with state.lock:
            state.connections.add(self.connection)

    def finish(self) -> None:
        state = self.server.owner._state
        with state.lock:
            state.connections.discard(self.connection)
            if not getattr(self, "_recorded", False) and not getattr(self, "raw_requestline", b""):
                state.empty_connections += 1
        with contextlib.suppress(OSError):
            super().finish()

    def do_GET(self) -> None:
        self._serve()

    def do_POST(self) -> None:
        self._serve()

    def _serve(self) -> None:
        owner = self.server.owner
        length = int(self.headers.get("Content-Length") or 0)
        body = self.rfile.read(length) if length else b""
        try:
            parsed: Any = json.loads(body) if body else None
        except ValueError:
            parsed = None
        request = RecordedRequest(
            method=self.command,
            path=self.path,
            headers={k.lower(): v for k, v in self.headers.items()},
            body=body,
            json=parsed,
        )
        reply = owner._choose(request)
        self._recorded = True
        with owner._state.lock:
            owner._state.unread.discard(self.connection)
        with contextlib.suppress(OSError):  # the client gave up (timeout) or reset
            self._send(reply, request)

    def _send(self, reply: Reply, request: RecordedRequest) -> None:
        stopping = self.server.owner._state.stopping
        if reply.kind == "hang":
            stopping.wait()
            return
        if reply.kind == "reset":
            self.connection.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))
            self.rfile.close()  # drop the makefile reference so close() really closes
            self.connection.close()
            return
        if reply.kind == "huge":
            self._send_huge(reply)
            return
        if reply.kind == "default":
            reply = self.server.owner._default(request)
        self.send_response(reply.status)
        for name, value in reply.headers:
            self.send_header(name, value)
        self.send_header("Content-Length", str(len(reply.body)))
        self.send_header("Connection", "close")
        self.end_headers()
        if reply.kind == "trickle":
            self.wfile.flush()
            for i in range(len(reply.body)):
                if stopping.wait(reply.interval):
                    return
                self.wfile.write(reply.body[i : i + 1])
                self.wfile.flush()
        else:
            self.wfile.write(reply.body)


    def _send_huge(self, reply: Reply) -> None:
        head = ('{"id": "chatcmpl-huge", "object": "chat.completion", "created": 1700000000, '
                f'"model": {json.dumps(reply.body.decode())}, "choices": [{{"index": 0, '
                '"message": {"role": "assistant", "content": "').encode()
        tail = b'"}, "finish_reason": "stop", "logprobs": null}]}'
        self.send_response(reply.status)
        for name, value in reply.headers:
            self.send_header(name, value)
        self.send_header("Content-Length", str(len(head) + reply.size + len(tail)))
        self.send_header("Connection", "close")
        self.end_headers()
        self.wfile.write(head)
        block = b"filler " * (65536 // 7)
        left = reply.size
        stopping = self.server.owner._state.stopping
        while left > 0 and not stopping.is_set():
            piece = block[:left]
            self.wfile.write(piece)
            left -= len(piece)
        self.wfile.write(tail)


class FakeOpenAIServer:
    """An OpenAI-compatible server on 127.0.0.1 (a free port), run in a background thread.

    ``handler`` (also settable as an attribute) answers requests the queue does not; returning
    None falls through to the default. ``embedding_dim`` is the length of the default embedding
    vectors (a request's ``dimensions`` overrides it); ``reverse_embeddings`` returns the
    ``data`` rows in reverse order (with correct ``index`` fields) to test that clients sort.
    """

    def __init__(
        self,
        *,
        handler: Callable[[RecordedRequest], Reply | None] | None = None,
        embedding_dim: int = 8,
        reverse_embeddings: bool = False,
    ) -> None:
        self.handler = handler
        self.embedding_dim = embedding_dim
        self.reverse_embeddings = reverse_embeddings
        self._state = _State()
        self._server: _Server | None = None
        self._thread: threading.Thread | None = None

    # -- lifecycle ----------------------------------------------------------------------------

    def start(self) -> FakeOpenAIServer:
        if self._server is not None:
            raise RuntimeError("FakeOpenAIServer is already running")
        self._state.stopping.clear()
        self._server = _Server(self)
        self._thread = threading.Thread(
            target=self._server.serve_forever,
            kwargs={"poll_interval": 0.05},
            name=f"FakeOpenAIServer:{self.port}",
            daemon=True,
        )
        self._thread.start()
        return self

    def stop(self) -> None:
        """Stop promptly: wakes hanging and trickling replies, closes open connections and
        joins every server thread."""
        server, self._server = self._server, None
        if server is None:
            return
        self._state.stopping.set()
        server.shutdown()
        with self._state.lock:
            open_connections = list(self._state.connections)
        for conn in open_connections:
            with contextlib.suppress(OSError):
                conn.shutdown(socket.SHUT_RDWR)
        server.server_close()
        if self._thread is not None:
            self._thread.join(timeout=5)
            self._thread = None

    def __enter__(self) -> FakeOpenAIServer:
        return self.start()

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self.stop()
        if exc_type is None and self._state.errors:
            raise AssertionError(
                f"a FakeOpenAIServer handler raised: {self._state.errors[0]!r}"
            ) from self._state.errors[0]

    # -- addresses ----------------------------------------------------------------------------

    @property
    def port(self) -> int:
        if self._server is None:
            raise RuntimeError("FakeOpenAIServer is not running; use it in a with block")
        return int(self._server.server_address[1])

    @property
    def root(self) -> str:
        """``http://127.0.0.1:PORT`` (no path)."""
        return f"http://127.0.0.1:{self.port}"

    @property
    def url(self) -> str:
        """The base URL to give a client: ``http://127.0.0.1:PORT/v1``."""
        return f"{self.root}/v1"

    # -- scripting and inspection -------------------------------------------------------------

    def enqueue(self, *replies: Reply) -> None:
        """Answer the next requests (any path) with ``replies``, in order."""
        with self._state.lock:
            self._state.queue.extend(replies)

    @property
    def pending(self) -> int:
        """How many queued replies have not been used yet."""
        with self._state.lock:
            return len(self._state.queue)

    @property
    def requests(self) -> list[RecordedRequest]:
        """Every request received so far, oldest first (a copy)."""
        with self._state.lock:
            return list(self._state.requests)

    def requests_to(self, suffix: str) -> list[RecordedRequest]:
        """The requests whose path ends with ``suffix`` (e.g. ``"/chat/completions"``)."""
        return [r for r in self.requests if r.path.split("?", 1)[0].endswith(suffix)]

    @property
    def errors(self) -> list[BaseException]:
        """Exceptions raised by ``handler`` (each answered with HTTP 500)."""
        with self._state.lock:
            return list(self._state.errors)

    @property
    def empty_connections(self) -> int:
        """Connections that ended without a request line: the client connected and closed (or
        stalled past the handler's timeout) before writing anything."""
        with self._state.lock:
            return self._state.empty_connections

    def settle(self, timeout: float = 10.0) -> bool:
        """Wait until every connection that has reached the server has had its request read
        (or ended without one), so ``requests`` and ``empty_connections`` are complete for
        everything clients sent so far. A request can arrive after the client stopped waiting
        for it (a timeout), and the server's threads may not have read it yet when the client's
        work returns. Returns False if that did not happen within ``timeout`` seconds."""
        server = self._server
        if server is None:
            return True
        deadline = time.monotonic() + timeout
        while True:
            # one snapshot: no connection waits to be accepted, none is between accept and count
            with self._state.accepting:
                waiting, _, _ = select.select([server.socket], [], [], 0)
                with self._state.lock:
                    unread = len(self._state.unread)
            if not waiting and not unread:
                return True
            if time.monotonic() >= deadline:
                return False
            time.sleep(0.02)

    # -- called from the handler threads ------------------------------------------------------

    def _choose(self, request: RecordedRequest) -> Reply:
        with self._state.lock:
            self._state.requests.append(request)
            queued = self._state.queue.popleft() if self._state.queue else None
        if queued is not None:
            return queued
        if self.handler is not None:
            try:
                chosen = self.handler(request)
            except Exception as exc:
                with self._state.lock:
                    self._state.errors.append(exc)
                return Reply.error(500, f"FakeOpenAIServer handler raised {exc!r}")
            if chosen is not None:
                return chosen
        return Reply.default()

    def _default(self, request: RecordedRequest) -> Reply:
        path = request.path.split("?", 1)[0]
        body = request.json if isinstance(request.json, dict) else {}
        if request.method == "POST" and path.endswith("/embeddings"):
            return self._embeddings(body)
        if request.method == "GET" and path.endswith("/models"):
            return Reply.json(
                {"object": "list", "data": [{"id": DEFAULT_MODEL, "object": "model"}]}
            )
        return Reply.error(
            418, f"FakeOpenAIServer has no reply scripted for {request.method} {path}"
        )

    def _embeddings(self, body: Mapping[str, Any]) -> Reply:
        inputs = body.get("input")
        texts = [inputs] if isinstance(inputs, str) else inputs
        if not isinstance(texts, list) or not all(isinstance(t, str) for t in texts):
            return Reply.error(400, "'input' must be a string or a list of strings")
        dim = body.get("dimensions") or self.embedding_dim
        rows = [
            {"object": "embedding", "index": i, "embedding": embedding_for(text, int(dim))}
            for i, text in enumerate(texts)
        ]
        if self.reverse_embeddings:
            rows.reverse()
        tokens = sum(-(-len(t) // 4) for t in texts)
        return Reply.json(
            {
                "object": "list",
                "data": rows,
                "model": body.get("model", DEFAULT_MODEL),
                "usage": {"prompt_tokens": tokens, "total_tokens": tokens},
            }
        )
