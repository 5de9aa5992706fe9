"""The OTLP/HTTP receiver: ``POST /v1/traces`` (protobuf or JSON, gzip or not), served by the
standard library's threaded HTTP server as ``ragsight view`` is.

Every span of a request is committed to the store before the answer 200: a span acknowledged is
a span kept, whatever happens to the process after. A body that is not an OTLP export gets 400,
one over the limits 413 (the connection closed, so nothing after it is read as a request), a store
that cannot take it 503 (the exporter sends again later), and the receiver goes on serving.

Bound to 127.0.0.1 (or ::1, localhost) it answers anyone on this machine; bound to any other
address it refuses to start without a token, and then every request must carry
``Authorization: Bearer TOKEN`` (401 otherwise). Nothing is logged per request.
"""

from __future__ import annotations

import hmac
import ipaddress
import socket
import sqlite3
import sys
import threading
import time
from collections.abc import Callable
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

from ..errors import ConfigError, RagsightError
from ._ledger import record_spans
from ._otlp import DecodeError, TooLarge, decode_request, response_body

__all__ = ["LOOPBACK", "Limits", "Receiver", "parse_address"]

LOOPBACK = ("127.0.0.1", "::1", "localhost")


def parse_address(text: str) -> tuple[str, int]:
    """``HOST:PORT`` (``[::1]:4318`` for IPv6) as (host, port)."""
    host, sep, port = str(text).rpartition(":")
    host = host.strip("[]")
    if not sep or not host or not port.isdigit() or not 0 <= int(port) <= 65535:
        raise ConfigError(f"--otlp takes HOST:PORT, e.g. 127.0.0.1:4318, not {text!r}")
    if host != "localhost":
        try:
            ipaddress.ip_address(host)
        except ValueError:
            raise ConfigError(f"--otlp takes an IP address (127.0.0.1, 0.0.0.0, ...) and a port, not {text!r}") from None
    return host, int(port)


def is_loopback(host: str) -> bool:
    return host in LOOPBACK or host.startswith("127.")


class Limits:
    """What one request may hold: ``max_bytes`` of body (also once inflated) and ``max_spans``."""

    def __init__(self, max_bytes: int = 8 * 1024 * 1024, max_spans: int = 20_000) -> None:
        self.max_bytes = max_bytes
        self.max_spans = max_spans


