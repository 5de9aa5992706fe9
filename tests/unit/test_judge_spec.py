"""One judge spec, one options object: evaluate() takes a judge's name or a JudgeSpec (its server,
API version, ceiling of calls and prices), an embedder's name or an EmbedderSpec, and RunOptions;
a keyword it no longer takes says where it went; the judge cache's keys are those of a Judge made
from the same name and server, so a store written before is read after."""

from __future__ import annotations

import importlib
import inspect
from pathlib import Path

import pytest

import ragsight
from ragsight.errors import ConfigError
from ragsight.judge import RetryPolicy, make_judge
from ragsight.run import aestimate
from ragsight.store import Store
from tests.fakes import FakeOpenAIServer
from tests.reliability.world import JudgeWorld, make_samples

METRICS = ["faithfulness", "answer_relevancy"]
POLICY = RetryPolicy(max_attempts=2, max_reasks=1, call_timeout_s=10.0, step_deadline_s=60.0)


@pytest.fixture(autouse=True)
def _no_openai_env(monkeypatch: pytest.MonkeyPatch) -> None:
    for name in ("OPENAI_API_KEY", "OPENAI_BASE_URL", "HTTP_PROXY", "http_proxy"):
        monkeypatch.delenv(name, raising=False)


@pytest.mark.parametrize("function", [ragsight.evaluate, ragsight.aevaluate, aestimate])
def test_the_entry_points_take_at_most_twelve_parameters(function: object) -> None:
    params = inspect.signature(function).parameters  # type: ignore[arg-type]
    assert len(params) <= 12, list(params)
    assert "options" in params and "judge" in params
    assert not {"base_url", "judge_concurrency", "max_cost", "cache", "prices"} & set(params)


def test_evaluate_and_aevaluate_take_the_same_parameters() -> None:
    assert inspect.signature(ragsight.evaluate).parameters.keys() == \
        inspect.signature(ragsight.aevaluate).parameters.keys()


def test_the_specs_and_options_are_public_frozen_and_documented() -> None:
    for cls in (ragsight.JudgeSpec, ragsight.EmbedderSpec, ragsight.RunOptions):
        assert cls.__doc__ and "Example::" in cls.__doc__
        assert cls.__dataclass_params__.frozen  # type: ignore[attr-defined]
    judge_package = importlib.import_module("ragsight.judge")  # the package keeps its name
    assert judge_package.JudgeSpec is ragsight.JudgeSpec


def test_a_name_and_a_spec_of_that_name_are_the_same_judge() -> None:
    assert ragsight.JudgeSpec.of("local") == ragsight.JudgeSpec("local")
    spec = ragsight.JudgeSpec("openai:m", base_url="http://127.0.0.1:9/v1")
    assert ragsight.JudgeSpec.of(spec) is spec
    assert ragsight.EmbedderSpec.of("openai:e") == ragsight.EmbedderSpec("openai:e")
    with pytest.raises(ConfigError, match="not another JudgeSpec"):
        ragsight.JudgeSpec(spec)  # type: ignore[arg-type]


@pytest.mark.parametrize(("kwargs", "expected"), [
    ({"base_url": "http://h/v1"},
     "evaluate(): base_url= is part of the judge spec now: "
     "judge=ragsight.JudgeSpec('openai:gpt-4o-mini', base_url=...)"),
    ({"judge_concurrency": 4, "api_version": "2024-10-21"},
     "evaluate(): judge_concurrency= and api_version= are part of the judge spec now "
     "(judge_concurrency= as concurrency=): "
     "judge=ragsight.JudgeSpec('openai:gpt-4o-mini', concurrency=..., api_version=...)"),
    ({"embedder_base_url": "http://h/v1"},
     "evaluate(): embedder_base_url= is part of the embedder spec now (embedder_base_url= as base_url=): "
     "embedder=ragsight.EmbedderSpec('openai:MODEL', base_url=...)"),
    ({"max_cost": 2.0, "cache": False},
     "evaluate(): max_cost= and cache= are part of the run options now: "
     "options=ragsight.RunOptions(max_cost=..., cache=...)"),
    ({"cach": False},
     "evaluate(): got an unexpected keyword argument 'cach' "
     "(did you mean options=ragsight.RunOptions(cache=...)?)"),
    ({"stor": "runs.db"}, "evaluate(): got an unexpected keyword argument 'stor' (did you mean store=?)"),
])
def test_a_removed_keyword_says_where_it_went(kwargs: dict[str, object], expected: str, tmp_path: Path) -> None:
    store = tmp_path / "runs.db"
    with pytest.raises(TypeError) as info:
        ragsight.evaluate(make_samples(1), judge="openai:gpt-4o-mini", store=str(store), **kwargs)  # type: ignore[arg-type]
    assert str(info.value) == expected
    assert not store.exists()  # refused before anything was made


