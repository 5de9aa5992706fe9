"""The compact store (schema 2): every judge call, score, sample and cache entry reads back exactly
as it was written, each distinct large text is stored once, and a schema-1 store is converted."""

from __future__ import annotations

import json
import sqlite3
import zlib
from pathlib import Path
from typing import Any

import pytest

import ragsight.store
from ragsight import Evidence, Outcome, Score
from ragsight.dataset import Sample, sample_from_mapping
from ragsight.judge import JudgeCall, Message
from ragsight.store import Store
from tests.store_v1 import V1Store

CONTEXT = ("Aurora Skyways allows one cabin bag of up to 8 kg and one personal item on every flight. "
           "Checked bags cost 25 euros on short-haul routes.")
TRICKY = [
    "",  # empty
    "x" * 31 + "\n" + "y" * 32 + "\n" + "z" * 33,  # lines at the threshold
    "line with trailing spaces   \n\n\n  indented\tand tabbed\n",
    "Windows\r\nline ends\r\nand a lone \r carriage return and more text to be long enough",
    "ünïcödé ✓ 中文 — emoji 🚀 and a combining é accent, long enough to be a text of its own",
    '{"$t": 5, "$d": {"a": 1}} not JSON-looking text but long enough to be stored as a text',
    CONTEXT,
]


def sample(i: int, **extra: Any) -> Sample:
    row = {"id": f"s{i}", "question": f"What does the airline allow in the cabin, case {i}?",
           "contexts": [CONTEXT, f"Unrelated note {i}: the lounge opens at six in the morning every day."],
           "response": f"One cabin bag of 8 kg, case {i}.", "reference": "One cabin bag of up to 8 kg.", **extra}
    s, problems = sample_from_mapping(row)
    assert s is not None, problems
    return s


def call(i: int, attempt: int = 1, *, raw: str | None = '{"claims": ["a", "b"]}', parsed: Any = "same",
         error: str | None = None, content: str = CONTEXT, kind: str = "json", cached: bool = False) -> JudgeCall:
    if parsed == "same":
        parsed = json.loads(raw) if raw is not None and error is None else None
    return JudgeCall(
        step=f"{i:064x}", attempt=attempt, prompt_id="extract_claims", prompt_version="1",
        prompt_hash="abc123", judge="openai:m", model="m",
        messages=(Message("system", "You split texts into atomic factual claims for fact-checking."),
                  Message("user", f"<context>\n{content}\n</context>\n\nQuestion {i}: what is said?")),
        raw_output=raw, parsed=parsed, prompt_tokens=120 + i, completion_tokens=7, latency_s=0.25 + i / 100,
        cached=cached, error=error, started_at=1_700_000_000.5 + i, structured="json_schema", kind=kind,
    )


def as_record(c: JudgeCall) -> dict[str, Any]:
    d = c.to_dict()
    d["cached"] = int(c.cached)
    return d


def stored(st: Store, run_id: str, sample_id: str | None = None) -> list[dict[str, Any]]:
    return [{k: v for k, v in r.items() if k not in ("id", "run_id", "sample_id")}
            for r in st.judge_calls(run_id, sample_id=sample_id)]


def new_run(st: Store, samples: list[Sample], run_id: str = "r1") -> str:
    st.create_run(run_id, dataset="d", judge="openai:m", embedder=None, metrics=[], config={}, metadata={},
                  samples=samples)
    return run_id


def score(metric: str, value: float, reason: str = "ok") -> Score:
    ev = Evidence(details={"note": "a detail long enough to be stored as a text of its own, " + metric,
                           "ratio": 0.1 + 0.2, "$t": "a key the store itself uses"})
    return Score(metric, Outcome.SCORED, value, reason, ev)


def test_every_call_reads_back_byte_for_byte(tmp_path: Path) -> None:
    calls = [call(i, content=text) for i, text in enumerate(TRICKY)]
    calls += [
        call(20, raw="```json\n{\"claims\": [\"a\"]}\n```", parsed={"claims": ["a"]}),  # repaired: parsed kept
        call(21, raw='{"x": 1.0, "y": true}', parsed={"x": 1, "y": 1}),  # equal in Python, not in JSON
        call(22, raw='{"claims": ["a", "b"]}', parsed=None, error="unusable output: expected 3 claims"),
        call(23, raw=None, parsed=None, error="the judge at http://127.0.0.1:9/v1 failed with HTTP 500"),
        call(24, raw='{"Yes": -0.1, "No": -2.4}', parsed={"Yes": 0.9, "No": 0.1}, kind="choices"),
        call(25, raw='{"claims": []}', cached=True),
        call(26, raw='{"claims": ["' + "long claim " * 400 + '"]}'),
        call(27, raw="not json at all, just a long refusal from the judge, with no JSON in it", parsed=None,
             error="unusable output: no JSON object"),
    ]
    with Store(tmp_path / "runs.db") as st:
        assert st.schema_version == LATEST_SCHEMA
        run = new_run(st, [sample(0)])
        st.save_sample(run, "s0", [score("faithfulness", 0.5)], [("s0", c) for c in calls])
    with Store(tmp_path / "runs.db") as st:  # a fresh connection: nothing from memory
        back = stored(st, run)
    assert back == [as_record(c) for c in calls]
    for c, r in zip(calls, back):
        assert [m["content"].encode() for m in r["messages"]] == [m.content.encode() for m in c.messages]
        assert (r["raw_output"] or "").encode() == (c.raw_output or "").encode()


