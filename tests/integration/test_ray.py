"""The Ray backend on a real local Ray cluster (worker processes, not local mode).

One cluster is started for the module (``num_cpus=2``, no dashboard, no usage stats) and shut
down at the end. Each test compares a Ray run with the in-process engine on the same data set,
sample by sample: values, outcomes, reasons, evidence (claims, details, call references) and the
judge calls stored for each sample. Needs the ``ray`` extra: ``pip install 'ragsight[ray]'``.

The scripted judge's handlers are module-level functions so that worker processes can import
them (the fixture puts the repository on the workers' PYTHONPATH).
"""

from __future__ import annotations

import asyncio
import dataclasses
import functools
import hashlib
import json
import logging
import os
import re
import sys
import threading
import time
from collections.abc import Iterator, Mapping
from pathlib import Path
from typing import Any

import pytest

ray = pytest.importorskip("ray", reason="the Ray backend needs the 'ray' extra: pip install 'ragsight[ray]'")

import ragsight  # noqa: E402
from ragsight import Outcome, Score  # noqa: E402
from ragsight.analyses import AnalysisSettings  # noqa: E402
from ragsight.engine._engine import describe_metrics, settings_for  # noqa: E402
from ragsight.engine._ray import import_ray, run_samples_ray  # noqa: E402
from ragsight.errors import MissingExtraError  # noqa: E402
from ragsight.judge import ScriptedProvider, UnexpectedPromptError, make_judge  # noqa: E402
from ragsight.metrics import resolve_metrics  # noqa: E402
from ragsight.run import new_run_id  # noqa: E402
from ragsight.sample import Dataset  # noqa: E402
from ragsight.store import SQLiteCallCache, Store  # noqa: E402
from tests.fakes import FakeOpenAIServer, RecordedRequest, Reply  # noqa: E402
from tests.fakes.capacity import Capacity  # noqa: E402
from tests.fakes.embedder import TableEmbedder  # noqa: E402

pytestmark = [pytest.mark.slow, pytest.mark.ray]

ROOT = Path(__file__).resolve().parents[2]
METRICS = ["faithfulness", "answer_relevancy", "context_precision", "context_recall",
           "factual_correctness", "noise_sensitivity", "context_entity_recall"]
WORKER_KEY = "sk-ray-worker-env-KEY"
# A guard against a stalled run (a permit held by a dead worker), not a speed check: a Ray run
# here takes 25-35 s on a loaded 2-core machine, and at 60 s every Ray test timed out on a
# more heavily loaded one.
RUN_TIMEOUT_S = 180.0


# ---- a deterministic world, for the scripted judge (module level: workers import it) -------


def _h(*parts: object) -> int:
    return int(hashlib.sha256("|".join(map(str, parts)).encode()).hexdigest()[:8], 16)


def _sentences(text: str) -> list[str]:
    return [s.strip() + "." for s in text.split(".") if s.strip() and "know" not in s]


def extract_claims(v: Mapping[str, Any]) -> Any:
    return {"claims": _sentences(v["raw_text"])}


def verify_claims(v: Mapping[str, Any]) -> Any:
    return {"verdicts": [
        {"id": i, "supported": _h(c, v["target"]) % 3 != 0,
         "chunks": [k for k in (1, 2, 3) if _h(c, k) % 2 == 0], "reason": f"scripted verdict {i}"}
        for i, c in enumerate(v["claim_list"], start=1)
    ]}


def chunk_relevance(v: Mapping[str, Any]) -> Any:
    return {"verdicts": [{"id": i, "relevant": _h(c, v["against"]) % 2 == 0, "reason": "scripted"}
                         for i, c in enumerate(v["chunk_list"], start=1)]}


def generate_questions(v: Mapping[str, Any]) -> Any:
    r = v["response_text"]
    return {"noncommittal": "know" in r,
            "questions": [f"Question {i} about {_h(r) % 997}?" for i in range(int(v["n"]))]}


def extract_entities(v: Mapping[str, Any]) -> Any:
    return {"entities": sorted({w.strip(".,?") for w in v["raw_text"].split() if w[:1].isupper()})}


def extract_claims_part(v: Mapping[str, Any]) -> Any:
    return {"claims": _sentences(v["raw_sentences"])}


HANDLERS = {"extract_claims": extract_claims, "extract_claims_part": extract_claims_part,
            "verify_claims": verify_claims,
            "chunk_relevance": chunk_relevance, "generate_questions": generate_questions,
            "extract_entities": extract_entities}


