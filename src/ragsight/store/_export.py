"""Export a run to JSONL, CSV or Parquet."""

from __future__ import annotations

import csv
import json
from pathlib import Path
from typing import Any

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
    {"id", "run_id", "scores": {metric: {"value", "outcome", "reason"}}}, plus the evidence."""
    path = Path(out)
    if fmt not in FORMATS:
        raise ConfigError(f"unknown export format '{fmt}'; use one of {', '.join(FORMATS)}")
    if fmt == "jsonl":
        info = store.run(run_id)
        scores = store.scores(run_id)
        with path.open("w", encoding="utf-8") as f:
            for s in store.samples(run_id):
                per = scores.get(s.id, {})
                obj = {
                    "id": s.id, "run_id": run_id,
                    "scores": {k: per[k].to_dict() for k in info.metric_keys if k in per},
                    "evidence": {k: per[k].evidence.to_dict() for k in info.metric_keys if k in per},
                }
                f.write(json.dumps(obj, ensure_ascii=False) + "\n")
        return path
    rows = flat_rows(store, run_id)
    if fmt == "csv":
        with path.open("w", encoding="utf-8", newline="") as f:
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
        pd.DataFrame(rows).to_parquet(path, index=False)
    except ImportError as exc:
        raise MissingExtraError("Parquet export", "parquet", "pyarrow") from exc
    return path
