"""The dry run's time for the embedded judge: the speeds kept in the user cache and the work it
would do (prompt tokens evaluated after prefix reuse, tokens generated)."""

from __future__ import annotations

import asyncio
import json
from pathlib import Path
from typing import Any

import pytest

from ragsight.judge import EstimatingProvider, JudgeRequest, Message
from ragsight.judge import _estimate as est


def test_speeds_are_kept_per_model_and_threads_and_read_back(tmp_path: Path) -> None:
    assert est.read_local_speed("m", 2, tmp_path) == est.LocalSpeed(est.DEFAULT_PROMPT_PER_S,
                                                                    est.DEFAULT_GENERATED_PER_S)
    assert est.record_local_speed("m", 2, 6873, 68.73, 781, 78.1, tmp_path)
    got = est.read_local_speed("m", 2, tmp_path)
    assert (got.prompt_per_s, got.generated_per_s) == (100.0, 10.0) and got.measured_at
    assert est.read_local_speed("m", 1, tmp_path).measured_at is None  # another thread count
    # a later run replaces it; a run too small to tell leaves it
    assert est.record_local_speed("m", 2, 1000, 20.0, 200, 10.0, tmp_path)
    assert not est.record_local_speed("m", 2, 50, 1.0, 5, 1.0, tmp_path)
    assert est.read_local_speed("m", 2, tmp_path).prompt_per_s == 50.0


@pytest.mark.parametrize("content", ["not json", "[1, 2]", '{"m / 2 threads": {"prompt_per_s": true, '
                                     '"generated_per_s": 3}}', '{"m / 2 threads": {"prompt_per_s": -4, '
                                     '"generated_per_s": 3}}'])
def test_an_unreadable_speed_file_gives_the_defaults(tmp_path: Path, content: str) -> None:
    (tmp_path / est.SPEED_FILE).write_text(content)
    assert est.read_local_speed("m", 2, tmp_path).measured_at is None
    assert est.record_local_speed("m", 2, 1000, 10.0, 200, 20.0, tmp_path)  # and is replaced
    assert json.loads((tmp_path / est.SPEED_FILE).read_text())["m / 2 threads"]["prompt_per_s"] == 100.0


def test_a_speed_file_that_cannot_be_written_is_no_error(tmp_path: Path) -> None:
    blocker = tmp_path / "file"
    blocker.write_text("")
    assert not est.record_local_speed("m", 2, 1000, 10.0, 200, 20.0, blocker)


class _Embedded:
    """Stands in for the embedded judge's provider: never loaded by an estimate."""

    name = "local:m"
    model = "m"
    supports_choices = True
    max_concurrency = 1
    n_threads = 2

    def count_tokens(self, text: str) -> int:
        raise AssertionError("the estimate must not load the model to count")

    async def aclose(self) -> None:
        return None


def _verify(source: str, claim: str) -> JudgeRequest:
    return JudgeRequest("verify_claim", "2", (Message("system", "You are a careful fact-checker."),
                                              Message("user", f"{source}\n\nIs the claim supported?\n\n{claim}")))


def test_prompts_sharing_their_start_count_their_tails_once_the_start_is_cached(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("RAGSIGHT_CACHE_DIR", str(tmp_path))
    prov = EstimatingProvider(_Embedded())  # type: ignore[arg-type]
    source = "The fleet has 64 aircraft. " * 40  # 1,080 characters
    asyncio.run(prov.score_choices(_verify(source, "The fleet has 64 aircraft."), ["Yes", "No"]))
    first = prov.evaluated_tokens
    assert first > 1080 // 4
    asyncio.run(prov.score_choices(_verify(source, "The fleet is old."), ["Yes", "No"]))
    assert 8 <= prov.evaluated_tokens - first <= 12  # the claim and the closing tags only
    asyncio.run(prov.complete(JudgeRequest("extract_claims", "1", (Message("user", "<response>\nA. B.\n</response>"),),
                                           schema={"type": "object", "properties": {
                                               "claims": {"type": "array", "items": {"type": "string"}}}})))
    assert prov.generated_tokens > 0 and prov.local_calls == 3
    speed = est.LocalSpeed(est.DEFAULT_PROMPT_PER_S, est.DEFAULT_GENERATED_PER_S)
    assert prov.seconds == pytest.approx(prov.evaluated_tokens / speed.prompt_per_s + prov.generated_tokens
                                         / speed.generated_per_s + 3 * est.CALL_OVERHEAD_S)
    line = prov.time_line()
    assert line is not None and "conservative default speeds" in line and f"{prov.evaluated_tokens:,}" in line
    # once a run has measured this machine, its speeds are used and dated
    assert est.record_local_speed("m", 2, 2000, 10.0, 400, 20.0)
    again = EstimatingProvider(_Embedded())  # type: ignore[arg-type]
    assert again.speed is not None and again.speed.prompt_per_s == 200.0
    assert "measured on this machine" in (again.time_line() or "")


def test_a_remote_judge_has_no_time_line() -> None:
    class Remote(_Embedded):
        supports_choices = False

        def count_tokens(self, text: str) -> int:
            return len(text) // 4

    prov = EstimatingProvider(Remote())  # type: ignore[arg-type]
    asyncio.run(prov.complete(_verify("a", "b")))
    assert prov.seconds is None and prov.time_line() is None and prov.evaluated_tokens == 0


def test_the_dry_run_of_the_embedded_judge_estimates_its_time(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from ragsight.cli import example_path
    from ragsight.run import _estimate as run_estimate

    monkeypatch.setenv("RAGSIGHT_CACHE_DIR", str(tmp_path))
    made: list[Any] = []

    class Capturing(EstimatingProvider):
        def __init__(self, inner: Any) -> None:
            super().__init__(inner)
            made.append(self)

    monkeypatch.setattr(run_estimate, "EstimatingProvider", Capturing)
    result = asyncio.run(run_estimate.aestimate(example_path(), "faithfulness,context_recall", judge="local"))
    (prov,) = made
    assert prov.local_calls == result.calls > 0
    # the contexts are shared by a sample's verdicts: far fewer tokens evaluated than sent (the
    # check of the reference's claims against the reference has a prefix of its own: 46% of the
    # tokens sent were evaluated before it, 57% with it)
    assert 0 < prov.evaluated_tokens < result.prompt_tokens * 0.6
    assert prov.seconds is not None and prov.seconds > 0


@pytest.mark.parametrize(("seconds", "text"), [(40, "40 s"), (149, "2.5 min"), (1500, "25 min"), (9000, "2.5 h")])
def test_durations_read_as_a_person_says_them(seconds: float, text: str) -> None:
    assert est._duration(seconds) == text
