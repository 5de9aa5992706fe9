"""A large run's result reads its samples and scores from the store when asked: the
same summary, samples, scores and records, in the same order and of the same types, as a result
that holds them, field by field on the same run."""

from __future__ import annotations

import hashlib
import os
import pickle
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import pytest

import ragsight
import ragsight.result._result
import ragsight.run._execute
from ragsight.conversation import Conversation, ToolCall, Turn
from ragsight.errors import StoreError
from ragsight.judge import ScriptedProvider
from ragsight.result import (
    LAZY_FROM,
    EvaluationResult,
    StoredRun,
    StoredSamples,
    StoredScores,
    load_result,
    metric_tokens,
    truncation_note,
)
from ragsight.result._cost import _stored_metric_tokens
from ragsight.sample import Sample
from ragsight.store import Store

METRICS = ["faithfulness", "context_recall", "exact_match", "token_f1", "hit_rate", "mrr"]


def _h(*parts: object) -> int:
    return int(hashlib.sha256("|".join(map(str, parts)).encode()).hexdigest()[:8], 16)


def _extract_claims(v: Mapping[str, Any]) -> Any:
    text = str(v["raw_text"])
    if "broken" in text:
        raise ValueError(f"the scripted judge fails on {text!r}")  # faithfulness ends failed
    return {"claims": [s.strip() + "." for s in text.split(".") if s.strip() and "know" not in s]}


def _verify_claims(v: Mapping[str, Any]) -> Any:
    return {"verdicts": [{"id": i, "supported": _h(c, v["target"]) % 3 != 0, "chunks": [1],
                          "reason": f"scripted verdict {i}"} for i, c in enumerate(v["claim_list"], start=1)]}


def _judge() -> ScriptedProvider:
    return ScriptedProvider({"extract_claims": _extract_claims, "verify_claims": _verify_claims})


def _rows(n: int) -> list[dict[str, Any]]:
    out = []
    for i in range(n):
        row: dict[str, Any] = {
            "id": f"s{i:03d}", "question": f"What does Acme{i} say about Topic{i}?",
            "contexts": [f"Acme{i} reports that Topic{i} grew by {i} percent.", f"Topic{i} is run by Dana{i}."],
            "response": f"Acme{i} says Topic{i} grew by {i} percent. Dana{i} runs Topic{i}.",
            "reference": f"Topic{i} grew by {i} percent according to Acme{i}.",
            "retrieved_ids": [f"d{i}", f"d{i + 1}"], "relevant_ids": [f"d{i + 1}"],
            "metadata": {"group": "ab"[i % 2], "n": i},
        }
        if i % 7 == 3:
            row["response"] = f"I do not know about Topic{i}."  # no claims: undetermined
        if i % 5 == 4:
            del row["reference"]  # the reference metrics are skipped
        if i % 11 == 6:
            row["response"] = (f"A broken answer {i} says Topic{i} grew, and Dana{i} runs it, which Acme{i} "
                               f"reported last year. It also says more.")  # the judge fails: failed
        if i == 1:
            row["response"] = row["reference"]  # one exact match
        out.append(row)
    return out


def _run(tmp_path: Path, n: int = 30, name: str = "runs.db") -> tuple[EvaluationResult, Path]:
    db = tmp_path / name
    result = ragsight.evaluate(_rows(n), METRICS, judge=_judge(), store=str(db),
                               options=ragsight.RunOptions(show_progress=False))
    return result, db


