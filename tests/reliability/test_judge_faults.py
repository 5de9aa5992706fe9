"""Judge faults over real HTTP: ``ragsight.evaluate`` end to end against FakeOpenAIServer with a
judge world that breaks a share of its answers in one way at a time.

For every fault kind the run must complete, every (sample, metric) pair must end in a defined
outcome, retries must stay bounded in count and time, failures must be counted, and no broken
output may be read as a shorter answer: every score computed under faults equals the clean run's,
and every judge call whose output was accepted holds the complete answer.
"""

from __future__ import annotations

import asyncio
import itertools
import json
import time
from collections import Counter, defaultdict
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

import ragsight
import tests.fakes.openai_server as fake_server
from ragsight import Outcome
from ragsight.errors import JudgeUnavailableError
from ragsight.judge import RetryPolicy
from ragsight.store import Store
from tests.fakes import FakeOpenAIServer, RecordedRequest, Reply
from tests.reliability.world import (
    CONTENT_FAULTS,
    FAULT_KINDS,
    TRANSPORT_FAULTS,
    JudgeWorld,
    make_samples,
    prompt_id_of,
)

METRICS = ["faithfulness", "answer_relevancy", "context_precision", "context_recall"]
POLICY = RetryPolicy(max_attempts=4, max_reasks=3, backoff_base_s=0.02, backoff_max_s=0.2,
                     call_timeout_s=1.5, step_deadline_s=20.0)
MAX_CALLS_PER_STEP = (POLICY.max_reasks + 1) * POLICY.max_attempts
N_SAMPLES = 12
WALL_BOUND_S = 60.0  # 12 samples; a clean run takes about 1 s on an idle machine


@dataclass
class WorldRun:
    """One evaluation against the fault world, as the checks need it."""

    result: Any
    calls: list[dict[str, Any]]  # the judge calls recorded in the store
    wall: float
    requests: list[RecordedRequest]  # the chat requests the judge's server read
    empty_connections: int  # connections to the judge's server that ended without a request
    lags: list[tuple[float, float]]  # (monotonic time, lateness) of the event loop's wake-ups
    clock: float  # time.time() - time.monotonic() during the run, to place calls on the lags


async def _watch_loop(lags: list[tuple[float, float]], step: float = 0.02) -> None:
    """Sleep ``step`` over and over in the run's own event loop and record how late each wake-up
    is: the time the loop could not run anything (a timer due then, such as a call's timeout,
    fires that much late)."""
    while True:
        t = time.monotonic()
        await asyncio.sleep(step)
        now = time.monotonic()
        lags.append((now, max(0.0, now - t - step)))


def run_world(world: JudgeWorld, samples: list[dict[str, Any]], store: Path,
              metrics: list[str] = METRICS) -> WorldRun:
    """Evaluate ``samples`` against fake servers answering with ``world`` (the judge and the
    embedder each on their own server, so the judge's server sees judge traffic only), with a
    watcher of the event loop's lateness running beside the evaluation."""
    # At most 16 calls in flight (the old fixed limit): the fake server answers from threads of
    # this test's own process, and on a loaded 2-core machine 64 calls at once (the adaptive
    # default's start) time out (1.5 s) more often; the checks below account for timeouts, but
    # a run where most calls time out tests little. Concurrency has tests of its own.
    lags: list[tuple[float, float]] = []

    async def evaluate(judge_url: str, embed_url: str) -> Any:
        watcher = asyncio.ensure_future(_watch_loop(lags))
        try:
            return await ragsight.aevaluate(
                samples, metrics, store=store,
                judge=ragsight.JudgeSpec("openai:m", base_url=judge_url, concurrency=16),
                embedder=ragsight.EmbedderSpec("openai:e", base_url=embed_url),
                options=ragsight.RunOptions(policy=POLICY))
        finally:
            watcher.cancel()

    with FakeOpenAIServer(handler=world) as srv, FakeOpenAIServer(handler=world) as embed_srv:
        clock = time.time() - time.monotonic()
        t0 = time.monotonic()
        result = asyncio.run(evaluate(srv.url, embed_srv.url))
        wall = time.monotonic() - t0
        assert srv.settle(), "the judge's server still had connections it had not read"
        requests = srv.requests_to("/chat/completions")
        empty = srv.empty_connections
    with Store(store) as st:
        calls = st.judge_calls(result.run_id)
    return WorldRun(result, calls, wall, requests, empty, lags, clock)


