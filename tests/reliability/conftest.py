"""Fixtures shared by the reliability tests."""

from __future__ import annotations

import pytest

import tests.fakes.openai_server as fake_server

ENV_TO_CLEAR = (
    "OPENAI_API_KEY", "OPENAI_BASE_URL", "RAGSIGHT_STORE",
    "HTTP_PROXY", "HTTPS_PROXY", "ALL_PROXY", "http_proxy", "https_proxy", "all_proxy",
)


@pytest.fixture(autouse=True)
def _clean_env(monkeypatch: pytest.MonkeyPatch) -> None:
    for name in ENV_TO_CLEAR:
        monkeypatch.delenv(name, raising=False)
    # socketserver listens with a backlog of 5: with 16 calls in flight the kernel drops SYNs and
    # the client retransmits after 1 s, which a 1.5 s call timeout reports as a timeout. The
    # fault tests inject their own faults; the fake server must not add unplanned ones.
    monkeypatch.setattr(fake_server._Server, "request_queue_size", 128)
