"""``--judge openai-logprobs:MODEL`` over real HTTP, with top log-probabilities
as a careless or odd server writes them. A non-finite log-probability never becomes a
probability (nor NaN in the store or the cache); a single usable top token does not make P(Yes)
2/3 (the missing answer is unknown: the verdict is read only when the list bounds it)."""

from __future__ import annotations

import json
import math
import sqlite3
from collections.abc import Mapping
from pathlib import Path

import pytest

from ragsight import cli
from ragsight.store import Store
from tests.fakes import FakeOpenAIServer
from tests.fakes.openai_server import RecordedRequest, Reply

FACT = "The tower is in Paris."
ROW = {"id": "s1", "question": "Where is the tower?", "response": FACT, "contexts": ["The tower stands in Paris."],
       "reference": FACT}


def world(tops: Mapping[str, float]):  # type: ignore[no-untyped-def]
    def handle(request: RecordedRequest) -> Reply | None:
        body = request.json or {}
        text = " ".join(m["content"] for m in body.get("messages", []))
        if text == "ping":
            return Reply.chat("pong")
        if body.get("max_tokens") == 1:  # a yes/no verdict read from the first token
            return Reply.chat(next(iter(tops)), logprobs=dict(tops))
        if "claims" in json.dumps(body.get("response_format", {})) or "claims" in text:
            return Reply.chat(json.dumps({"claims": [FACT]}))
        return Reply.chat(json.dumps({"reason": "no reason"}))
    return handle


def run(tmp_path: Path, tops: Mapping[str, float], capsys: pytest.CaptureFixture[str]) -> tuple[int, Path, str]:
    data = tmp_path / "data.jsonl"
    data.write_text(json.dumps(ROW) + "\n", encoding="utf-8")
    store = tmp_path / "runs.db"
    with FakeOpenAIServer(handler=world(tops)) as srv:
        code = cli.main(["evaluate", str(data), "--judge", "openai-logprobs:big", "--base-url", srv.url,
                         "--store", str(store), "--quiet", "--metrics", "faithfulness,context_recall"])
    return code, store, capsys.readouterr().err


def no_nan_anywhere(store: Path) -> None:
    with Store(store) as st:
        run_id = st.runs()[0].id
        for call in st.judge_calls(run_id):
            for text in (call.get("raw_output") or "", json.dumps(call.get("parsed"))):
                assert "NaN" not in text and "Infinity" not in text, call
    conn = sqlite3.connect(store)
    keys = [k.hex() if isinstance(k, bytes) else k for (k,) in conn.execute("SELECT key FROM cache")]
    conn.close()
    with Store(store) as st:
        for key in keys:
            entry = st.cache_get(key)
            assert entry is not None
            assert "NaN" not in json.dumps(entry) and "Infinity" not in json.dumps(entry), entry


def test_a_model_certain_of_yes_minus_infinity_for_no_scores_one(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    code, store, err = run(tmp_path, {"Yes": 0.0, "No": -math.inf}, capsys)
    assert code == 0, err
    with Store(store) as st:
        scores = st.scores(st.runs()[0].id)["s1"]
    for key in ("faithfulness", "context_recall"):
        assert scores[key].outcome.value == "scored", (key, scores[key].reason)
        assert scores[key].value == 1.0, key
        assert [c.probability for c in scores[key].evidence.claims] == [1.0]
    no_nan_anywhere(store)


@pytest.mark.parametrize("bad", [math.nan, math.inf, 5.0])
def test_non_finite_or_positive_log_probabilities_are_not_evidence(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], bad: float
) -> None:
    # "No" is written as nonsense; "Yes" at -0.01 leaves at most 0.01 for anything else
    code, store, err = run(tmp_path, {"Yes": -0.01, "No": bad}, capsys)
    assert code == 0, err
    with Store(store) as st:
        scores = st.scores(st.runs()[0].id)["s1"]
    p = scores["faithfulness"].evidence.claims[0].probability
    assert 0.99 < p <= 1.0
    no_nan_anywhere(store)


def test_one_usable_top_token_of_low_probability_is_not_read_as_two_thirds(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    # "Yes" at p = 0.33 and nothing else: P(No) could be anything up to 0.33 -> the verdict is open
    code, store, err = run(tmp_path, {"Yes": math.log(0.33)}, capsys)
    with Store(store) as st:
        scores = st.scores(st.runs()[0].id)["s1"]
    for key in ("faithfulness", "context_recall"):
        score = scores[key]
        assert score.outcome.value == "failed", (key, score.outcome, score.value)
        assert "unknown" in (score.reason or ""), score.reason
    assert code != 0 or "failed" in err
    no_nan_anywhere(store)


def test_one_usable_top_token_that_bounds_the_rest_is_read() -> None:
    from ragsight.judge._choices import choice_probabilities

    probs, raw = choice_probabilities({"Yes": -0.01}, ["Yes", "No"])
    assert probs["Yes"] == pytest.approx(1 - (1 - math.exp(-0.01)) / 2 / (math.exp(-0.01) + (1 - math.exp(-0.01)) / 2))
    assert all(math.isfinite(v) for v in raw.values())
