"""A metric parameter that is not a finite number (NaN, infinity, 1e999) is refused with a clear
error before any judge call. It used to pass validation; every sample then failed as "internal
error" after its judge calls were paid, and the run exited 0."""

from __future__ import annotations

import json
import math
from pathlib import Path

import pytest

import ragsight
from ragsight import cli
from ragsight.errors import ConfigError
from ragsight.metrics import AnswerCorrectness, FactualCorrectness
from tests.fakes import FakeOpenAIServer
from tests.reliability.world import JudgeWorld, make_samples

SPECS = [
    ("factual_correctness(mode=fbeta, beta=nan)", "parameter beta=nan is not a finite number"),
    ("factual_correctness(mode=fbeta, beta=inf)", "parameter beta=inf is not a finite number"),
    ("factual_correctness(mode=fbeta, beta=1e999)", "parameter beta=inf is not a finite number"),
    ("answer_correctness(weights=nan/1)", "parameter weights=nan is not a finite number"),
    ("answer_correctness(weights=1/inf)", "parameter weights=inf is not a finite number"),
    ("answer_correctness(weights=-inf/1)", "parameter weights=-inf is not a finite number"),
    ("mrr_by_similarity(threshold=nan)", "parameter threshold=nan is not a finite number"),
]


@pytest.mark.parametrize(("spec", "expect"), SPECS, ids=[s for s, _ in SPECS])
def test_non_finite_parameters_are_refused_before_any_call(
    spec: str, expect: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    data = tmp_path / "d.jsonl"
    data.write_text("".join(json.dumps(r) + "\n" for r in make_samples(2)), encoding="utf-8")
    with FakeOpenAIServer(handler=JudgeWorld()) as srv:
        code = cli.main(["evaluate", str(data), "--judge", "openai:m", "--embedder", "openai:e",
                         "--base-url", srv.url, "--store", str(tmp_path / "r.db"), "--quiet",
                         "--metrics", f"faithfulness,{spec}"])
        requests = srv.requests
    captured = capsys.readouterr()
    output = " ".join((captured.out + captured.err).split())
    assert code == 2, output
    assert output.startswith(f"error: metric '{spec}': {expect}"), output
    assert "Traceback" not in output
    assert requests == [], "a judge or embedder call was made before the parameter was checked"


def test_the_api_refuses_them_too() -> None:
    with pytest.raises(ValueError, match="beta must be a finite number > 0, not nan"):
        FactualCorrectness(mode="fbeta", beta=math.nan)
    with pytest.raises(ValueError, match="weights must be finite"):
        AnswerCorrectness(weights=(math.nan, 1.0))
    with pytest.raises(ValueError, match="weights must be finite"):
        AnswerCorrectness(weights=(math.inf, 1.0))
    with pytest.raises(ConfigError, match="beta=nan is not a finite number"):
        ragsight.evaluate(make_samples(1), ["factual_correctness(mode=fbeta,beta=nan)"],
                          judge=ragsight.JudgeSpec("openai:m", base_url="http://127.0.0.1:9/v1"))


def test_huge_equal_weights_are_half_and_half() -> None:
    """answer_correctness(weights=1e308/1e308) scored 0.000 on every sample: the weights' sum
    overflowed and both became 0."""
    assert AnswerCorrectness(weights=(1e308, 1e308)).weights == (0.5, 0.5)
    assert AnswerCorrectness(weights=(3e307, 1e307)).weights == pytest.approx((0.75, 0.25))
    assert ragsight.metrics.resolve_metrics(["answer_correctness(weights=1e308/1e308)"])[0].params()["weights"] == [0.5, 0.5]


def test_a_beta_whose_square_overflows_is_refused_before_any_call(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """beta=1e308 is finite, its square is not: every sample failed after its calls were paid."""
    data = tmp_path / "d.jsonl"
    data.write_text("".join(json.dumps(r) + "\n" for r in make_samples(2)), encoding="utf-8")
    with FakeOpenAIServer(handler=JudgeWorld()) as srv:
        code = cli.main(["evaluate", str(data), "--judge", "openai:m", "--base-url", srv.url, "--store",
                         str(tmp_path / "r.db"), "--quiet", "--metrics", "factual_correctness(mode=fbeta,beta=1e308)"])
        requests = srv.requests
    output = " ".join(capsys.readouterr().err.split())
    assert code == 2, output
    assert "factual_correctness beta must be between 0.001 and 1000, not 1e+308" in output
    assert requests == [] and not (tmp_path / "r.db").exists()
