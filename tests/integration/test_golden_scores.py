"""A fixed run's scores and judge traffic, compared with a golden file.

Eight samples, nine judge-based metrics, a deterministic judge world over real HTTP (every score
follows from the request text: see ``tests/reliability/world.py``). A refactor that changes no
behaviour leaves every value, outcome, reason and the number of judge calls and tokens as they
were; a change that moves any of them fails here, on purpose. When a change is meant to move
them, regenerate with ``python -m tests.integration.test_golden_scores`` and say why in the commit.
"""

from __future__ import annotations

import json
import os
import tempfile
from pathlib import Path
from typing import Any

import ragsight
from ragsight.judge import RetryPolicy
from tests.fakes import FakeOpenAIServer
from tests.reliability.world import JudgeWorld, make_samples

GOLDEN = Path(__file__).resolve().parents[1] / "fixtures" / "golden" / "scripted_run.json"
METRICS = [
    "faithfulness", "answer_relevancy", "context_precision", "context_recall",
    "context_entity_recall", "factual_correctness", "noise_sensitivity", "context_relevance",
    "answer_correctness",
]
POLICY = RetryPolicy(max_attempts=2, max_reasks=1, call_timeout_s=10.0, step_deadline_s=60.0)


def golden_run(store: Path) -> dict[str, Any]:
    for name in ("OPENAI_API_KEY", "OPENAI_BASE_URL", "HTTP_PROXY", "http_proxy"):
        os.environ.pop(name, None)
    with FakeOpenAIServer(handler=JudgeWorld()) as srv:
        result = ragsight.evaluate(make_samples(8, seed=3), METRICS, embedder="openai:e", store=store,
                                   judge=ragsight.JudgeSpec("openai:m", base_url=srv.url),
                                   options=ragsight.RunOptions(policy=POLICY, concurrency=1))
    scores = {
        sid: {k: [s.outcome.value, None if s.value is None else round(s.value, 9), s.reason]
              for k, s in sorted(per.items())}
        for sid, per in sorted(result.scores.items())
    }
    st = result.judge_stats
    return {"scores": scores, "overall": None if result.overall is None else round(result.overall, 9),
            "calls": st.get("calls"), "prompt_tokens": st.get("prompt_tokens"),
            "completion_tokens": st.get("completion_tokens")}


def test_a_fixed_run_matches_its_golden_file(tmp_path: Path) -> None:
    expected = json.loads(GOLDEN.read_text(encoding="utf-8"))
    got = golden_run(tmp_path / "golden.db")
    assert got["calls"] == expected["calls"]
    assert (got["prompt_tokens"], got["completion_tokens"]) == (
        expected["prompt_tokens"], expected["completion_tokens"])
    for sid, per in expected["scores"].items():
        assert got["scores"][sid] == per, sid
    assert got == expected


if __name__ == "__main__":
    with tempfile.TemporaryDirectory() as d:
        data = golden_run(Path(d) / "golden.db")
    GOLDEN.write_text(json.dumps(data, indent=1, sort_keys=True) + "\n", encoding="utf-8")
    print(f"wrote {GOLDEN}: {data['calls']} calls")
