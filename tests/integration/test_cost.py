"""Cost in money, from the outside: ``evaluate --dry-run``, ``--max-cost``, ``--price`` and the
dollars in the summary, ``runs`` and the store, over real HTTP against a judge on 127.0.0.1."""

from __future__ import annotations

import json
import re
import sqlite3
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from ragsight.calls import format_usd
from ragsight.cli import _common, main
from tests.fakes import FakeOpenAIServer, RecordedRequest, Reply
from tests.reliability.world import JudgeWorld, make_samples

METRICS = "faithfulness,context_precision,context_recall"
# a word-piece count, not the estimator's characters / 4: pieces of at most 5 letters, and each
# punctuation mark, as a BPE tokenizer splits English and JSON
_PIECE = re.compile(r"\w{1,5}|[^\w\s]")


def pieces(text: str) -> int:
    return len(_PIECE.findall(text))


class BilledWorld(JudgeWorld):
    """The judge world, with usage counted from what was really sent and answered."""

    def __call__(self, request: RecordedRequest) -> Reply | None:
        reply = super().__call__(request)
        if reply is None or not request.path.endswith("/chat/completions") or reply.kind != "http":
            return reply
        body = json.loads(reply.body)
        if "choices" not in body:
            return reply
        sent = request.json["messages"]
        prompt = sum(pieces(m["content"]) + 4 for m in sent)
        completion = pieces(body["choices"][0]["message"]["content"] or "")
        body["usage"] = {"prompt_tokens": prompt, "completion_tokens": completion,
                         "total_tokens": prompt + completion}
        return Reply.json(body)


def judge_calls(srv: FakeOpenAIServer) -> list[RecordedRequest]:
    """Requests that asked the judge something (the preflight ping says only "ping")."""
    out = []
    for r in srv.requests:
        if r.path.endswith("/chat/completions") and isinstance(r.json, dict):
            text = " ".join(m.get("content", "") for m in r.json.get("messages", []))
            if text.strip() != "ping":
                out.append(r)
    return out


@pytest.fixture()
def server(monkeypatch: pytest.MonkeyPatch) -> Iterator[FakeOpenAIServer]:
    monkeypatch.setenv("OPENAI_API_KEY", "sk-test-cost")
    # the printed lines are read whole: laid out at 120 columns (what a pipe or a log gets), whatever
    # width the test process inherited ($COLUMNS differs between pytest's own process and its workers)
    monkeypatch.setattr(_common.out, "width", 120)
    with FakeOpenAIServer(handler=BilledWorld()) as srv:
        yield srv


@pytest.fixture()
def data(tmp_path: Path) -> Path:
    path = tmp_path / "data.jsonl"
    path.write_text("".join(json.dumps(r) + "\n" for r in make_samples(8)))
    return path


def run(capsys: pytest.CaptureFixture[str], *argv: str) -> tuple[int, str, str]:
    code = main(list(argv))
    cap = capsys.readouterr()
    return code, cap.out, cap.err