async def test_aevaluate_and_aestimate_say_it_too() -> None:
    with pytest.raises(TypeError, match=r"^aevaluate\(\): base_url= is part of the judge spec now"):
        await ragsight.aevaluate(make_samples(1), base_url="http://h/v1")  # type: ignore[arg-type]
    with pytest.raises(TypeError, match=r"^aestimate\(\): prices= is part of the judge spec now: "
                                        r"judge=ragsight\.JudgeSpec\('openai:MODEL', prices=\.\.\.\)"):
        await aestimate(make_samples(1), prices={"m": (1, 2)})  # type: ignore[arg-type]


def test_the_options_check_their_values_when_made() -> None:
    with pytest.raises(ConfigError, match="max_cost"):
        ragsight.RunOptions(max_cost=-1)
    with pytest.raises(ConfigError, match="unknown backend 'spark'"):
        ragsight.RunOptions(backend="spark")
    assert ragsight.RunOptions(max_cost=2).max_cost == 2.0


def test_a_spec_reaches_its_server_with_its_ceiling_and_prices(tmp_path: Path) -> None:
    """Over real HTTP on 127.0.0.1: the spec's server answers every call, its ceiling of calls
    and its price are the run's, and the run records the server (as typed) and the judge."""
    with FakeOpenAIServer(handler=JudgeWorld()) as srv, FakeOpenAIServer(handler=JudgeWorld()) as emb:
        judge = ragsight.JudgeSpec("openai:m", base_url=srv.url, concurrency=3, prices={"m": (1.0, 2.0)})
        result = ragsight.evaluate(
            make_samples(3), METRICS, judge=judge, store=str(tmp_path / "runs.db"),
            embedder=ragsight.EmbedderSpec("openai:e", base_url=emb.url),
            options=ragsight.RunOptions(policy=POLICY, show_progress=False, max_cost=5.0))
        chat, embeddings = srv.requests_to("/chat/completions"), emb.requests_to("/embeddings")
        judge_url, embedder_url = srv.url, emb.url
        assert not emb.requests_to("/chat/completions") and not srv.requests_to("/embeddings")
    assert result.status == "completed" and chat and embeddings
    assert all(s.value is not None for per in result.scores.values() for s in per.values())
    with Store(tmp_path / "runs.db") as st:
        config = st.run(result.run_id).config
    assert config["judge_spec"] == "openai:m" and config["base_url"] == judge_url
    assert config["embedder_spec"] == "openai:e" and config["embedder_base_url"] == embedder_url
    assert config["judge_concurrency"]["ceiling"] == 3
    assert config["price"]["input"] == 1.0 and config["price"]["output"] == 2.0


def test_a_store_written_by_a_judge_made_from_the_name_is_read_through_the_spec(tmp_path: Path) -> None:
    """The judge cache's keys do not depend on how the judge was named: a run with the Judge that
    make_judge builds from the name and server fills the cache, and the same run through a
    JudgeSpec of that name and server finds every step there and calls nothing."""
    store = str(tmp_path / "runs.db")
    samples = make_samples(4)
    with FakeOpenAIServer(handler=JudgeWorld()) as srv:
        first = ragsight.evaluate(samples, ["faithfulness"], store=store,
                                  judge=make_judge("openai:m", base_url=srv.url, policy=POLICY),
                                  options=ragsight.RunOptions(preflight=False, show_progress=False))
        sent = len(srv.requests_to("/chat/completions"))
        again = ragsight.evaluate(samples, ["faithfulness"], store=store,
                                  judge=ragsight.JudgeSpec("openai:m", base_url=srv.url),
                                  options=ragsight.RunOptions(preflight=False, show_progress=False))
        assert len(srv.requests_to("/chat/completions")) == sent > 0
    assert again.judge_stats["calls"] == 0 and again.judge_stats["cache_hits"] > 0
    assert _values(again) == _values(first)


def test_a_resume_keeps_the_spec_of_the_run_and_takes_a_new_options(tmp_path: Path) -> None:
    """A resume names neither judge nor server: both come from the run; its options are the
    caller's."""
    store = str(tmp_path / "runs.db")
    with FakeOpenAIServer(handler=JudgeWorld()) as srv:
        first = ragsight.evaluate(make_samples(2), ["faithfulness"], store=store,
                                  judge=ragsight.JudgeSpec("openai:m", base_url=srv.url),
                                  options=ragsight.RunOptions(show_progress=False))
        with Store(store) as st:  # as if the run had stopped before its last sample
            st.conn.execute("UPDATE samples SET finished=0 WHERE run_id=? AND sample_id=?",
                            (first.run_id, first.samples[-1].id))
            st.conn.execute("UPDATE runs SET status='interrupted', lock_owner=NULL WHERE id=?", (first.run_id,))
            st.conn.commit()
        again = ragsight.evaluate(None, resume=first.run_id, store=store,
                                  options=ragsight.RunOptions(show_progress=False, preflight=False))
    assert again.run_id == first.run_id and again.status == "completed"
    assert _values(again) == _values(first)


def _values(result: ragsight.EvaluationResult) -> dict[tuple[str, str], tuple[str, float | None, str]]:
    return {(sid, k): (s.outcome.value, s.value, s.reason) for sid, per in result.scores.items()
            for k, s in per.items()}
