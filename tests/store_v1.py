"""A run store as ragsight wrote it before the compact layout (schema 1), for migration tests.

``V1Store`` creates the schema-1 tables from the package's own ``001_init.sql`` and writes rows
exactly as the schema-1 ``Store`` did (``git show e0f2e61:src/ragsight/store/_sqlite.py``): JSON
text for samples, evidence, messages and cache entries, the raw output and parsed output in the
call's row, or, as the last schema-1 version did (ade915b), left out of the row when the cache
holds the same answer under the call's step.
"""

from __future__ import annotations

import json
import sqlite3
import time
from collections.abc import Iterable, Sequence
from importlib import resources
from pathlib import Path
from typing import Any

from ragsight import Score
from ragsight.judge import JudgeCall
from ragsight.sample import Sample

__all__ = ["V1Store"]


def _dumps(value: Any) -> str:
    return json.dumps(value, ensure_ascii=False, default=str)


class V1Store:
    def __init__(self, path: str | Path, *, answer_in_cache: bool = False) -> None:
        self.conn = sqlite3.connect(str(path), isolation_level=None)
        self.answer_in_cache = answer_in_cache
        sql = resources.files("ragsight.store").joinpath("migrations", "001_init.sql").read_text("utf-8")
        lines = [ln for ln in sql.splitlines() if not ln.strip().startswith("--")]
        for statement in "\n".join(lines).split(";"):
            if statement.strip():
                self.conn.execute(statement)
        self.conn.execute("PRAGMA user_version = 1")

    def close(self) -> None:
        self.conn.close()

    def create_run(self, run_id: str, samples: Sequence[Sample], *, judge: str | None = "openai:m",
                   config: dict[str, Any] | None = None, metrics: list[dict[str, Any]] | None = None) -> None:
        now = time.time()
        self.conn.execute(
            "INSERT INTO runs (id, created_at, status, dataset, judge, embedder, metrics, config, metadata,"
            " lock_owner, lock_heartbeat) VALUES (?,?,?,?,?,?,?,?,?,?,?)",
            (run_id, now, "running", "data.jsonl", judge, None, _dumps(metrics or []), _dumps(config or {}),
             _dumps({}), None, None))
        self.conn.executemany("INSERT INTO samples (run_id, idx, sample_id, data) VALUES (?,?,?,?)",
                              [(run_id, i, s.id, _dumps(s.to_dict())) for i, s in enumerate(samples)])

    def finish_run(self, run_id: str, stats: dict[str, Any]) -> None:
        self.conn.execute("UPDATE runs SET status='completed', finished_at=?, stats=? WHERE id=?",
                          (time.time(), _dumps(stats), run_id))

    def cache_put(self, key: str, entry: dict[str, Any]) -> None:
        self.conn.execute("INSERT OR REPLACE INTO cache (key, entry, created_at) VALUES (?,?,?)",
                          (key, _dumps(entry), time.time()))

    def _answer(self, c: JudgeCall) -> tuple[str | None, str | None]:
        parsed = _dumps(c.parsed) if c.parsed is not None else None
        if not self.answer_in_cache or c.error is not None or c.raw_output is None:
            return c.raw_output, parsed
        row = self.conn.execute("SELECT entry FROM cache WHERE key=?", (c.step,)).fetchone()
        entry = json.loads(row[0]) if row else None
        if entry is None or entry.get("raw_output") != c.raw_output:
            return c.raw_output, parsed
        if c.parsed is not None and entry.get("parsed") != c.parsed:
            return c.raw_output, parsed
        return None, None

    def save_sample(self, run_id: str, sample_id: str, scores: Iterable[Score],
                    calls: Iterable[JudgeCall]) -> None:
        now = time.time()
        self.conn.execute("BEGIN")
        self.conn.executemany(
            "INSERT OR REPLACE INTO scores (run_id, sample_id, metric, outcome, value, reason, evidence, created_at)"
            " VALUES (?,?,?,?,?,?,?,?)",
            [(run_id, sample_id, s.metric, s.outcome.value, s.value, s.reason, _dumps(s.evidence.to_dict()), now)
             for s in scores])
        rows = []
        for c in calls:
            raw, parsed = self._answer(c)
            rows.append((run_id, sample_id, c.step, c.attempt, c.prompt_id, c.prompt_version, c.prompt_hash,
                         c.judge, c.model, c.kind, _dumps([{"role": m.role, "content": m.content} for m in c.messages]),
                         raw, parsed, c.prompt_tokens, c.completion_tokens, c.latency_s, int(c.cached), c.error,
                         c.structured, c.started_at))
        self.conn.executemany(
            "INSERT INTO judge_calls (run_id, sample_id, step, attempt, prompt_id, prompt_version, prompt_hash,"
            " judge, model, kind, messages, raw_output, parsed, prompt_tokens, completion_tokens, latency_s,"
            " cached, error, structured, started_at) VALUES (?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?)", rows)
        self.conn.execute("UPDATE samples SET finished=1 WHERE run_id=? AND sample_id=?", (run_id, sample_id))
        self.conn.execute("COMMIT")
