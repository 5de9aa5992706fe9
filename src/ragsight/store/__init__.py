"""The SQLite run store and exports."""

from ._export import (
           FORMATS,
           INPUT_COLUMNS,
           conversation_columns,
           export_run,
           flat_rows,
           input_columns,
)
from ._sqlite import RunInfo, SQLiteCallCache, Store

__all__ = ["FORMATS", "INPUT_COLUMNS", "RunInfo", "SQLiteCallCache", "Store", "conversation_columns", "export_run",
           "flat_rows", "input_columns"]
