"""What one judge call may send and receive is bounded.

- The prompt: 10,000 short chunks used to go out whole (a 787,690-character prompt against an
  assumed 32,768-token window; a server that enforces its window failed 3 of 4 metrics with
  HTTP 400). Now the budget bounds the whole prompt, tags and reply included; when not even a
  short piece of each chunk fits, the lowest-ranked chunks are left out and the evidence says
  which.
- The answer: nine 100 MB answers made a 1.6 GB store and 2 GB of memory for 5 samples. Now an
  answer is read up to 8 MiB (and its content up to what max_tokens can make), refused beyond,
  recorded as such in the call and counted; a good answer is stored once.
"""

from __future__ import annotations

import json
import sqlite3
import tracemalloc
from pathlib import Path
from typing import Any

import pytest

from ragsight import cli
from ragsight.calls._budget import DEFAULT_WINDOW
from ragsight.store import Store
from tests.fakes import FakeOpenAIServer, RecordedRequest, Reply
from tests.reliability.world import JudgeWorld, prompt_id_of

N_CHUNKS = 10_000


def test_ten_thousand_short_chunks_fit_the_window_and_the_dropped_ones_are_named(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    fact = "Aurora Airways allows one cabin bag weighing eight kilograms."
    chunks = [fact] + [f"Chunk {i} mentions filler topic number {i}." for i in range(2, N_CHUNKS + 1)]
    row = {"id": "many", "question": "What is the cabin bag allowance of Aurora Airways?",
           "contexts": chunks, "response": fact, "reference": fact}
    data = tmp_path / "many.jsonl"
    data.write_text(json.dumps(row) + "\n", encoding="utf-8")
    assert sum(len(c) for c in chunks) > 400_000
    world = JudgeWorld()
    too_long: list[int] = []

    def enforcing(req: RecordedRequest) -> Reply | None:
        body = req.json if isinstance(req.json, dict) else {}
        if req.path.endswith("/chat/completions"):
            tokens = sum(len(m.get("content", "")) for m in body.get("messages", [])) // 4
            if tokens + int(body.get("max_tokens") or 0) > DEFAULT_WINDOW:
                too_long.append(tokens)
                return Reply.error(400, f"This model's maximum context length is {DEFAULT_WINDOW} tokens. "
                                        f"However, you requested {tokens} tokens.", code="context_length_exceeded")
        return world(req)

    store = tmp_path / "runs.db"
    with FakeOpenAIServer(handler=enforcing) as srv:
        code = cli.main(["evaluate", str(data), "--judge", "openai:m", "--base-url", srv.url, "--store",
                         str(store), "--quiet", "--metrics", "faithfulness,context_precision,context_recall"])
        largest = max(sum(len(m.get("content", "")) for m in r.json["messages"])
                      for r in srv.requests_to("/chat/completions") if isinstance(r.json, dict))
    captured = capsys.readouterr()
    assert code == 0, captured.err
    assert too_long == [], f"{len(too_long)} requests over the window, the largest {max(too_long)} tokens"
    assert largest // 4 < DEFAULT_WINDOW
    with Store(store) as st:
        scores = st.scores(st.runs()[0].id)["many"]
    for key in ("faithfulness", "context_precision", "context_recall"):
        assert scores[key].outcome.value == "scored", (key, scores[key].reason)
    assert scores["faithfulness"].value == 1.0 and scores["context_recall"].value == 1.0
    dropped = [t for t in scores["context_precision"].evidence.details["truncated"] if t.get("dropped")]
    assert dropped, scores["context_precision"].evidence.details["truncated"]
    for t in dropped:
        first, last = t["field"].removeprefix("contexts[").rstrip("]").split("..")
        assert int(last) == N_CHUNKS and t["dropped"] == N_CHUNKS - int(first) + 1
        assert t["kept"] == 0 and t["tokens"] > 0
    kept = len(scores["context_precision"].evidence.details["chunks"])
    assert 100 < kept < N_CHUNKS
    assert f"chunks {kept + 1}-{N_CHUNKS} left out to fit the judge's window" in scores["context_precision"].reason


def test_oversized_answers_are_cut_counted_and_never_stored(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """The first judge request gets a 100 MB answer, the second a 2 MB one (under the byte cap,
    but far more than max_tokens can make); the retries get good answers."""
    world = JudgeWorld()
    sent = {"n": 0}

    def handler(req: RecordedRequest) -> Reply | None:
        body: Any = req.json if isinstance(req.json, dict) else {}
        if req.path.endswith("/chat/completions") and prompt_id_of(body) is not None:
            sent["n"] += 1
            if sent["n"] == 1:
                return Reply.huge(100 * 1024 * 1024)
            if sent["n"] == 2:
                return Reply.huge(2 * 1024 * 1024)
        return world(req)

    rows = [{"id": f"s{i}", "question": f"What is rule {i}?", "contexts": [f"Rule {i} is strict."],
             "response": f"Rule {i} is strict."} for i in range(3)]
    data = tmp_path / "d.jsonl"
    data.write_text("".join(json.dumps(r) + "\n" for r in rows), encoding="utf-8")
    store = tmp_path / "runs.db"
    tracemalloc.start()
    try:
        with FakeOpenAIServer(handler=handler) as srv:
            code = cli.main(["evaluate", str(data), "--judge", "openai:m", "--base-url", srv.url, "--store",
                             str(store), "--quiet", "--metrics", "faithfulness", "--concurrency", "1"])
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    captured = capsys.readouterr()
    assert code == 0, captured.err
    assert peak < 48 * 1024 * 1024, f"peak Python memory {peak / 2**20:.0f} MB for a 100 MB answer"
    with Store(store) as st:
        run = st.runs()[0]
        calls = st.judge_calls(run.id)
        scores = st.scores(run.id)
    errors = [c["error"] for c in calls if c["error"]]
    assert len(errors) == 2, errors
    assert "is larger than 8,388,608 bytes; it was cut there and not used" in errors[0]
    assert "answered 2,097,152 characters for max_tokens=" in errors[1]
    assert "the answer was cut there and not used" in errors[1]
    assert run.stats["answers_too_large"] == 2
    assert all(s.outcome.value == "scored" for per in scores.values() for s in per.values())
    assert store.stat().st_size < 1024 * 1024
    # a good answer is stored once: in the cache, not again in its call's row
    conn = sqlite3.connect(store)
    try:
        doubled = conn.execute(
            "SELECT COUNT(*) FROM judge_calls j JOIN cache c ON c.key = j.step "
            "WHERE j.raw_output IS NOT NULL AND j.raw_output = json_extract(c.entry, '$.raw_output')").fetchone()[0]
        good = conn.execute("SELECT COUNT(*) FROM judge_calls WHERE error IS NULL").fetchone()[0]
    finally:
        conn.close()
    assert good > 0 and doubled == 0
    assert all(c["raw_output"] for c in calls if not c["error"]), "a good call lost its answer"