def _verify_or_die(marker: str, v: Mapping[str, Any]) -> Any:
    """Kill this worker process the first time sample 13 reaches claim verification."""
    if "Topic13" in v["source"]:
        try:
            fd = os.open(marker, os.O_CREAT | os.O_EXCL | os.O_WRONLY)
        except FileExistsError:
            return verify_claims(v)
        os.write(fd, str(os.getpid()).encode())
        os.close(fd)
        os._exit(1)
    return verify_claims(v)


def scripted_provider(kill_marker: str | None = None) -> ScriptedProvider:
    handlers = dict(HANDLERS)
    if kill_marker is not None:
        handlers["verify_claims"] = functools.partial(_verify_or_die, kill_marker)
    return ScriptedProvider(handlers, model="scripted-world")


def rows(n: int = 24) -> list[dict[str, Any]]:
    out = []
    for i in range(n):
        row: dict[str, Any] = {
            "id": f"s{i:02d}",
            "question": f"What does Acme{i} say about Topic{i}?",
            "contexts": [f"Acme{i} reports that Topic{i} grew by {i} percent. The Board met in Paris.",
                         f"Topic{i} is run by Dana{i} from Berlin.",
                         f"Unrelated note {i} about the weather in Oslo."],
            "response": (f"Acme{i} says Topic{i} grew by {i} percent. Dana{i} runs Topic{i}. "
                         f"The Board met in Rome."),
            "reference": f"Topic{i} grew by {i} percent according to Acme{i}. Dana{i} runs it from Berlin.",
        }
        if i % 7 == 3:
            row["response"] = f"I do not know about Topic{i}."  # no claims: undetermined, noncommittal
        if i % 5 == 4:
            del row["reference"]  # reference metrics are skipped
        out.append(row)
    return out


# ---- an OpenAI-compatible server that answers every step deterministically -----------------


class HttpWorld:
    """Answers chat completions from the request alone, and tracks calls in flight."""

    def __init__(self, latency_s: float = 0.01) -> None:
        self.latency_s = latency_s
        self.lock = threading.Lock()
        self.in_flight = 0
        self.peak = 0

    def __call__(self, req: RecordedRequest) -> Reply | None:
        if not req.path.endswith("/chat/completions"):
            return None  # embeddings: the server's deterministic default
        with self.lock:
            self.in_flight += 1
            self.peak = max(self.peak, self.in_flight)
        try:
            time.sleep(self.latency_s)
            return Reply.chat(json.dumps(self.answer(req.json)), usage=(100, 20))
        finally:
            with self.lock:
                self.in_flight -= 1

    @staticmethod
    def answer(body: Mapping[str, Any]) -> Any:
        js = (body.get("response_format") or {}).get("json_schema") or {}
        name, schema = js.get("name"), js.get("schema") or {}
        user = body["messages"][-1]["content"]

        def count(field: str) -> int:
            return int(schema["properties"][field].get("minItems", 3))

        if name == "extract_claims":
            text = re.findall(r"<(response|reference)>\n(.*?)\n</\1>", user, re.S)[-1][1]
            return {"claims": _sentences(text)}
        if name == "extract_claims_part":  # the sentences asked about, each its own claim
            return {"claims": _sentences(re.findall(r"<sentences>\n(.*?)\n</sentences>", user, re.S)[-1])}
        if name == "verify_claims":
            return {"verdicts": [{"id": i, "supported": _h(user, i) % 3 != 0,
                                  "chunks": [k for k in (1, 2, 3) if _h(user, i, k) % 2 == 0],
                                  "reason": "http verdict"} for i in range(1, count("verdicts") + 1)]}
        if name == "chunk_relevance":
            return {"verdicts": [{"id": i, "relevant": _h(user, i) % 2 == 0, "reason": "http"}
                                 for i in range(1, count("verdicts") + 1)]}
        if name == "generate_questions":
            return {"noncommittal": False,
                    "questions": [f"Question {i} {_h(user) % 997}?" for i in range(count("questions"))]}
        if name == "extract_entities":
            text = re.findall(r"<text>\n(.*?)\n</text>", user, re.S)[-1]
            return {"entities": sorted({w.strip(".,?") for w in text.split() if w[:1].isupper()})}
        raise AssertionError(f"unexpected prompt {name!r}")


# ---- the cluster, and runs to compare -------------------------------------------------------


