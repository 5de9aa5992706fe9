"""A decline beside content, from the outside (a fresh new-user trial): the embedded
judge rewrote "The documents do not mention uploading keys to GitHub; ssh-keygen only generates,
manages and converts authentication keys." into one claim, "ssh-keygen does not upload keys to
GitHub; ...", which no longer read as a decline and was judged as a fact about ssh-keygen. The
judge is now given the content alone: the decline is set aside as written, and ``ragsight show``
prints it on its own line. ``ragsight evaluate`` against a judge on 127.0.0.1."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from ragsight.cli import _common, main
from tests.fakes import FakeOpenAIServer
from tests.reliability.world import JudgeWorld, block

CONTEXT = ("ssh-keygen only generates, manages and converts authentication keys for ssh. If invoked without "
           "any arguments, ssh-keygen will generate an RSA key.")
RESPONSE = ("The documents do not mention uploading keys to GitHub; ssh-keygen only generates, manages "
            "and converts authentication keys.")
REWRITTEN = "ssh-keygen does not upload keys to GitHub; it only generates, manages and converts keys."


class RewritingWorld(JudgeWorld):
    """The reliability world, with the small judge's habit: a decline it is shown comes back
    rewritten as a statement about the subject."""

    def answer(self, prompt_id: str, body: dict[str, Any]) -> tuple[dict[str, Any], int | None]:
        if prompt_id == "extract_claims":
            user = next(m["content"] for m in body["messages"] if m["role"] == "user")
            if "GitHub" in (block(user, "response") or ""):
                return {"claims": [REWRITTEN]}, None
        return super().answer(prompt_id, body)


@pytest.fixture()
def judge_url(monkeypatch: pytest.MonkeyPatch) -> Iterator[str]:
    monkeypatch.setenv("OPENAI_API_KEY", "sk-test-rewrite")
    # each claim is read on one line: laid out at 120 columns (what a pipe or a log gets), whatever
    # width the test process inherited ($COLUMNS differs between pytest's own process and its workers)
    monkeypatch.setattr(_common.out, "width", 120)
    with FakeOpenAIServer(handler=RewritingWorld()) as srv:
        yield srv.url


def test_a_decline_beside_content_is_set_aside_and_shown_not_judged_as_a_fact(
    judge_url: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    data = tmp_path / "data.jsonl"
    data.write_text(json.dumps({"id": "k", "question": "Can ssh-keygen upload my public key to GitHub?",
                                "contexts": [CONTEXT], "response": RESPONSE}) + "\n")
    store = str(tmp_path / "runs.db")
    assert main(["evaluate", str(data), "--metrics", "faithfulness", "--judge", "openai:m", "--base-url", judge_url,
                 "--store", store, "--quiet"]) == 0
    capsys.readouterr()
    assert main(["show", "last", "--store", store, "--sample", "k"]) == 0
    shown = capsys.readouterr().out
    assert "value: 1.000" in shown, shown
    assert "✓ supported [contexts] ssh-keygen only generates, manages and converts authentication keys." in shown
    assert "does not upload" not in shown
    lines = [ln.strip() for ln in shown.splitlines()]
    assert ("– set aside, says what the documents do not contain: The documents do not mention uploading "
            "keys to GitHub.") in lines, shown
