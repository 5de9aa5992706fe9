"""The benchmark kit's OpenAI-compatible mock (``mock_openai.py``) for the bench scripts: started
on a free port in a subprocess, and a client of its ``/control`` and ``/stats`` endpoints and of
its request logs (one JSONL file a run)."""

from __future__ import annotations

import contextlib
import json
import os
import socket
import subprocess
import tempfile
import time
import urllib.request
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from _data import read_jsonl

START_S = 60.0  # how long the mock may take to answer its first request


class Mock:
    """A client of a running mock at ``url``, whose request logs are in ``log_dir`` (if known)."""

    def __init__(self, url: str, log_dir: Path | None = None) -> None:
        self.url = url.rstrip("/")
        self.log_dir = log_dir

    def post(self, path: str, obj: dict[str, Any]) -> Any:
        req = urllib.request.Request(self.url + path, data=json.dumps(obj).encode(),
                                     headers={"Content-Type": "application/json"})
        with urllib.request.urlopen(req, timeout=30) as r:
            return json.loads(r.read())

    def get(self, path: str) -> Any:
        with urllib.request.urlopen(self.url + path, timeout=30) as r:
            return json.loads(r.read())

    def control(self, **body: Any) -> None:
        """Start a new run of the mock's counters and request log, with these settings."""
        self.post("/control", body)

    def reset(self, run: str, latency: float, broken_rate: float = 0.0, broken_kind: str = "truncate",
              seed: int = 0) -> None:
        """A new run ``run``: ``latency`` ms per chat and embedding call, ``broken_rate`` of the
        answers broken in the way ``broken_kind``."""
        self.control(run=run, latency_ms=latency, embed_latency_ms=latency, broken_rate=broken_rate,
                     broken_kind=broken_kind, seed=seed)

    def stats(self) -> dict[str, Any]:
        """The counters of the current run (calls, tokens, broken answers)."""
        return dict(self.get("/stats"))

    def log(self, run: str) -> list[dict[str, Any]] | None:
        """The requests of ``run`` as the mock logged them (None where there is no log)."""
        if self.log_dir is None:
            return None
        path = self.log_dir / f"{run}.jsonl"
        if not path.is_file():
            return None
        return read_jsonl(path)


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


@contextlib.contextmanager
def started_mock(kit: Path, python: Path | str, log_dir: Path | None = None, tiktoken_dir: str | None = None,
                 capacity: int | None = None, script: Path | None = None) -> Iterator[Mock]:
    """The kit's mock (or ``script``) run by ``python`` (which has aiohttp and tiktoken), logging
    to ``log_dir`` (default: a new temporary folder), with ``TIKTOKEN_CACHE_DIR`` set to
    ``tiktoken_dir`` where given; with ``capacity``, behind bench/limited_mock.py (HTTP 429 beyond
    that many chat calls in flight). Stopped on leaving."""
    port = free_port()
    log_dir = log_dir or Path(tempfile.mkdtemp(prefix="mock-logs-"))
    env = dict(os.environ, MOCK_LOG_DIR=str(log_dir))
    if tiktoken_dir is not None:
        env["TIKTOKEN_CACHE_DIR"] = tiktoken_dir
    cmd = [str(python), str(script or kit / "mock_openai.py"), "--port", str(port)]
    if capacity is not None:
        cmd = [str(python), str(Path(__file__).with_name("limited_mock.py")), "--kit", str(kit),
               "--capacity", str(capacity), "--port", str(port)]
    with tempfile.TemporaryFile() as stderr:
        proc = subprocess.Popen(cmd, env=env, stdout=subprocess.DEVNULL, stderr=stderr)
        mock = Mock(f"http://127.0.0.1:{port}", log_dir)
        try:
            deadline = time.monotonic() + START_S
            while True:
                if proc.poll() is not None:
                    stderr.seek(0)
                    raise RuntimeError(f"the mock exited ({' '.join(cmd)}): "
                                       + stderr.read().decode(errors="replace")[-2000:])
                try:
                    mock.stats()
                    break
                except OSError:
                    if time.monotonic() > deadline:
                        raise RuntimeError(f"the mock did not start within {START_S:.0f} s ({' '.join(cmd)})") from None
                    time.sleep(0.1)
            yield mock
        finally:
            proc.terminate()
            try:
                proc.wait(10)
            except subprocess.TimeoutExpired:
                proc.kill()