@pytest.fixture(scope="module")
def ray_cluster() -> Iterator[None]:
    """A private local Ray instance for this module. The workers get the repository on their
    PYTHONPATH (to import this module's handlers) and an API key in their environment; the
    driver's environment is restored at once, so the key can only reach a worker from the
    worker's own environment."""
    if ray.is_initialized():
        pytest.skip("Ray is already initialised in this process")
    env = {"RAY_USAGE_STATS_ENABLED": "0", "OPENAI_API_KEY": WORKER_KEY,
           "PYTHONPATH": os.pathsep.join(p for p in (str(ROOT), os.environ.get("PYTHONPATH")) if p)}
    saved = {k: os.environ.get(k) for k in env}
    os.environ.update(env)
    try:
        ray.init(address="local", num_cpus=2, include_dashboard=False, log_to_driver=False,
                 logging_level=logging.WARNING)
    finally:
        for k, v in saved.items():
            if v is None:
                os.environ.pop(k, None)
            else:
                os.environ[k] = v
    try:
        yield
    finally:
        ray.shutdown()


@pytest.fixture(scope="module")
def scripted_local(tmp_path_factory: pytest.TempPathFactory) -> Run:
    """The in-process run with the scripted judge, the reference for the Ray runs."""
    path = tmp_path_factory.mktemp("local") / "local.db"
    return asyncio.run(local_run(path, scripted_provider(), TableEmbedder()))


@dataclasses.dataclass
class Run:
    store: Store
    run_id: str
    stats: dict[str, Any]

    def scores(self) -> dict[str, dict[str, Score]]:
        return self.store.scores(self.run_id)

    def calls(self) -> dict[str, list[tuple[str, str]]]:
        # Which steps each sample's trail records. Whether a step shared by two samples was paid
        # or served from the cache depends on timing (two workers may ask it at the same moment),
        # so the cached flag is not compared; the cache is checked by the re-run below.
        out: dict[str, set[tuple[str, str]]] = {}
        for c in self.store.judge_calls(self.run_id):
            out.setdefault(c["sample_id"], set()).add((c["step"], c["prompt_id"]))
        return {k: sorted(v) for k, v in out.items()}

    def cached_flags(self) -> list[bool]:
        return [bool(c["cached"]) for c in self.store.judge_calls(self.run_id)]


async def local_run(path: Path, judge: Any, embedder: Any, base_url: str | None = None) -> Run:
    result = await ragsight.aevaluate(rows(), METRICS, embedder=embedder, store=str(path),
                                      judge=ragsight.JudgeSpec(judge, base_url=base_url),
                                      options=ragsight.RunOptions(preflight=False))
    return Run(Store(path), result.run_id, result.judge_stats)


async def ray_run(path: Path, judge_spec: Any, embedder_spec: Any, *, base_url: str | None = None,
                  cache: bool = True, **kw: Any) -> Run:
    """What ``_run`` does around ``run_samples_ray``: a judge on the driver for its cache, policy
    and stats, a run in the store, and the driver saving every sample."""
    st = Store(path)
    samples = Dataset.load(rows()).samples
    metrics = resolve_metrics(METRICS, samples)
    driver_spec = judge_spec() if callable(judge_spec) else judge_spec
    judge = make_judge(driver_spec, base_url=base_url).for_run(cache=SQLiteCallCache(st) if cache else None)
    settings = settings_for(metrics, AnalysisSettings())
    run_id = new_run_id()
    st.create_run(run_id, dataset="rows", judge=judge.name, embedder=None,
                  metrics=describe_metrics(metrics), config={}, metadata={}, samples=samples)
    try:
        await asyncio.wait_for(run_samples_ray(
            samples, metrics, judge=judge, judge_spec=judge_spec, base_url=base_url,
            embedder_spec=embedder_spec, embedder_base_url=base_url, settings=settings, store=st,
            run_id=run_id, concurrency=8, **kw), RUN_TIMEOUT_S)
    finally:
        await judge.aclose()
    st.finish_run(run_id, "completed", judge.stats.to_dict())
    return Run(st, run_id, judge.stats.to_dict())


def without_cache_flags(score: Score) -> Score:
    calls = tuple(dataclasses.replace(c, cached=False) for c in score.evidence.calls)
    return dataclasses.replace(score, evidence=dataclasses.replace(score.evidence, calls=calls))


def without_call_keys(score: Score) -> Score:
    calls = tuple(dataclasses.replace(c, key="") for c in score.evidence.calls)
    return dataclasses.replace(score, evidence=dataclasses.replace(score.evidence, calls=calls))


