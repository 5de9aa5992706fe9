"""A large JSONL input (read from the file as the run goes, not held) changed while a run reads
it: edited in place to the same size (with its time put back too), cut short, or grown by a line.
Each stops the run with the documented "file changed" error naming the file; no score is made
from the changed text, the stored samples are the text as loaded, and the run resumes from the
store to the same end as a run over the unchanged file."""

from __future__ import annotations

import json
import os
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any

import pytest

import ragsight
from ragsight.errors import InputError

ROWS = 120
PAD = 70_000  # 120 rows of ~70 kB: a file over the 8 MB past which a JSONL file is not held
EDIT_AT = 100  # the row changed under the run, far after the rows the first judge call sees


def _row(i: int) -> dict[str, Any]:
    return {"id": f"s{i:03d}", "question": f"What about Topic{i}?",
            "contexts": [f"Topic{i} grew by {i} percent.", f"Dana{i} runs Topic{i}."],
            "response": f"Topic{i} grew by {i} percent. Dana{i} runs it.",
            "metadata": {"pad": "p" * PAD}}


def _write(path: Path) -> list[bytes]:
    lines = [(json.dumps(_row(i)) + "\n").encode() for i in range(ROWS)]
    path.write_bytes(b"".join(lines))
    assert path.stat().st_size >= 8 * 1024**2
    return lines


def _same_size_edit(path: Path, lines: list[bytes], *, keep_time: bool) -> None:
    st = path.stat()
    at = sum(len(x) for x in lines[:EDIT_AT]) + lines[EDIT_AT].index(b"\"response\": \"Topic") + len(b"\"response\": \"")
    with path.open("r+b") as f:
        f.seek(at)
        f.write(b"TOPIC")  # same length: the file keeps its size
    if keep_time:
        os.utime(path, ns=(st.st_atime_ns, st.st_mtime_ns))
    assert path.stat().st_size == st.st_size


def _truncate(path: Path, lines: list[bytes]) -> None:
    with path.open("r+b") as f:
        f.truncate(sum(len(x) for x in lines[:EDIT_AT]) + 40)  # mid-row


def _append(path: Path, lines: list[bytes]) -> None:
    with path.open("ab") as f:
        f.write((json.dumps(_row(ROWS)) + "\n").encode())


def _judge(seen: list[str], change: Callable[[], None] | None) -> ragsight.ScriptedProvider:
    """Extracts the response's sentences as claims and supports each; the first extraction
    call changes the file (``change``), while the run is reading it."""
    done: list[bool] = []

    def extract(v: Mapping[str, Any]) -> Any:
        if change is not None and not done:
            done.append(True)
            change()
        seen.append(str(v["raw_text"]))
        return {"claims": [s.strip() + "." for s in str(v["raw_text"]).split(".") if s.strip()]}

    def verify(v: Mapping[str, Any]) -> Any:
        return {"verdicts": [{"id": i, "supported": True, "chunks": [1], "reason": "stated"}
                             for i, _ in enumerate(v["claim_list"], start=1)]}

    return ragsight.ScriptedProvider({"extract_claims": extract, "verify_claims": verify})


def _scores(result: ragsight.EvaluationResult) -> dict[str, Any]:
    return {sid: {m: (s.value, s.outcome) for m, s in sc.items()} for sid, sc in result.scores.items()}


@pytest.fixture(scope="module")
def unchanged(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:
    path = tmp_path_factory.mktemp("whole") / "big.jsonl"
    _write(path)
    result = ragsight.evaluate(str(path), ["faithfulness"], judge=_judge([], None),
                               options=ragsight.RunOptions(concurrency=2, show_progress=False))
    return _scores(result)


@pytest.mark.parametrize("how", ["same_size", "same_size_same_time", "truncated", "appended"])
def test_an_input_changed_under_a_run_stops_it_naming_the_file_and_the_run_resumes(
        tmp_path: Path, how: str, unchanged: dict[str, Any]) -> None:
    path = tmp_path / "big.jsonl"
    lines = _write(path)
    change = {
        "same_size": lambda: _same_size_edit(path, lines, keep_time=False),
        "same_size_same_time": lambda: _same_size_edit(path, lines, keep_time=True),
        "truncated": lambda: _truncate(path, lines),
        "appended": lambda: _append(path, lines),
    }[how]
    store = tmp_path / "runs.db"
    seen: list[str] = []
    with pytest.raises(InputError, match=r"big\.jsonl: the file changed while ragsight was reading it"):
        ragsight.evaluate(str(path), ["faithfulness"], judge=_judge(seen, change), store=str(store),
                          options=ragsight.RunOptions(concurrency=2, show_progress=False))
    assert seen and not any("TOPIC" in t for t in seen)  # no claim made from the changed text
    assert len(seen) < ROWS

    st = ragsight.Store(str(store))
    try:
        [info] = st.runs()
        assert info.status != "completed"
        stored = st.samples(info.id)
        assert [s.question for s in stored] == [f"What about Topic{i}?" for i in range(ROWS)]
        assert len(st.finished_samples(info.id)) < ROWS
    finally:
        st.close()

    resumed = ragsight.evaluate(None, judge=_judge([], None), store=str(store), resume=info.id,
                                options=ragsight.RunOptions(concurrency=2, show_progress=False))
    assert _scores(resumed) == unchanged
