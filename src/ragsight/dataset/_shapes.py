"""The shapes other tools write, read into ragsight's fields: the field names, and what every
row reader shares (FieldError, RowFields, the missing and plain values, a row object as a mapping).

One row in (a dict, or an object with ``model_dump()`` / ``to_dict()``), ragsight's fields out,
each value checked and coerced. ``docs/data.md`` is the reader's version of the rules below; the
value rules are in ``_values.py``, the safety checks in ``_safety.py``, the shapes of other tools'
rows in ``_rows.py``.

Field names. A key is compared after normalising it (surrounding spaces removed, camelCase
split, lower case, spaces and hyphens as underscores), then looked up in ``FIELD_ALIASES``:
ragas 0.1 (``question``, ``answer``, ``contexts``, ``ground_truth(s)``), ragas 0.2+
(``user_input``, ``response``, ``retrieved_contexts``, ``reference``, ``reference_contexts``,
``retrieved_context_ids``, ``reference_context_ids``), DeepEval test cases (``input``,
``actual_output``, ``expected_output``, ``retrieval_context``; ``context`` is DeepEval's *gold*
context and lands in ``reference_contexts``), TruLens (``query``, ``query_id``,
``expected_response``, ``expected_chunks``; a records export's ``input`` / ``output``),
Phoenix / OpenInference (``input``, ``output``, ``input.value``, ``output.value``,
``retrieval.documents``). Three tools give a name a meaning of their own, recognised by the
row's shape:

- a Phoenix row (a ``context.span_id`` / ``context.trace_id`` key, or ``attributes.*`` keys):
  ``reference`` and ``context`` hold the *retrieved* documents (``get_qa_with_reference`` and
  ``get_input_output_context`` name them so);
- a promptfoo result or test case (a ``vars`` object beside ``testCase`` / ``assert`` /
  ``response``...): the variables are read as fields, ``vars.context`` is the retrieved context
  (as promptfoo's context-faithfulness reads it), ``response.output`` is the response, and the
  value of a ``context-recall`` / ``factuality`` / ``similar`` / ``equals`` assertion is the
  reference;
- a TruLens records row (``record_json``): ``input`` / ``output`` are JSON-encoded and decoded,
  and the contexts are the return value of the last recorded call whose method name contains
  ``retriev``;
- a DeepEval row (``actual_output``, ``expected_output`` or ``retrieval_context``): a context
  given as one string is split at ``|``, the separator DeepEval writes in CSV and JSONL.
"""

from __future__ import annotations

import functools
import math
import re
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

__all__ = [
    "ALIAS_TO_FIELD",
    "CONTENT_FIELDS",
    "FIELD_ALIASES",
    "KNOWN_FOREIGN",
    "FieldError",
    "RowFields",
    "canonical_field",
    "is_missing",
    "norm_key",
    "row_mapping",
    "to_plain",
]

# canonical name -> accepted names (normalised with norm_key; the canonical one first)
FIELD_ALIASES: dict[str, tuple[str, ...]] = {
    "id": ("id", "sample_id", "qid", "question_id", "query_id"),
    "question": ("question", "user_input", "query", "input", "input.value", "attributes.input.value"),
    "contexts": ("contexts", "retrieved_contexts", "retrieval_context", "retrieved_context",
                 "retrieval.documents", "attributes.retrieval.documents"),
    "response": ("response", "answer", "output", "actual_output", "generated_answer", "output.value",
                 "attributes.output.value"),
    "reference": ("reference", "ground_truth", "ground_truths", "reference_answer", "expected_output",
                  "expected_response", "expected_answer"),
    "reference_contexts": ("reference_contexts", "ground_truth_contexts", "context", "reference_context",
                           "expected_chunks"),
    "retrieved_ids": ("retrieved_ids", "retrieved_context_ids"),
    "relevant_ids": ("relevant_ids", "reference_context_ids", "relevant_context_ids"),
    "metadata": ("metadata", "additional_metadata", "meta", "attributes.metadata"),
}
ALIAS_TO_FIELD = {alias: name for name, aliases in FIELD_ALIASES.items() for alias in aliases}
# the fields that carry something to evaluate (a row with none of them and unknown ones is a mistake)
CONTENT_FIELDS = ("question", "contexts", "response", "reference", "reference_contexts",
                  "retrieved_ids", "relevant_ids")
