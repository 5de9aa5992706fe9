"""Rank sensitivity from the outside: the same three chunks, the needed one at rank 1,
2 or 3, evaluated with the CLI as docs/metrics.md shows it, against a judge on 127.0.0.1 that
answers the chunk_relevance step by reading the chunks it is shown (a chunk is relevant when it
states the reference's figure)."""

from __future__ import annotations

import json
import re
from collections.abc import Iterator
from pathlib import Path

import pytest

from ragsight.cli import main
from tests.fakes import FakeOpenAIServer, RecordedRequest, Reply
from tests.reliability.world import prompt_id_of

QUESTION = "How tall is the Eiffel Tower?"
REFERENCE = "The Eiffel Tower is 330 metres tall."
NEEDED = "Since a new antenna was added in 2022, the Eiffel Tower is 330 metres tall."
ON_TOPIC = "The Eiffel Tower was built for the 1889 World's Fair in Paris."
OTHER = "Gustave Eiffel's company also built the frame of the Statue of Liberty."
CHUNK = re.compile(r'<chunk n="(\d+)">\n(.*?)\n</chunk>', re.S)


def reading_judge(request: RecordedRequest) -> Reply | None:
    body = request.json if isinstance(request.json, dict) else {}
    if not request.path.endswith("/chat/completions"):
        return None
    if prompt_id_of(body) != "chunk_relevance":
        return Reply.chat("pong")  # the preflight ping
    user = body["messages"][-1]["content"]
    reference = user.split("<reference>")[1].split("</reference>")[0]
    figures = set(re.findall(r"\d+", reference))
    verdicts = []
    for n, text in CHUNK.findall(user):
        holds = bool(figures) and figures <= set(re.findall(r"\d+", text))
        verdicts.append({"id": int(n), "relevant": holds,
                         "reason": "states the height" if holds else "does not state the height"})
    return Reply.chat(json.dumps({"verdicts": verdicts}))


@pytest.fixture()
def server(monkeypatch: pytest.MonkeyPatch) -> Iterator[FakeOpenAIServer]:
    monkeypatch.setenv("OPENAI_API_KEY", "sk-test-chunks")
    with FakeOpenAIServer(handler=reading_judge) as srv:
        yield srv


def write(path: Path, contexts: list[str]) -> Path:
    row = {"id": "eiffel", "question": QUESTION, "contexts": contexts, "reference": REFERENCE}
    path.write_text(json.dumps(row) + "\n", encoding="utf-8")
    return path


def precision(capsys: pytest.CaptureFixture[str], server: FakeOpenAIServer, data: Path, store: Path) -> float:
    code = main(["evaluate", str(data), "--metrics", "context_precision", "--judge", "openai:gpt-4o-mini",
                 "--base-url", server.url, "--store", str(store)])
    out = capsys.readouterr().out
    assert code == 0, out
    flat = " ".join(out.split())
    found = re.search(r"context_precision\s+(\d\.\d+)", flat)
    assert found, out
    return float(found.group(1))


def test_the_needed_chunk_lower_in_the_ranking_gives_a_lower_context_precision(
    server: FakeOpenAIServer, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    store = tmp_path / "runs.db"
    first = precision(capsys, server, write(tmp_path / "rank1.jsonl", [NEEDED, ON_TOPIC, OTHER]), store)
    second = precision(capsys, server, write(tmp_path / "rank2.jsonl", [ON_TOPIC, NEEDED, OTHER]), store)
    third = precision(capsys, server, write(tmp_path / "rank3.jsonl", [ON_TOPIC, OTHER, NEEDED]), store)
    assert (first, second, third) == (1.0, 0.5, pytest.approx(0.333, abs=0.001))
    # the three files show the judge the same prompt: one call, then the cache
    asked = [r for r in server.requests if isinstance(r.json, dict) and prompt_id_of(r.json) == "chunk_relevance"]
    assert len(asked) == 1
    # the verdicts and their reasons, as the evidence view shows them
    assert main(["show", "last", "--sample", "eiffel", "--store", str(store)]) == 0
    shown = capsys.readouterr().out
    lines = [line.strip() for line in shown.splitlines()]
    at = lines.index("✗ not relevant [chunk 1]")
    assert lines[at:at + 6] == ["✗ not relevant [chunk 1]", "does not state the height",
                                "✗ not relevant [chunk 2]", "does not state the height",
                                "✓ relevant [chunk 3]", "states the height"]
