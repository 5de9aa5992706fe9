"""Serving the viewer with the standard library's HTTP server: one thread per request, every
answer with the page's Content-Security-Policy and headers that keep it out of caches, frames and
referrers. Nothing is logged but errors (a request's address may hold the access token).

What reaches the application is one well-framed request: a body is read only by a plain
Content-Length of at most 64 kB; a body refused (too large, a length that is not a count, a
Transfer-Encoding) closes the connection, so what follows it is never read as another request.
Slow and vanished clients cost little: a connection holds no thread while its request arrives (one
thread reads them all, ``_connections.py``), it has an idle timeout and a time limit for each
request, the handler threads are capped, and a client that disconnects prints nothing."""

from __future__ import annotations

import io
import ipaddress
import queue
import re
import secrets
import socket
import sys
import threading
from http import HTTPStatus
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

from ..errors import ConfigError
from ._app import LOOPBACK_NAMES, MAX_BODY, Response, ViewApp
from ._assets import CSP
from ._connections import Gatekeeper

__all__ = ["DEFAULT_PORT", "ViewServer", "is_loopback", "make_server", "new_token"]

DEFAULT_PORT = 8765

SECURITY_HEADERS = {
    "Content-Security-Policy": CSP,
    "X-Content-Type-Options": "nosniff",
    "X-Frame-Options": "DENY",
    "Referrer-Policy": "no-referrer",
    "Cache-Control": "no-store",
    "Cross-Origin-Opener-Policy": "same-origin",
    "Cross-Origin-Resource-Policy": "same-origin",
}


def is_loopback(host: str) -> bool:
    """127.0.0.1, ::1 and ``localhost``: the addresses the viewer serves without a token."""
    return host in LOOPBACK_NAMES


def new_token() -> str:
    return secrets.token_urlsafe(24)


def _content_length(values: list[str]) -> int | None:
    """The body's length from the request's Content-Length header(s): ``None`` when there is
    none, -1 when it is not one plain count (negative, a sign, ``1_0``, two different values)."""
    if not values:
        return None
    if len(values) > 1 or not _DIGITS.fullmatch(values[0].strip()):
        return -1
    return int(values[0].strip())