def loop_lateness(run: WorldRun, start: float, end: float) -> float:
    """How long the event loop could not run between ``start`` and ``end`` (monotonic): the
    watcher's late wake-ups, each covering [wake - lateness, wake], clipped to the window."""
    return sum(max(0.0, min(end, t) - max(start, t - late)) for t, late in run.lags)


def timed_out(call: dict[str, Any]) -> bool:
    error = call["error"] or ""
    return "timed out" in error or "gave no complete answer within" in error


@pytest.fixture(scope="module")
def clean(tmp_path_factory: pytest.TempPathFactory) -> Iterator[dict[str, Any]]:
    """The clean run's scores (sample id -> metric -> Score)."""
    with pytest.MonkeyPatch.context() as mp:
        mp.setattr(fake_server._Server, "request_queue_size", 128)
        for name in ("OPENAI_API_KEY", "OPENAI_BASE_URL", "HTTP_PROXY", "http_proxy"):
            mp.delenv(name, raising=False)
        run = run_world(JudgeWorld(), make_samples(N_SAMPLES),
                        tmp_path_factory.mktemp("clean") / "clean.db")
    assert all(c["error"] is None for c in run.calls)
    assert all(s.outcome is Outcome.SCORED for per in run.result.scores.values() for s in per.values())
    yield run.result.scores


def world_answer(call: dict[str, Any]) -> tuple[dict[str, Any], int | None]:
    """What the world answers to the first attempt of this call's prompt (count from the prompt)."""
    body = {"messages": call["messages"],
            "response_format": {"json_schema": {"name": call["prompt_id"]}}}
    answer, _ = JudgeWorld().answer(call["prompt_id"], body)
    return answer, None


def check_no_partial_parse(calls: list[dict[str, Any]]) -> None:
    """Every accepted output is the world's complete answer; every broken output was refused."""
    for c in calls:
        raw = c["raw_output"]
        if c["parsed"] is not None:
            assert c["error"] is None
            assert json.loads(raw) == c["parsed"], "an accepted output must be exactly the JSON sent"
            expected, _ = world_answer(c)
            assert c["parsed"] == expected, f"{c['prompt_id']}: accepted a partial answer"
            continue
        if raw is None:
            assert c["error"], "a call without output must say why"
            continue
        # an output that was not accepted: refused with a reason, whatever it was
        assert c["error"] and c["error"].startswith("unusable output: "), c


def check_run(run: WorldRun, clean: dict[str, Any], samples: list[dict[str, Any]]) -> dict[str, int]:
    result, calls, wall = run.result, run.calls, run.wall
    ids = [s["id"] for s in samples]
    # every pair ends in exactly one defined outcome; nothing missing, nothing extra
    assert sorted(result.scores) == sorted(ids)
    outcomes: dict[str, int] = defaultdict(int)
    for sid in ids:
        per = result.scores[sid]
        assert sorted(per) == sorted(METRICS)
        for m, score in per.items():
            outcomes[score.outcome.value] += 1
            if score.outcome is Outcome.SCORED:
                ref = clean[sid][m]
                assert score.value == pytest.approx(ref.value), (sid, m)
                assert [c.claim for c in score.evidence.claims] == [c.claim for c in ref.evidence.claims]
                assert [c.supported for c in score.evidence.claims] == [
                    c.supported for c in ref.evidence.claims]
            else:
                assert score.outcome is Outcome.FAILED, (sid, m, score)
                assert score.value is None
                assert score.reason.startswith("judge step "), score.reason
                assert score.evidence.details.get("attempts", 0) >= 1
    # the summary counts every outcome, failures included, and averages the scored only
    for m in METRICS:
        s = result.summary[m]
        assert sum(s.counts.values()) == len(ids)
        failed = sum(result.scores[i][m].outcome is Outcome.FAILED for i in ids)
        assert s.counts["failed"] == failed
        assert sum(s.fail_reasons.values()) == failed
    if outcomes["failed"]:
        assert result.judge_stats["failed_steps"] >= 1
    # bounded retries: in count per step and in time
    by_step: dict[str, list[dict[str, Any]]] = defaultdict(list)
    for c in calls:
        by_step[c["step"]].append(c)
    for step_calls in by_step.values():
        assert len(step_calls) <= MAX_CALLS_PER_STEP
        first = min(c["started_at"] for c in step_calls)
        last = max(c["started_at"] + c["latency_s"] for c in step_calls)
        assert last - first <= POLICY.step_deadline_s + 1.0
    # bounded in time: no call outlives its timeout by more than the event loop was unable to
    # run past that timeout (the timer fires, and the call is cancelled, when the loop gets to
    # it) plus 0.5 s for the cancellation's own steps. On an idle machine the lateness is ~0.
    for c in calls:
        start = c["started_at"] - run.clock
        due = start + POLICY.call_timeout_s
        late = loop_lateness(run, due, start + c["latency_s"])
        assert c["latency_s"] <= POLICY.call_timeout_s + late + 0.5, (c["error"], late)
    assert wall < WALL_BOUND_S
    check_no_partial_parse(calls)
    return dict(outcomes)


