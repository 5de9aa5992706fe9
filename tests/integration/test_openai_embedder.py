"""OpenAIEmbedder over real HTTP against the fault-injecting fake server."""

from __future__ import annotations

import asyncio
import threading
import time
import traceback
from collections.abc import AsyncIterator, Callable, Iterator
from typing import Any

import numpy as np
import pytest

from ragsight.embed._openai import EmbeddingError, OpenAIEmbedder
from ragsight.embed._protocol import Embedder
from ragsight.errors import ConfigError
from tests.fakes import FakeOpenAIServer, RecordedRequest, Reply, embedding_for, unused_port

SECRET = "sk-test-SECRET123"
TEXTS = ["alpha", "beta", "gamma", "delta", "epsilon"]


def expected(texts: list[str], dim: int = 8) -> np.ndarray:
    raw = np.array([embedding_for(t, dim) for t in texts], dtype=np.float64)
    unit: np.ndarray = raw / np.linalg.norm(raw, axis=1, keepdims=True)
    return unit


@pytest.fixture(autouse=True)
def _clean_env(monkeypatch: pytest.MonkeyPatch) -> None:
    for name in ("OPENAI_API_KEY", "OPENAI_BASE_URL"):
        monkeypatch.delenv(name, raising=False)
    for name in ("HTTP_PROXY", "HTTPS_PROXY", "ALL_PROXY"):
        monkeypatch.delenv(name, raising=False)
        monkeypatch.delenv(name.lower(), raising=False)


@pytest.fixture
def server() -> Iterator[FakeOpenAIServer]:
    with FakeOpenAIServer(embedding_dim=8) as srv:
        yield srv


@pytest.fixture
async def make_embedder(
    server: FakeOpenAIServer,
) -> AsyncIterator[Callable[..., OpenAIEmbedder]]:
    made: list[OpenAIEmbedder] = []

    def make(**kw: Any) -> OpenAIEmbedder:
        kw.setdefault("base_url", server.url)
        kw.setdefault("api_key", SECRET)
        kw.setdefault("timeout", 5.0)
        embedder = OpenAIEmbedder("fake-embed", **kw)
        made.append(embedder)
        return embedder

    yield make
    for embedder in made:
        await embedder.aclose()


def test_identity_and_protocol_conformance() -> None:
    embedder = OpenAIEmbedder("text-embedding-3-small", "http://localhost:9/v1")
    assert isinstance(embedder, Embedder)
    assert embedder.name == "openai:text-embedding-3-small"
    assert embedder.batch_size == 64


@pytest.mark.parametrize(
    ("kwargs", "match"),
    [
        ({"batch_size": 0}, "batch_size"),
        ({"max_attempts": 0}, "max_attempts"),
        ({"base_url": "127.0.0.1:8000"}, "http:// or https://"),
    ],
)
def test_bad_settings_raise_config_error(kwargs: dict[str, Any], match: str) -> None:
    with pytest.raises(ConfigError, match=match):
        OpenAIEmbedder("m", **kwargs)


async def test_batches_and_normalises(
    server: FakeOpenAIServer, make_embedder: Callable[..., OpenAIEmbedder]
) -> None:
    vectors = await make_embedder(batch_size=2).embed(TEXTS)

    requests = server.requests_to("/embeddings")
    # batches go out concurrently, so they may arrive in any order
    assert sorted(r.json["input"] for r in requests) == [
        ["alpha", "beta"],
        ["epsilon"],
        ["gamma", "delta"],
    ]
    assert {r.json["model"] for r in requests} == {"fake-embed"}
    assert {r.headers["authorization"] for r in requests} == {f"Bearer {SECRET}"}
    assert vectors.shape == (5, 8)
    assert vectors.dtype == np.float32
    np.testing.assert_allclose(np.linalg.norm(vectors, axis=1), 1.0, rtol=1e-6)
    np.testing.assert_allclose(vectors, expected(TEXTS), rtol=1e-5, atol=1e-6)


async def test_rows_follow_the_index_field_not_the_response_order(
    make_embedder: Callable[..., OpenAIEmbedder],
) -> None:
    with FakeOpenAIServer(reverse_embeddings=True) as srv:
        embedder = make_embedder(base_url=srv.url)
        vectors = await embedder.embed(TEXTS)
        await embedder.aclose()
    np.testing.assert_allclose(vectors, expected(TEXTS), rtol=1e-5, atol=1e-6)


async def test_dimensions_are_sent_and_empty_input_makes_no_request(
    server: FakeOpenAIServer, make_embedder: Callable[..., OpenAIEmbedder]
) -> None:
    embedder = make_embedder(dimensions=4)
    assert (await embedder.embed([])).shape == (0, 4)
    assert server.requests == []
    vectors = await embedder.embed(["one", ""])
    assert vectors.shape == (2, 4)
    assert server.requests[0].json["dimensions"] == 4
    assert server.requests[0].json["input"] == ["one", " "]  # OpenAI rejects empty strings


async def test_a_single_string_is_refused(make_embedder: Callable[..., OpenAIEmbedder]) -> None:
    with pytest.raises(TypeError, match="not one string"):
        await make_embedder().embed("alpha")


