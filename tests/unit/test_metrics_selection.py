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


@pytest.mark.parametrize(("typo", "close"), [("hit_rat", "hit_rate"), ("rouge_I", "rouge_l"),
                                              ("roug_l", "rouge_l"), ("ndgc", "ndcg"), ("lexicl", "lexical")])
def test_unknown_name_suggests_the_closest(typo: str, close: str) -> None:
    with pytest.raises(ConfigError) as info:
        resolve_metrics(typo)
    # names are case-folded: 'rouge_I' is read as 'rouge_i'
    assert f"unknown metric '{typo.lower()}'. Did you mean '{close}'?" in str(info.value)


def test_names_are_case_folded_and_keys_use_the_folded_name() -> None:
    keys = [m.key for m in resolve_metrics("Faithfulness, Factual_Correctness(mode=recall), IR")]
    assert keys[:2] == ["faithfulness", "factual_correctness(mode=recall)"]
    assert set(keys[2:]) == IR


def test_a_parameter_the_metric_does_not_take_names_the_ones_it_does() -> None:
    with pytest.raises(ConfigError) as info:
        resolve_metrics("faithfulness(foo=1)")
    assert str(info.value) == "metric 'faithfulness(foo=1)': faithfulness has no parameter 'foo'; its parameters: form"
    with pytest.raises(ConfigError) as info:
        resolve_metrics("context_recall(foo=1)")
    assert str(info.value) == "metric 'context_recall(foo=1)': context_recall has no parameter 'foo'; it takes no parameter"
    with pytest.raises(ConfigError) as info:
        resolve_metrics("factual_correctness(mod=recall)")
    assert "has no parameter 'mod' (did you mean 'mode'?); its parameters: mode, beta, form" in str(info.value)


def test_a_group_that_fits_no_sample_names_the_missing_fields() -> None:
    from ragsight import Sample

    rows = [Sample(id="a", question="q", response="r", contexts=("c",))]
    with pytest.raises(ConfigError) as info:
        resolve_metrics("ir", rows)
    assert str(info.value) == ("no metric selected: the ir metrics need retrieved_ids, relevant_ids, "
                               "which no sample has ('ir' selects none)")
    with pytest.warns(UserWarning, match="the ir metrics need retrieved_ids, relevant_ids"):
        assert [m.key for m in resolve_metrics("faithfulness,ir", rows)] == ["faithfulness"]


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


def test_specs_given_as_a_generator_are_all_read() -> None:
    # the check for misspelt names reads the specs before they are resolved: a generator was
    # used up by it, and the run then said "no metric selected"
    assert [m.key for m in resolve_metrics(x for x in ["faithfulness", "token_f1"])] == ["faithfulness", "token_f1"]