def test_each_distinct_text_is_stored_once_and_compressed(tmp_path: Path) -> None:
    with Store(tmp_path / "runs.db") as st:
        run = new_run(st, [sample(i) for i in range(10)])
        before = st.conn.execute("SELECT COUNT(*) FROM texts").fetchone()[0]
        st.save_sample(run, "s0", [], [("s0", call(0))])
        after_one = st.conn.execute("SELECT COUNT(*) FROM texts").fetchone()[0]
        for i in range(1, 10):
            st.save_sample(run, f"s{i}", [], [(f"s{i}", call(i))])
        after_ten = st.conn.execute("SELECT COUNT(*) FROM texts").fetchone()[0]
        hashes = [r[0] for r in st.conn.execute("SELECT hash FROM texts WHERE hash IS NOT NULL")]
        packs = [zlib.decompress(r[0]) for r in st.conn.execute("SELECT data FROM packs")]
        blob = b"".join(packs)
    # the context (in every sample's fields and in every prompt) and the system prompt are texts
    # of the first pack only; each later call adds only what is its own (its message list)
    assert after_one - before == 3  # the system prompt, the call's message list, its raw output
    assert after_ten - after_one == 9  # one message list each; the same raw output is stored once
    assert len(hashes) == len(set(hashes))
    assert blob.count(CONTEXT.encode()) == 1
    assert blob.count(b"You split texts into atomic factual claims") == 1


def test_scores_samples_and_cache_entries_read_back(tmp_path: Path) -> None:
    weird = sample(1, metadata={"$t": 3, "$d": {"$t": "x"}, "note": "a metadata note long enough to be a text"})
    with Store(tmp_path / "runs.db") as st:
        run = new_run(st, [sample(0), weird])
        scores = [score("faithfulness", 0.25, "because the context says so"), score("context_recall", 1.0)]
        st.save_sample(run, "s0", scores, [])
        entry = {"parsed": {"claims": ["a", "b"]}, "raw_output": '{"claims": ["a", "b"]}', "prompt_tokens": 3,
                 "completion_tokens": 2, "model": "m", "prompt_id": "extract_claims", "prompt_version": "1"}
        repaired = dict(entry, raw_output="```json\n" + entry["raw_output"] + "\n```")
        st.cache_put("a" * 64, entry)
        st.cache_put("b" * 64, repaired)
        st.cache_put("pipeline/answer/x", {"answer": "a pipeline entry, kept as JSON as it is, long text"})
    with Store(tmp_path / "runs.db") as st:
        assert st.samples(run) == [sample(0), weird]
        back = st.scores(run)["s0"]
        assert back == {s.metric: s for s in scores}
        assert st.cache_get("a" * 64) == entry
        assert st.cache_get("b" * 64) == repaired
        assert st.cache_get("c" * 64) is None
        assert st.cache_get("pipeline/answer/x") == {
            "answer": "a pipeline entry, kept as JSON as it is, long text"}
        # entries other than judge steps stay plain JSON for tools that read the table
        raw = st.conn.execute("SELECT entry FROM cache WHERE key='pipeline/answer/x'").fetchone()[0]
        assert json.loads(raw)["answer"].startswith("a pipeline entry")


def test_a_cached_answer_moves_into_its_samples_pack(tmp_path: Path) -> None:
    """The raw output written with the cache entry (a loose pack of its own, as soon as the step
    succeeds) is taken into the sample's pack when the sample is saved."""
    c = call(1, raw='{"claims": ["' + "a claim that is long enough to matter " * 3 + '"]}')
    with Store(tmp_path / "runs.db") as st:
        run = new_run(st, [sample(1)])
        st.cache_put(c.step, {"parsed": c.parsed, "raw_output": c.raw_output, "prompt_tokens": 1,
                              "completion_tokens": 1, "model": "m", "prompt_id": "extract_claims",
                              "prompt_version": "1"})
        assert st.conn.execute("SELECT COUNT(*) FROM packs WHERE loose=1").fetchone()[0] == 1
        st.save_sample(run, "s1", [], [("s1", c)])
        assert st.conn.execute("SELECT COUNT(*) FROM packs WHERE loose=1").fetchone()[0] == 0
        assert stored(st, run) == [as_record(c)]
        assert st.cache_get(c.step)["raw_output"] == c.raw_output


