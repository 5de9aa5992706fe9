"""The judge cache is keyed on the provider's identity: two servers that serve
different models under one model name never share an answer, over real HTTP; the run records
the identity. On main the second run replayed the first server's verdicts (0 calls)."""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

import pytest

from ragsight.cli import main
from ragsight.judge import LocalProvider, provider_identity
from ragsight.store import Store
from tests.fakes import FakeOpenAIServer, RecordedRequest
from tests.reliability.world import JudgeWorld, make_samples, prompt_id_of


class ContraryWorld(JudgeWorld):
    """Another model under the same name: it finds every claim unsupported."""

    def answer(self, prompt_id: str, body: dict[str, Any]) -> tuple[Any, Any]:
        answer, count = super().answer(prompt_id, body)
        if prompt_id == "verify_claims":
            answer = {**answer, "verdicts": [{**v, "supported": False, "chunks": []}
                                             for v in answer["verdicts"]]}
        return answer, count


def judged(requests: list[RecordedRequest]) -> int:
    """Chat calls other than the preflight ping."""
    return sum(1 for r in requests if r.path.endswith("/chat/completions")
               and prompt_id_of(r.json if isinstance(r.json, dict) else {}) is not None)


def evaluate(data: Path, store: Path, url: str, capsys: pytest.CaptureFixture[str]) -> dict[str, Any]:
    code = main(["evaluate", str(data), "--metrics", "faithfulness", "--judge", "openai:same-name",
                 "--base-url", url, "--store", str(store), "--quiet"])
    capsys.readouterr()
    assert code == 0
    with Store(store) as st:
        run = st.runs()[0]
        scores = st.scores(run.id)
    values = [per["faithfulness"].value for per in scores.values()]
    return {"config": run.config, "stats": run.stats, "mean": sum(values) / len(values)}


def test_another_server_under_the_same_model_name_is_asked_again(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setenv("OPENAI_API_KEY", "sk-test-identity")
    data = tmp_path / "d.jsonl"
    data.write_text("".join(json.dumps(r) + "\n" for r in make_samples(3)), encoding="utf-8")
    store = tmp_path / "runs.db"
    with FakeOpenAIServer(handler=JudgeWorld()) as a, FakeOpenAIServer(handler=ContraryWorld()) as b:
        first = evaluate(data, store, a.url, capsys)
        assert judged(a.requests) > 0 and first["mean"] > 0
        second = evaluate(data, store, b.url, capsys)
        # the second server is asked (its claims and verdicts), nothing replayed from the first
        assert judged(b.requests) > 0
        assert second["stats"]["cache_hits"] == 0
        assert second["mean"] == 0.0
        assert second["config"]["judge_identity"] == {
            "provider": "openai:same-name", "model": "same-name", "base_url": b.url}
        # the cache still serves each server its own answers
        calls_a = judged(a.requests)
        again = evaluate(data, store, a.url, capsys)
        assert judged(a.requests) == calls_a
        assert again["stats"]["calls"] == 0 and again["mean"] == first["mean"]


def test_a_local_model_file_is_known_by_its_file(tmp_path: Path) -> None:
    gguf = tmp_path / "judge.gguf"
    gguf.write_bytes(b"GGUF" + b"\0" * 16)
    before = provider_identity(LocalProvider(str(gguf)))
    assert before["file"]["path"] == str(gguf.resolve()) and before["file"]["size"] == 20
    gguf.write_bytes(b"GGUF" + b"\1" * 40)  # another quantization at the same path
    os.utime(gguf, ns=(1, 1))
    assert provider_identity(LocalProvider(str(gguf))) != before
    registered = provider_identity(LocalProvider())
    assert registered["model"] == "qwen2.5-coder-1.5b" and len(registered["sha256"]) == 64
