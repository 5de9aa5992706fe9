"""``ragsight align`` asks the judge again (the worked examples, on each held-out fold). It used to
ask through the run's judge *name* only: a run made with ``--base-url`` of a local server was
re-judged against the provider's public endpoint, with the key. Now it calls the run's server when
the run stored one (and says so), and without one it needs ``--base-url``. And when every call of
the re-judging failed, it says the calls failed (it used to say the claims "were not found
again"). Through the CLI as documented, against the fake judge over HTTP; no address but
127.0.0.1 can be resolved during these tests."""

from __future__ import annotations

import json
import socket
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from ragsight import cli
from ragsight.store import Store
from tests.fakes import FakeOpenAIServer, RecordedRequest, Reply
from tests.reliability.world import JudgeWorld, make_samples


@pytest.fixture(autouse=True)
def _only_this_machine(monkeypatch: pytest.MonkeyPatch) -> None:
    """Any attempt to reach a public endpoint fails here, before a byte leaves the machine."""
    real = socket.getaddrinfo

    def local_only(host: Any, *args: Any, **kwargs: Any) -> Any:
        if host not in ("127.0.0.1", "localhost", "::1", None):
            raise socket.gaierror(socket.EAI_NONAME, f"{host}: not resolved in this test")
        return real(host, *args, **kwargs)

    monkeypatch.setattr(socket, "getaddrinfo", local_only)
    monkeypatch.setenv("OPENAI_API_KEY", "sk-test-align")


@pytest.fixture
def judge() -> Iterator[FakeOpenAIServer]:
    with FakeOpenAIServer(handler=JudgeWorld()) as srv:
        yield srv


def run(capsys: pytest.CaptureFixture[str], *argv: str) -> tuple[int, str, str]:
    code = cli.main(list(argv))
    cap = capsys.readouterr()
    assert "Traceback" not in cap.out + cap.err
    return code, " ".join(cap.out.split()), " ".join(cap.err.split())


def labelled_run(tmp_path: Path, capsys: pytest.CaptureFixture[str], *judge_flags: str) -> None:
    """24 samples evaluated for faithfulness, and every claim labelled (one in five wrong)."""
    (tmp_path / "data.jsonl").write_text("".join(json.dumps(r) + "\n" for r in make_samples(24)), "utf-8")
    code, out, err = run(capsys, "evaluate", "data.jsonl", "--judge", "openai:m", *judge_flags,
                         "--metrics", "faithfulness", "--quiet")
    assert code == 0, out + err
    with Store(tmp_path / "ragsight.db") as st:
        scores = st.scores(st.resolve_run("last"))
    rows = [{"id": sid, "metric": "faithfulness", "claim": c.claim, "correct": n % 5 != 0}
            for sid, per in scores.items() for n, c in enumerate(per["faithfulness"].evidence.claims)]
    (tmp_path / "claims.jsonl").write_text("".join(json.dumps(r) + "\n" for r in rows), "utf-8")
    assert run(capsys, "labels", "import", "claims.jsonl", "--run", "last", "--label", "correct")[0] == 0


def test_align_re_judges_through_the_server_the_run_used(
    tmp_path: Path, judge: FakeOpenAIServer, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(tmp_path)
    labelled_run(tmp_path, capsys, "--base-url", judge.url)
    asked = len(judge.requests)
    code, out, err = run(capsys, "align", "last", "--metric", "faithfulness", "--label", "correct")
    assert code in (0, 1), out + err
    assert len(judge.requests) > asked  # the held-out folds were judged again, by the run's server
    assert f"re-judged by openai:m at {judge.url} (the run's server)" in out
    assert "failed" not in out and "not found again" not in out


def test_align_needs_the_endpoint_when_the_run_stored_none(
    tmp_path: Path, judge: FakeOpenAIServer, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    """The run reached its server through OPENAI_BASE_URL, which the run does not store: align
    must not guess (the default would be the provider's public endpoint)."""
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("OPENAI_BASE_URL", judge.url)
    labelled_run(tmp_path, capsys)
    monkeypatch.delenv("OPENAI_BASE_URL")
    asked = len(judge.requests)
    code, out, err = run(capsys, "align", "last", "--metric", "faithfulness", "--label", "correct")
    assert code == 2, out + err
    assert "give the server it calls with --base-url URL" in err and "--examples 0" in err
    assert len(judge.requests) == asked
    code, out, err = run(capsys, "align", "last", "--metric", "faithfulness", "--label", "correct",
                         "--base-url", judge.url)
    assert code in (0, 1), out + err
    assert len(judge.requests) > asked and f"re-judged by openai:m at {judge.url}" in out


def test_align_says_when_the_re_judging_calls_failed(
    tmp_path: Path, judge: FakeOpenAIServer, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(tmp_path)
    labelled_run(tmp_path, capsys, "--base-url", judge.url)

    def broken(request: RecordedRequest) -> Reply:
        return Reply.error(400, "this model does not take worked examples")

    with FakeOpenAIServer(handler=broken) as other:
        code, out, err = run(capsys, "align", "last", "--metric", "faithfulness", "--label", "correct",
                             "--base-url", other.url, "--out", "a.json")
        assert other.requests
    assert code == 1, out + err
    assert "not found again" not in out
    assert "could not be judged again: their judge calls failed" in out, out
    assert "HTTP 400" in out
    assert "NOT SAVED" in err and not (tmp_path / "a.json").exists()
