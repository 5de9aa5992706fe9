"""Samples and data sets (kept for ``from ragsight.sample import ...``; they live in
:mod:`ragsight.dataset`)."""

from .dataset import (
    FIELD_ALIASES,
    Dataset,
    ProblemGroup,
    RowProblem,
    Sample,
    SampleWarning,
    group_problems,
    is_out_of_scope,
    turn_samples,
)

__all__ = ["FIELD_ALIASES", "Dataset", "ProblemGroup", "RowProblem", "Sample", "SampleWarning",
           "group_problems", "is_out_of_scope", "turn_samples"]