def _same(lazy: EvaluationResult, eager: EvaluationResult) -> None:
    """Every public field and method of the two results, compared value by value and type by type."""
    assert lazy.lazy and not eager.lazy
    assert isinstance(lazy.samples, StoredSamples) and isinstance(lazy.scores, StoredScores)
    assert isinstance(eager.samples, list) and isinstance(eager.scores, dict)
    for name in ("run_id", "metric_keys", "judge_stats", "problems", "store_path", "status", "config", "levels",
                 "conversations", "conversation_summary", "shape", "cost", "overall_detail", "overall",
                 "overall_harmonic"):
        assert getattr(lazy, name) == getattr(eager, name), name
    assert lazy.summary == eager.summary
    assert list(lazy.summary) == list(eager.summary)
    for key in eager.metric_keys:
        assert lazy[key] == eager[key]
        assert lazy[key].to_dict() == eager[key].to_dict()
        assert list(lazy[key].fail_reasons) == list(eager[key].fail_reasons)
        assert lazy.scored_values(key) == eager.scored_values(key)
        assert list(lazy.scored_values(key)) == list(eager.scored_values(key))
    assert repr(lazy) == repr(eager)
    assert lazy.describe_shape() == eager.describe_shape()
    assert lazy.worst() == eager.worst()
    assert truncation_note(lazy) == truncation_note(eager)
    # the samples: a sequence equal to the list, item by item, by index and slice
    assert len(lazy.samples) == len(eager.samples)
    assert lazy.samples == eager.samples and eager.samples == lazy.samples
    assert list(lazy.samples) == eager.samples
    assert all(type(a) is Sample and a == b for a, b in zip(lazy.samples, eager.samples, strict=True))
    n = len(eager.samples)
    for i in (0, 1, n // 2, n - 1, -1, -n):
        assert lazy.samples[i] == eager.samples[i]
    assert lazy.samples[3:n:4] == eager.samples[3:n:4]
    assert [lazy.samples[i] for i in reversed(range(n))] == eager.samples[::-1]  # across pages, backwards
    with pytest.raises(IndexError):
        lazy.samples[n]
    # the scores: a mapping equal to the dict, with the same keys in the same order
    assert list(lazy.scores) == list(eager.scores)
    assert len(lazy.scores) == len(eager.scores)
    assert dict(lazy.scores.items()) == eager.scores
    assert list(lazy.scores.items()) == list(eager.scores.items())
    assert list(lazy.scores.values()) == list(eager.scores.values())
    assert lazy.scores == eager.scores
    for sid, per in eager.scores.items():
        assert sid in lazy.scores
        assert lazy.scores[sid] == per
        assert list(lazy.scores[sid]) == list(per)  # the metrics in the same order
    assert "no-such-sample" not in lazy.scores and lazy.scores.get("no-such-sample") is None
    with pytest.raises(KeyError):
        lazy.scores["no-such-sample"]
    assert lazy.records() == eager.records()
    assert list(lazy.iter_records()) == eager.records()


def test_a_lazy_result_equals_the_result_held_in_memory_field_by_field(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(StoredRun, "_PAGE", 4)  # pages of 4 samples: indexing crosses pages
    monkeypatch.setattr(StoredRun, "_PAGES", 2)
    result, db = _run(tmp_path)
    counts = result.summary["faithfulness"].counts
    assert counts["scored"] and counts["undetermined"] and counts["failed"]  # the data reaches every outcome
    assert result.summary["exact_match"].counts["skipped"]
    with Store(db) as st:
        eager = load_result(st, result.run_id, lazy=False)
        lazy = load_result(st, result.run_id, lazy=True)
    _same(lazy, eager)
    _same(lazy, result)  # what evaluate() returned (a run this small holds its scores)
    pd = pytest.importorskip("pandas")
    pd.testing.assert_frame_equal(lazy.to_pandas(), eager.to_pandas())
    lazy.write_jsonl(tmp_path / "lazy.jsonl")
    eager.write_jsonl(tmp_path / "eager.jsonl")
    assert (tmp_path / "lazy.jsonl").read_bytes() == (tmp_path / "eager.jsonl").read_bytes()
    lazy.close()
    assert lazy.samples[2] == eager.samples[2]  # reads again after close()
    _same(pickle.loads(pickle.dumps(lazy)), eager)  # sent to another process: it reads the same file


def test_evaluate_returns_a_lazy_result_from_LAZY_FROM_samples_in_a_store_file(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(ragsight.run._execute, "LAZY_FROM", 25)
    small, _ = _run(tmp_path, n=24, name="small.db")
    large, db = _run(tmp_path, n=25)
    assert not small.lazy and large.lazy
    mem = ragsight.evaluate(_rows(25), METRICS, judge=_judge(),
                            options=ragsight.RunOptions(show_progress=False))  # store in memory
    assert not mem.lazy
    with Store(db) as st:
        _same(large, load_result(st, large.run_id, lazy=False))
    assert LAZY_FROM >= 25  # the default is larger than the runs of the unit tests


def test_a_conversation_run_is_the_same_lazy_and_held(tmp_path: Path) -> None:
    convs = []
    for k in range(4):
        convs.append(Conversation(
            f"c{k}",
            (Turn("user", f"Which bike {k}?"),
             Turn("assistant", "", tool_calls=(ToolCall("search", {"q": f"bike {k}"}, id="t1"),)),
             Turn("tool", f"The Trail {k} is a hybrid.", tool_call_id="t1", name="search"),
             Turn("assistant", f"The Trail {k}.", reference=f"The Trail {k}." if k % 2 else "A Trail."),
             Turn("user", "Does it come in red?"), Turn("assistant", "Yes, red.", reference="Yes.")),
            reference_tool_calls=(ToolCall("search", {"q": f"bike {k}"}),),
        ))
    db = tmp_path / "conv.db"
    result = ragsight.evaluate([*convs, {"id": "single", "question": "q", "response": "a b", "reference": "a"}],
                               ["token_f1", "exact_match", "conversation_tool_call_f1"], store=str(db),
                               options=ragsight.RunOptions(show_progress=False))
    assert result.conversations and result.shape["conversations"] == 4
    with Store(db) as st:
        eager = load_result(st, result.run_id, lazy=False)
        lazy = load_result(st, result.run_id, lazy=True)
    _same(lazy, eager)
    assert any("turn_means" in r for r in lazy.records())


def test_a_lazy_result_whose_store_is_gone_says_so(tmp_path: Path) -> None:
    result, db = _run(tmp_path, n=12)
    with Store(db) as st:
        lazy = load_result(st, result.run_id, lazy=True)
    lazy.close()
    for p in (db, Path(f"{db}-wal"), Path(f"{db}-shm")):
        if p.exists():
            os.remove(p)
    with pytest.raises(StoreError, match=r"runs\.db that holds run .* is gone"):
        list(lazy.samples)
    assert not db.exists()  # reading did not make a new, empty store
    with Store(":memory:") as st, pytest.raises(ValueError, match="store file"):
        load_result(st, "x", lazy=True)


def test_a_run_s_cost_read_a_sample_at_a_time_is_the_cost_of_the_whole_run_at_once(tmp_path: Path) -> None:
    result, db = _run(tmp_path)
    with Store(db) as st:
        held = metric_tokens(st.call_tokens(result.run_id), st.scores(result.run_id))
        streamed = _stored_metric_tokens(st, result.run_id)
        # faithfulness and context_recall share a verdict step: its tokens are split between them
        shared = sum(1 for per in st.scores(result.run_id).values() for ref in per["faithfulness"].evidence.calls
                     if "context_recall" in per and ref in per["context_recall"].evidence.calls)
    assert shared > 0
    assert streamed == held and list(streamed) == list(held)
    assert {"faithfulness", "context_recall"} <= set(streamed)
    assert result.cost is not None and result.cost["tokens_by_metric"] == {
        m: [round(p, 1), round(c, 1)] for m, (p, c) in held.items()}


def test_resuming_a_finished_large_run_gives_its_result_read_from_the_store(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    db = tmp_path / "runs.db"
    rows = [r for r in _rows(14) if "broken" not in r["response"]]  # nothing failed: nothing to ask again
    result = ragsight.evaluate(rows, METRICS, judge=_judge(), store=str(db),
                               options=ragsight.RunOptions(show_progress=False))
    assert not result.lazy
    monkeypatch.setattr(ragsight.result._result, "LAZY_FROM", len(rows))
    again = ragsight.evaluate(None, resume=result.run_id, store=str(db),
                              options=ragsight.RunOptions(show_progress=False))
    assert again.lazy
    _same(again, result)
