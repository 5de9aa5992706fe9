"""Same data, same judge, same settings: the same scores, whatever ran before.

The embedded judge reuses the KV cache of earlier prompts. llama.cpp's CPU kernels compute a row
differently when it falls in a partial group of rows, so before the fix a verdict depended on
which call had come before it (another metric's, a cached call skipped, another order): two
fresh stores read faithfulness 0.716 and 0.718 on the same data. These tests hold the embedded
judge to bitwise sameness: at the provider (one prompt after different histories) and end to end
(separate processes, fresh stores, a sample judged alone and after another, another sample order,
and a run whose other sample comes from the cache).
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from ragsight.judge._protocol import JudgeRequest, Message

pytestmark = [pytest.mark.slow, pytest.mark.local]

_TEXT = " ".join(
    f"Sentence {i}: fare class {i % 7} of Aurora Skyways allows {i} kg of cabin baggage and costs "
    f"{i * 13} euros." for i in range(6))
_CLAIMS = ["Light fares include 8 kg.", "Flex fares include two bags and a meal.",
           "Class 3 costs 39 euros.", "X"]


def _request(claim: str) -> JudgeRequest:
    return JudgeRequest("verify_claim", "2", (
        Message("system", "You are a careful fact-checker."),
        Message("user", f"{_TEXT}\n\nIs the claim below supported?\n\n{claim}\n\nAnswer Yes or No.")))


def _scores(provider: Any, order: list[str]) -> dict[str, dict[str, float]]:
    llm = provider._load()
    llm.reset()
    llm._ctx.kv_cache_seq_rm(0, 0, -1)
    llm._ragsight_reusable = 0
    provider._states._items.clear()
    return {c: dict(provider._score_choices_sync(_request(c), ["Yes", "No"]).raw_logprobs) for c in order}


def test_a_verdict_does_not_depend_on_the_calls_before_it(qwen_provider: Any) -> None:
    # The four prompts share their first ~157 tokens, a length that is no multiple of the kernels'
    # row group: before the fix, the second prompt reused 157 rows and its logits moved by up to 0.5.
    forward = _scores(qwen_provider, _CLAIMS)
    backward = _scores(qwen_provider, list(reversed(_CLAIMS)))
    alone = {c: _scores(qwen_provider, [c])[c] for c in _CLAIMS[:2]}
    for c in _CLAIMS:
        assert forward[c] == backward[c], c
    for c, v in alone.items():
        assert forward[c] == v, c


def _logits_after(provider: Any, before: list[list[int]], tokens: list[int]) -> Any:
    llm = provider._load()
    llm.reset()
    llm._ctx.kv_cache_seq_rm(0, 0, -1)
    llm._ragsight_reusable = 0
    provider._states._items.clear()
    for other in before:
        provider._eval_reusing_prefix(llm, other)
    return provider._eval_reusing_prefix(llm, tokens).copy()


# 36-39: a re-sent prompt's tail for each length modulo the row group; 515: a prompt of 513-519
# tokens, whose last batch after the first 512 rows would be short (it gives up 8 rows to it);
# 67 and 72: the same two cases with batches of 64 rows (the short last batch, and a last batch of
# exactly 8 rows, the boundary), at an eighth of the cost of 515 and 520. (517 and 530 repeated
# 515's and 520's cases at some 60 s each; 520 itself went for 72, 65 s.)
@pytest.mark.parametrize(("length", "n_batch"), [(36, 512), (37, 512), (38, 512), (39, 512), (515, 512),
                                                 (67, 64), (72, 64)])
def test_a_prompt_sent_again_or_after_a_near_copy_gets_the_same_numbers(
    qwen_provider: Any, length: int, n_batch: int, monkeypatch: pytest.MonkeyPatch,
) -> None:
    # A prompt sent twice (a call retried after a time-out) kept all but its last group cached and
    # evaluated a tail of 1-4 rows, which llama.cpp computes with other kernels than a long batch:
    # its logits moved by up to 0.5 and greedy replies changed. Prompts of 513-519 tokens ended
    # their fresh evaluation with such a short batch too.
    llm = qwen_provider._load()
    # the batch size the provider and llama-cpp-python split a prompt by (the context's own
    # limit stays 512, so a smaller batch is a valid one)
    monkeypatch.setattr(llm, "n_batch", n_batch)
    text = " ".join(f"Sentence {i}: fare class {i % 7} allows {i} kg and costs {i * 13} euros." for i in range(40))
    full = llm.tokenize(text.encode("utf-8"), add_bos=True, special=True)
    tokens = full[:length]
    if n_batch < 512:  # the case's split happens: without the fix its last batch would be short
        assert 0 < length % n_batch <= 8
    alone = _logits_after(qwen_provider, [], tokens)
    assert (_logits_after(qwen_provider, [tokens], tokens) == alone).all()
    assert (_logits_after(qwen_provider, [tokens[:-13]], tokens) == alone).all()
    assert (_logits_after(qwen_provider, [full[:length - 2] + [full[5]] * 2], tokens) == alone).all()


_ROWS = [json.loads(line) for line in
         (Path(__file__).resolve().parents[2] / "src/ragsight/data/example.jsonl").read_text().splitlines()[:2]]


def _evaluate(tmp: Path, name: str, rows: list[dict[str, Any]], store: Path) -> dict[str, Any]:
    data = tmp / f"{name}.jsonl"
    data.write_text("".join(json.dumps(r) + "\n" for r in rows))
    out = tmp / f"{name}.out.jsonl"
    env = {**os.environ, "PYTHONPATH": str(Path(__file__).resolve().parents[2] / "src")}
    for args in (["evaluate", str(data), "--metrics", "faithfulness,context_recall", "--quiet"],
                 ["export", "last", "--format", "jsonl", "--out", str(out)]):
        proc = subprocess.run(
            [sys.executable, "-m", "ragsight.cli", *args, "--store", str(store)],
            capture_output=True, text=True, env=env, timeout=1800,
            preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_DFL))
        assert proc.returncode == 0, proc.stderr[-2000:]
    return {r["id"]: r for r in map(json.loads, out.read_text().splitlines())}


def _comparable(row: dict[str, Any]) -> Any:
    """What a person reads of a sample: values, outcomes, reasons, claims with their verdicts and
    probabilities (not the cache flags and call references, which differ by design)."""
    ev = {k: {kk: vv for kk, vv in e.items() if kk not in ("calls", "cached")} for k, e in row["evidence"].items()}
    return row["scores"], json.loads(json.dumps(ev, sort_keys=True))


def test_two_processes_fresh_stores_another_order_and_cached_neighbours_agree(tmp_path: Path) -> None:
    first = _evaluate(tmp_path, "a", _ROWS, tmp_path / "a.db")
    # another process and a fresh store: the second sample judged alone, with none of the first
    # one's prompts before it (in the first run it came after them)
    alone = _evaluate(tmp_path, "c1", _ROWS[1:], tmp_path / "c.db")
    # then both in the other order, the second sample's calls all from the cache: the first
    # sample is judged in a run whose other sample was not evaluated by the model
    reordered = _evaluate(tmp_path, "c2", list(reversed(_ROWS)), tmp_path / "c.db")
    assert set(first) == set(reordered) == {r["id"] for r in _ROWS}
    assert set(alone) == {_ROWS[1]["id"]}
    for sid in first:
        assert any(s["outcome"] == "scored" for s in first[sid]["scores"].values()), first[sid]["scores"]
        assert _comparable(reordered[sid]) == _comparable(first[sid]), sid
    sid = _ROWS[1]["id"]
    assert _comparable(alone[sid]) == _comparable(first[sid]), sid
