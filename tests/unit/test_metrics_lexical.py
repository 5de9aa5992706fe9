"""The lexical metric classes: values through evaluate(), aliases, skips, the missing extra."""

from __future__ import annotations

import sys

import pytest

import ragsight
from ragsight import Outcome
from ragsight.errors import MissingExtraError
from ragsight.metrics import _lexical, resolve_metrics

NAMES = ["exact_match", "token_f1", "bleu", "rouge_1", "rouge_2", "rouge_l", "chrf"]
RESPONSE = "The capital of France is Paris"
REFERENCE = "Paris is France's capital"


def test_paraphrase_values_by_hand() -> None:
    result = ragsight.evaluate([{"id": "p", "response": RESPONSE, "reference": REFERENCE}], NAMES)
    v = {k: s.value for k, s in result.scores["p"].items()}
    assert v["exact_match"] == 0.0
    # SQuAD tokens: [capital, of, france, is, paris] vs [paris, is, frances, capital]: 3 shared.
    assert v["token_f1"] == pytest.approx(2 * (3 / 5) * (3 / 4) / (3 / 5 + 3 / 4))
    # ROUGE tokens: [the, capital, of, france, is, paris] vs [paris, is, france, s, capital]:
    # 4 shared unigrams, no shared bigram, longest common subsequence 1 (the order is reversed).
    assert v["rouge_1"] == pytest.approx(2 * (4 / 6) * (4 / 5) / (4 / 6 + 4 / 5))
    assert v["rouge_2"] == 0.0
    assert v["rouge_l"] == pytest.approx(2 / 11)
    assert v["bleu"] == pytest.approx(_lexical.bleu(RESPONSE, REFERENCE))
    assert v["chrf"] == pytest.approx(_lexical.chrf(RESPONSE, REFERENCE))
    assert 0.0 < (v["bleu"] or 0.0) < 0.2
    assert result.judge_stats == {}  # no judge was made


def test_aliases_count_the_best_match_and_record_each() -> None:
    data = [{"id": "a", "response": "Paris", "reference": ["the French capital", "Paris."]}]
    result = ragsight.evaluate(data, NAMES)
    scores = result.scores["a"]
    assert scores["exact_match"].value == 1.0
    assert scores["exact_match"].evidence.details == {"per_reference": [0.0, 1.0], "best_reference": 1}
    assert "best of 2 references: #2" in scores["exact_match"].reason
    assert scores["token_f1"].value == 1.0
    assert scores["rouge_l"].value == 1.0


def test_bleu_scores_each_alias_alone_and_keeps_the_best() -> None:
    refs = ["the cat sat on a mat", "a cat was sitting on the mat"]
    response = "the cat sat on the mat"
    result = ragsight.evaluate([{"id": "b", "response": response, "reference": refs}], ["bleu"])
    score = result.scores["b"]["bleu"]
    each = [_lexical.bleu(response, r) for r in refs]
    assert score.value == pytest.approx(max(each))
    assert score.evidence.details["per_reference"] == pytest.approx(each, abs=1e-6)


def test_empty_reference_or_response_is_skipped() -> None:
    data = [{"id": "r", "response": "Paris", "reference": "  "},
            {"id": "s", "response": "", "reference": "Paris"},
            {"id": "ok", "response": "Paris, France", "reference": "Paris, France"}]
    result = ragsight.evaluate(data, NAMES)
    assert result.scores["r"]["token_f1"].outcome is Outcome.SKIPPED
    assert result.scores["r"]["token_f1"].reason == "sample has no reference"
    assert result.scores["s"]["bleu"].reason == "sample has no response"
    for name in NAMES:
        assert result.summary[name].counts == {"scored": 1, "undetermined": 0, "failed": 0, "skipped": 2}
        assert result.summary[name].mean == 1.0


def test_a_row_whose_pipeline_failed_is_skipped_with_the_pipeline_error() -> None:
    # rows as `ragsight answer`, the LangChain/LlamaIndex adapters and the sweep write them:
    # the pipeline raised, so no response, and the error in metadata.error
    data = [{"id": "bad", "question": "Capital?", "reference": "Paris",
             "metadata": {"pipeline": "app", "error": "RuntimeError: the index\nis down"}},
            {"id": "fine", "question": "Capital?", "response": "Paris", "reference": " ",
             "metadata": {"error": None}},
            {"id": "odd", "question": "Capital?", "response": "Paris", "reference": " ",
             "metadata": {"error": "TimeoutError: late"}}]
    result = ragsight.evaluate(data, NAMES)
    assert result.scores["bad"]["token_f1"].reason == (
        "the pipeline failed on this question (metadata.error: RuntimeError: the index is down): "
        "sample has no response")
    # no error, or an error that did not cost the response: the reason is the missing field
    assert result.scores["fine"]["token_f1"].reason == "sample has no reference"
    assert result.scores["odd"]["token_f1"].reason == "sample has no reference"
    assert result.summary["token_f1"].counts["skipped"] == 3


def test_without_sacrebleu_the_run_stops_before_any_work_naming_the_extra(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setitem(sys.modules, "sacrebleu", None)  # import sacrebleu now raises ImportError
    rows = [{"id": "x", "response": "Paris", "reference": "Paris"}]
    with pytest.raises(MissingExtraError) as info:
        ragsight.evaluate(rows, ["bleu", "chrf", "rouge_l"])
    assert "pip install 'ragsight[lexical]'" in str(info.value)
    assert "bleu, chrf" in str(info.value)
    # without the preflight (preflight=False), each of them ends failed, naming the extra
    result = ragsight.evaluate(rows, ["bleu", "chrf", "rouge_l"],
                               options=ragsight.RunOptions(preflight=False))
    for name in ("bleu", "chrf"):
        score = result.scores["x"][name]
        assert score.outcome is Outcome.FAILED
        assert "pip install 'ragsight[lexical]'" in score.reason
    assert result.scores["x"]["rouge_l"].value == 1.0  # the others do not need it


def test_lexical_group() -> None:
    metrics = resolve_metrics("lexical")
    assert sorted(m.name for m in metrics) == sorted(NAMES)
    assert all(m.groups == {"lexical", "generation"} for m in metrics)
    assert not any(m.needs_judge or m.needs_embedder for m in metrics)


def test_reference_of_blank_aliases_is_skipped() -> None:
    result = ragsight.evaluate([{"id": "b", "response": "Paris", "reference": ["", " "]},
                                {"id": "c", "response": "Paris", "reference": ["", "Paris"]}], ["token_f1"])
    assert result.scores["b"]["token_f1"].outcome is Outcome.SKIPPED
    assert result.scores["c"]["token_f1"].value == 1.0  # a blank alias among others is dropped
