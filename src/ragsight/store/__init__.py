"""The SQLite run store and exports."""

from ._export import (
    FORMATS,
    INPUT_COLUMNS,
    TURN_COLUMNS,
    conversation_columns,
    export_run,
    flat_rows,
    input_columns,
    table_rows,
    write_table,
)
from ._labels import ANY_METRIC, Label, claim_key, name_problem, sample_key, shown_name
from ._runs import RunInfo
from ._sqlite import SQLiteCallCache, Store

__all__ = ["ANY_METRIC", "FORMATS", "INPUT_COLUMNS", "TURN_COLUMNS", "Label", "RunInfo", "SQLiteCallCache", "Store",
           "claim_key", "conversation_columns", "export_run", "flat_rows", "input_columns", "name_problem",
           "sample_key", "shown_name", "table_rows", "write_table"]
