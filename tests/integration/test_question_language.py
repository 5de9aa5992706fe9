"""Answer relevancy asks the judge for questions in the answer's own language, from the outside:
``ragsight evaluate --metrics answer_relevancy`` against a judge on 127.0.0.1, reading what the
judge was asked. The small embedded judge, told "in the language of the answer (a French answer
gets French questions)", wrote French questions for every English answer of the bundled example
(bench/question_language.py)."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path

import pytest

from ragsight.cli import main
from tests.fakes import FakeOpenAIServer
from tests.reliability.world import JudgeWorld, block, prompt_id_of

ROWS = [
    {"id": "en", "question": "How much checked baggage is free?", "contexts": ["One bag of up to 23 kg is free."],
     "response": "You can check one bag of up to 23 kg for free. Each additional bag costs 75 dollars."},
    {"id": "de", "question": "Wie viel Freigepäck ist erlaubt?", "contexts": ["Ein Koffer bis 23 kg ist frei."],
     "response": "Sie können einen Koffer bis 23 kg kostenlos aufgeben. Jedes weitere Gepäckstück kostet 75 Dollar."},
    {"id": "short", "question": "Is one bag free?", "contexts": ["One bag of up to 23 kg is free."],
     "response": "Ja, 23 kg."},
]


@pytest.fixture()
def server(monkeypatch: pytest.MonkeyPatch) -> Iterator[FakeOpenAIServer]:
    monkeypatch.setenv("OPENAI_API_KEY", "sk-test-language")
    with FakeOpenAIServer(handler=JudgeWorld()) as srv:
        yield srv


def question_prompts(srv: FakeOpenAIServer) -> dict[str, str]:
    """The generate_questions prompt the judge received, by the response it was about."""
    out = {}
    for r in srv.requests:
        if r.path.endswith("/chat/completions") and isinstance(r.json, dict) and prompt_id_of(r.json) == "generate_questions":
            user = " ".join(m["content"] for m in r.json["messages"] if m["role"] == "user")
            out[(block(user, "response") or "").strip()] = user
    return out


def test_the_judge_is_asked_for_questions_in_the_answers_language(
    server: FakeOpenAIServer, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    data = tmp_path / "data.jsonl"
    data.write_text("".join(json.dumps(r, ensure_ascii=False) + "\n" for r in ROWS), encoding="utf-8")
    code = main(["evaluate", str(data), "--metrics", "answer_relevancy", "--judge", "openai:judge-model",
                 "--base-url", server.url, "--store", str(tmp_path / "runs.db"), "--quiet"])
    capsys.readouterr()
    assert code == 0
    prompts = question_prompts(server)
    english, german, short = (prompts[r["response"]] for r in ROWS)
    assert "written in English" in english
    assert "written in German" in german
    # too short to tell its language: no language is named, the judge keeps the answer's own
    assert "written in the same language as the answer" in short
    for prompt in prompts.values():
        assert "French" not in prompt  # no example language that a small judge copies
