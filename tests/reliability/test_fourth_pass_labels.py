"""``ragsight labels import`` on label files as careless people and tools write them: labels of
metrics the run does not have and of sample keys no run holds, dates that are not dates, numbers
Python reads too generously, claim labels that are neither right nor wrong, a label given twice,
a byte-order mark, a file saved as Latin-1, JSON nested beyond reading. Run as documented
(``ragsight.cli.main``); each test fails on the import before its fix."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from ragsight import cli
from ragsight.store import Store

ROWS = [{"id": f"s{i}", "question": f"Question {i}?", "retrieved_ids": ["d1", "d2"], "relevant_ids": ["d1"]}
        for i in range(4)]


@pytest.fixture
def store(tmp_path: Path) -> Path:
    """A store with one run of four samples, metrics hit_rate and mrr."""
    data, path = tmp_path / "data.jsonl", tmp_path / "runs.db"
    data.write_text("".join(json.dumps(r) + "\n" for r in ROWS), encoding="utf-8")
    assert cli.main(["evaluate", str(data), "--metrics", "hit_rate,mrr", "--store", str(path), "--quiet"]) == 0
    return path


def write_jsonl(path: Path, rows: list[dict[str, Any]]) -> Path:
    path.write_text("".join(json.dumps(r) + "\n" for r in rows), encoding="utf-8")
    return path


def import_(capsys: pytest.CaptureFixture[str], store: Path, file: Path, *extra: str) -> tuple[int, str, str]:
    code = cli.main(["labels", "import", str(file), "--label", "correct", "--store", str(store), *extra])
    cap = capsys.readouterr()
    assert "Traceback" not in cap.out + cap.err
    return code, " ".join(cap.out.split()), " ".join(cap.err.split())


def stored(store: Path) -> list[Any]:
    with Store(store) as st:
        return st.labels()


def test_a_metric_the_run_lacks_is_left_out_naming_the_row(store: Path, tmp_path: Path,
                                                          capsys: pytest.CaptureFixture[str]) -> None:
    f = write_jsonl(tmp_path / "l.jsonl", [{"id": "s0", "metric": "hit_rate", "correct": 1},
                                           {"id": "s1", "metric": "faithfulness", "correct": 0}])
    code, out, err = import_(capsys, store, f, "--run", "last")
    assert code == 0 and "1 label(s) 'correct'" in out
    assert "row 2: metric 'faithfulness' is not one of run" in err and "hit_rate, mrr" in err
    assert [(lb.metric, lb.value) for lb in stored(store)] == [("hit_rate", 1.0)]


def test_a_sample_key_no_run_holds_is_left_out(store: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    with Store(store) as st:
        key = st.sample_keys(st.runs()[0].id)["s2"]
    f = write_jsonl(tmp_path / "l.jsonl", [{"sample_key": key, "metric": "mrr", "correct": 1},
                                           {"sample_key": "s-00000000000000000000", "metric": "mrr", "correct": 1},
                                           {"sample_key": "anything at all", "correct": 0}])
    code, out, err = import_(capsys, store, f)
    assert code == 0 and "1 label(s)" in out
    assert "row 2: no sample with the key 's-00000000000000000000' in the store" in err
    assert "row 3: no sample with the key 'anything at all'" in err
    assert [lb.sample_key for lb in stored(store)] == [key]


def test_a_date_that_is_not_a_date_is_refused_and_dates_are_kept_in_utc(
    store: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """'zzz' sorts after every ISO date: before, it was stored and won 'the latest label'."""
    f = write_jsonl(tmp_path / "l.jsonl", [
        {"id": "s0", "correct": 1, "who": "ana", "when": "2026-03-01T10:00:00+02:00"},
        {"id": "s0", "correct": 0, "who": "bo", "when": "zzz"},
        {"id": "s1", "correct": 0, "who": "bo", "when": "3026-01-01T00:00:00Z"},
        {"id": "s2", "correct": 1, "who": "bo", "when": "2026-03-01 09:30"},
    ])
    code, out, err = import_(capsys, store, f, "--run", "last")
    assert code == 0 and "2 label(s)" in out
    assert "row 2: 'when' 'zzz' is not an ISO 8601 date" in err
    assert "row 3: 'when' '3026-01-01T00:00:00Z' is in the future" in err
    assert sorted(lb.when for lb in stored(store)) == ["2026-03-01T08:00:00Z", "2026-03-01T09:30:00Z"]


@pytest.mark.parametrize("value", ["1_0", "0_1", "1_000.5"])
def test_a_number_python_reads_too_generously_is_refused(store: Path, tmp_path: Path, value: str,
                                                         capsys: pytest.CaptureFixture[str]) -> None:
    f = tmp_path / "l.csv"
    f.write_text(f"id,correct\ns0,{value}\ns1,0.75\n", encoding="utf-8")
    code, out, err = import_(capsys, store, f, "--run", "last", "--metric", "mrr")
    assert code == 0 and "1 label(s)" in out, out + err
    assert "row 2: field 'correct'" in err
    assert [lb.value for lb in stored(store)] == [0.75]


def test_a_claim_label_is_right_or_wrong_only(store: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    f = write_jsonl(tmp_path / "l.jsonl", [
        {"id": "s0", "metric": "mrr", "claim": "The sky is blue.", "correct": 7},
        {"id": "s1", "metric": "mrr", "claim": "The sky is blue.", "correct": "pass"},
        {"id": "s2", "metric": "mrr", "claim": "The sky is blue.", "correct": 0.5},
        {"id": "s3", "metric": "mrr", "correct": 0.5},  # a sample label may be a grade
    ])
    code, out, err = import_(capsys, store, f, "--run", "last")
    assert code == 0 and "2 label(s)" in out
    assert "row 1: field 'correct': a claim label is 1" in err and "row 3: field 'correct': a claim label" in err
    assert sorted((lb.sample_id or "", lb.value) for lb in stored(store)) == [("s1", 1.0), ("s3", 0.5)]


def test_duplicates_are_counted_and_said(store: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    f = write_jsonl(tmp_path / "l.jsonl", [{"id": "s0", "correct": 1, "who": "ana"},
                                           {"id": "s0", "correct": 0, "who": "ana"},
                                           {"id": "s0", "correct": 1, "who": "bo"},
                                           {"id": "s0", "correct": 1, "who": "ana"}])
    code, out, _ = import_(capsys, store, f, "--run", "last")
    assert code == 0
    assert "2 label(s) 'correct'" in out and "4 row(s) read; 2 row(s) gave a label again" in out
    assert sorted((lb.who, lb.value) for lb in stored(store)) == [("ana", 1.0), ("bo", 1.0)]


def test_a_jsonl_with_a_byte_order_mark_is_read(store: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    f = tmp_path / "l.jsonl"
    f.write_bytes(b"\xef\xbb\xbf" + b'{"id": "s0", "correct": 1}\n{"id": "s1", "correct": 0}\n')
    code, out, err = import_(capsys, store, f, "--run", "last")
    assert code == 0 and "2 label(s)" in out, out + err


@pytest.mark.parametrize("suffix", [".jsonl", ".csv", ".json"])
def test_a_latin1_file_is_a_clear_error_naming_the_line(store: Path, tmp_path: Path, suffix: str,
                                                        capsys: pytest.CaptureFixture[str]) -> None:
    f = tmp_path / f"l{suffix}"
    text = {".jsonl": '{"id": "s0", "correct": 1}\n{"id": "s1", "correct": 0, "note": "d\xe9j\xe0 vu"}\n',
            ".csv": "id,correct,note\ns0,1,ok\ns1,0,d\xe9j\xe0 vu\n",
            ".json": '[{"id": "s0", "correct": 1},\n {"id": "s1", "correct": 0, "note": "d\xe9j\xe0"}]\n'}[suffix]
    f.write_bytes(text.encode("latin-1"))
    code, _, err = import_(capsys, store, f, "--run", "last")
    line = 3 if suffix == ".csv" else 2
    assert code == 2 and f"{f}, line {line}: not UTF-8" in err, err
    assert stored(store) == []


@pytest.mark.parametrize("suffix", [".jsonl", ".json"])
def test_json_nested_beyond_reading_is_a_clear_error(store: Path, tmp_path: Path, suffix: str,
                                                     capsys: pytest.CaptureFixture[str]) -> None:
    f = tmp_path / f"l{suffix}"
    deep = '{"id": "s1", "correct": ' + "[" * 100_000 + "]" * 100_000 + "}"
    f.write_text('{"id": "s0", "correct": 1}\n' + deep + "\n" if suffix == ".jsonl" else "[" + deep + "]",
                 encoding="utf-8")
    code, _, err = import_(capsys, store, f, "--run", "last")
    where = f"{f}, line 2" if suffix == ".jsonl" else f"{f}"
    assert code == 2 and f"{where}: JSON nested too deeply" in err, err


def test_a_csv_cell_over_the_default_limit_is_read(store: Path, tmp_path: Path,
                                                  capsys: pytest.CaptureFixture[str]) -> None:
    f = tmp_path / "l.csv"
    f.write_text(f"id,correct,note\ns0,1,{'x' * 200_000}\n", encoding="utf-8")
    code, out, err = import_(capsys, store, f, "--run", "last")
    assert code == 0 and "1 label(s)" in out, out + err
    assert len(stored(store)[0].note or "") == 200_000
