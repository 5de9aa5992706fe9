"""mrr_by_similarity: the first chunk above the threshold, per-embedder defaults, evidence."""

from __future__ import annotations

from typing import Any

import pytest

import ragsight
from ragsight import Outcome
from ragsight.errors import ConfigError
from ragsight.metrics import resolve_metrics
from ragsight.metrics.similarity_mrr import (
    DEFAULT_THRESHOLDS,
    FALLBACK_THRESHOLD,
    default_threshold,
)
from tests.fakes.embedder import TableEmbedder

# cosine with the reference [1, 0, 0]: 0.6, 0.8, 1.0
TABLE: dict[str, list[float]] = {"ref": [1, 0, 0], "alias": [0, 0, 1], "c1": [0.6, 0.8, 0], "c2": [0.8, 0.6, 0], "c3": [1, 0, 0]}
SAMPLE: dict[str, Any] = {"id": "m", "contexts": ["c1", "c2", "c3"], "reference": "ref"}


class E5Named(TableEmbedder):
    name = "local:e5-small"


def run(spec: str, embedder: TableEmbedder | None = None, sample: dict[str, Any] = SAMPLE) -> ragsight.Score:
    result = ragsight.evaluate([sample], [spec], embedder=embedder or TableEmbedder(TABLE))
    return result.scores["m"][spec]


@pytest.mark.parametrize(
    ("spec", "want", "rank"),
    [
        ("mrr_by_similarity(threshold=0.5)", 1.0, 1),
        ("mrr_by_similarity(threshold=0.7)", 1 / 2, 2),
        ("mrr_by_similarity(threshold=0.9)", 1 / 3, 3),
        ("mrr_by_similarity(threshold=1.0)", 0.0, None),  # strictly above: 1.0 is not > 1.0
    ],
)
def test_first_chunk_above_the_threshold(spec: str, want: float, rank: int | None) -> None:
    score = run(spec)
    assert score.outcome is Outcome.SCORED
    assert score.value == pytest.approx(want)
    d = score.evidence.details
    assert d["first_relevant_rank"] == rank
    assert d["similarities"] == pytest.approx([0.6, 0.8, 1.0])
    assert d["threshold_source"] == "given"
    assert d["embedder"] == "test:table"


def test_unknown_embedder_gets_the_fallback_threshold_and_says_so() -> None:
    score = run("mrr_by_similarity")
    d = score.evidence.details
    assert d["threshold"] == FALLBACK_THRESHOLD.value == 0.75
    assert d["threshold_source"].startswith("not measured")
    assert score.value == pytest.approx(1 / 2)


def test_default_threshold_is_chosen_by_embedder_name() -> None:
    table = {**TABLE, "c1": [0.86, 0.5103, 0.0], "c2": [0.87, 0.4931, 0.0]}  # cosines 0.86, 0.87, 1.0
    score = run("mrr_by_similarity", embedder=E5Named(table))
    d = score.evidence.details
    assert d["embedder"] == "local:e5-small"
    assert d["threshold"] == DEFAULT_THRESHOLDS["local:e5-small"].value == 0.864
    assert d["threshold_source"].startswith("measured")
    assert score.value == pytest.approx(1 / 2)  # 0.86 is below e5's threshold, 0.87 above
    assert default_threshold("local:minilm").value == 0.4556
    assert default_threshold("nobody:knows") is FALLBACK_THRESHOLD


def test_aliases_take_each_chunks_best_similarity() -> None:
    sample: dict[str, Any] = {"id": "m", "contexts": ["c1", "alias"], "reference": ["ref", "alias"]}
    score = run("mrr_by_similarity(threshold=0.9)", sample=sample)
    assert score.evidence.details["similarities"] == pytest.approx([0.6, 1.0])
    assert score.value == pytest.approx(1 / 2)


def test_needs_contexts_and_reference() -> None:
    result = ragsight.evaluate([{"id": "m", "contexts": ["c1"]}], ["mrr_by_similarity"], embedder=TableEmbedder(TABLE))
    score = result.scores["m"]["mrr_by_similarity"]
    assert score.outcome is Outcome.SKIPPED and score.reason == "sample has no reference"


@pytest.mark.parametrize("spec", ["mrr_by_similarity(threshold=2)", "mrr_by_similarity(threshold=high)"])
def test_bad_threshold_is_a_config_error(spec: str) -> None:
    with pytest.raises(ConfigError, match="threshold"):
        resolve_metrics(spec)
