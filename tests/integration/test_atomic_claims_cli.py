"""Atomic claims from the outside: a one-sentence answer that joins a true fact and a
false one ("gzip uses LZ77 and was written by Microsoft") is split, and the false half gets its
own failing verdict in what ``ragsight show`` prints, through the CLI against a judge over HTTP."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from ragsight.cli import main
from tests.fakes import FakeOpenAIServer
from tests.reliability.world import JudgeWorld, block, content_words

CONTEXT = ("gzip is a file compression program written by Jean-loup Gailly and Mark Adler. "
           "It uses the DEFLATE algorithm, a combination of LZ77 and Huffman coding.")
ANSWER = "gzip uses LZ77 and was written by Microsoft."


class SplittingWorld(JudgeWorld):
    """The reliability world, with an extractor that splits "X verb ... and verb ..." into one
    claim per verb phrase, each naming the subject (as the extraction prompt asks)."""

    def answer(self, prompt_id: str, body: dict[str, Any]) -> tuple[dict[str, Any], int | None]:
        if prompt_id == "extract_claims":
            user = next(m["content"] for m in body["messages"] if m["role"] == "user")
            text = (block(user, "response") or "").strip().rstrip(".")
            subject, first = text.split(" ", 1)
            return {"claims": [f"{subject} {part}." for part in first.split(" and ")]}, None
        return super().answer(prompt_id, body)


@pytest.fixture()
def judge_url(monkeypatch: pytest.MonkeyPatch) -> Iterator[str]:
    monkeypatch.setenv("OPENAI_API_KEY", "sk-test-atomic")
    monkeypatch.setenv("COLUMNS", "80")  # what a person reads in a terminal
    with FakeOpenAIServer(handler=SplittingWorld()) as srv:
        yield srv.url


def test_the_false_half_of_a_compound_sentence_gets_its_own_failing_verdict(
    judge_url: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert content_words("gzip uses LZ77.") <= content_words(CONTEXT)  # the world's rule: words in the context
    data = tmp_path / "data.jsonl"
    data.write_text(json.dumps({"id": "gz", "question": "What is gzip?", "contexts": [CONTEXT],
                                "response": ANSWER}) + "\n")
    store = str(tmp_path / "runs.db")
    code = main(["evaluate", str(data), "--metrics", "faithfulness", "--judge", "openai:m", "--base-url", judge_url,
                 "--store", store, "--quiet"])
    assert code == 0
    capsys.readouterr()
    assert main(["show", "last", "--store", store, "--sample", "gz"]) == 0
    shown = capsys.readouterr().out
    claims = [ln.strip() for ln in shown.splitlines() if "supported [contexts]" in ln]
    # two claims, each with its verdict (before: the sentence was one claim, one verdict)
    assert claims == ["✓ supported [contexts] gzip uses LZ77.",
                      "✗ not supported [contexts] gzip was written by Microsoft."], shown
    assert "1 of 2 claims supported" in shown