def _v1_run(path: Path, samples: list[Sample], calls: dict[str, list[JudgeCall]], *,
            answer_in_cache: bool) -> None:
    v1 = V1Store(path, answer_in_cache=answer_in_cache)
    v1.create_run("old", samples, config={"concurrency": 4})
    for s in samples:
        for c in calls[s.id]:
            if c.error is None and c.raw_output is not None:
                v1.cache_put(c.step, {"parsed": c.parsed, "raw_output": c.raw_output,
                                      "prompt_tokens": c.prompt_tokens, "completion_tokens": 7, "model": "m",
                                      "prompt_id": c.prompt_id, "prompt_version": c.prompt_version})
        v1.save_sample("old", s.id, [score("faithfulness", 0.5), score("context_recall", 0.75)], calls[s.id])
    v1.cache_put("f" * 64, {"parsed": {"claims": []}, "raw_output": '{"claims": []}', "prompt_tokens": 1,
                            "completion_tokens": 1, "model": "m", "prompt_id": "x", "prompt_version": "1"})
    v1.cache_put("pipeline/cost/1", {"usd": 0.5})
    v1.finish_run("old", {"calls": 3})
    v1.close()


@pytest.mark.parametrize("answer_in_cache", [False, True])
def test_a_schema_1_store_is_converted_exactly(tmp_path: Path, answer_in_cache: bool) -> None:
    samples = [sample(i) for i in range(3)]
    calls = {s.id: [call(10 * i + k, content=TRICKY[(i + k) % len(TRICKY)]) for k in range(3)]
             for i, s in enumerate(samples)}
    calls["s1"].append(call(99, raw='{"claims": ["a"]}', parsed=None, error="unusable output: too few"))
    path = tmp_path / "old.db"
    _v1_run(path, samples, calls, answer_in_cache=answer_in_cache)
    with sqlite3.connect(path) as con:
        assert con.execute("PRAGMA user_version").fetchone()[0] == 1
        if answer_in_cache:
            assert con.execute("SELECT COUNT(*) FROM judge_calls WHERE raw_output IS NULL").fetchone()[0] >= 9
    size_before = path.stat().st_size

    with Store(path) as st:
        assert st.schema_version == LATEST_SCHEMA
        assert st.integrity_check() == "ok"
        tables = {r[0] for r in st.conn.execute("SELECT name FROM sqlite_master WHERE type='table'")}
        assert {"texts", "packs", "judge_calls", "scores", "samples", "cache"} <= tables
        assert not any(t.endswith("_v2") for t in tables)
        info = st.run("old")
        assert info.status == "completed" and info.stats == {"calls": 3} and info.config == {"concurrency": 4}
        assert st.samples("old") == samples
        assert st.finished_samples("old") == {"s0", "s1", "s2"}
        for s in samples:
            assert stored(st, "old", s.id) == [as_record(c) for c in calls[s.id]]
            assert st.scores("old", s.id)[s.id] == {"faithfulness": score("faithfulness", 0.5),
                                                    "context_recall": score("context_recall", 0.75)}
            for c in calls[s.id]:
                if c.error is None:
                    assert st.cache_get(c.step)["raw_output"] == c.raw_output
        assert st.cache_get("f" * 64)["parsed"] == {"claims": []}
        assert st.cache_get("pipeline/cost/1") == {"usd": 0.5}
        # a converted store keeps working: a new run in it shares its texts
        run = new_run(st, [sample(7)], "new")
        st.save_sample(run, "s7", [], [("s7", call(7))])
        assert stored(st, "new") == [as_record(call(7))]
    assert path.stat().st_size < size_before  # the old pages were given back (VACUUM)


def test_a_store_of_a_newer_schema_is_still_refused(tmp_path: Path) -> None:
    path = tmp_path / "future.db"
    with sqlite3.connect(path) as con:
        con.execute("PRAGMA user_version = 99")
    with pytest.raises(Exception, match="newer ragsight"):
        Store(path)


# ---- properties ---------------------------------------------------------------------------------

from hypothesis import given, settings  # noqa: E402
from hypothesis import strategies as st_  # noqa: E402