def assert_same_scores(a: Run, b: Run, *, ignore_cached: bool = False, other_server: bool = False) -> None:
    """``other_server``: the runs asked two servers, so their cache keys differ (a key holds the
    server: another server's answers are never replayed); everything else must match."""
    sa, sb = a.scores(), b.scores()
    assert list(sa) == list(sb) == [r["id"] for r in rows()]
    for sid in sa:
        assert sorted(sa[sid]) == sorted(sb[sid]) == sorted(METRICS), sid
        for m in METRICS:
            x, y = sa[sid][m], sb[sid][m]
            if ignore_cached:
                x, y = without_cache_flags(x), without_cache_flags(y)
            if other_server:
                x, y = without_call_keys(x), without_call_keys(y)
            assert x == y, f"{sid} {m}: {x} != {y}"


def assert_varied(run: Run) -> None:
    """The data set exercises every outcome the engine records, and real claims."""
    outcomes = {s.outcome for per in run.scores().values() for s in per.values()}
    assert {Outcome.SCORED, Outcome.SKIPPED, Outcome.UNDETERMINED} <= outcomes
    claims = [c for per in run.scores().values() for c in per["faithfulness"].evidence.claims]
    assert len(claims) > 40 and {c.supported for c in claims} == {True, False}


# ---- tests ----------------------------------------------------------------------------------


async def test_scripted_judge_on_two_workers_matches_the_in_process_engine(
    ray_cluster: None, scripted_local: Run, tmp_path: Path
) -> None:
    local = scripted_local
    dist = await ray_run(tmp_path / "ray.db", scripted_provider, TableEmbedder(), workers=2)

    assert_varied(local)
    assert_same_scores(local, dist)
    assert dist.calls() == local.calls()  # the same steps, stored once, under the same sample
    assert dist.store.finished_samples(dist.run_id) == {r["id"] for r in rows()}
    for k in ("steps", "calls", "cache_hits", "prompt_tokens", "completion_tokens", "by_prompt"):
        assert dist.stats[k] == local.stats[k], k


async def test_http_judge_limit_holds_for_the_cluster_and_the_cache_is_shared(
    ray_cluster: None, tmp_path: Path
) -> None:
    world = HttpWorld()
    with FakeOpenAIServer(handler=world) as srv:
        local = await local_run(tmp_path / "local.db", "openai:fake-model", "openai:fake-embed", srv.url)
        world.peak = 0
        chat_before = len(srv.requests_to("/chat/completions"))
        limiter: dict[str, int] = {}
        dist = await ray_run(tmp_path / "ray.db", "openai:fake-model", "openai:fake-embed",
                             base_url=srv.url, workers=2, judge_limit=3, limiter_stats=limiter)
        chats = srv.requests_to("/chat/completions")[chat_before:]
        assert_same_scores(local, dist)
        assert dist.calls() == local.calls()
        # Two workers with 8 samples in flight each never had more than 3 calls at the server.
        assert 1 < world.peak <= 3
        assert limiter["limit"] == 3 and limiter["peak"] <= 3
        # The key came from the workers' environment (set when the cluster started), not from
        # the driver, whose environment has none.
        assert "OPENAI_API_KEY" not in os.environ
        assert chats and {r.headers.get("authorization") for r in chats} == {f"Bearer {WORKER_KEY}"}

        # Again on the same store: every step is served by the cache actor from the driver's
        # SQLite cache; nothing is paid twice.
        chat_before = len(srv.requests_to("/chat/completions"))
        again = await ray_run(tmp_path / "ray.db", "openai:fake-model", "openai:fake-embed",
                              base_url=srv.url, workers=2)
        assert len(srv.requests_to("/chat/completions")) == chat_before
        assert again.stats["calls"] == 0 and again.stats["cache_hits"] == dist.stats["calls"]
        assert_same_scores(dist, again, ignore_cached=True)
        assert again.cached_flags() and all(again.cached_flags())
        assert not srv.errors


async def test_cluster_limit_adapts_to_a_small_server(ray_cluster: None, tmp_path: Path) -> None:
    """Two workers against a server that refuses (HTTP 429) any call beyond 4 in flight: the
    cluster's limiter hears the refusals of both and cuts the one limit they share; the scores
    are those of one process against an unlimited server."""
    with FakeOpenAIServer(handler=HttpWorld()) as srv:
        local = await local_run(tmp_path / "local.db", "openai:fake-model", "openai:fake-embed", srv.url)
    gate = Capacity(HttpWorld(latency_s=0.02), limit=4)
    with FakeOpenAIServer(handler=gate) as srv:
        limiter: dict[str, Any] = {}
        dist = await ray_run(tmp_path / "ray.db", "openai:fake-model", "openai:fake-embed",
                             base_url=srv.url, workers=2, judge_limit=32, limiter_stats=limiter)
    assert_same_scores(local, dist, other_server=True)
    assert gate.refused > 0 and gate.peak <= 4
    assert limiter["overloads"] == gate.refused
    assert limiter["cuts"] >= 1 and limiter["min_limit"] <= 4 < limiter["max_limit"]
    assert dist.stats["concurrency"]["overloads"] == gate.refused  # recorded with the run


