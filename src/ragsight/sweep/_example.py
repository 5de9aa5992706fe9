"""The bundled example: the handbook, its test set, 2 chunk sizes x 2 top-k x {dense, RAG-fusion}.

The test set (``data/handbook_testset.jsonl``) was made once by ``ragsight generate`` with the
embedded model on the handbook chunked finely (60 words), so its reference passages are short
document spans; the command is in ``bench/sweep_example.py``. The sweep answers every question's
retrieval in all 8 configurations (span metrics, no judge) and the first ``judge_questions``
questions in scope with the embedded generator, judged for faithfulness by the embedded judge.
The out-of-scope questions are skipped by the span metrics; the example does not answer them,
because the embedded judge's ``abstention`` verdicts were wrong on both answers it was measured
on (docs/sweep.md); a sweep with a stronger judge sets ``judge_out_of_scope`` and
``abstention(scope=out_of_scope)``.
"""

from __future__ import annotations

from importlib import resources
from typing import Any

__all__ = ["EXAMPLE_NAME", "example_spec", "example_testset"]

EXAMPLE_NAME = "handbook-example"


def example_testset() -> str:
    return str(resources.files("ragsight").joinpath("data").joinpath("handbook_testset.jsonl"))


def _handbook() -> str:
    return str(resources.files("ragsight").joinpath("data").joinpath("handbook"))


def example_spec(judge_questions: int = 2, judge_out_of_scope: int = 0) -> dict[str, Any]:
    """The example sweep as a dict (the same as a TOML or YAML file)."""
    return {
        "name": EXAMPLE_NAME,
        "documents": [_handbook()],
        "testset": example_testset(),
        "fixed": {"chunk_overlap": 16, "generator": "local", "embedder": "local",
                  "fusion_queries": 3, "max_answer_tokens": 60},
        "grid": {"chunk_size": [96, 192], "top_k": [2, 4], "retrieval": ["dense", "fusion"]},
        "baseline": {"chunk_size": 96, "top_k": 2, "retrieval": "dense"},
        "metrics": ["span_hit_rate", "span_recall", "span_precision", "span_mrr", "span_ndcg",
                    "faithfulness"],
        "judge_questions": judge_questions,
        "judge_out_of_scope": judge_out_of_scope,
    }
