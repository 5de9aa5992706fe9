"""A store damaged as disks and careless tools damage it. A compressed pack
that no longer decompresses gives ``show``, ``export`` and ``report`` a clear error with exit 2
(not a zlib traceback); a cache entry that cannot be read is a miss, asked again (not a score
"failed: internal error" with exit 0)."""

from __future__ import annotations

import json
import sqlite3
from pathlib import Path

import pytest

from ragsight import cli
from ragsight.store import Store
from tests.fakes import FakeOpenAIServer
from tests.reliability.world import JudgeWorld, make_samples

ROWS = [{"id": f"s{i}", "question": f"Question {i}?", "retrieved_ids": ["d1", "d2"], "relevant_ids": ["d1"]}
        for i in range(3)]


def corrupt_packs(store: Path) -> int:
    conn = sqlite3.connect(store)
    with conn:
        n = conn.execute("UPDATE packs SET data = X'789c4b4c4a4e0100ffffdeadbeef' WHERE length(data) > 0").rowcount
    conn.close()
    return n


@pytest.mark.parametrize("command", [
    ["show", "RUN"], ["show", "RUN", "--sample", "s1"], ["export", "RUN", "--format", "jsonl", "--out", "OUT"],
    ["export", "RUN", "--format", "csv", "--out", "OUT"], ["report", "RUN", "--out", "OUT"],
])
def test_a_corrupt_compressed_pack_is_a_clear_error(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], command: list[str]
) -> None:
    data, store = tmp_path / "data.jsonl", tmp_path / "runs.db"
    data.write_text("".join(json.dumps(r) + "\n" for r in ROWS), encoding="utf-8")
    assert cli.main(["evaluate", str(data), "--metrics", "hit_rate,mrr", "--store", str(store), "--quiet"]) == 0
    with Store(store) as st:
        run_id = st.runs()[0].id
    assert corrupt_packs(store) > 0
    capsys.readouterr()
    args = [run_id if a == "RUN" else str(tmp_path / "out.file") if a == "OUT" else a for a in command]
    code = cli.main([*args, "--store", str(store)])
    err = " ".join(capsys.readouterr().err.split())
    assert code == 2, err
    assert f"the store {store} is damaged" in err and "cannot be decompressed" in err
    assert "sqlite3" in err and ".recover" in err
    assert "Traceback" not in err and "zlib.error" not in err
    assert not (tmp_path / "out.file").exists()


def test_unreadable_cache_entries_are_asked_again(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    data, store = tmp_path / "data.jsonl", tmp_path / "runs.db"
    data.write_text("".join(json.dumps(r) + "\n" for r in make_samples(3)), encoding="utf-8")
    args = ["evaluate", str(data), "--judge", "openai:m", "--store", str(store), "--quiet",
            "--metrics", "faithfulness,context_recall"]
    with FakeOpenAIServer(handler=JudgeWorld()) as srv:  # one server: its address is in the cache key
        assert cli.main([*args, "--base-url", srv.url]) == 0
        conn = sqlite3.connect(store)
        with conn:
            damaged = conn.execute("UPDATE cache SET entry = '{\"entry\": [1, 2' ").rowcount
        conn.close()
        assert damaged > 0
        capsys.readouterr()
        before = len(srv.requests_to("/chat/completions"))
        code = cli.main([*args, "--base-url", srv.url])
        asked = len(srv.requests_to("/chat/completions")) - before
    err = capsys.readouterr().err
    assert code == 0, err
    assert asked > 1  # the damaged entries were asked again (not only the preflight ping)
    with Store(store) as st:
        latest = st.runs()[0].id
        scores = [s for per in st.scores(latest).values() for s in per.values()]
    assert scores and all(s.outcome.value == "scored" for s in scores), [s.reason for s in scores]