@pytest.mark.parametrize("fault", FAULT_KINDS)
def test_each_fault_kind_ends_in_defined_outcomes(fault: str, clean: dict[str, Any], tmp_path: Path) -> None:
    samples = make_samples(N_SAMPLES)
    world = JudgeWorld(fault_rate=0.3, faults=[fault], seed=11)
    run = run_world(world, samples, tmp_path / "run.db")
    result, calls = run.result, run.calls
    assert world.injected[fault] >= 3, f"the world injected too few {fault} faults to test"
    outcomes = check_run(run, clean, samples)
    stats = result.judge_stats
    assert stats["calls"] == len(calls)
    # every request the judge's server read is one recorded call, plus the preflight ping
    whole = [r for r in run.requests if r.json is not None]
    read = Counter(json.dumps(r.json["messages"]) for r in whole)
    recorded = Counter(json.dumps(c["messages"]) for c in calls)
    unrecorded = read - recorded
    assert sum(unrecorded.values()) == 1, "a request reached the server without a recorded call"
    assert [prompt_id_of(r.json) for r in whole
            if json.dumps(r.json["messages"]) in unrecorded] == [None]  # the ping
    # and a recorded call the server never read (whole) ran out of time before its request was
    # written, or while writing it (the server then read a cut body): under load the client
    # itself can take longer than the timeout to send. Each is a timeout. Idle: none.
    never_read = recorded - read
    for key, n in never_read.items():
        assert n <= sum(timed_out(c) for c in calls if json.dumps(c["messages"]) == key), (
            f"{n} call(s) the server never read did not time out")
    assert len(run.requests) - len(whole) <= sum(never_read.values())
    if fault in CONTENT_FAULTS:
        assert stats["reasks"] >= 1
        # every broken answer the world sent was refused, unless its call had already timed out
        # (the client stopped waiting before it read the answer); nothing else was refused
        faulted = Counter(key for key, kind in world.log if kind is not None)
        refused = Counter(json.dumps(c["messages"]) for c in calls
                          if c["error"] and c["error"].startswith("unusable output"))
        assert not refused - faulted, "refused an answer the world did not break"
        for key, n in (faulted - refused).items():
            assert n <= sum(timed_out(c) for c in calls if json.dumps(c["messages"]) == key)
        assert sum(faulted.values()) == world.injected[fault]
    else:
        assert stats["retries"] >= 1
    assert outcomes.get("failed", 0) <= 0.1 * N_SAMPLES * len(METRICS)


def test_truncated_claims_are_reasked_never_read_short(clean: dict[str, Any], tmp_path: Path) -> None:
    """A claims list cut after its first item (finish_reason "stop") and one cut at max_tokens are
    both refused and asked again; the claims in the evidence are the complete list."""
    samples = make_samples(N_SAMPLES)
    world = JudgeWorld(fault_rate=0.5, faults=["truncated_stop", "truncated_length"], seed=3)
    run = run_world(world, samples, tmp_path / "run.db")
    result, calls = run.result, run.calls
    check_run(run, clean, samples)
    claim_calls = [c for c in calls if c["prompt_id"] == "extract_claims"]
    # (a call that timed out, which a loaded machine can cause, is not a cut answer)
    cut = [c for c in claim_calls if c["error"] and not timed_out(c)]
    assert cut, "the world should have cut some claim lists"
    for c in cut:
        assert c["parsed"] is None
        assert "cut off" in c["error"] or "incomplete" in c["error"]
        # the next attempt of the same step re-asks, quoting what was wrong
        later = [d for d in claim_calls if d["step"] == c["step"] and d["attempt"] > c["attempt"]]
        if later:
            assert later[0]["messages"][-1]["role"] == "user"
            assert "could not be used" in later[0]["messages"][-1]["content"]
    # a step that ended with a cut output only is a failure, never a shorter list
    for sid, per in result.scores.items():
        f = per["faithfulness"]
        if f.outcome is Outcome.SCORED:
            assert len(f.evidence.claims) == len(clean[sid]["faithfulness"].evidence.claims)


