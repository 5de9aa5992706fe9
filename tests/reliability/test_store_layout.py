"""The compact store end to end over real HTTP: an evaluation with the seven metrics against the
judge world, every judge call as the Judge made it read back byte for byte from the store; and
the same run written as a schema-1 store, converted on open, shows and exports exactly as the
store written directly (``ragsight show --calls``, ``ragsight export``)."""

from __future__ import annotations

import json
import sqlite3
from pathlib import Path
from typing import Any

import pytest

import ragsight
from ragsight import cli
from ragsight.judge import Judge, JudgeCall, OpenAIProvider
from ragsight.store import Store
from tests.fakes import FakeOpenAIServer
from tests.reliability.world import JudgeWorld, make_samples
from tests.store_v1 import V1Store

SEVEN = ["faithfulness", "answer_relevancy", "context_precision", "context_recall",
         "factual_correctness", "noise_sensitivity", "context_entity_recall"]

# the newest schema: the number of the last migration file
LATEST_SCHEMA = max(int(p.name.split("_")[0]) for p in
                    (Path(ragsight.store.__file__).parent / "migrations").glob("*.sql"))


@pytest.fixture(scope="module")
def run(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Any, list[JudgeCall]]:
    """A run of 6 samples (one with a unicode and CRLF answer) into a fresh store, and every
    call the Judge made, as it made it."""
    path = tmp_path_factory.mktemp("layout") / "runs.db"
    rows = make_samples(6)
    rows[2]["response"] = "Ünïcode ✓ answer.\r\nIt has two lines — and an emoji 🚀."
    made: list[JudgeCall] = []
    with FakeOpenAIServer(handler=JudgeWorld()) as srv:
        judge = Judge(OpenAIProvider("m", base_url=srv.url), sink=made.append)
        result = ragsight.evaluate(rows, SEVEN, embedder="openai:e", store=path,
                                   judge=ragsight.JudgeSpec(judge, base_url=srv.url),
                                   options=ragsight.RunOptions(preflight=False))
    assert result.status == "completed"
    return path, result, made


def record(c: JudgeCall) -> dict[str, Any]:
    d = c.to_dict()
    d["cached"] = int(c.cached)
    return d


def test_every_call_of_a_real_run_reads_back_byte_for_byte(run: tuple[Path, Any, list[JudgeCall]]) -> None:
    path, result, made = run
    with Store(path) as st:
        assert st.schema_version == LATEST_SCHEMA
        stored = st.judge_calls(result.run_id)
    assert len(made) > 6 * 7
    fresh = [c for c in made if not c.cached]
    got = {(r["step"], r["attempt"], bool(r["cached"])): {k: v for k, v in r.items()
                                                         if k not in ("id", "run_id", "sample_id")}
           for r in stored}
    for c in fresh:
        r = got[(c.step, c.attempt, False)]
        assert r == record(c)
        for m, back in zip(c.messages, r["messages"]):
            assert back["content"].encode("utf-8") == m.content.encode("utf-8")
        assert (r["raw_output"] or "").encode("utf-8") == (c.raw_output or "").encode("utf-8")
    assert any("\r\n" in m.content for c in fresh for m in c.messages)  # the CRLF answer went out


def _as_v1(path: Path, result: Any, made: list[JudgeCall], out: Path) -> None:
    """The same run as schema-1 ragsight wrote it: samples, scores, each sample's calls, cache."""
    with Store(path) as st:
        info = st.run(result.run_id)
        calls = st.judge_calls(result.run_id)
        cache = {c["step"]: st.cache_get(c["step"]) for c in calls if not c["error"]}
    by_key = {(c.step, c.attempt, c.cached, c.started_at): c for c in made}
    v1 = V1Store(out, answer_in_cache=True)
    v1.create_run(result.run_id, result.samples, judge=info.judge, config=info.config, metrics=info.metrics)
    for key, entry in cache.items():
        if entry is not None:
            v1.cache_put(key, entry)
    for s in result.samples:
        mine = [by_key[(c["step"], c["attempt"], bool(c["cached"]), c["started_at"])]
                for c in calls if c["sample_id"] == s.id]
        v1.save_sample(result.run_id, s.id, result.scores[s.id].values(), mine)
    v1.finish_run(result.run_id, info.stats)
    v1.close()
    con = sqlite3.connect(out)
    con.execute("UPDATE runs SET created_at=?, finished_at=?, dataset=? WHERE id=?",
                (info.created_at, info.finished_at, info.dataset, result.run_id))
    con.commit()
    con.close()


def _cli(capsys: pytest.CaptureFixture[str], *argv: str) -> str:
    assert cli.main(list(argv)) == 0
    return capsys.readouterr().out


def test_a_converted_store_shows_and_exports_as_the_store_written_directly(
    run: tuple[Path, Any, list[JudgeCall]], tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    path, result, made = run
    old = tmp_path / "old.db"
    _as_v1(path, result, made, old)
    with sqlite3.connect(old) as con:
        assert con.execute("PRAGMA user_version").fetchone()[0] == 1
    rid = result.run_id
    for sample in result.samples:
        direct = _cli(capsys, "show", rid, "--sample", sample.id, "--calls", "--store", str(path))
        converted = _cli(capsys, "show", rid, "--sample", sample.id, "--calls", "--store", str(old))
        assert converted == direct
        assert "[output] {" in direct
    for fmt in ("jsonl", "csv"):
        a, b = tmp_path / f"direct.{fmt}", tmp_path / f"converted.{fmt}"
        _cli(capsys, "export", rid, "--format", fmt, "--out", str(a), "--store", str(path))
        _cli(capsys, "export", rid, "--format", fmt, "--out", str(b), "--store", str(old))
        assert a.read_bytes() == b.read_bytes()
    with Store(old) as st:
        assert st.schema_version == LATEST_SCHEMA
        assert st.integrity_check() == "ok"
    with Store(old) as st, Store(path) as ref:
        for sample in result.samples:  # (the copy saved the samples in data order)
            mine, theirs = st.judge_calls(rid, sample.id), ref.judge_calls(rid, sample.id)
            assert mine == [dict(r, id=m["id"]) for r, m in zip(theirs, mine)] and len(mine) == len(theirs)
        assert json.dumps(st.run(rid).stats) == json.dumps(ref.run(rid).stats)
