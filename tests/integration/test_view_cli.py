"""``ragsight view`` as a person starts it: a process that prints its address, serves the store
over HTTP on 127.0.0.1 until Ctrl-C, and asks for its token when bound to another address."""

from __future__ import annotations

import os
import re
import signal
import subprocess
import sys
import time
import urllib.error
import urllib.request
from pathlib import Path

import pytest

import ragsight
from ragsight import Store
from ragsight.cli import example_path, main
from tests.fakes.scripted_world import METRICS, provider

ROOT = Path(__file__).resolve().parents[2]


@pytest.fixture(scope="module")
def example_store(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The bundled example evaluated twice (as ``ragsight evaluate --example`` would, with a
    scripted judge instead of the embedded model)."""
    path = tmp_path_factory.mktemp("example") / "ragsight.db"
    for _ in range(2):
        ragsight.evaluate(example_path(), METRICS, judge=provider(), store=str(path),
                          options=ragsight.RunOptions(cache=False))
    return path


def start(*args: str) -> tuple[subprocess.Popen[str], str, str]:
    """``ragsight view ARGS`` in a process of its own; returns it, the address it printed and
    what it printed up to there."""
    env = {**os.environ, "PYTHONPATH": str(ROOT / "src") + os.pathsep + os.environ.get("PYTHONPATH", ""),
           "COLUMNS": "200"}
    proc = subprocess.Popen([sys.executable, "-m", "ragsight.cli", "view", *args], stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True, env=env)
    assert proc.stdout is not None
    deadline = time.monotonic() + 60
    lines = []
    while time.monotonic() < deadline:
        line = proc.stdout.readline()
        if not line:
            break
        lines.append(line)
        m = re.match(r"open (http://\S+)", line)
        if m:
            return proc, m.group(1), "".join(lines)
    proc.kill()
    raise AssertionError(f"no address printed: {lines} {proc.stderr.read() if proc.stderr else ''}")


def stop(proc: subprocess.Popen[str]) -> tuple[int, str, str]:
    proc.send_signal(signal.SIGINT)
    out, err = proc.communicate(timeout=30)
    return proc.returncode, out, err


def fetch(url: str, headers: dict[str, str] | None = None) -> tuple[int, str, dict[str, str]]:
    req = urllib.request.Request(url, headers=headers or {})
    opener = urllib.request.build_opener(_NoRedirect)
    try:
        with opener.open(req, timeout=30) as r:
            return r.status, r.read().decode(), dict(r.headers)
    except urllib.error.HTTPError as exc:
        return exc.code, exc.read().decode(), dict(exc.headers)


class _NoRedirect(urllib.request.HTTPRedirectHandler):
    def redirect_request(self, *args: object, **kwargs: object) -> None:
        return None


@pytest.mark.slow  # a process of its own: about 5 s on a loaded machine
def test_view_serves_the_example_store_until_ctrl_c(example_store: Path) -> None:
    proc, address, printed = start("--store", str(example_store), "--port", "0")
    assert printed.startswith(f"ragsight view: 2 run(s) in {example_store}\n")
    try:
        assert re.fullmatch(r"http://127\.0\.0\.1:\d+/", address)
        status, page, headers = fetch(address)
        assert status == 200
        with Store(example_store) as store:
            ids = [r.id for r in store.runs()]
        assert len(ids) == 2 and all(f'href="/run/{i}"' in page for i in ids)
        assert headers["Content-Security-Policy"].startswith("default-src 'none'")
        assert headers["X-Frame-Options"] == "DENY" and headers["Cache-Control"] == "no-store"
        status, page, _ = fetch(address + f"run/{ids[0]}?q=warranty")
        assert status == 200 and "ex-1" in page
        status, page, _ = fetch(address + f"run/{ids[0]}/sample/ex-2")
        assert status == 200 and "Batteries and motors are covered" in page
    finally:
        code, out, err = stop(proc)
    # (what start() read ahead of the address may hold the "Ctrl-C stops it." line)
    assert code == 0 and out.endswith("stopped\n") and "Error" not in out, (out, err)
    assert "Traceback" not in err


@pytest.mark.slow
def test_another_address_needs_the_printed_token(example_store: Path) -> None:
    proc, address, _ = start("--store", str(example_store), "--port", "0", "--host", "127.0.0.2")
    try:
        m = re.fullmatch(r"(http://127\.0\.0\.2:\d+/)\?token=([\w-]+)", address)
        assert m, address
        base, token = m.groups()
        status, page, _ = fetch(base)
        assert status == 403 and "access token" in page and "href=\"/run/" not in page
        assert fetch(base + "?token=not-it")[0] == 403
        status, _, headers = fetch(address)
        assert status == 303 and headers["Location"] == "/"
        cookie = headers["Set-Cookie"].split(";")[0]
        assert cookie == f"ragsight_token={token}"
        status, page, _ = fetch(base, {"Cookie": cookie})
        assert status == 200 and 'href="/run/' in page
    finally:
        code, _, err = stop(proc)
    assert code == 0 and "other machines may reach" in err


def test_view_without_a_store_says_so(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["view", "--store", str(tmp_path / "none.db"), "--port", "0"]) == 2
    assert "no store at" in capsys.readouterr().err
    assert not (tmp_path / "none.db").exists()


def test_a_host_name_is_refused(example_store: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["view", "--store", str(example_store), "--host", "example.com", "--port", "0"]) == 2
    assert "--host takes an IP address" in capsys.readouterr().err


def test_view_help_reads_at_80_columns(capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("COLUMNS", "80")
    with pytest.raises(SystemExit):
        main(["view", "--help"])
    text = capsys.readouterr().out
    assert "ragsight view --store ragsight.db" in text and "--host" in text
    assert max(len(line) for line in text.splitlines()) <= 80
