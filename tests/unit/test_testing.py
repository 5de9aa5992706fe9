"""ragsight.testing with the scripted judge: what passes, what fails and the exact message."""

from __future__ import annotations

from pathlib import Path

import pytest

from ragsight.errors import ConfigError
from ragsight.integrations import traces_from_records
from ragsight.store import Store
from ragsight.testing import (
    RunRecord,
    ScoresBelowThresholdError,
    assert_scores,
    cases,
    summary_lines,
)
from tests.scripted import RagScript

ROWS = [
    {"id": "good", "question": "When does the office open?", "contexts": ["The office opens at 8 am."],
     "response": "The office opens at 8 am."},
    {"id": "bad", "question": "Who approves travel?", "contexts": ["Travel is approved by the manager."],
     "response": "Travel is approved by the manager. Flights must be economy. Hotels are booked by HR."},
]
SCRIPT = RagScript(
    claims={"The office opens at 8 am.": ["The office opens at 8 am."],
            ROWS[1]["response"]: ["Travel is approved by the manager.", "Flights must be economy.",
                                  "Hotels are booked by HR."]},
    verdicts={("The office opens at 8 am.", "contexts"): True,
              ("Travel is approved by the manager.", "contexts"): True,
              ("Flights must be economy.", "contexts"): False,
              ("Hotels are booked by HR.", "contexts"): False},
)


def test_passing_thresholds_return_the_result_and_store_the_run(tmp_path: Path) -> None:
    store = tmp_path / "q.db"
    result = assert_scores(ROWS[:1], {"faithfulness": 0.9}, judge=SCRIPT.judge(), store=store)
    assert result.scores["good"]["faithfulness"].value == 1.0
    with Store(str(store)) as st:
        assert [r.id for r in st.runs()] == [result.run_id]


def test_a_missed_threshold_names_samples_metrics_and_the_worst_claims(tmp_path: Path) -> None:
    store = tmp_path / "q.db"
    with pytest.raises(ScoresBelowThresholdError) as info:
        assert_scores(ROWS, {"faithfulness": 0.8}, judge=SCRIPT.judge(), store=store)
    err = info.value
    assert isinstance(err, AssertionError)
    assert str(err).splitlines() == [
        "ragsight: 1 of 2 samples below threshold",
        "  faithfulness >= 0.8: bad 0.33",
        "worst: bad faithfulness 0.33 -- Who approves travel?",
        "    ✗ Flights must be economy. (scripted verdict for claim 2)",
        "    ✗ Hotels are booked by HR. (scripted verdict for claim 3)",
        "    ✓ Travel is approved by the manager.",
        "evidence:",
        f"  ragsight show {err.result.run_id} --sample bad --store {store}",
    ]
    assert [(f.sample_id, f.metric) for f in err.failures] == [("bad", "faithfulness")]


def test_mean_mode_judges_the_mean(tmp_path: Path) -> None:
    result = assert_scores(ROWS, {"faithfulness": 0.6}, judge=SCRIPT.judge(), mode="mean",
                           store=tmp_path / "q.db")
    assert result.summary["faithfulness"].mean == pytest.approx(2 / 3)
    with pytest.raises(ScoresBelowThresholdError, match="metric means below threshold over 2 samples"):
        assert_scores(ROWS, {"faithfulness": 0.7}, judge=SCRIPT.judge(), mode="mean", store=tmp_path / "q.db")


def test_a_sample_a_metric_cannot_score_fails_with_the_reason(tmp_path: Path) -> None:
    rows = [{"id": "no-ctx", "question": "q?", "response": "The office opens at 8 am."}]
    with pytest.raises(ScoresBelowThresholdError) as info:
        assert_scores(rows, {"faithfulness": 0.5}, judge=SCRIPT.judge(), store=tmp_path / "q.db")
    line = str(info.value).splitlines()[1]
    assert line.startswith("  faithfulness >= 0.5: no-ctx not scored (skipped: ")
    assert "contexts" in line


def test_metrics_without_a_judge_and_trace_imports(tmp_path: Path) -> None:
    span = {"context": {"trace_id": "0x" + "ab" * 16, "span_id": "0x" + "cd" * 8},
            "attributes": {"openinference.span.kind": "RETRIEVER", "input.value": "q?",
                           "retrieval.documents.0.document.id": "d2",
                           "retrieval.documents.0.document.content": "Text."}}
    imported = traces_from_records([span])
    rows = [{**imported.rows[0], "relevant_ids": ["d1"]}]
    with pytest.raises(ScoresBelowThresholdError, match="hit_rate >= 1: abab"):
        assert_scores(rows, {"hit_rate": 1.0}, store=tmp_path / "q.db")


def test_bad_thresholds_are_config_errors(tmp_path: Path) -> None:
    with pytest.raises(ConfigError, match="faithfulness"):
        assert_scores(ROWS, {"faithfulnes": 0.8}, judge=SCRIPT.judge(), store=tmp_path / "q.db")
    with pytest.raises(ConfigError, match="must be a number"):
        assert_scores(ROWS, {"faithfulness": "high"}, judge=SCRIPT.judge(), store=tmp_path / "q.db")  # type: ignore[dict-item]
    with pytest.raises(ConfigError, match="needs thresholds"):
        assert_scores(ROWS, {}, store=tmp_path / "q.db")


