"""ragsight.testing on a golden set with out-of-scope questions, and the reasons its failures give
(second trial, htrial2), against a judge on 127.0.0.1."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from ragsight.testing import ScoresBelowThresholdError, assert_scores, cases
from tests.fakes import FakeOpenAIServer, RecordedRequest, Reply
from tests.reliability.world import JudgeWorld

ROWS = [
    {"id": "in", "question": "When does the Oslo office open?", "contexts": ["The Oslo office opens at 8 am."],
     "response": "The Oslo office opens at 8 am.", "reference": "The Oslo office opens at 8 am."},
    # as `ragsight generate` writes about 15% of its rows: the documents do not answer it
    {"id": "out", "question": "What is the CEO's salary?", "contexts": ["The Oslo office opens at 8 am."],
     "response": "The Oslo office opens at 8 am.", "metadata": {"question_type": "out_of_scope"}},
]


@pytest.fixture(autouse=True)
def _key(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("OPENAI_API_KEY", "sk-test-testing")


@pytest.fixture()
def judge() -> Iterator[FakeOpenAIServer]:
    with FakeOpenAIServer(handler=JudgeWorld()) as srv:
        yield srv


@pytest.mark.parametrize("sample", cases(ROWS))
def test_a_retrieval_metric_does_not_fail_an_out_of_scope_case(
    sample: object, judge: FakeOpenAIServer, tmp_path: Path,
) -> None:
    """docs/integrations/pytest.md's parametrized test over a golden set: on main the
    out-of-scope case failed on context_recall, which skips such a question by design
    (docs/data.md), so a golden set from `ragsight generate` could never pass."""
    result = assert_scores(sample, {"faithfulness": 0.5, "context_recall": 0.5}, judge="openai:m",
                           base_url=judge.url, store=tmp_path / "q.db")
    assert result.summary["faithfulness"].counts["scored"] == 1


def test_mode_mean_gates_the_in_scope_questions(judge: FakeOpenAIServer, tmp_path: Path) -> None:
    result = assert_scores(ROWS, {"context_recall": 0.5}, judge="openai:m", base_url=judge.url,
                           store=tmp_path / "q.db", mode="mean")
    assert result.summary["context_recall"].counts == {"scored": 1, "undetermined": 0, "failed": 0,
                                                       "skipped": 1}


def test_a_call_that_measures_nothing_still_fails(judge: FakeOpenAIServer, tmp_path: Path) -> None:
    # nothing passes silently: a gate none of whose metrics applies to the data is a failure
    with pytest.raises(ScoresBelowThresholdError) as info:
        assert_scores(ROWS[1:], {"context_recall": 0.5}, judge="openai:m", base_url=judge.url,
                      store=tmp_path / "q.db")
    text = " ".join(str(info.value).split())
    assert "out not scored (skipped: out-of-scope question: no relevant context to retrieve" in text


def test_an_unscored_sample_shows_its_whole_reason(tmp_path: Path) -> None:
    """On main the reason was cut at 50 characters: 'failed: judge step verify_claims failed:
    the judge at h...', the cause (HTTP 500 and what the server said) cut away."""
    def broken(request: RecordedRequest) -> Reply | None:
        return Reply.error(500, "the model 'qwen-judge' is not loaded on this server")

    with FakeOpenAIServer(handler=broken) as srv, pytest.raises(ScoresBelowThresholdError) as info:
        assert_scores(ROWS, {"faithfulness": 0.5}, judge="openai:m", base_url=srv.url,
                      store=tmp_path / "q.db")
    message = str(info.value)
    text = " ".join(message.split())
    assert "the model 'qwen-judge' is not loaded on this server" in text, message
    # one reason for both samples: said once
    assert text.count("is not loaded on this server") == 1, message
    assert "in, out not scored (failed: " in text, message
    for line in message.splitlines():  # the reasons wrap at 80; the command stays whole
        assert len(line) <= 80 or line.startswith("  ragsight show ") or " " not in line.strip(), line
