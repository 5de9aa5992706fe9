"""Serving the viewer with the standard library's HTTP server: one thread per request, every
answer with the page's Content-Security-Policy and headers that keep it out of caches, frames and
referrers. Nothing is logged but errors (a request's address may hold the access token)."""

from __future__ import annotations

import ipaddress
import secrets
import socket
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

from ..errors import ConfigError
from ._app import LOOPBACK_NAMES, MAX_BODY, Response, ViewApp
from ._assets import CSP

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


class _Handler(BaseHTTPRequestHandler):
    server: ViewServer
    server_version = "ragsight-view"
    sys_version = ""
    protocol_version = "HTTP/1.1"

    def _serve(self, method: str) -> None:
        try:
            length = int(self.headers.get("Content-Length") or 0)
        except ValueError:
            length = -1
        if length < 0 or length > MAX_BODY:
            self._send(Response(413, b"request too large", "text/plain; charset=utf-8"))
            return
        body = self.rfile.read(length) if length else b""
        headers = {k.lower(): v for k, v in self.headers.items()}
        try:
            response = self.server.app.handle(method, self.path, headers, body)
        except Exception as exc:  # a bug must not take the viewer down: say so and go on
            self.log_error("%s %s failed: %s: %s", method, self.path.split("?")[0], type(exc).__name__, exc)
            response = Response(500, ("internal error: " + type(exc).__name__).encode(), "text/plain; charset=utf-8")
        self._send(response)

    def _send(self, response: Response) -> None:
        self.send_response(response.status)
        for k, v in SECURITY_HEADERS.items():
            self.send_header(k, v)
        self.send_header("Content-Type", response.content_type)
        self.send_header("Content-Length", str(len(response.body)))
        for k, v in response.headers.items():
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
        import sys

        sys.stderr.write("ragsight view: " + (format % args) + "\n")


class ViewServer(ThreadingHTTPServer):
    daemon_threads = True

    def __init__(self, address: tuple[str, int], app: ViewApp) -> None:
        self.app = app
        if ":" in address[0]:
            self.address_family = socket.AF_INET6
        super().__init__(address, _Handler)

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


def make_server(store: str, host: str = "127.0.0.1", port: int = DEFAULT_PORT, *,
                token: str | None = None, index_path: str | None = None, field: str = "human") -> ViewServer:
    """A viewer of ``store`` listening on ``host:port`` (port 0: any free one). Any address but
    127.0.0.1, ::1 or localhost gets an access token (``token``, or a new one: read it from
    ``server.app.token``)."""
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
