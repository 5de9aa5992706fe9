"""Broken embedding vectors never become scores, and what ragsight writes is strict JSON.

An embedding server that returns NaN values, base64 float32 holding an infinity, an all-zero
vector or values beyond float32 used to turn answer_relevancy and answer_similarity into a
*scored* -1.000 (a NaN cosine clamped) or 0.000, and the exports and the HTML report then held
bare ``NaN`` tokens that strict JSON parsers reject. Now each is a failed embedding with its cause
(after the embedder's own retries), and every JSON file ragsight writes parses strictly.
"""

from __future__ import annotations

import json
import math
import sqlite3
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np
import pytest

import ragsight
from ragsight import cli
from ragsight.store import Store
from tests.fakes import FakeOpenAIServer
from tests.reliability.world import EMBEDDING_FAULTS, JudgeWorld, make_samples

CAUSES = {
    "emb_nan": "NaN values",
    "emb_inf_base64": "infinite values",
    "emb_zero": "all-zero embedding",
    "emb_overflow": "beyond the float32 range",
}
METRICS = "answer_relevancy,answer_similarity"


def strict_loads(text: str) -> Any:
    def refuse(token: str) -> Any:
        raise AssertionError(f"a bare {token} token: not strict JSON")

    return json.loads(text, parse_constant=refuse)


def write_jsonl(path: Path, rows: Sequence[dict[str, Any]]) -> Path:
    path.write_text("".join(json.dumps(r) + "\n" for r in rows), encoding="utf-8")
    return path


def after_the_preflight(world: JudgeWorld) -> Any:
    """The world, except that the run's preflight (its one text, "ragsight preflight") is
    embedded well: the server breaks every vector of the run itself. (The preflight goes on
    while the first samples are judged, so it is not always the first request.)"""

    def handler(request: Any) -> Any:
        body = request.json if isinstance(request.json, dict) else {}
        if request.path.endswith("/embeddings") and body.get("input") == ["ragsight preflight"]:
            return None  # the server's default: a good vector
        return world(request)

    return handler