class _Handler(BaseHTTPRequestHandler):
    server: ViewServer
    server_version = "ragsight-view"
    sys_version = ""
    protocol_version = "HTTP/1.1"

    keep = False  # the connection stays open for another request

    def handle_expect_100(self) -> bool:
        # the gatekeeper said "100 Continue" while it waited for the body, which is here now
        return True

    def setup(self) -> None:
        # ``request``: the socket and one whole request, read by the gatekeeper
        sock, data = self.request
        self.connection = sock
        sock.settimeout(self.server.idle_timeout_s)  # each write of the answer
        self.rfile = io.BytesIO(data)
        self.wfile = _Writer(sock)

    def handle(self) -> None:
        """One request (the connection goes back to the gatekeeper for the next)."""
        self.close_connection = True
        self.handle_one_request()
        self.keep = not self.close_connection

    def _refuse(self, status: int, message: str) -> None:
        """Answer with ``status`` and close the connection: whatever the client sent after the
        headers is never read as another request."""
        self.close_connection = True
        self._send(Response(status, message.encode(), "text/plain; charset=utf-8", {"Connection": "close"}))

    def _serve(self, method: str) -> None:
        if self.headers.get_all("Transfer-Encoding"):
            self._refuse(501, "a body in parts (Transfer-Encoding) is not accepted; send it with a Content-Length")
            return
        length = _content_length(self.headers.get_all("Content-Length") or [])
        if length is not None and length < 0:
            self._refuse(400, "Content-Length must be one whole number of bytes")
            return
        if length is not None and length > MAX_BODY:
            self._refuse(413, f"request too large (at most {MAX_BODY // 1024} kB)")
            return
        body = self.rfile.read(length) if length else b""
        if length and len(body) < length:  # the client closed before its body was whole
            self.close_connection = True
            return
        headers = {k.lower(): v for k, v in self.headers.items()}
        try:
            response = self.server.app.handle(method, self.path, headers, body)
        except Exception as exc:  # a bug must not take the viewer down: say so and go on
            self.log_error("%s %s failed: %s: %s", method, self.path.split("?")[0], type(exc).__name__, exc)
            response = Response(500, ("internal error: " + type(exc).__name__).encode(), "text/plain; charset=utf-8")
        self._send(response)

    def _send(self, response: Response) -> None:
        headers = {**SECURITY_HEADERS, "Content-Type": response.content_type,
                   "Content-Length": str(len(response.body)), **response.headers}
        bad = [k for k, v in headers.items() if _BREAK.search(k) or _BREAK.search(v)]
        if bad:  # never a line break in a header: it would end the header early, or add one
            self.log_error("a header with a line break was not sent (%s)", ", ".join(bad))
            response = Response(500, b"internal error: a header held a line break", "text/plain; charset=utf-8",
                                {"Connection": "close"})
            headers = {**SECURITY_HEADERS, "Content-Type": response.content_type,
                       "Content-Length": str(len(response.body)), **response.headers}
        self.send_response(response.status)
        for k, v in headers.items():
            self.send_header(k, v)
        self.end_headers()
        self.wfile.write(response.body)

    def do_GET(self) -> None:
        self._serve("GET")

    def do_POST(self) -> None:
        self._serve("POST")

    def do_PUT(self) -> None:
        self._serve("PUT")

    def do_DELETE(self) -> None:
        self._serve("DELETE")

    def log_message(self, format: str, *args: Any) -> None:
        pass  # the request line may hold the token

    def log_error(self, format: str, *args: Any) -> None:
        if format.startswith(_QUIET):  # a client's malformed request or its silence: answered, not news
            return
        sys.stderr.write("ragsight view: " + (format % args) + "\n")


class _Writer(io.BufferedIOBase):
    """Writes straight to the socket, whole (``sendall``)."""

    def __init__(self, sock: socket.socket) -> None:
        self._sock = sock

    def writable(self) -> bool:
        return True

    def write(self, b: Any) -> int:
        self._sock.sendall(b)
        with memoryview(b) as view:
            return view.nbytes


_DIGITS = re.compile(r"[0-9]{1,18}")
_BREAK = re.compile(r"[\r\n]")
_QUIET = ("code %d", "Request timed out")


