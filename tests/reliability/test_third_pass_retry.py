"""A judge that refuses for a few seconds without Retry-After costs waits, not
scores; ``--resume`` asks the failed samples again; a judge that accepts calls and never answers
stops the run (a circuit breaker) instead of letting it crawl. Over real HTTP on 127.0.0.1, through
the CLI as the README shows it."""

from __future__ import annotations

import json
import threading
import time
from pathlib import Path

import pytest

from ragsight import cli
from ragsight.store import Store
from tests.fakes import FakeOpenAIServer
from tests.fakes.openai_server import RecordedRequest, Reply
from tests.reliability.world import JudgeWorld, make_samples


def is_ping(request: RecordedRequest) -> bool:
    body = request.json if isinstance(request.json, dict) else {}
    return [m.get("content") for m in body.get("messages", [])] == ["ping"]


def write_data(tmp_path: Path, n: int) -> Path:
    data = tmp_path / "data.jsonl"
    data.write_text("".join(json.dumps(r) + "\n" for r in make_samples(n)), encoding="utf-8")
    return data


def outcomes(store: Path) -> dict[str, int]:
    with Store(store) as st:
        run = st.runs()[0]
        counts: dict[str, int] = {}
        for per in st.scores(run.id).values():
            for s in per.values():
                counts[s.outcome.value] = counts.get(s.outcome.value, 0) + 1
    return counts


class Burst:
    """Every judge call refused with HTTP 429, no Retry-After, for ``seconds`` after the first."""

    def __init__(self, seconds: float) -> None:
        self.seconds = seconds
        self.world = JudgeWorld()
        self.start: float | None = None
        self.refused = 0
        self.lock = threading.Lock()

    def __call__(self, request: RecordedRequest) -> Reply | None:
        if request.path.endswith("/chat/completions") and not is_ping(request):
            with self.lock:
                now = time.monotonic()
                self.start = self.start or now
                if now - self.start < self.seconds:
                    self.refused += 1
                    return Reply.error(429, "Rate limit reached for requests", code="rate_limit_exceeded")
        return self.world(request)


def test_a_five_second_burst_of_429_without_retry_after_loses_no_score(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    data, store = write_data(tmp_path, 3), tmp_path / "runs.db"
    burst = Burst(5.0)
    with FakeOpenAIServer(handler=burst) as srv:
        code = cli.main(["evaluate", str(data), "--judge", "openai:m", "--base-url", srv.url, "--store",
                         str(store), "--quiet", "--metrics", "faithfulness"])
    err = capsys.readouterr().err
    assert burst.refused > 3
    assert code == 0, err
    assert outcomes(store) == {"scored": 3}


def test_resume_asks_the_failed_samples_again(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    data, store = write_data(tmp_path, 3), tmp_path / "runs.db"
    world = JudgeWorld()

    def refusing(request: RecordedRequest) -> Reply | None:
        if request.path.endswith("/chat/completions") and not is_ping(request):
            return Reply.error(500, "the model crashed")
        return world(request)

    with FakeOpenAIServer(handler=refusing) as srv:
        cli.main(["evaluate", str(data), "--judge", "openai:m", "--base-url", srv.url, "--store", str(store),
                  "--quiet", "--metrics", "faithfulness", "--max-retries", "0"])
    capsys.readouterr()
    assert outcomes(store) == {"failed": 3}
    with Store(store) as st:
        run_id = st.runs()[0].id
    with FakeOpenAIServer(handler=JudgeWorld()) as srv:
        code = cli.main(["evaluate", "--resume", run_id, "--base-url", srv.url, "--store", str(store), "--quiet"])
    err = capsys.readouterr().err
    assert code == 0, err
    assert "nothing to resume" not in err
    assert outcomes(store) == {"scored": 3}
    with Store(store) as st:  # one score per sample and metric, not two
        assert sum(len(per) for per in st.scores(run_id).values()) == 3


def test_a_judge_that_accepts_and_never_answers_stops_the_run(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    data, store = write_data(tmp_path, 30), tmp_path / "runs.db"
    world = JudgeWorld()

    def silent(request: RecordedRequest) -> Reply | None:
        if request.path.endswith("/chat/completions") and not is_ping(request):
            return Reply.hang()
        return world(request)

    t0 = time.monotonic()
    with FakeOpenAIServer(handler=silent) as srv:
        code = cli.main(["evaluate", str(data), "--judge", "openai:m", "--base-url", srv.url, "--store",
                         str(store), "--quiet", "--metrics", "faithfulness", "--timeout", "0.5",
                         "--concurrency", "4"])
    elapsed = time.monotonic() - t0
    err = " ".join(capsys.readouterr().err.split())
    assert code == 2, err
    assert "stopped answering" in err and "--resume" in err
    # without the breaker: 30 samples x 4 attempts x 0.5 s, four at a time, plus backoff: > 20 s
    assert elapsed < 12, elapsed
    with Store(store) as st:
        run = st.runs()[0]
        assert run.status == "interrupted"
        run_id = run.id
    # the judge is back: the same run is finished by --resume
    with FakeOpenAIServer(handler=JudgeWorld()) as srv:
        code = cli.main(["evaluate", "--resume", run_id, "--base-url", srv.url, "--store", str(store), "--quiet"])
    assert code == 0, capsys.readouterr().err
    assert outcomes(store) == {"scored": 30}