async def test_a_worker_killed_mid_run_loses_and_duplicates_nothing(
    ray_cluster: None, scripted_local: Run, tmp_path: Path
) -> None:
    marker = tmp_path / "killed"
    local = scripted_local
    # judge_limit=1: a permit still held by the dead worker would stall the run (and time out).
    dist = await ray_run(tmp_path / "ray.db", functools.partial(scripted_provider, str(marker)),
                         TableEmbedder(), workers=2, batch_size=4, judge_limit=1)

    pid = int(marker.read_text())
    with pytest.raises(ProcessLookupError):
        os.kill(pid, 0)  # the worker really died
    assert pid != os.getpid()
    assert_same_scores(local, dist, ignore_cached=True)
    # Each sample's steps stored exactly once: none lost, none doubled by the retried batch.
    assert dist.calls() == local.calls()
    assert dist.store.finished_samples(dist.run_id) == {r["id"] for r in rows()}


async def test_an_unscripted_prompt_in_a_worker_fails_the_run_loudly(
    ray_cluster: None, tmp_path: Path
) -> None:
    with pytest.raises(UnexpectedPromptError, match="generate_questions"):
        await ray_run(tmp_path / "ray.db", functools.partial(_without, "generate_questions"),
                      TableEmbedder(), workers=1, cache=False)


def _without(prompt_id: str) -> ScriptedProvider:
    handlers = {k: v for k, v in HANDLERS.items() if k != prompt_id}
    return ScriptedProvider(handlers, model="scripted-world")


async def test_evaluate_with_backend_ray(ray_cluster: None, scripted_local: Run, tmp_path: Path) -> None:
    local = scripted_local
    result = await ragsight.aevaluate(rows(), METRICS, judge=scripted_provider(), embedder=TableEmbedder(),
                                      store=str(tmp_path / "ray.db"),
                                      options=ragsight.RunOptions(preflight=False, backend="ray"))
    assert result.status == "completed"
    assert_same_scores(local, Run(Store(tmp_path / "ray.db"), result.run_id, result.judge_stats))
    assert result.judge_stats["calls"] == local.stats["calls"]


def test_missing_ray_names_the_extra(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setitem(sys.modules, "ray", None)  # import ray -> ImportError
    with pytest.raises(MissingExtraError, match=r"ragsight\[ray\]"):
        import_ray()


async def test_ray_client_addresses_are_refused() -> None:
    samples = Dataset.load(rows(1)).samples
    with pytest.raises(ragsight.errors.ConfigError, match="head node"):
        await run_samples_ray(samples, resolve_metrics(["faithfulness"], samples), judge=None,
                              settings=AnalysisSettings(), store=None, run_id="r", concurrency=1,
                              ray_address="ray://head:10001")


async def test_conversations_score_each_level_on_ray_as_in_process(ray_cluster: None, tmp_path: Path) -> None:
    """Turns and conversations: the workers give each sample the metrics of its level (a turn
    metric on the turns, a conversation metric on the conversation), exactly as one process does."""
    from tests.unit.test_conversation_engine import CONVS, TurnsMade

    samples = Dataset.load(CONVS).samples
    metrics = [*resolve_metrics(["exact_match"], samples), TurnsMade()]
    local = await ragsight.aevaluate(CONVS, metrics, store=str(tmp_path / "local.db"),
                                     options=ragsight.RunOptions(preflight=False, show_progress=False))
    st = Store(tmp_path / "ray.db")
    judge = make_judge(scripted_provider()).for_run(cache=None)
    run_id = new_run_id()
    st.create_run(run_id, dataset="conversations", judge=judge.name, embedder=None,
                  metrics=describe_metrics(metrics), config={}, metadata={}, samples=samples)
    try:
        await asyncio.wait_for(run_samples_ray(
            samples, metrics, judge=judge, judge_spec=scripted_provider, base_url=None,
            embedder_spec=TableEmbedder(), embedder_base_url=None, settings=settings_for(metrics, AnalysisSettings()),
            store=st, run_id=run_id, concurrency=4, workers=2), RUN_TIMEOUT_S)
    finally:
        await judge.aclose()
    got = st.scores(run_id)
    assert got == Store(tmp_path / "local.db").scores(local.run_id)
    assert set(got["a:0"]) == {"exact_match"} and set(got["a"]) == {"turns_made"}
