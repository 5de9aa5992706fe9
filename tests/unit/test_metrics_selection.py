"""Selecting metrics: names with parameters, groups, ``all`` on data lacking fields, typos."""

from __future__ import annotations

from typing import Any

import pytest

import ragsight
from ragsight import Outcome, Sample
from ragsight.errors import ConfigError
from ragsight.metrics import metric_names, parse_spec, resolve_metrics

IR = {"hit_rate", "precision_at_k", "recall_at_k", "mrr", "ndcg", "map"}
LEXICAL = {"exact_match", "token_f1", "bleu", "rouge_1", "rouge_2", "rouge_l", "chrf"}


def test_new_metrics_are_registered() -> None:
    names = set(metric_names())
    assert IR | LEXICAL | {"retrieval_accuracy", "mrr_by_similarity"} <= names


@pytest.mark.parametrize(
    ("spec", "want"),
    [
        ("hit_rate", ("hit_rate", {})),
        ("hit_rate(k=5)", ("hit_rate", {"k": 5})),
        (" ndcg( k = 3 ) ", ("ndcg", {"k": 3})),
        ("retrieval_accuracy(k=3, match=text)", ("retrieval_accuracy", {"k": 3, "match": "text"})),
        ("mrr_by_similarity(threshold=0.82)", ("mrr_by_similarity", {"threshold": 0.82})),
        ("answer_correctness(weights=0.6/0.4)", ("answer_correctness", {"weights": (0.6, 0.4)})),
        ("factual_correctness(mode=fbeta, beta=0.5)", ("factual_correctness", {"mode": "fbeta", "beta": 0.5})),
    ],
)
def test_parse_spec(spec: str, want: tuple[str, dict[str, Any]]) -> None:
    assert parse_spec(spec) == want


@pytest.mark.parametrize("spec", ["hit_rate(5)", "Hit-Rate", "hit_rate(k=5"])
def test_unreadable_spec_is_a_config_error(spec: str) -> None:
    with pytest.raises(ConfigError):
        resolve_metrics(spec)


def test_parameters_reach_the_metric_and_results_use_the_spec_as_key() -> None:
    (m,) = resolve_metrics("hit_rate(k=5)")
    assert m.key == "hit_rate(k=5)" and m.params() == {"k": 5}
    m1, m2 = resolve_metrics("hit_rate(k=5), hit_rate(k=1)")  # one string, split at top-level commas
    assert (m1.key, m2.key) == ("hit_rate(k=5)", "hit_rate(k=1)")


def test_unknown_parameter_is_a_config_error_naming_the_metric() -> None:
    with pytest.raises(ConfigError, match=r"metric 'hit_rate\(cutoff=5\)'"):
        resolve_metrics("hit_rate(cutoff=5)")


@pytest.mark.parametrize(("typo", "close"), [("hit_rat", "hit_rate"), ("rouge_I", None), ("roug_l", "rouge_l"),
                                              ("ndgc", "ndcg"), ("lexicl", "lexical")])
def test_unknown_name_suggests_the_closest(typo: str, close: str | None) -> None:
    with pytest.raises(ConfigError) as info:
        resolve_metrics(typo)
    if close is None:  # upper case is not a metric name at all
        assert "cannot read metric" in str(info.value)
    else:
        assert f"unknown metric '{typo}'. Did you mean '{close}'?" in str(info.value)


def test_groups_select_by_field_availability() -> None:
    assert {m.name for m in resolve_metrics("ir")} == IR
    assert {m.name for m in resolve_metrics("lexical")} == LEXICAL
    retrieval = {m.name for m in resolve_metrics("retrieval")}
    assert IR | {"retrieval_accuracy", "mrr_by_similarity", "context_precision"} <= retrieval
    assert not LEXICAL & retrieval


def test_all_keeps_only_what_the_data_allows() -> None:
    samples = [Sample(id="a", response="Paris.", reference="Paris."),
               Sample(id="b", response="Berlin.")]
    chosen = {m.name for m in resolve_metrics("all", samples)}
    assert chosen == LEXICAL | {"factual_correctness", "answer_correctness", "answer_similarity"}


def test_selected_metrics_skip_samples_lacking_fields_with_reasons() -> None:
    data = [
        {"id": "full", "response": "Paris", "reference": "Paris", "retrieved_ids": ["a"], "relevant_ids": ["a"]},
        {"id": "no_ids", "response": "Paris", "reference": "Paris"},
        {"id": "no_ref", "response": "Paris", "retrieved_ids": ["a"], "relevant_ids": ["b"]},
    ]
    result = ragsight.evaluate(data, ["lexical", "ir"])
    assert set(result.metric_keys) == LEXICAL | IR
    assert result.scores["no_ids"]["mrr"].outcome is Outcome.SKIPPED
    assert result.scores["no_ids"]["mrr"].reason == "sample has no retrieved_ids, relevant_ids"
    assert result.scores["no_ref"]["token_f1"].reason == "sample has no reference"
    assert result.scores["no_ref"]["mrr"].value == 0.0
    assert result.summary["mrr"].counts == {"scored": 2, "undetermined": 0, "failed": 0, "skipped": 1}
    assert result.summary["mrr"].skip_reasons == {"sample has no retrieved_ids, relevant_ids": 1}
    assert result.summary["mrr"].mean == 0.5
