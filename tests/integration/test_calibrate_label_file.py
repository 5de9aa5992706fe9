"""`ragsight calibrate RUN --labels FILE --label FIELD` reads its file as `ragsight labels import`
does: a file that cannot be read, or a label that is not one, is an error naming the line and
the field, never a label read some other way; and the labels in the store count the latest in
time, whatever the spelling of their dates."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from ragsight.cli import main
from ragsight.store import ANY_METRIC, Label, Store

IDS = [f"s{i}" for i in range(1, 9)]
RIGHT = [1, 0, 1, 0, 1, 0, 1, 0]  # s1, s3, s5, s7 answer right


@pytest.fixture()
def run_db(tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.chdir(tmp_path)
    rows = [{"id": sid, "question": f"How long is the frame covered ({sid})?",
             "response": "The frame is covered for ten years." if ok else "I do not know.",
             "reference": "The frame is covered for ten years."} for sid, ok in zip(IDS, RIGHT)]
    (tmp_path / "data.jsonl").write_text("".join(json.dumps(r) + "\n" for r in rows), encoding="utf-8")
    assert main(["evaluate", "data.jsonl", "--metrics", "token_f1", "--store", "runs.db", "--quiet"]) == 0
    capsys.readouterr()
    return tmp_path / "runs.db"


def calibrate(capsys: pytest.CaptureFixture[str], *argv: str) -> tuple[int, str, str]:
    code = main(["calibrate", "last", "--label", "correct", "--store", "runs.db", "--json", *argv])
    cap = capsys.readouterr()
    assert "Traceback" not in cap.out + cap.err
    return code, cap.out, " ".join(cap.err.split())


def jsonl(rows: list[dict[str, Any]]) -> str:
    return "".join(json.dumps(r) + "\n" for r in rows)


LABELS = [{"id": sid, "correct": ok} for sid, ok in zip(IDS, RIGHT)]


def test_a_good_file_with_a_byte_order_mark_reads(run_db: Path, capsys: pytest.CaptureFixture[str]) -> None:
    Path("labels.jsonl").write_text("\ufeff" + jsonl(LABELS), encoding="utf-8")
    code, out, err = calibrate(capsys, "--labels", "labels.jsonl")
    assert code == 0, err
    data = json.loads(out)
    assert (data["label_kind"], data["matched"], data["n_positive"]) == ("binary", 8, 4)
    assert data["metrics"][0]["auroc"] == 1.0


@pytest.mark.parametrize(("name", "content", "said"), [
    ("labels.csv", "id,correct\ns1,1\ns2,d\xe9j\xe0\n".encode("latin-1"),
     "labels.csv, line 3: not UTF-8"),
    ("labels.json", ("[" * 100_000 + "]" * 100_000).encode(), "labels.json: JSON nested too deeply"),
    ("labels.jsonl", jsonl(LABELS[:2]).encode() + b'{"id": "s3", "correct": ' + b"[" * 100_000 + b"]" * 100_000 + b"}\n",
     "labels.jsonl, line 3: JSON nested too deeply"),
    ("labels.jsonl", jsonl([*LABELS[:2], {"id": "s3", "correct": "1_0"}, *LABELS[3:]]).encode(),
     "labels.jsonl, line 3, field 'correct': label '1_0' is neither a number"),
    ("labels.jsonl", jsonl([*LABELS, {"id": "s1", "claim": "The frame is covered for ten years.", "correct": 7}]).encode(),
     "labels.jsonl, line 9, field 'correct': a claim label is 1 (the verdict is right) or 0 (wrong)"),
    ("labels.csv", b"id,correct\ns1,1\ns2,0x1\n", "labels.csv, line 3, field 'correct': label '0x1'"),
])
def test_an_unreadable_file_or_label_is_an_error_naming_the_line(
    run_db: Path, capsys: pytest.CaptureFixture[str], name: str, content: bytes, said: str,
) -> None:
    Path(name).write_bytes(content)
    code, out, err = calibrate(capsys, "--labels", name)
    assert code == 2 and out == ""
    assert said in err


def test_a_claim_label_is_not_the_samples_label(run_db: Path, capsys: pytest.CaptureFixture[str]) -> None:
    # the claim of s2 is judged right: that says nothing of s2's answer, which is wrong
    claim = {"id": "s2", "claim": "I do not know.", "correct": 1}
    Path("labels.jsonl").write_text(jsonl([*LABELS, claim]), encoding="utf-8")
    code, out, err = calibrate(capsys, "--labels", "labels.jsonl")
    assert code == 0, err
    data = json.loads(out)
    assert (data["matched"], data["n_positive"], data["n_negative"]) == (8, 4, 4)
    Path("claims.jsonl").write_text(jsonl([claim]), encoding="utf-8")
    code, _, err = calibrate(capsys, "--labels", "claims.jsonl")
    assert code == 2 and "claims.jsonl holds claim labels only" in err


def test_the_latest_label_in_the_store_is_the_latest_in_time(run_db: Path, capsys: pytest.CaptureFixture[str]) -> None:
    with Store(run_db) as st:
        run_id = st.resolve_run("last")
        keys = st.sample_keys(run_id)
        labels = [Label(keys[sid], ANY_METRIC, float(ok), "correct", who="ana", when="2026-01-10T09:00:00Z",
                        run_id=run_id, sample_id=sid) for sid, ok in zip(IDS, RIGHT)]
        # s1 labelled again, wrongly, by two people: an unreadable date and a date 2 hours ahead of
        # UTC (10:00 UTC, earlier than ana's 09:00 UTC... of the next day) both sort after ana's as text
        labels += [Label(keys["s1"], ANY_METRIC, 0.0, "correct", who="bo", when="yesterday",
                         run_id=run_id, sample_id="s1"),
                   Label(keys["s1"], ANY_METRIC, 0.0, "correct", who="cy", when="2026-01-10T10:30:00+02:00",
                         run_id=run_id, sample_id="s1")]
        st.add_labels(labels)
    code, out, err = calibrate(capsys)
    assert code == 0, err
    data = json.loads(out)
    assert (data["n_positive"], data["n_negative"]) == (4, 4)  # ana's label of s1 (09:00 UTC) counts
    assert data["metrics"][0]["auroc"] == 1.0
    assert any("1 label(s) have a date that is not ISO 8601" in n for n in data["notes"])


def test_the_library_reads_the_file_as_strictly(tmp_path: Path) -> None:
    from ragsight.errors import InputError
    from ragsight.report import load_labels

    latin = tmp_path / "labels.jsonl"
    latin.write_bytes(b'{"id": "s1", "correct": 1}\n{"id": "s2", "correct": "d\xe9j\xe0"}\n')
    with pytest.raises(InputError, match=r"labels.jsonl, line 2: not UTF-8"):
        load_labels(latin, "correct")
    bom = tmp_path / "bom.csv"
    bom.write_bytes("\ufeffid,correct\ns1,yes\n".encode())
    assert load_labels(bom, "correct") == {"s1": "yes"}