from ragsight.store._sqlite import _statements  # noqa: E402
from ragsight.store._texts import TEXT_MIN, TextStore, split_segments  # noqa: E402

_text = st_.lists(st_.sampled_from([*"ab \n\r\t-é🚀", "x" * 40, "\n" + "y" * 31]), max_size=60).map("".join)
_json = st_.recursive(
    st_.none() | st_.booleans() | st_.integers() | st_.floats(allow_nan=False, allow_infinity=False) | _text,  # (non-finite: null, as ever)
    lambda inner: st_.lists(inner, max_size=4) | st_.dictionaries(
        st_.sampled_from(["$t", "$d", "a", "b", "long key " * 5]), inner, max_size=4),
    max_leaves=12)

# the newest schema: the number of the last migration file
LATEST_SCHEMA = max(int(p.name.split("_")[0]) for p in
                    (Path(ragsight.store.__file__).parent / "migrations").glob("*.sql"))


@given(_text)
def test_segments_join_back_to_the_content(content: str) -> None:
    pieces = split_segments(content)
    assert "".join(p for p, _ in pieces) == content
    assert all(len(p) >= TEXT_MIN and "\n" not in p for p, is_text in pieces if is_text)


@settings(max_examples=60, deadline=None)
@given(st_.lists(_json, min_size=1, max_size=5))
def test_json_values_read_back_exactly(values: list[Any]) -> None:
    conn = sqlite3.connect(":memory:", isolation_level=None)
    sql = Path(__file__).resolve().parents[2] / "src" / "ragsight" / "store" / "migrations" / "002_compact.sql"
    for statement in _statements(sql.read_text().split("-- python:")[0]):
        conn.execute(statement)
    texts = TextStore(conn)
    conn.execute("BEGIN")
    w = texts.writer()
    encoded = [texts.encode_json(v, w) for v in values]
    w.finish()
    conn.execute("COMMIT")
    w.committed()
    assert [texts.decode_json(e) for e in encoded] == values


def test_a_converted_store_keeps_the_order_calls_were_saved_in(tmp_path: Path) -> None:
    samples = [sample(i) for i in range(3)]
    path = tmp_path / "old.db"
    v1 = V1Store(path)
    v1.create_run("old", samples)
    for i in (2, 0, 1):  # saved as they finished, not in data order
        v1.save_sample("old", f"s{i}", [], [call(10 * i + k) for k in range(2)])
    v1.close()
    with Store(path) as st:
        assert [c["step"] for c in st.judge_calls("old")] == [f"{n:064x}" for n in (20, 21, 0, 1, 10, 11)]


def test_saving_a_sample_and_the_cache_use_indexes_only(tmp_path: Path) -> None:
    """No statement of a sample's save, a cache put or a cache get scans a table: their cost
    does not grow with the store (a scan of ``texts`` per cached answer made a 20,000-sample run
    slower sample after sample)."""
    with Store(tmp_path / "runs.db") as st:
        run = new_run(st, [sample(i) for i in range(4)])
        for i in range(3):  # some content first, so that the planner sees real tables
            c = call(i)
            st.cache_put(c.step, {"parsed": c.parsed, "raw_output": c.raw_output, "prompt_tokens": 1,
                                  "completion_tokens": 1, "model": "m", "prompt_id": "x", "prompt_version": "1"})
            st.save_sample(run, f"s{i}", [score("faithfulness", 0.5)], [(f"s{i}", c)])
        st.conn.execute("ANALYZE")
        seen: list[str] = []
        st.conn.set_trace_callback(seen.append)
        c = call(3, raw='{"claims": ["a fresh answer, long enough to be a text of its own"]}')
        st.cache_put(c.step, {"parsed": c.parsed, "raw_output": c.raw_output, "prompt_tokens": 1,
                              "completion_tokens": 1, "model": "m", "prompt_id": "x", "prompt_version": "1"})
        st.cache_get(c.step)
        st.save_sample(run, "s3", [score("faithfulness", 0.5)], [("s3", c)])
        st.conn.set_trace_callback(None)
        scans = []
        for sql in seen:
            if not sql.lstrip().upper().startswith(("SELECT", "UPDATE", "DELETE", "INSERT")):
                continue
            for row in st.conn.execute("EXPLAIN QUERY PLAN " + sql).fetchall():
                detail = row[-1]
                first_row_only = sql.rstrip().upper().endswith("LIMIT 1") and "WHERE" not in sql.upper()
                if (detail.startswith("SCAN") and "CONSTANT ROW" not in detail and "sqlite_sequence" not in detail
                        and not first_row_only):
                    scans.append((sql[:120], detail))
        assert len(seen) > 10
        assert scans == []