class _Handler(BaseHTTPRequestHandler):
    server: Receiver
    server_version = "ragsight-monitor"
    sys_version = ""
    protocol_version = "HTTP/1.1"

    def setup(self) -> None:
        self.request.settimeout(self.server.idle_timeout_s)
        super().setup()

    def _answer(self, status: int, body: bytes, content_type: str = "text/plain; charset=utf-8",
                close: bool = False, extra: dict[str, str] | None = None) -> None:
        if close:
            self.close_connection = True
        self.send_response(status)
        self.send_header("Content-Type", content_type)
        self.send_header("Content-Length", str(len(body)))
        for k, v in (extra or {}).items():
            self.send_header(k, v)
        if close:
            self.send_header("Connection", "close")
        self.end_headers()
        self.wfile.write(body)

    def do_GET(self) -> None:
        if self.path.split("?")[0] == "/healthz" and self._authorized():
            self._answer(200, b"ok")
            return
        self._answer(404 if self._authorized() else 401, b"POST OTLP traces to /v1/traces")

    def _authorized(self) -> bool:
        token = self.server.token
        if token is None:
            return True
        given = self.headers.get("Authorization", "")
        return given.startswith("Bearer ") and hmac.compare_digest(given[7:].strip().encode(), token.encode())

    def do_POST(self) -> None:
        srv = self.server
        if not self._authorized():
            self._answer(401, b"this receiver needs its token: Authorization: Bearer TOKEN", close=True,
                         extra={"WWW-Authenticate": "Bearer"})
            return
        if self.path.split("?")[0] != "/v1/traces":
            self._answer(404, b"POST OTLP traces to /v1/traces", close=True)
            return
        if self.headers.get_all("Transfer-Encoding"):
            self._answer(411, b"send the body with a Content-Length", close=True)
            return
        raw = self.headers.get_all("Content-Length") or []
        if len(raw) != 1 or not raw[0].strip().isdigit():
            self._answer(411 if not raw else 400, b"Content-Length must be one whole number of bytes", close=True)
            return
        length = int(raw[0].strip())
        if length > srv.limits.max_bytes:
            self._answer(413, f"a request holds at most {srv.limits.max_bytes:,} bytes".encode(), close=True)
            return
        body = self.rfile.read(length) if length else b""
        if len(body) < length:
            self.close_connection = True
            return
        try:
            spans, as_json = decode_request(body, self.headers.get("Content-Type", ""),
                                            self.headers.get("Content-Encoding", "").strip().lower(),
                                            max_bytes=srv.limits.max_bytes, max_spans=srv.limits.max_spans)
        except TooLarge as exc:
            srv.count("refused_too_large")
            self._answer(413, str(exc).encode(), close=True)
            return
        except DecodeError as exc:
            srv.count("refused_malformed")
            self._answer(400, str(exc).encode())
            return
        try:
            srv.store_spans(spans)
        except (RagsightError, sqlite3.Error) as exc:  # said, and the exporter sends again
            sys.stderr.write(f"ragsight monitor: spans not stored ({type(exc).__name__}: {exc}); answered 503\n")
            self._answer(503, b"the store could not take the spans; send again", extra={"Retry-After": "2"})
            return
        srv.count("requests")
        data, kind = response_body(as_json)
        self._answer(200, data, kind)

    def log_message(self, format: str, *args: Any) -> None:
        pass

    def log_error(self, format: str, *args: Any) -> None:
        if format.startswith(("code %d", "Request timed out")):
            return
        sys.stderr.write("ragsight monitor: " + (format % args) + "\n")


class Receiver(ThreadingHTTPServer):
    """The receiver on ``address``, writing through ``conn`` (one SQLite connection, used under
    a lock). ``token``: required off loopback."""

    daemon_threads = True
    request_queue_size = 256
    idle_timeout_s = 30.0

    def __init__(self, address: tuple[str, int], conn: sqlite3.Connection, *, token: str | None = None,
                 limits: Limits | None = None, clock: Callable[[], float] = time.time) -> None:
        host = address[0]
        if not is_loopback(host) and not token:
            raise ConfigError(f"ragsight monitor listens on {host} only with a token: give --token TOKEN (then "
                              "every request needs Authorization: Bearer TOKEN), or listen on 127.0.0.1")
        self.token = token or None
        self.limits = limits or Limits()
        self.conn = conn
        self.clock = clock
        self._lock = threading.Lock()
        self.counters: dict[str, int] = {}
        if ":" in host:
            self.address_family = socket.AF_INET6
        try:
            super().__init__(address, _Handler)
        except OSError as exc:
            raise ConfigError(f"cannot listen on {host}:{address[1]} ({exc.strerror or exc}); pick another "
                              "port") from None

    @property
    def port(self) -> int:
        return int(self.server_address[1])

    def store_spans(self, spans: list[Any]) -> None:
        with self._lock:
            record_spans(self.conn, spans, self.clock())

    def count(self, key: str) -> None:
        with self._lock:
            self.counters[key] = self.counters.get(key, 0) + 1

    def start(self) -> threading.Thread:
        thread = threading.Thread(target=self.serve_forever, name="ragsight-monitor-otlp", daemon=True)
        thread.start()
        return thread

    def handle_error(self, request: Any, client_address: Any) -> None:
        exc = sys.exc_info()[1]
        if isinstance(exc, (ConnectionError, TimeoutError)):
            return
        sys.stderr.write(f"ragsight monitor: a connection failed: {type(exc).__name__}: {exc}\n")