async def test_concurrency_is_limited(
    server: FakeOpenAIServer, make_embedder: Callable[..., OpenAIEmbedder]
) -> None:
    lock = threading.Lock()
    active = [0, 0]  # now, most

    def handler(req: RecordedRequest) -> Reply | None:
        with lock:
            active[0] += 1
            active[1] = max(active)
        time.sleep(0.1)
        with lock:
            active[0] -= 1
        return None  # default: deterministic vectors

    server.handler = handler
    vectors = await make_embedder(batch_size=1, max_concurrency=2).embed(TEXTS)
    assert len(server.requests) == 5
    assert active[1] == 2
    np.testing.assert_allclose(vectors, expected(TEXTS), rtol=1e-5, atol=1e-6)


async def test_retries_a_rate_limited_batch_after_retry_after(
    server: FakeOpenAIServer, make_embedder: Callable[..., OpenAIEmbedder]
) -> None:
    server.enqueue(Reply.error(429, "slow down", headers={"Retry-After": "1"}))
    start = time.monotonic()
    vectors = await make_embedder().embed(TEXTS[:2])
    elapsed = time.monotonic() - start
    assert len(server.requests) == 2
    assert 0.95 <= elapsed < 3.0  # waited the second the server asked for
    np.testing.assert_allclose(vectors, expected(TEXTS[:2]), rtol=1e-5, atol=1e-6)


async def test_retries_resets_and_server_errors(
    server: FakeOpenAIServer, make_embedder: Callable[..., OpenAIEmbedder]
) -> None:
    server.enqueue(Reply.reset(), Reply.error(503))
    vectors = await make_embedder().embed(["x"])
    assert len(server.requests) == 3
    assert vectors.shape == (1, 8)


async def test_gives_up_after_max_attempts(
    server: FakeOpenAIServer, make_embedder: Callable[..., OpenAIEmbedder]
) -> None:
    server.handler = lambda req: Reply.error(500, "boom")
    with pytest.raises(EmbeddingError, match=r"after 2 attempts.*HTTP 500") as info:
        await make_embedder(max_attempts=2).embed(["x"])
    assert (info.value.attempts, info.value.status, info.value.fatal) == (2, 500, False)
    assert len(server.requests) == 2


async def test_a_retry_after_beyond_the_budget_fails_at_once(
    server: FakeOpenAIServer, make_embedder: Callable[..., OpenAIEmbedder]
) -> None:
    server.enqueue(Reply.error(429, headers={"Retry-After": "120"}))
    start = time.monotonic()
    with pytest.raises(EmbeddingError, match="retry_budget"):
        await make_embedder(retry_budget=10.0).embed(["x"])
    assert time.monotonic() - start < 1.0
    assert len(server.requests) == 1


async def test_rejected_key_is_fatal_not_retried_and_never_leaks(
    server: FakeOpenAIServer, make_embedder: Callable[..., OpenAIEmbedder]
) -> None:
    server.enqueue(Reply.error(401, f"Incorrect API key provided: {SECRET}"))
    with pytest.raises(EmbeddingError, match="check OPENAI_API_KEY") as info:
        await make_embedder().embed(["x"])
    err = info.value
    assert (err.fatal, err.status, err.attempts) == (True, 401, 1)
    rendered = "".join(traceback.format_exception(type(err), err, err.__traceback__))
    for text in (str(err), repr(err), rendered):
        assert "SECRET123" not in text
    assert len(server.requests) == 1


async def test_connection_refused_is_retried_then_reported(
    make_embedder: Callable[..., OpenAIEmbedder],
) -> None:
    embedder = make_embedder(base_url=f"http://127.0.0.1:{unused_port()}/v1", max_attempts=2)
    with pytest.raises(EmbeddingError, match=r"after 2 attempts.*connection refused"):
        await embedder.embed(["x"])


async def test_a_hanging_request_is_bounded_by_the_timeout(
    server: FakeOpenAIServer, make_embedder: Callable[..., OpenAIEmbedder]
) -> None:
    server.enqueue(Reply.hang())
    start = time.monotonic()
    with pytest.raises(EmbeddingError, match="no complete answer within 1 s"):
        await asyncio.wait_for(make_embedder(timeout=1.0, max_attempts=1).embed(["x"]), 5)
    assert time.monotonic() - start < 2.0


async def test_wrong_number_of_vectors_is_an_error(
    server: FakeOpenAIServer, make_embedder: Callable[..., OpenAIEmbedder]
) -> None:
    server.enqueue(Reply.json({"data": [{"index": 0, "embedding": [1.0, 0.0]}]}))
    with pytest.raises(EmbeddingError, match="1 embeddings for 2 texts"):
        await make_embedder(max_attempts=1).embed(["a", "b"])


async def test_base64_vectors_and_zero_vectors(
    server: FakeOpenAIServer, make_embedder: Callable[..., OpenAIEmbedder]
) -> None:
    import base64

    packed = base64.b64encode(np.array([3.0, 4.0], dtype="<f4").tobytes()).decode()
    server.enqueue(Reply.json({"data": [{"index": 0, "embedding": packed},
                                        {"index": 1, "embedding": [1.0, 0.0]}]}))
    vectors = await make_embedder().embed(["a", "b"])
    np.testing.assert_allclose(vectors, [[0.6, 0.8], [1.0, 0.0]], rtol=1e-6)
    # an all-zero vector has no direction: refused with its cause, never a similarity of 0
    server.enqueue(Reply.json({"data": [{"index": 0, "embedding": packed},
                                        {"index": 1, "embedding": [0.0, 0.0]}]}))
    with pytest.raises(EmbeddingError, match="all-zero embedding"):
        await make_embedder(max_attempts=1).embed(["a", "b"])
