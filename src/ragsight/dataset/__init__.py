"""Data in: the samples and conversations under evaluation, and the readers that turn other
tools' files and shapes into them.

``_sample`` (Sample, the out-of-scope rule, turn_samples), ``_dataset`` (Dataset: loading from
files, pandas, records), ``_reading`` (one row into a Sample, the row-by-row reader), ``_lazy``
(a large JSONL file read from disk), ``_problems`` (row problems and their groups),
``_conversation`` (Turn, ToolCall, Conversation), ``_conversations`` (other tools' conversation
shapes), ``_cells`` (lists written as text into a cell, Arrow's list cells), ``_levels`` (metric
and sample levels, a conversation's aggregates), ``_shapes`` (field names), ``_values`` (value rules),
``_safety`` (safety checks), ``_rows`` (other tools' row shapes), ``_tools`` (the tools an agent had available), ``_files`` (strict JSON, TOML,
atomic replacement of every file ragsight writes for others).
"""

from __future__ import annotations

from ._conversation import ROLES, Conversation, History, ToolCall, Turn
from ._dataset import Dataset
from ._files import (
    atomic_path,
    atomic_write,
    check_writable_target,
    read_toml,
    same_file,
    strict_json,
    write_failure,
)
from ._levels import conversation_aggregates, metric_level, sample_level
from ._problems import ProblemGroup, RowProblem, group_problems
from ._reading import sample_from_mapping
from ._sample import Sample, SampleWarning, is_out_of_scope, turn_samples
from ._shapes import ALIAS_TO_FIELD, FIELD_ALIASES, FieldError
from ._tools import TOOLS_KEY, ToolSpec, add_tools, looks_failed, read_tools, tool_named, tools_of

__all__ = [
    "ALIAS_TO_FIELD",
    "FIELD_ALIASES",
    "ROLES",
    "TOOLS_KEY",
    "Conversation",
    "Dataset",
    "FieldError",
    "History",
    "ProblemGroup",
    "RowProblem",
    "Sample",
    "SampleWarning",
    "ToolCall",
    "ToolSpec",
    "Turn",
    "add_tools",
    "atomic_path",
    "atomic_write",
    "check_writable_target",
    "conversation_aggregates",
    "group_problems",
    "is_out_of_scope",
    "looks_failed",
    "metric_level",
    "read_toml",
    "read_tools",
    "same_file",
    "sample_from_mapping",
    "sample_level",
    "strict_json",
    "tool_named",
    "tools_of",
    "turn_samples",
    "write_failure",
]
