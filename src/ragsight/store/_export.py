"""Export a run to JSONL, CSV or Parquet."""

from __future__ import annotations

import csv
from pathlib import Path
from typing import Any

from .._files import atomic_path, atomic_write, check_writable_target, strict_json
from ..errors import ConfigError, MissingExtraError
from ._sqlite import Store

__all__ = ["FORMATS", "export_run", "flat_rows"]

FORMATS = ("jsonl", "csv", "parquet")


def flat_rows(store: Store, run_id: str) -> list[dict[str, Any]]:
    """One flat row per sample: id, question, response, and <metric>, <metric>__outcome,
    <metric>__reason columns."""
    info = store.run(run_id)
    scores = store.scores(run_id)
    rows = []
    for s in store.samples(run_id):
        row: dict[str, Any] = {"run_id": run_id, "id": s.id, "question": s.question, "response": s.response}
        for key in info.metric_keys:
            sc = scores.get(s.id, {}).get(key)
            row[key] = sc.value if sc else None
            row[f"{key}__outcome"] = sc.outcome.value if sc else "missing"
            row[f"{key}__reason"] = sc.reason if sc else ""
        rows.append(row)
    return rows


def export_run(store: Store, run_id: str, fmt: str, out: str | Path) -> Path:
    """Write the run's per-sample results. JSONL keeps the nested form of ``--out``:
    {"id", "run_id", "scores": {metric: {"value", "outcome", "reason"}}}, plus the evidence.

    Every format is written to a temporary file beside ``out`` and renamed over it when complete:
    an export killed midway leaves the previous file whole. JSON is strict (never a bare NaN)."""
    if fmt not in FORMATS:
        raise ConfigError(f"unknown export format '{fmt}'; use one of {', '.join(FORMATS)}")
    try:
        path = check_writable_target(out, "export file")
    except OSError as exc:
        raise ConfigError(str(exc)) from None
    if fmt == "jsonl":
        info = store.run(run_id)
        scores = store.scores(run_id)
        with atomic_write(path) as f:
            for s in store.samples(run_id):
                per = scores.get(s.id, {})
                obj = {
                    "id": s.id, "run_id": run_id,
                    "scores": {k: per[k].to_dict() for k in info.metric_keys if k in per},
                    "evidence": {k: per[k].evidence.to_dict() for k in info.metric_keys if k in per},
                }
                f.write(strict_json(obj) + "\n")
        return path
    rows = flat_rows(store, run_id)
    if fmt == "csv":
        with atomic_write(path, newline="") as f:
            fields = list(rows[0]) if rows else ["run_id", "id"]
            w = csv.DictWriter(f, fieldnames=fields)
            w.writeheader()
            w.writerows(rows)
        return path
    try:
        import pandas as pd
    except ImportError as exc:
        raise MissingExtraError("Parquet export", "parquet", "pandas") from exc
    try:
        with atomic_path(path) as tmp:
            pd.DataFrame(rows).to_parquet(tmp, index=False)
    except ImportError as exc:
        raise MissingExtraError("Parquet export", "parquet", "pyarrow") from exc
    return path
