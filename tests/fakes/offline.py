"""Prove that a library reaches nothing but 127.0.0.1: every other name lookup or connection
attempt is refused and recorded, so a test can assert that none was made (a library that
swallows the error would otherwise pass unnoticed)."""

from __future__ import annotations

import contextlib
import socket
from collections.abc import Iterator
from typing import Any

__all__ = ["LOOPBACK", "loopback_only"]

LOOPBACK = frozenset({"127.0.0.1", "::1", "localhost"})


@contextlib.contextmanager
def loopback_only() -> Iterator[list[str]]:
    """Within the block, lookups and connections to anything but the loopback raise OSError;
    yields the list of the refused destinations."""
    refused: list[str] = []
    real_getaddrinfo = socket.getaddrinfo
    real_connect = socket.socket.connect
    real_connect_ex = socket.socket.connect_ex

    def getaddrinfo(host: Any, *args: Any, **kwargs: Any) -> Any:
        name = host.decode() if isinstance(host, bytes) else str(host)
        if name not in LOOPBACK:
            refused.append(name)
            raise socket.gaierror(socket.EAI_NONAME, f"test: no network for {name}")
        return real_getaddrinfo(host, *args, **kwargs)

    def allowed(address: Any) -> bool:
        return not isinstance(address, tuple) or str(address[0]) in LOOPBACK

    def connect(self: socket.socket, address: Any) -> Any:
        if not allowed(address):
            refused.append(str(address[0]))
            raise OSError(f"test: no network for {address[0]}")
        return real_connect(self, address)

    def connect_ex(self: socket.socket, address: Any) -> Any:
        if not allowed(address):
            refused.append(str(address[0]))
            raise OSError(f"test: no network for {address[0]}")
        return real_connect_ex(self, address)

    socket.getaddrinfo = getaddrinfo  # type: ignore[assignment]
    socket.socket.connect = connect  # type: ignore[method-assign]
    socket.socket.connect_ex = connect_ex  # type: ignore[method-assign]
    try:
        yield refused
    finally:
        socket.getaddrinfo = real_getaddrinfo  # type: ignore[assignment]
        socket.socket.connect = real_connect  # type: ignore[method-assign]
        socket.socket.connect_ex = real_connect_ex  # type: ignore[method-assign]