@pytest.mark.parametrize("fault", EMBEDDING_FAULTS)
def test_a_broken_vector_is_a_failed_embedding_with_its_cause(
    fault: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    data = write_jsonl(tmp_path / "d.jsonl", make_samples(3))
    store = tmp_path / "runs.db"
    world = JudgeWorld(fault_rate=1.0, faults=(fault,))  # every embedding answer is broken
    with FakeOpenAIServer(handler=after_the_preflight(world)) as srv:
        code = cli.main(["evaluate", str(data), "--judge", "openai:m", "--embedder", "openai:e",
                         "--base-url", srv.url, "--store", str(store), "--quiet", "--metrics", METRICS,
                         "--out", str(tmp_path / "out.jsonl")])
        embed_requests = len(srv.requests_to("/embeddings"))
    captured = capsys.readouterr()
    assert code == 1, captured.err  # both metrics failed on every sample: the run misses its gate
    assert "Traceback" not in captured.out + captured.err
    assert world.injected[fault] == embed_requests - 1 > 0
    with Store(store) as st:
        run = st.runs()[0]
        scores = st.scores(run.id)
    outcomes = [(s.outcome.value, s.value, s.reason) for per in scores.values() for s in per.values()]
    assert len(outcomes) == 6
    for outcome, value, reason in outcomes:
        assert outcome == "failed" and value is None, (outcome, value, reason)
        assert reason.startswith("embedding failed:"), reason
        assert CAUSES[fault] in reason, reason
    # the summary counts them under their kind
    assert "failed answer_similarity on 3 samples: embedding failed" in " ".join(captured.out.split())
    for line in (tmp_path / "out.jsonl").read_text(encoding="utf-8").splitlines():
        strict_loads(line)


@pytest.mark.parametrize("fault", EMBEDDING_FAULTS)
def test_a_server_that_breaks_every_vector_fails_the_preflight_with_the_cause(
    fault: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    data = write_jsonl(tmp_path / "d.jsonl", make_samples(3))
    store = tmp_path / "runs.db"
    with FakeOpenAIServer(handler=JudgeWorld(fault_rate=1.0, faults=(fault,))) as srv:
        code = cli.main(["evaluate", str(data), "--judge", "openai:m", "--embedder", "openai:e",
                         "--base-url", srv.url, "--store", str(store), "--quiet", "--metrics", METRICS])
    err = " ".join(capsys.readouterr().err.split())
    assert code == 2
    assert "the embedder openai:e (needed by answer_relevancy, answer_similarity) is not usable" in err
    assert CAUSES[fault] in err
    # the first samples were judged meanwhile (tests/reliability/test_concurrent_preflight.py);
    # nothing of them is kept: no store is created
    assert not store.exists()


def test_a_user_embedder_that_returns_nan_fails_the_score_not_the_run() -> None:
    class NanEmbedder:
        name = "test:nan"

        async def embed(self, texts: Sequence[str], kind: str = "passage") -> np.ndarray:
            out = np.ones((len(texts), 4))
            out[-1, 0] = math.nan
            return out

        async def aclose(self) -> None:
            return None

    rows = [{"id": "a", "response": "Rule one is strict.", "reference": "Rule one is strict."}]
    result = ragsight.evaluate(rows, ["answer_similarity", "rouge_l"], embedder=NanEmbedder())
    sim = result.scores["a"]["answer_similarity"]
    assert sim.outcome.value == "failed"
    assert "returned a vector with NaN values for text 2 of 2" in sim.reason
    assert result.scores["a"]["rouge_l"].outcome.value == "scored"


def test_a_vector_that_is_not_unit_length_is_normalised_before_the_cosine() -> None:
    class LongVectors:
        name = "test:long"

        async def embed(self, texts: Sequence[str], kind: str = "passage") -> np.ndarray:
            return np.array([[3.0, 4.0], [40.0, 30.0]][: len(texts)])

        async def aclose(self) -> None:
            return None

    rows = [{"id": "a", "response": "x", "reference": "y"}]
    result = ragsight.evaluate(rows, ["answer_similarity"], embedder=LongVectors())
    # cosine 0.96; the raw dot product 240 would have been clamped to 1.0
    assert result.scores["a"]["answer_similarity"].value == pytest.approx(0.96)


def test_exports_and_report_are_strict_json_even_for_a_store_holding_nan(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """A store written before this fix holds bare NaN tokens in its evidence: every export
    format and the HTML report still come out strict."""
    # The run is written as a schema-1 store was (its evidence JSON text in the scores row), with
    # the evidence replaced by one holding bare NaN tokens; ragsight converts the store on open.
    from tests.store_v1 import V1Store

    store = tmp_path / "runs.db"
    rows = [{"id": f"s{i}", "question": f"What is rule {i}?", "response": f"Rule {i} is strict.",
             "reference": f"Rule {i} is strict."} for i in range(3)]
    run = ragsight.evaluate(rows, ["rouge_l"], metadata={"chunk_size": 512})
    v1 = V1Store(store)
    v1.create_run(run.run_id, run.samples, metrics=[{"key": "rouge_l", "name": "rouge_l", "params": {},
                                                     "lower_is_better": False}])
    for sample in run.samples:
        v1.save_sample(run.run_id, sample.id, run.scores[sample.id].values(), [])
    v1.finish_run(run.run_id, {})
    v1.close()
    conn = sqlite3.connect(store)
    conn.execute("UPDATE scores SET evidence = ? WHERE run_id = ?",
                 ('{"claims": [], "details": {"similarities": [NaN, Infinity, -Infinity], "x": NaN}, '
                  '"calls": []}', run.run_id))
    conn.commit()
    conn.close()
    for fmt in ("jsonl", "csv"):
        out = tmp_path / f"x.{fmt}"
        assert cli.main(["export", run.run_id, "--format", fmt, "--out", str(out), "--store", str(store)]) == 0
    for line in (tmp_path / "x.jsonl").read_text(encoding="utf-8").splitlines():
        obj = strict_loads(line)
        assert obj["evidence"]["rouge_l"]["details"]["similarities"] == [None, None, None]
    assert cli.main(["report", run.run_id, "--out", str(tmp_path / "r.html"), "--store", str(store)]) == 0
    html = (tmp_path / "r.html").read_text(encoding="utf-8")
    assert "NaN" not in html and "Infinity" not in html
    capsys.readouterr()
