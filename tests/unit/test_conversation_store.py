"""Turns of conversations in the run store: their fields read back as turns and tool calls, and
a store written before conversations existed migrates."""

from __future__ import annotations

import sqlite3
from pathlib import Path

import ragsight.store
from ragsight import Dataset, Evidence, Outcome, Score
from ragsight.conversation import Conversation, ToolCall, Turn
from ragsight.sample import Sample
from ragsight.store import Store

CONV = Conversation(
    "c1",
    (Turn("user", "Which bike?"), Turn("assistant", "", tool_calls=(ToolCall("search", {"q": "bike"}, id="t1"),)),
     Turn("tool", "The Trail is a hybrid.", tool_call_id="t1", name="search"),
     Turn("assistant", "The Trail.", reference="The Trail."),
     Turn("user", "Does it come in red?"), Turn("assistant", "Yes.", contexts=("Trail: red, blue.",))),
    scenario="buying a bike", system_role="a shop assistant",
    reference_tool_calls=(ToolCall("search", {"q": "bike"}),),
)


def _migrations_up_to(n: int) -> list[str]:
    folder = Path(ragsight.store.__file__).parent / "migrations"
    return [p.read_text() for p in sorted(folder.glob("*.sql")) if int(p.name.split("_")[0]) <= n]


def test_turn_samples_round_trip_through_the_store_as_turns_and_tool_calls(tmp_path: Path) -> None:
    samples = [*Dataset.load([CONV]).samples, Sample("single", question="q", response="r")]
    with Store(tmp_path / "runs.db") as st:
        st.create_run("r", dataset="d", judge=None, embedder=None, metrics=[], config={}, metadata={},
                      samples=samples)
    with Store(tmp_path / "runs.db") as st:
        back = st.samples("r")
        rows = st.conn.execute("SELECT sample_id, conversation_id, turn FROM samples ORDER BY idx").fetchall()
    assert back == samples
    assert isinstance(back[1].history[1], Turn) and back[1].tool_calls == ()  # type: ignore[index]
    assert back[0].tool_calls == (ToolCall("search", {"q": "bike"}, id="t1"),)
    assert back[2].metadata == {} and back[3].metadata == {}  # no conversation field leaks into metadata
    assert rows == [("c1:0", "c1", 0), ("c1:1", "c1", 1), ("c1", "c1", None), ("single", None, None)]


def test_a_store_of_schema_2_migrates_and_keeps_its_runs(tmp_path: Path) -> None:
    path = tmp_path / "old.db"
    con = sqlite3.connect(path)
    for sql in _migrations_up_to(2):
        con.executescript(sql)
    con.execute("INSERT INTO runs (id, created_at, status, metrics, config) VALUES ('old', 1, 'completed', '[]', '{}')")
    con.execute("INSERT INTO samples (run_id, idx, sample_id, data, finished) VALUES "
                "('old', 0, 's0', '{\"id\": \"s0\", \"question\": \"q\", \"response\": \"r\"}', 1)")
    con.execute("PRAGMA user_version = 2")
    con.commit()
    con.close()
    with Store(path) as st:  # a schema-2 store with a run: gets the new columns, keeps the run
        assert st.schema_version >= 3
        assert st.samples("old") == [Sample("s0", question="q", response="r")]
        st.create_run("new", dataset="d", judge=None, embedder=None, metrics=[], config={}, metadata={},
                      samples=Dataset.load([CONV]).samples)
        st.save_sample("new", "c1:0", [Score("m", Outcome.SCORED, 0.5, "ok", Evidence())], [])
    with Store(path) as st:
        assert [s.id for s in st.samples("new")] == ["c1:0", "c1:1", "c1"]
        assert st.scores("new")["c1:0"]["m"].value == 0.5
        cols = {r[1] for r in st.conn.execute("PRAGMA table_info(samples)")}
    assert {"conversation_id", "turn"} <= cols