def test_retry_after_is_honoured(tmp_path: Path) -> None:
    samples = make_samples(4)
    world = JudgeWorld(fault_rate=0.4, faults=["http429_retry_after"], seed=5)
    calls = run_world(world, samples, tmp_path / "run.db", metrics=["faithfulness"]).calls
    by_step: dict[str, list[dict[str, Any]]] = defaultdict(list)
    for c in calls:
        by_step[c["step"]].append(c)
    gaps = []
    for step_calls in by_step.values():
        step_calls.sort(key=lambda c: c["attempt"])
        for prev, nxt in itertools.pairwise(step_calls):
            if prev["error"] and "asked to wait 1 s" in prev["error"]:
                gaps.append(nxt["started_at"] - (prev["started_at"] + prev["latency_s"]))
    assert gaps, "no 429 with Retry-After was retried"
    # Retry-After: 1, capped at 3 x backoff_max_s = 0.6 s by the policy
    assert min(gaps) >= 0.55


def test_twenty_percent_broken_loses_at_most_two_percent(clean: dict[str, Any], tmp_path: Path) -> None:
    """20% of the judge's answers broken, every kind mixed: at most 2% of scores end failed."""
    samples = make_samples(50, seed=2)
    world = JudgeWorld(fault_rate=0.2, faults=FAULT_KINDS, seed=20)
    run = run_world(world, samples, tmp_path / "run.db")
    result, calls, wall = run.result, run.calls, run.wall
    n_scores = len(samples) * len(METRICS)
    failed = sum(s.outcome is Outcome.FAILED for per in result.scores.values() for s in per.values())
    assert failed <= 0.02 * n_scores, f"{failed} of {n_scores} scores failed"
    assert sum(world.injected.values()) >= 0.15 * sum(world.answered.values())
    assert len(set(world.injected)) >= 10
    assert all(len(result.scores[s["id"]]) == len(METRICS) for s in samples)
    check_no_partial_parse(calls)
    assert wall < 40.0


def test_server_that_never_answers_stops_the_run_in_bounded_time(tmp_path: Path) -> None:
    # a judge that accepts calls and never answers opens the circuit (8 calls in a row
    # without an answer, over two rounds of time-outs): the run stops, saying so, instead of
    # sending every remaining step into the silence
    samples = make_samples(3)
    with FakeOpenAIServer(handler=lambda r: Reply.hang() if r.path.endswith("/chat/completions") else None) as srv:
        t0 = time.monotonic()
        with pytest.raises(JudgeUnavailableError, match="stopped answering"):
            ragsight.evaluate(samples, ["faithfulness", "context_precision"], store=tmp_path / "run.db",
                              judge=ragsight.JudgeSpec("openai:m", base_url=srv.url),
                              options=ragsight.RunOptions(policy=POLICY, preflight=False))
        wall = time.monotonic() - t0
    # at most one step's attempts: 4 attempts of 1.5 s plus backoff
    assert wall < POLICY.max_attempts * (POLICY.call_timeout_s + 3 * POLICY.backoff_max_s) + 5
    with Store(tmp_path / "run.db") as st:
        run = st.runs()[0]
        assert run.status == "interrupted"
        assert st.finished_samples(run.id) == set()


async def test_preflight_against_a_server_that_never_answers_is_bounded(tmp_path: Path) -> None:
    with FakeOpenAIServer(handler=lambda r: Reply.hang()) as srv, pytest.raises(JudgeUnavailableError):
        await asyncio.wait_for(
            ragsight.aevaluate(make_samples(1), ["faithfulness"], store=tmp_path / "run.db",
                               judge=ragsight.JudgeSpec("openai:m", base_url=srv.url),
                               options=ragsight.RunOptions(policy=POLICY)),
            timeout=3 * POLICY.call_timeout_s + 4,
        )


def test_fault_world_injects_only_into_judge_steps() -> None:
    """Guard for the harness itself: the ping is never broken and prompt ids come from the schema."""
    assert prompt_id_of({"response_format": {"json_schema": {"name": "verify_claims"}}}) == "verify_claims"
    assert prompt_id_of({"messages": []}) is None
    assert set(FAULT_KINDS) == set(CONTENT_FAULTS) | set(TRANSPORT_FAULTS)
