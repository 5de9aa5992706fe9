"""The viewer's connections while they wait for a request: held by one thread, not one each.

A thread per connection from its first byte let slow clients take every handler thread: 300
clients sending a byte now and then left a normal request a 503. Here one thread (the
:class:`Gatekeeper`) reads every waiting connection without blocking, into a buffer of its own,
until a whole request is there (its head, and the body its Content-Length gives); only then is
the request handed to a handler thread, which reads it from that buffer and writes its answer to
the socket. A kept-alive connection comes back here between requests. What a connection may take:
``idle_s`` without a request, ``request_s`` from a request's first byte to its last, a head of
at most :data:`MAX_HEAD` bytes; ``max_connections`` held at once (beyond them, 503 and close).
"""

from __future__ import annotations

import contextlib
import re
import selectors
import socket
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field

__all__ = ["MAX_HEAD", "Gatekeeper", "whole_request"]

MAX_HEAD = 32 * 1024  # a request line and headers, in bytes

_HEAD_END = re.compile(rb"\r?\n\r?\n")
_LENGTH = re.compile(rb"^content-length[ \t]*:[ \t]*([^\r\n]*)", re.IGNORECASE | re.MULTILINE)
_CHUNKED = re.compile(rb"^transfer-encoding[ \t]*:", re.IGNORECASE | re.MULTILINE)
_DIGITS = re.compile(rb"[0-9]{1,18}")
_EXPECT_CONTINUE = re.compile(rb"^expect[ \t]*:[ \t]*100-continue[ \t]*\r?$", re.IGNORECASE | re.MULTILINE)
_CONTINUE = b"HTTP/1.1 100 Continue\r\n\r\n"


def whole_request(buf: bytes | bytearray, max_body: int) -> int | None:
    """How many bytes of ``buf`` make its first request (head and body), None while it is not
    all there, -1 when its head is over :data:`MAX_HEAD`. A body the handler refuses (too large,
    a length that is not one count, Transfer-Encoding) is not waited for: the head alone goes,
    is answered, and the connection closed."""
    m = _HEAD_END.search(buf, 0, MAX_HEAD + 4)
    if m is None:
        return -1 if len(buf) > MAX_HEAD else None
    head = bytes(buf[:m.end()])
    lengths = _LENGTH.findall(head)
    body = 0
    if not _CHUNKED.search(head) and len(lengths) == 1 and _DIGITS.fullmatch(lengths[0].strip()):
        n = int(lengths[0].strip())
        body = n if n <= max_body else 0
    end = m.end() + body
    return end if len(buf) >= end else None


@dataclass
class _Conn:
    sock: socket.socket
    address: object
    buf: bytearray = field(default_factory=bytearray)
    idle_until: float = 0.0
    request_until: float | None = None  # set at a request's first byte
    continued: bool = False  # "100 Continue" sent for the request being read


