"""A judge caught repeating its list: the embedded judge stops the loop early, and the Judge closes
a list cut off while repeating itself (only repeats are lost), while a cut-off list of new items
is still refused and asked again."""

from __future__ import annotations

import asyncio
import json
from typing import Any

import pytest

import ragsight
from ragsight.judge import Completion, Judge, JudgeFailedError, ScriptedProvider
from ragsight.judge._local import _looping
from ragsight.judge._parse import close_repeating_list
from ragsight.prompts import load_prompt
from ragsight.store import Store


@pytest.mark.parametrize(("text", "expected"), [
    ('{"claims": ["a", "b", "a", "b", "a', ["a", "b"]),  # cut inside an item
    ('{"claims": ["a", "b", "a", "b"', ["a", "b"]),  # cut after an item
    ('{"claims": ["x", "a", "a", "a", "a", ', ["x", "a"]),
    ('{"noncommittal": false, "questions": ["q1", "q2", "q1", "q2", "q1"', ["q1", "q2"]),
    ('{"claims": ["say \\"hi\\"", "say \\"hi\\"", "say \\"hi\\"", "s', ['say "hi"']),
])
def test_a_list_cut_off_while_repeating_is_closed(text: str, expected: list[str]) -> None:
    out = close_repeating_list(text)
    assert out is not None
    key = "questions" if "questions" in out else "claims"
    assert out[key] == expected
    assert "repeat" in out["_repair"]
    if key == "questions":
        assert out["noncommittal"] is False


@pytest.mark.parametrize("text", [
    '{"claims": ["a", "b", "c", "d',  # new items: the list might have gone on
    '{"claims": ["a", "b", "c", "a", "b", "c", "d"',  # the last item is new
    '{"claims": ["a", "b", "a", "c"',  # one repeat, then a new item
    '{"claims": ["a", "a"',  # one repeat only
    '{"claims": ["a", "b", "a", "b"]}',  # complete: not a cut-off reply
    '{"verdicts": [{"id": 1, "supported": true}, {"id": 1, "supported": true}, {"id": 1',  # not strings
    '{"reason": "the text says the text says the text says',  # no list
    "no JSON at all",
])
def test_anything_else_stays_refused(text: str) -> None:
    assert close_repeating_list(text) is None


def test_looping_needs_three_copies_of_a_block_of_twelve_tokens_or_more() -> None:
    block = list(range(100, 115))  # 15 tokens
    assert _looping([1, 2, 3] + block * 3)
    assert not _looping([1, 2, 3] + block * 2)  # two copies: could still be a legitimate list
    assert not _looping(list(range(200)))
    short = [5, 6, 7]  # a 3-token block repeated: a period shorter than 12 tokens
    assert not _looping(short * 3)
    assert _looping(short * 12)  # ... but 12 of them are three copies of a 12-token block


def _extract_provider(text: str, finish: str) -> ScriptedProvider:
    return ScriptedProvider({"extract_claims": lambda v: Completion(text=text, finish_reason=finish)})


def _ask(judge: Judge) -> Any:
    def validate(d: dict[str, Any]) -> list[str]:
        claims = d["claims"]
        assert isinstance(claims, list)
        return claims

    return asyncio.run(judge.ask(load_prompt("extract_claims"),
                                 {"question": "", "text": "t", "raw_text": "t"}, validate))


def test_judge_accepts_a_repeating_cut_off_list_without_asking_again() -> None:
    text = '{"claims": ["Paris is in France.", "Paris is big.", "Paris is in France.", "Paris is big.", "Pa'
    provider = _extract_provider(text, "length")
    judge = Judge(provider)
    ans = _ask(judge)
    assert ans.value == ["Paris is in France.", "Paris is big."]
    assert len(provider.requests) == 1 and judge.stats.reasks == 0
    call = ans.calls[-1]
    assert call.error is None and call.raw_output == text  # the trail keeps the raw loop
    assert "_repair" in call.parsed


def test_judge_still_reasks_a_cut_off_list_of_new_items() -> None:
    provider = _extract_provider('{"claims": ["a", "b", "c', "length")
    judge = Judge(provider)
    with pytest.raises(JudgeFailedError):
        _ask(judge)
    assert len(provider.requests) > 1  # asked again, never read as a shorter list
    for r in provider.requests[1:]:  # each re-ask says why
        assert r.messages[-1].role == "user" and "cut off" in r.messages[-1].content


def test_evaluate_scores_a_sample_whose_extraction_looped(tmp_path: Any) -> None:
    loop = '{"claims": ["Paris is in France.", "Paris is in France.", "Paris is in France.", "Par'
    provider = ScriptedProvider(
        {"extract_claims": lambda v: Completion(text=loop, finish_reason="length")},
        choice_handlers={"verify_claim": lambda v: 0.95},
    )
    row = {"id": "s1", "question": "Where is Paris?", "response": "Paris is in France. Paris is in France.",
           "contexts": ["Paris is the capital of France."]}
    store = tmp_path / "run.db"
    res = ragsight.evaluate([row], ["faithfulness"], judge=Judge(provider), store=str(store),
                            options=ragsight.RunOptions(cache=False))
    score = res.scores["s1"]["faithfulness"]
    assert score.value == 1.0 and score.evidence.claims[0].probability == 0.95  # the one claim, supported
    assert [c.claim for c in score.evidence.claims] == ["Paris is in France."]
    with Store(str(store)) as st:
        calls = [c for c in st.judge_calls(res.run_id) if c["prompt_id"] == "extract_claims"]
    assert len(calls) == 1 and "_repair" in json.dumps(calls[0]["parsed"])


def test_a_judge_that_stopped_itself_in_a_loop_is_asked_once_more_and_the_reason_says_so() -> None:
    """A new-user trial: an extraction that looped was asked four times (111 s), each failure
    read "the reply was cut off at 4096 tokens; reply with a shorter, complete JSON object",
    though each reply had 120 tokens: the embedded judge had stopped itself. A greedy judge in a
    loop loops again; more room only repeats more."""
    text = '{"claims": ["a b c", "d e f", "the text does not contain", "the text does not contain", "the te'
    provider = ScriptedProvider({"extract_claims": lambda v: Completion(
        text=text, completion_tokens=120, finish_reason="repeat")})
    judge = Judge(provider)
    with pytest.raises(JudgeFailedError) as err:
        _ask(judge)
    assert len(provider.requests) == 2
    assert all(r.max_tokens == provider.requests[0].max_tokens for r in provider.requests)
    message = str(err.value)
    assert "the judge repeated itself and was stopped after 120 tokens" in message
    assert "cut off" not in message and "reply with" not in message