def test_cases_parametrise_over_a_data_file(tmp_path: Path) -> None:
    path = tmp_path / "golden.jsonl"
    path.write_text('{"id": "a", "question": "q1"}\n{"id": "b", "question": "q2"}\n')
    params = cases(path)
    assert [p.id for p in params] == ["a", "b"]
    assert [p.values[0].question for p in params] == ["q1", "q2"]


def test_summary_lines_fit_80_columns(tmp_path: Path) -> None:
    result = assert_scores(ROWS[:1], {"faithfulness": 0.9}, judge=SCRIPT.judge(), store=tmp_path / "q.db")
    record = RunRecord("tests/test_rag.py::test_office_hours_are_answered_from_the_handbook[office]", result,
                       {"faithfulness": 0.9}, "q.db", True)
    lines = summary_lines([record], "report.html")
    calls, tokens = result.judge_stats["calls"], result.judge_stats["prompt_tokens"] + result.judge_stats[
        "completion_tokens"]
    assert calls > 0
    assert lines == [
        "PASSED test_rag.py::test_office_hours_are_answered_from_the_handbook[office]",
        "       faithfulness 1.00 (>=0.9)",
        f"1 run saved in q.db; judge: {calls} calls, 0 cache hits, {tokens} tokens",
        "HTML report of the session's runs: report.html",
    ]
    assert all(len(line) <= 80 for line in lines)


def test_a_threshold_no_score_can_cross_is_a_config_error_not_a_silent_pass(tmp_path: Path) -> None:
    """A percentage for a fraction ("noise_sensitivity at most 30", meaning 30%) passed every
    sample whatever it scored, and NaN compares false with everything: both passed silently."""
    rows = [{"id": "r", "question": "Who?", "contexts": ["Ann."], "response": "Ann.", "reference": "Ann."}]
    for thresholds in ({"noise_sensitivity": 30}, {"token_f1": 80}, {"token_f1": float("nan")},
                       {"token_f1": float("inf")}, {"token_f1": -2}):
        with pytest.raises(ConfigError, match=r"token_f1|noise_sensitivity") as caught:
            assert_scores(rows, thresholds, store=tmp_path / "q.db")
    assert "did you mean" not in str(caught.value)
    with pytest.raises(ConfigError, match=r"outside the range of its scores \(0 to 1\).*did you mean 0.8\?"):
        assert_scores(rows, {"token_f1": 80}, store=tmp_path / "q.db")
    with pytest.raises(ConfigError, match="is nan"):
        assert_scores(rows, {"token_f1": float("nan")}, store=tmp_path / "q.db")
    assert assert_scores(rows, {"token_f1": 1, "exact_match": 0}, store=tmp_path / "q.db").summary["token_f1"].mean == 1


CHAT = {"conversation_id": "office", "turns": [
    {"role": "user", "content": "I work in Berlin. When does the office open?"},
    {"role": "assistant", "content": "The office opens at 8 am.", "contexts": ["The office opens at 8 am."]},
    {"role": "user", "content": "And who approves travel?"},
    {"role": "assistant", "content": "Travel is approved by the manager.",
     "contexts": ["Travel is approved by the manager."]}]}


def chat_judge() -> object:
    from ragsight.judge import ScriptedProvider

    kept = {"knowledge_retention": lambda v: {"verdicts": [{"id": i, "verdict": True, "reason": "kept"}
                                                           for i, _ in enumerate(v["item_list"], start=1)]}}
    return ScriptedProvider({**SCRIPT.handlers(), **kept})


def test_a_chat_is_gated_per_level_a_conversation_metric_on_its_conversation_row(tmp_path: Path) -> None:
    # the user's case: the summary said 1.00 and the gate failed, counting turn rows that have no
    # knowledge_retention; and the turn metric must not count the conversation row either
    result = assert_scores([CHAT], {"knowledge_retention": 0.9, "faithfulness": 0.9}, judge=chat_judge(),
                           mode="mean", store=tmp_path / "c.db")
    assert result.summary["knowledge_retention"].mean == 1.0
    assert_scores([CHAT], {"knowledge_retention": 0.9, "faithfulness": 0.9}, judge=chat_judge(),
                  store=tmp_path / "c.db")  # each sample of each metric's own level passes


def test_cases_of_a_chat_are_its_turns_unless_asked_for_conversations() -> None:
    ids = [p.id for p in cases([CHAT])]
    assert ids == ["office:0", "office:1"]
    assert [p.id for p in cases([CHAT], level="conversation")] == ["office"]
    with pytest.raises(ConfigError, match="level must be"):
        cases([CHAT], level="turns")


def test_a_conversation_metric_on_single_turn_data_fails_saying_why(tmp_path: Path) -> None:
    with pytest.raises(ScoresBelowThresholdError) as info:
        assert_scores(ROWS[:1], {"knowledge_retention": 0.5}, judge=SCRIPT.judge(), store=tmp_path / "k.db")
    assert "only turn-level samples" in str(info.value)
