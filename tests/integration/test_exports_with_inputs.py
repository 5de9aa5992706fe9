"""Every export carries the inputs beside the scores: ``to_pandas()``, JSONL
(``ragsight export`` and ``--out``), CSV and Parquet, so the samples behind a low score can be
read in the same table. A CSV or JSONL export loads back into ragsight unchanged."""

from __future__ import annotations

import csv
import json
from pathlib import Path
from typing import Any

import pandas as pd
import pytest

import ragsight
from ragsight import Dataset, cli
from tests.scripted import RagScript

GOOD = "Aurora Airways allows one cabin bag."
BAD = "Aurora Airways allows three cabin bags and a free pet."
CTX = ["Aurora Airways allows one cabin bag.", "It may weigh eight kilograms."]


def script() -> RagScript:
    # GOOD is one short statement: its own claim (no extraction call); BAD states two facts, so
    # it is split into its two claims (atomic claims)
    s = RagScript()
    s.verdicts[(GOOD, "contexts")] = True
    s.claims[BAD] = ["Aurora Airways allows three cabin bags.", "Aurora Airways allows a free pet."]
    for claim in s.claims[BAD]:
        s.verdicts[(claim, "contexts")] = False
    return s


ROWS = [
    {"id": "good", "question": "How many cabin bags?", "contexts": CTX, "response": GOOD,
     "reference": "One.", "metadata": {"chunk_size": 512}},
    {"id": "bad", "question": "Can I bring a pet?", "contexts": CTX, "response": BAD,
     "reference": ["No.", "Not in the cabin."], "retrieved_ids": ["d1", "d2"], "relevant_ids": {"d1": 2}},
]


@pytest.fixture
def store(tmp_path: Path) -> Path:
    path = tmp_path / "runs.db"
    ragsight.evaluate(ROWS, ["faithfulness"], judge=script().judge(), store=str(path))
    return path


def test_to_pandas_has_the_inputs_beside_the_scores() -> None:
    result = ragsight.evaluate(ROWS, ["faithfulness"], judge=script().judge())
    df = result.to_pandas()
    low = df[df.faithfulness < 0.5][["question", "contexts"]]
    assert low.to_dict(orient="records") == [{"question": "Can I bring a pet?", "contexts": CTX}]
    assert list(df.columns[:10]) == ["id", "question", "contexts", "response", "reference", "reference_contexts",
                                     "retrieved_ids", "relevant_ids", "metadata", "faithfulness"]
    bad = df.set_index("id").loc["bad"]
    assert bad.reference == ["No.", "Not in the cabin."] and bad.relevant_ids == {"d1": 2.0}
    assert df.set_index("id").loc["good"].metadata == {"chunk_size": 512}


def test_export_jsonl_and_out_carry_the_inputs(store: Path, tmp_path: Path,
                                               capsys: pytest.CaptureFixture[str]) -> None:
    out = tmp_path / "e.jsonl"
    assert cli.main(["export", "last", "--format", "jsonl", "--out", str(out), "--store", str(store)]) == 0
    recs = [json.loads(line) for line in out.read_text().splitlines()]
    assert recs[1]["question"] == "Can I bring a pet?" and recs[1]["contexts"] == CTX
    assert recs[1]["response"] == BAD and recs[1]["reference"] == ["No.", "Not in the cabin."]
    assert recs[0]["metadata"] == {"chunk_size": 512}
    assert recs[1]["scores"]["faithfulness"]["value"] == 0.0
    # the export loads back as the same samples
    back = Dataset.load(out)
    assert [(s.id, s.contexts, s.reference, s.relevant_ids) for s in back] == [
        ("good", tuple(CTX), "One.", None), ("bad", tuple(CTX), ("No.", "Not in the cabin."), {"d1": 2.0})]


def test_export_csv_carries_the_inputs_and_loads_back(store: Path, tmp_path: Path) -> None:
    out = tmp_path / "e.csv"
    assert cli.main(["export", "last", "--format", "csv", "--out", str(out), "--store", str(store)]) == 0
    with out.open(newline="") as f:
        rows = list(csv.DictReader(f))
    assert list(rows[0])[:10] == ["run_id", "id", "question", "contexts", "response", "reference",
                                  "reference_contexts", "retrieved_ids", "relevant_ids", "metadata"]
    assert json.loads(rows[1]["contexts"]) == CTX and rows[1]["question"] == "Can I bring a pet?"
    assert json.loads(rows[1]["reference"]) == ["No.", "Not in the cabin."]
    assert rows[1]["faithfulness"] == "0.0"
    df = pd.read_csv(out)
    assert df[df.faithfulness < 0.5]["question"].tolist() == ["Can I bring a pet?"]
    back = {s.id: s for s in Dataset.load(out)}
    assert back["bad"].contexts == tuple(CTX) and back["bad"].reference == ("No.", "Not in the cabin.")
    assert back["bad"].retrieved_ids == ("d1", "d2") and back["good"].metadata["chunk_size"] == 512


def test_export_parquet_carries_the_inputs(store: Path, tmp_path: Path) -> None:
    out = tmp_path / "e.parquet"
    assert cli.main(["export", "last", "--format", "parquet", "--out", str(out), "--store", str(store)]) == 0
    df = pd.read_parquet(out)
    low = df[df.faithfulness < 0.5]
    assert low["question"].tolist() == ["Can I bring a pet?"]
    assert list(low["contexts"].iloc[0]) == CTX
    assert json.loads(low["reference"].iloc[0]) == ["No.", "Not in the cabin."]
    assert json.loads(df.set_index("id").loc["good", "metadata"]) == {"chunk_size": 512}
    back = {s.id: s for s in Dataset.load(out)}
    assert back["bad"].reference == ("No.", "Not in the cabin.") and back["bad"].relevant_ids == {"d1": 2.0}


def test_cli_out_carries_the_inputs(tmp_path: Path) -> None:
    result = ragsight.evaluate(ROWS, ["faithfulness"], judge=script().judge())
    path = tmp_path / "out.jsonl"
    result.write_jsonl(path)
    first = json.loads(path.read_text().splitlines()[0])
    assert (first["question"], first["contexts"], first["response"]) == ("How many cabin bags?", CTX, GOOD)


@pytest.mark.parametrize("fmt", ["jsonl", "csv", "parquet", "to_pandas"])
def test_every_export_loads_back_as_the_same_samples_metadata_included(store: Path, tmp_path: Path,
                                                                        fmt: str) -> None:
    """The samples, metadata included: the run id and the score columns were read as metadata
    (12 keys for 4 metrics), and a re-evaluated export carried the old scores along as inputs."""
    original = list(Dataset.load(ROWS))
    if fmt == "to_pandas":
        data: Any = ragsight.evaluate(ROWS, ["faithfulness", "token_f1"], judge=script().judge()).to_pandas()
    else:
        data = tmp_path / f"e.{fmt}"
        assert cli.main(["export", "last", "--format", fmt, "--out", str(data), "--store", str(store)]) == 0
    back = Dataset.load(data)
    assert back.errors == [] and not [p for p in back.problems if "field" in p.message]
    assert [s.to_dict() for s in back] == [s.to_dict() for s in original]


def test_other_tools_score_columns_stay_in_metadata() -> None:
    """A ragas result (its metric columns beside the inputs) keeps its scores as metadata."""
    (s,) = Dataset.load([{"user_input": "Who?", "response": "Ann.", "faithfulness": 0.5, "run_id": "r1"}])
    assert s.metadata == {"faithfulness": 0.5, "run_id": "r1"}