# Names other tools write that ragsight keeps in metadata as they are: no "did you mean" for them.
KNOWN_FOREIGN = frozenset({
    # ragas
    "multi_responses", "rubrics", "rubric", "persona_name", "query_style", "query_length",
    "synthesizer_name", "reference_tool_calls", "reference_topics",
    # DeepEval
    "name", "comments", "source_file", "tools_called", "expected_tools", "custom_column_key_values",
    "token_cost", "completion_time", "tags",
    # TruLens
    "app_id", "app_name", "app_version", "record_id", "record_json", "cost_json", "perf_json", "ts",
    "latency", "total_tokens", "total_cost", "num_events", "type", "ground_truth_id", "dataset_id",
    "app_json", "cost_currency",
    # Phoenix
    "context.span_id", "context.trace_id", "span_kind", "parent_id", "start_time", "end_time",
    "status_code", "status_message", "events", "document_position", "document_score",
    # ragsight's own out-of-scope markers
    "answerable", "question_type", "out_of_scope",
})
_CAMEL = re.compile(r"(?<=[a-z0-9])(?=[A-Z])")


class FieldError(Exception):
    """A field of one row that cannot be used (the row becomes a row problem)."""

    def __init__(self, field_name: str | None, message: str) -> None:
        super().__init__(message)
        self.field_name = field_name
        self.message = message


@dataclass
class RowFields:
    """One row read into ragsight's fields: values coerced, the rest in ``metadata``."""

    values: dict[str, Any] = field(default_factory=dict)
    metadata: dict[str, Any] = field(default_factory=dict)
    notes: list[tuple[str, str]] = field(default_factory=list)  # (field, warning)
    sources: dict[str, str] = field(default_factory=dict)  # canonical field -> the row's key
    shape: str = "ragsight"
    # unknown columns that most likely mean a field the row lacks: (column, field); evaluate()
    # stops on them before a run is made
    misnamed: list[tuple[str, str]] = field(default_factory=list)


def norm_key(key: Any) -> str:
    """'actualOutput' -> 'actual_output', ' Retrieved Contexts' -> 'retrieved_contexts'."""
    return _norm_key(str(key))


@functools.lru_cache(maxsize=4096)  # a data set repeats its few names on every row
def _norm_key(key: str) -> str:
    k = _CAMEL.sub("_", key.strip())
    return re.sub(r"[\s\-]+", "_", k).lower()


def canonical_field(key: Any) -> str | None:
    """The ragsight field a key names, or None."""
    return ALIAS_TO_FIELD.get(norm_key(key))


def is_missing(value: Any) -> bool:
    if value is None:
        return True
    return isinstance(value, float) and math.isnan(value)


def to_plain(value: Any) -> Any:
    """numpy / pandas / pyarrow scalars and arrays to plain Python values."""
    if hasattr(value, "tolist") and not isinstance(value, (str, bytes)):
        return value.tolist()
    return value


def row_mapping(obj: Any) -> Mapping[str, Any] | None:
    """A row given as an object (a ragas SingleTurnSample, a DeepEval LLMTestCase, a dataclass)
    as a mapping, duck-typed; None when it is not one."""
    if isinstance(obj, Mapping):
        return obj
    if isinstance(obj, (str, bytes, list, tuple)):
        return None
    out: Any = None
    for method in ("to_dict", "model_dump", "dict"):
        fn = getattr(obj, method, None)
        if callable(fn):
            try:
                out = fn()
            except Exception:
                continue
            if isinstance(out, Mapping):
                break
    else:
        fields_ = getattr(obj, "__dataclass_fields__", None)
        out = {k: getattr(obj, k) for k in fields_} if isinstance(fields_, Mapping) else None
    if not isinstance(out, Mapping):
        return None
    # an object's unset attributes are None: they are not data
    return {k: v for k, v in out.items() if v is not None}