def test_dry_run_calls_nothing_and_prints_calls_tokens_dollars_and_basis(
    server: FakeOpenAIServer, data: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    store = tmp_path / "runs.db"
    code, out, err = run(capsys, "evaluate", str(data), "--metrics", METRICS, "--judge", "openai:gpt-4o-mini",
                         "--base-url", server.url, "--store", str(store), "--dry-run")
    assert code == 0, err
    server.settle()
    assert server.requests == []  # no judge call, not even the preflight ping
    assert not store.exists()  # nothing written
    assert "dry run: no judge or embedder was called" in out
    assert re.search(r"judge openai:gpt-4o-mini: about \d+ calls", out)
    flat = " ".join(out.split())  # the lines wrap at the terminal's width
    assert re.search(r"cost: \$0\.\d{4} \(at \$0\.15 in / \$0\.6 out per million tokens", flat)
    for metric in METRICS.split(","):
        assert re.search(rf"  {metric}: [\d,]+ tokens, \$", out), metric
    assert "basis of the estimate:" in out
    assert "claims: one per sentence" in flat


def test_dry_run_estimate_is_within_25_percent_of_the_real_run(
    server: FakeOpenAIServer, data: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    store = tmp_path / "runs.db"
    args = ["evaluate", str(data), "--metrics", METRICS, "--judge", "openai:gpt-4o-mini",
            "--base-url", server.url, "--store", str(store), "--quiet"]
    code, out, _ = run(capsys, *args, "--dry-run")
    assert code == 0
    m = re.search(r"about (\d+) calls \(0 more steps answered by the cache\), ([\d,]+) prompt \+ ([\d,]+) "
                  r"completion tokens", out)
    assert m is not None, out
    est_calls, est_tokens = int(m[1]), int(m[2].replace(",", "")) + int(m[3].replace(",", ""))
    code, out, err = run(capsys, *args)
    assert code == 0, err
    with sqlite3.connect(store) as db:
        stats = json.loads(db.execute("SELECT stats FROM runs").fetchone()[0])
    real_tokens = stats["prompt_tokens"] + stats["completion_tokens"]
    assert stats["calls"] == len(judge_calls(server))
    assert abs(est_calls - stats["calls"]) <= 0.25 * stats["calls"]
    assert abs(est_tokens - real_tokens) <= 0.25 * real_tokens, (est_tokens, real_tokens)
    # the run's dollars: in the store, the summary and `runs`
    usd = stats["cost"]["usd"]
    assert usd == pytest.approx((stats["prompt_tokens"] * 0.15 + stats["completion_tokens"] * 0.60) / 1e6)
    assert set(stats["cost"]["by_metric"]) == set(METRICS.split(","))
    assert sum(stats["cost"]["by_metric"].values()) == pytest.approx(usd)
    flat = " ".join(out.split())
    assert re.search(r"cost: \$0\.\d{4} \(judge gpt-4o-mini at \$0\.15 in", flat)
    assert "cost by metric: context_precision $" in flat  # by metric name, whichever finished first
    assert all(f"{m} $" in flat for m in METRICS.split(","))
    code, out, _ = run(capsys, "runs", "--store", str(store))
    assert code == 0 and re.search(r"judge openai:gpt-4o-mini; 3 metrics: .*; cost \$0\.\d{4}", " ".join(out.split()))
    html = tmp_path / "report.html"
    code, _, _ = run(capsys, "report", "last", "--store", str(store), "--out", str(html))
    page = html.read_text("utf-8")
    assert code == 0 and re.search(r"cost: \$0\.\d{4} \(judge gpt-4o-mini at \$0\.15 in", page)
    assert "cost by metric: context_precision $" in page
    # a second dry run finds every step in the cache: nothing left to pay
    server.settle()
    before = len(server.requests)
    code, out, _ = run(capsys, *args, "--dry-run")
    server.settle()
    assert code == 0 and len(server.requests) == before
    assert f"about 0 calls ({stats['calls']} more steps answered by the cache)" in out
    assert "cost: $0.00 " in out


def test_max_cost_stops_before_the_budget_and_resume_finishes(
    server: FakeOpenAIServer, data: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    store = tmp_path / "runs.db"
    # at this price a sample costs about 2 cents, the whole run about 15, and a call at its worst
    # (a full max_tokens reply) up to 4: a 10-cent budget stops after a few samples
    base = ["--judge", "openai:pricey", "--base-url", server.url, "--store", str(store), "--quiet",
            "--price", "pricey=10/10", "--concurrency", "1"]
    code, _, err = run(capsys, "evaluate", str(data), "--metrics", METRICS, *base, "--max-cost", "0.1")
    assert code == 3, err
    assert "stopped before exceeding --max-cost $0.1:" in err
    resume = re.search(r"ragsight evaluate --resume (\S+) --store \S+ --max-cost USD", err)
    assert resume is not None, err
    with sqlite3.connect(store) as db:
        status, stats = db.execute("SELECT status, stats FROM runs").fetchone()
        finished = db.execute("SELECT COUNT(*) FROM samples WHERE finished=1").fetchone()[0]
    stats = json.loads(stats)
    assert status == "interrupted" and 0 < finished < 8
    assert stats["stopped_by"]["max_cost"] == 0.1
    assert stats["cost"]["usd"] <= 0.1  # never past the budget
    assert f"{finished} of 8 samples are saved" in err
    paid_calls = stats["calls"]
    # what is left, estimated without a call
    server.settle()
    before = len(server.requests)
    code, out, _ = run(capsys, "evaluate", "--resume", resume[1], *base, "--dry-run", "--max-cost", "1")
    server.settle()
    assert code == 0 and len(server.requests) == before
    assert f"{8 - finished} samples, 3 metrics" in out and "within --max-cost $1" in out
    code, _, err = run(capsys, "evaluate", "--resume", resume[1], *base, "--max-cost", "1")
    assert code == 0, err
    with sqlite3.connect(store) as db:
        status, stats = db.execute("SELECT status, stats FROM runs").fetchone()
        finished = db.execute("SELECT COUNT(*) FROM samples WHERE finished=1").fetchone()[0]
    stats = json.loads(stats)
    assert status == "completed" and finished == 8
    assert "stopped_by" not in stats
    assert stats["calls"] > paid_calls
    assert stats["calls"] == len(judge_calls(server))  # what the store counts is what was sent


def test_a_dry_run_over_its_max_cost_exits_3_and_calls_nothing(
    server: FakeOpenAIServer, data: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    store = tmp_path / "runs.db"
    args = ["evaluate", str(data), "--metrics", METRICS, "--judge", "openai:gpt-4o-mini", "--base-url", server.url,
            "--store", str(store), "--dry-run", "--max-cost"]
    code, out, _ = run(capsys, *args, "0.0001")
    assert code == 3  # a CI step stops here, before anything is spent
    assert "OVER BUDGET: the estimate $0.0" in out and "is above --max-cost $0.0001" in out
    code, out, _ = run(capsys, *args, "5")
    assert code == 0 and "within --max-cost $5" in out
    server.settle()
    assert server.requests == [] and not store.exists()


def test_max_cost_names_the_backend_it_works_with(
    server: FakeOpenAIServer, data: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    code, _, err = run(capsys, "evaluate", str(data), "--metrics", METRICS, "--judge", "openai:gpt-4o-mini",
                       "--base-url", server.url, "--store", str(tmp_path / "runs.db"), "--backend", "ray",
                       "--max-cost", "1")
    assert code == 2
    assert "--max-cost works with the in-process backend only (--backend local, the default" in " ".join(err.split())
    server.settle()
    assert judge_calls(server) == []


def test_max_cost_without_a_price_is_refused_before_any_call(
    server: FakeOpenAIServer, data: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    store = tmp_path / "runs.db"
    code, _, err = run(capsys, "evaluate", str(data), "--metrics", METRICS, "--judge", "openai:my-vllm-model",
                       "--base-url", server.url, "--store", str(store), "--max-cost", "1")
    assert code == 2
    assert "--max-cost needs the price of the judge openai:my-vllm-model" in err
    assert "--price my-vllm-model=IN/OUT" in err
    server.settle()
    assert judge_calls(server) == [] and not store.exists()


def test_an_unknown_price_is_unknown_never_zero(
    server: FakeOpenAIServer, data: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    store = tmp_path / "runs.db"
    code, out, _ = run(capsys, "evaluate", str(data), "--metrics", "faithfulness", "--judge",
                       "openai:my-vllm-model", "--base-url", server.url, "--store", str(store), "--quiet")
    assert code == 0
    assert "cost: unknown (no price for this judge" in " ".join(out.split())
    assert "$0.00" not in out
    with sqlite3.connect(store) as db:
        stats: dict[str, Any] = json.loads(db.execute("SELECT stats FROM runs").fetchone()[0])
    assert stats["cost"]["usd"] is None and stats["cost"]["by_metric"] == {"faithfulness": None}
    code, out, _ = run(capsys, "runs", "--store", str(store))
    assert "cost unknown" in out


def test_prices_from_pyproject_and_the_flag_over_it(
    server: FakeOpenAIServer, data: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str],
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.chdir(tmp_path)
    (tmp_path / "pyproject.toml").write_text(
        '[tool.ragsight.prices]\n"my-vllm-model" = { input = 1.0, output = 2.0 }\n')
    args = ["evaluate", str(data), "--metrics", "faithfulness", "--judge", "openai:my-vllm-model",
            "--base-url", server.url, "--dry-run"]
    code, out, _ = run(capsys, *args)
    assert code == 0 and "at $1 in / $2 out per million tokens, pyproject.toml" in " ".join(out.split())
    code, out, _ = run(capsys, *args, "--price", "my-vllm-model=3/4")
    assert code == 0 and "at $3 in / $4 out per million tokens, --price" in " ".join(out.split())
    code, _, err = run(capsys, *args, "--price", "my-vllm-model=3")
    assert code == 2 and "--price 'my-vllm-model=3' needs the form MODEL=IN/OUT" in err


def _stored(store: Path) -> tuple[str, dict[str, Any], int]:
    with sqlite3.connect(store) as db:
        status, stats = db.execute("SELECT status, stats FROM runs").fetchone()
        finished = db.execute("SELECT COUNT(*) FROM samples WHERE finished=1").fetchone()[0]
    return status, json.loads(stats), finished


def test_max_cost_spends_its_budget_at_full_concurrency(
    server: FakeOpenAIServer, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """Calls in flight wait for each other near the limit instead of stopping the run: 3/4 of a
    run's cost saves at least half its samples and resumes to completion; 1.5 times it, and its
    cost and one call's worst cost, complete it (20 faithfulness samples, default concurrency)."""
    data = tmp_path / "data20.jsonl"
    data.write_text("".join(json.dumps(r) + "\n" for r in make_samples(20)))
    base = ["--metrics", "faithfulness", "--judge", "openai:gpt-4o-mini", "--base-url", server.url, "--quiet"]
    code, _, err = run(capsys, "evaluate", str(data), *base, "--store", str(tmp_path / "full.db"))
    assert code == 0, err
    cost = _stored(tmp_path / "full.db")[1]["cost"]["usd"]
    assert cost > 0

    store = tmp_path / "three_quarters.db"
    limit = round(cost * 0.75, 6)
    code, _, err = run(capsys, "evaluate", str(data), *base, "--store", str(store), "--max-cost", str(limit))
    assert code == 3, err
    status, stats, finished = _stored(store)
    assert status == "interrupted" and 10 <= finished < 20, finished
    assert stats["cost"]["usd"] <= limit  # never past the budget
    spent = stats["stopped_by"]["spent"]
    assert spent == pytest.approx(stats["cost"]["usd"], rel=1e-3) and spent > 0.5 * limit  # spent, not reserved
    assert f"{format_usd(spent)} spent by this command; {finished} of 20 samples are saved" in " ".join(err.split())
    resume = re.search(r"ragsight evaluate --resume (\S+) --store \S+ --max-cost USD", err)
    assert resume is not None, err
    code, _, err = run(capsys, "evaluate", "--resume", resume[1], *base[2:], "--store", str(store),
                       "--max-cost", str(limit))
    assert code == 0, err
    assert _stored(store)[0] == "completed" and _stored(store)[2] == 20

    store = tmp_path / "one_and_a_half.db"
    code, _, err = run(capsys, "evaluate", str(data), *base, "--store", str(store), "--max-cost", str(cost * 1.5))
    assert code == 0, err
    assert _stored(store)[0] == "completed" and _stored(store)[2] == 20

    # a budget of the run's cost and one call's worst cost completes it: the last call finds its room
    store = tmp_path / "cost_and_one_call.db"
    code, _, err = run(capsys, "evaluate", str(data), *base, "--store", str(store), "--max-cost",
                       str(cost + worst_call(server)))
    assert code == 0, err
    assert _stored(store)[0] == "completed" and _stored(store)[2] == 20


def worst_call(srv: FakeOpenAIServer) -> float:
    """The largest worst cost of the judge calls sent, as --max-cost reserves it (docs/cost.md): the
    prompt at a token per 3 bytes plus 4 a message, the whole max_tokens reply, gpt-4o-mini's price."""
    worst = 0.0
    for r in judge_calls(srv):
        messages = r.json["messages"]
        prompt = -(-sum(len(m["content"].encode()) for m in messages) // 3) + 4 * len(messages)
        reply = r.json.get("max_tokens") or r.json.get("max_completion_tokens")
        worst = max(worst, (prompt * 0.15 + reply * 0.60) / 1e6)
    return worst
