"""A judge server whose ``usage`` holds values that cannot be token counts (valid JSON all):
``10**400`` made the run end in an OverflowError traceback, left ``running``; ``10**13`` was
stored as spent. Now such a value is treated as missing: the tokens of that answer are counted
from its text, a warning says so once, and the run completes. Through ``ragsight evaluate`` as
documented, against the fake OpenAI server over HTTP."""

from __future__ import annotations

import dataclasses
import importlib.util
import json
from collections.abc import Callable
from pathlib import Path

import pytest

from ragsight import cli
from ragsight.store import Store
from tests.fakes import FakeOpenAIServer, RecordedRequest, Reply
from tests.reliability.world import JudgeWorld, make_samples

MAX = 10**12


def with_usage(raw: str) -> Callable[[RecordedRequest], Reply | None]:
    """The judge world's answers with ``usage.prompt_tokens`` written as the JSON text ``raw``
    (also to Azure's path, whose query the world does not read)."""
    world = JudgeWorld()

    def handler(request: RecordedRequest) -> Reply | None:
        path = request.path.split("?", 1)[0]
        reply = world(dataclasses.replace(request, path=path))
        if reply is None or not path.endswith("/chat/completions"):
            return reply
        body = json.loads(reply.body)
        body["usage"] = {"prompt_tokens": "@@", "completion_tokens": 5, "total_tokens": 5}
        return dataclasses.replace(reply, body=json.dumps(body).replace('"@@"', raw).encode())

    return handler


JUDGES = {"openai": ["--judge", "openai:m"],
          "azure (litellm)": ["--judge", "azure:my-gpt4o", "--api-version", "2024-10-21"]}
needs_litellm = pytest.mark.skipif(importlib.util.find_spec("litellm") is None,
                                   reason="the litellm extra is not installed")


RAW = {"10**400": "1" + "0" * 400, "10**13": "10000000000000", "-5": "-5", "1e400": "1e400", "true": "true",
       "12.5": "12.5", '"12"': '"12"'}
# LiteLLM reads the usage itself before ragsight sees it: it turns true and "12" into 1 and 12, and
# refuses a float (its error, retried, then a clear one); the whole numbers reach ragsight
CASES = [pytest.param("openai", raw, id=f"openai-{raw}") for raw in RAW] + [
    pytest.param("azure (litellm)", raw, id=f"litellm-{raw}", marks=needs_litellm) for raw in ("10**400", "10**13", "-5")]


@pytest.mark.parametrize(("judge", "raw"), CASES)
def test_usage_that_is_no_token_count_is_treated_as_missing(
    judge: str, raw: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.setenv("OPENAI_API_KEY", "sk-test-usage")
    monkeypatch.setenv("AZURE_API_KEY", "azure-test-usage")
    data, store = tmp_path / "data.jsonl", tmp_path / "runs.db"
    data.write_text("".join(json.dumps(r) + "\n" for r in make_samples(3)), encoding="utf-8")
    with FakeOpenAIServer(handler=with_usage(RAW[raw])) as srv:
        base = srv.url if judge == "openai" else srv.root
        code = cli.main(["evaluate", str(data), *JUDGES[judge], "--base-url", base, "--store", str(store),
                         "--metrics", "faithfulness", "--quiet"])
    cap = capsys.readouterr()
    err = " ".join(cap.err.split())
    assert code == 0, cap.out + cap.err
    assert "Traceback" not in cap.out + cap.err
    assert err.count("is not a token count") == 1, err
    assert "counted from their text instead" in err
    with Store(store) as st:
        (info,) = st.runs()
        assert info.status == "completed"
        calls = st.judge_calls(info.id)
    assert calls and all(0 < c["prompt_tokens"] < MAX for c in calls), [c["prompt_tokens"] for c in calls]
    assert all(c["completion_tokens"] == 5 for c in calls)