class Gatekeeper:
    """Holds the connections waiting for a request (module docstring). ``dispatch(sock, address,
    request, rest)`` is called (from this thread) with each whole request and what followed it;
    the handler calls :meth:`give_back` with a kept-alive connection when it has answered."""

    def __init__(self, dispatch: Callable[[socket.socket, object, bytes, bytes], None], *, max_body: int,
                 idle_s: Callable[[], float], request_s: Callable[[], float],
                 refuse: Callable[[socket.socket, int, str], None]) -> None:
        self.dispatch = dispatch
        self.max_body = max_body
        self.idle_s = idle_s
        self.request_s = request_s
        self.refuse = refuse
        self._sel = selectors.DefaultSelector()
        self._wake_r, self._wake_w = socket.socketpair()
        self._wake_r.setblocking(False)
        self._sel.register(self._wake_r, selectors.EVENT_READ, None)
        self._lock = threading.Lock()
        self._incoming: list[_Conn] = []
        self._held: dict[socket.socket, _Conn] = {}
        self._count = 0  # connections handed in and not yet dispatched or dropped
        self._closed = False
        self._thread = threading.Thread(target=self._run, name="ragsight-view-connections", daemon=True)
        self._thread.start()

    def add(self, sock: socket.socket, address: object) -> None:
        """A new connection: held until its first request is whole."""
        self._hand_in(_Conn(sock, address))

    def give_back(self, sock: socket.socket, address: object, rest: bytes) -> None:
        """A kept-alive connection after its answer, with what it sent after that request."""
        self._hand_in(_Conn(sock, address, bytearray(rest)))

    def _hand_in(self, conn: _Conn) -> None:
        conn.idle_until = time.monotonic() + self.idle_s()
        with self._lock:
            if self._closed:
                _close(conn.sock)
                return
            self._incoming.append(conn)
            self._count += 1
        with contextlib.suppress(OSError):
            self._wake_w.send(b"x")

    def close(self) -> None:
        with self._lock:
            self._closed = True
        with contextlib.suppress(OSError):
            self._wake_w.send(b"x")
        self._thread.join(timeout=5)

    def _run(self) -> None:
        try:
            while True:
                with self._lock:
                    closed, incoming, self._incoming = self._closed, self._incoming, []
                if closed:
                    for conn in [*incoming, *self._held.values()]:
                        _close(conn.sock)
                    self._held.clear()
                    return
                for conn in incoming:
                    self._held[conn.sock] = conn
                    try:
                        conn.sock.setblocking(False)
                        self._sel.register(conn.sock, selectors.EVENT_READ, conn)
                    except (OSError, ValueError):  # closed meanwhile
                        self._drop(conn)
                        continue
                    if conn.buf:
                        self._advance(conn)  # a pipelined request may be whole already
                for key, _ in self._sel.select(timeout=0.25):
                    if key.data is None:
                        try:
                            while self._wake_r.recv(4096):
                                pass
                        except OSError:
                            pass
                        continue
                    self._read(key.data)
                now = time.monotonic()
                for conn in list(self._held.values()):
                    late = conn.request_until if conn.request_until is not None else conn.idle_until
                    if now > late:
                        self._drop(conn)
        finally:
            self._sel.close()
            _close(self._wake_r)
            _close(self._wake_w)

    def _read(self, conn: _Conn) -> None:
        try:
            chunk = conn.sock.recv(65536)
        except (BlockingIOError, InterruptedError):
            return
        except OSError:
            self._drop(conn)
            return
        if not chunk:
            self._drop(conn)
            return
        if conn.request_until is None:
            conn.request_until = time.monotonic() + self.request_s()
        conn.buf += chunk
        self._advance(conn)

    def _advance(self, conn: _Conn) -> None:
        size = whole_request(conn.buf, self.max_body)
        if size is None:
            if conn.buf and conn.request_until is None:
                conn.request_until = time.monotonic() + self.request_s()
            if not conn.continued and (m := _HEAD_END.search(conn.buf, 0, MAX_HEAD + 4)) is not None \
                    and _EXPECT_CONTINUE.search(conn.buf, 0, m.end()):
                # a client that waits for leave to send its body (curl on a large one): the body
                # is wanted, as its size is within the limit (else the head alone is whole)
                conn.continued = True
                with contextlib.suppress(OSError):
                    conn.sock.send(_CONTINUE)
            return
        conn.continued = False
        self._release(conn)
        if size < 0:  # the request line alone over the limit: its target (URI) is too long
            if b"\n" not in conn.buf[:MAX_HEAD]:
                self.refuse(conn.sock, 414, "request target too long")
            else:
                self.refuse(conn.sock, 431, "request head too large")
            return
        request, rest = bytes(conn.buf[:size]), bytes(conn.buf[size:])
        try:
            conn.sock.setblocking(True)
        except OSError:
            _close(conn.sock)
            return
        self.dispatch(conn.sock, conn.address, request, rest)

    def _release(self, conn: _Conn) -> None:
        if self._held.pop(conn.sock, None) is not None:
            with self._lock:
                self._count -= 1
        with contextlib.suppress(KeyError, ValueError):
            self._sel.unregister(conn.sock)

    def _drop(self, conn: _Conn) -> None:
        self._release(conn)
        _close(conn.sock)

    @property
    def held(self) -> int:
        """Connections held now (handed in, not yet dispatched or dropped)."""
        with self._lock:
            return self._count


def _close(sock: socket.socket) -> None:
    with contextlib.suppress(OSError):
        sock.shutdown(socket.SHUT_RDWR)
    with contextlib.suppress(OSError):
        sock.close()