class ViewServer(ThreadingHTTPServer):
    """The viewer's HTTP server. A connection waits for its request in the gatekeeper (one
    thread for all: ``_connections.py``), at most ``max_connections`` at once (one beyond them is
    answered 503 and closed), dropped after ``idle_timeout_s`` seconds without a request or
    ``request_timeout_s`` from a request's first byte to its last; each whole request is answered
    by one of ``max_handlers`` threads. ``request_queue_size`` connections wait to be accepted."""

    daemon_threads = True
    request_queue_size = 128
    max_handlers = 32
    max_connections = 512
    idle_timeout_s = 15.0
    request_timeout_s = 10.0

    def __init__(self, address: tuple[str, int], app: ViewApp) -> None:
        self.app = app
        self._work: queue.SimpleQueue[tuple[socket.socket, Any, bytes, bytes] | None] = queue.SimpleQueue()
        self._workers: list[threading.Thread] = []
        self._busy_count = 0
        self._count_lock = threading.Lock()
        if ":" in address[0]:
            self.address_family = socket.AF_INET6
        super().__init__(address, _Handler)
        self._gate = Gatekeeper(self._dispatch, max_body=MAX_BODY, idle_s=lambda: self.idle_timeout_s,
                                request_s=lambda: self.request_timeout_s, refuse=self._refuse_raw)

    @property
    def port(self) -> int:
        return int(self.server_address[1])

    def url(self) -> str:
        host = str(self.server_address[0])
        shown = f"[{host}]" if ":" in host else host
        return f"http://{shown}:{self.port}/"

    def start(self) -> threading.Thread:
        """Serve in a daemon thread (tests, the bench); :meth:`shutdown` stops it."""
        thread = threading.Thread(target=self.serve_forever, name="ragsight-view", daemon=True)
        thread.start()
        return thread

    def process_request(self, request: Any, client_address: Any) -> None:
        """A new connection: to the gatekeeper, which holds it (no thread) until its request is
        whole; 503 and closed when ``max_connections`` are held already."""
        with self._count_lock:
            held = self._gate.held + self._busy_count
        if held >= self.max_connections:
            self._refuse_raw(request, 503, "the viewer is busy; try again in a moment")
            return
        self._gate.add(request, client_address)

    def _dispatch(self, sock: socket.socket, address: Any, request: bytes, rest: bytes) -> None:
        with self._count_lock:
            self._busy_count += 1
            if len(self._workers) < self.max_handlers:
                worker = threading.Thread(target=self._work_loop, name="ragsight-view-handler", daemon=True)
                self._workers.append(worker)
                worker.start()
        self._work.put((sock, address, request, rest))

    def _work_loop(self) -> None:
        while True:
            item = self._work.get()
            if item is None:
                return
            sock, address, request, rest = item
            keep = False
            try:
                handler = _Handler((sock, request), address, self)  # type: ignore[arg-type]
                keep = handler.keep
            except Exception:
                self.handle_error(sock, address)
            finally:
                with self._count_lock:
                    self._busy_count -= 1
            if keep:
                self._gate.give_back(sock, address, rest)
            else:
                self.shutdown_request(sock)

    def _refuse_raw(self, request: socket.socket, status: int, message: str) -> None:
        """Say ``status`` and close, without waiting on the client (a 503 when full, a 414 or 431)."""
        body = message.encode()
        reason = HTTPStatus(status).phrase
        head = (f"HTTP/1.1 {status} {reason}\r\nContent-Type: text/plain; charset=utf-8\r\n"
                f"Content-Length: {len(body)}\r\n" + ("Retry-After: 1\r\n" if status == 503 else "")
                + "Connection: close\r\n\r\n")
        try:
            request.setblocking(False)
            request.send(head.encode() + body)
        except OSError:
            pass
        self.shutdown_request(request)

    def server_close(self) -> None:
        self._gate.close()
        with self._count_lock:
            workers = list(self._workers)
        for _ in workers:
            self._work.put(None)
        super().server_close()

    def handle_error(self, request: Any, client_address: Any) -> None:
        """A client that closed or reset its connection, or went silent, is not an error of the
        viewer: nothing is printed. Anything else is one line on stderr."""
        exc = sys.exc_info()[1]
        if isinstance(exc, (ConnectionError, TimeoutError)):
            return
        sys.stderr.write(f"ragsight view: a connection failed: {type(exc).__name__}: {exc}\n")


def make_server(store: str, host: str = "127.0.0.1", port: int = DEFAULT_PORT, *,
                token: str | None = None, index_path: str | None = None, field: str = "human") -> ViewServer:
    """A viewer of ``store`` listening on ``host:port`` (port 0: any free one). Any address but
    127.0.0.1, ::1 or localhost gets an access token (``token``, or a new one: read it from
    ``server.app.token``)."""
    if isinstance(port, bool) or not isinstance(port, int) or not 0 <= port <= 65535:
        raise ConfigError(f"--port takes a port number from 0 to 65535 (0: any free one), not {port!r}")
    if not is_loopback(host):
        try:
            ipaddress.ip_address(host)
        except ValueError:
            raise ConfigError(f"--host takes an IP address (127.0.0.1, 0.0.0.0, ...), not '{host}'") from None
        token = token or new_token()
    app = ViewApp(store, token=token, index_path=index_path, field=field)
    try:
        server = ViewServer((host, port), app)
    except OSError as exc:
        app.close()
        raise ConfigError(f"cannot listen on {host}:{port} ({exc.strerror or exc}); pick another --port "
                          "(0 takes any free one)") from None
    app.bound(host, server.port)
    return server
