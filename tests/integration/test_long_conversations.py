"""Long conversations from the outside: a chat file of thousands of messages, evaluated with
``ragsight evaluate FILE --store ...`` as docs/scale.md shows. The store keeps each
conversation's messages once, not once per turn that has them in its history: its size grows
with the file, not with its square; every reader (``show``, ``export``, the Python API) gives the
turns their whole history back; and ``--dry-run`` of a 5,000-message chat takes seconds."""

from __future__ import annotations

import hashlib
import json
import os
import sqlite3
import time
from pathlib import Path
from typing import Any

import pytest

from ragsight.cli import main
from ragsight.dataset import Dataset
from ragsight.store import Store


def write_chat(path: Path, messages: int) -> Path:
    """One conversation in ragsight's turn form, each answer with its reference (token_f1 scores
    it without a judge)."""
    turns: list[dict[str, Any]] = []
    for i in range(messages // 2):
        turns.append({"role": "user", "content": f"Question {i}: what does the warranty say about part {i}?"})
        turns.append({"role": "assistant", "content": f"Part {i} is covered for two years, see section {i}.",
                      "reference": f"Part {i} is covered for two years."})
    path.write_text(json.dumps({"conversation_id": "long", "turns": turns}) + "\n", encoding="utf-8")
    return path


def stored_bytes(db: Path) -> int:
    return sum(p.stat().st_size for p in db.parent.glob(db.name + "*"))


def evaluate(tmp_path: Path, messages: int, capsys: pytest.CaptureFixture[str]) -> tuple[Path, Path]:
    data = write_chat(tmp_path / f"chat{messages}.jsonl", messages)
    db = tmp_path / f"runs{messages}.db"
    code = main(["evaluate", str(data), "--metrics", "token_f1", "--store", str(db), "--quiet"])
    out = capsys.readouterr()
    assert code == 0, out.out + out.err
    with sqlite3.connect(db) as con:  # the write-ahead log's pages into the file
        con.execute("PRAGMA wal_checkpoint(TRUNCATE)")
    return data, db


def test_the_store_grows_with_the_conversation_not_its_square(
    tmp_path: Path, capsys: pytest.CaptureFixture[str],
) -> None:
    _, empty = evaluate(tmp_path, 2, capsys)  # what a store holds besides the conversation
    _, small = evaluate(tmp_path, 300, capsys)
    data, db = evaluate(tmp_path, 1200, capsys)
    # four times the messages: about four times the bytes (each turn holding its history: 16)
    base = stored_bytes(empty)
    ratio = (stored_bytes(db) - base) / (stored_bytes(small) - base)
    assert ratio < 6, ratio
    assert stored_bytes(db) - base < 6 * data.stat().st_size, (stored_bytes(db), base, data.stat().st_size)

    # every reader gives each turn its whole history back
    expected = Dataset.load(data).samples
    with Store(db) as st:
        run_id = st.resolve_run("last")
        assert st.samples(run_id) == list(expected)
        assert list(st.iter_samples(run_id, batch=7)) == list(expected)
        last = expected[-2]  # the last turn: 1,198 messages before its question
        assert last.history is not None and len(last.history) == 1198
        assert st.sample(run_id, last.id) == last
        assert st.samples_by_id(run_id, [last.id, expected[3].id]) == [last, expected[3]]
    code = main(["export", "last", "--store", str(db), "--out", str(tmp_path / "export.jsonl")])
    assert code == 0, capsys.readouterr().err
    capsys.readouterr()
    rows = [json.loads(line) for line in (tmp_path / "export.jsonl").read_text(encoding="utf-8").splitlines()]
    by_id = {r["id"]: r for r in rows}
    assert len(by_id["long:599"]["history"]) == 1198
    assert by_id["long:599"]["history"][-1]["content"] == "Part 598 is covered for two years, see section 598."
    assert main(["show", "last", "--sample", "long:599", "--store", str(db)]) == 0
    assert "Question 599" in capsys.readouterr().out
    # the content keys as before (the hash of the sample's JSON, its history whole): labels given
    # on older runs of the data still find their samples
    with Store(db) as st:
        keys = st.sample_keys(st.resolve_run("last"))
    for s in (expected[0], expected[3], last):
        basis = {"question": s.question, "contexts": None, "response": s.response, "reference": s.reference,
                 "history": [t.to_dict() for t in s.history or ()]}
        if not s.history:
            del basis["history"]
        digest = hashlib.sha256(json.dumps(basis, sort_keys=True, ensure_ascii=False).encode()).hexdigest()
        assert keys[s.id] == "s-" + digest[:20]


@pytest.mark.slow
def test_a_dry_run_of_a_5000_message_conversation_takes_seconds(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    msgs = []
    for i in range(5000):
        msgs.append({"role": "user", "content": f"Question {i}: what does the warranty say about part {i}?"}
                    if i % 2 == 0 else
                    {"role": "assistant", "content": f"Part {i} is covered for two years, see section {i}."})
    data = tmp_path / "chat5000.jsonl"
    data.write_text(json.dumps({"id": "long", "messages": msgs}) + "\n", encoding="utf-8")
    # the process's CPU time, not the wall clock: the work is what is measured (it grew with the
    # square of the conversation's length), not how much of a core a loaded machine left the test
    started = time.process_time()
    code = main(["evaluate", str(data), "--judge", "openai:gpt-4o-mini", "--store", str(tmp_path / "runs.db"),
                 "--metrics", "answer_relevancy,knowledge_retention,conversation_completeness", "--dry-run"])
    took = time.process_time() - started
    out = capsys.readouterr().out
    assert code == 0, out
    assert "2501 samples, 3 metrics" in " ".join(out.split())
    assert took < 30, f"{took:.1f} s"
    assert not os.path.exists(tmp_path / "runs.db")  # a dry run writes nothing
