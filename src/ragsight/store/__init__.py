"""The SQLite run store and exports."""

from ._export import FORMATS, export_run, flat_rows
from ._sqlite import RunInfo, SQLiteCallCache, Store

__all__ = ["FORMATS", "RunInfo", "SQLiteCallCache", "Store", "export_run", "flat_rows"]
