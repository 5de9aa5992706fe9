"""An embedder for any OpenAI-compatible ``/embeddings`` endpoint (OpenAI, vLLM, Ollama,
the llama.cpp server, LiteLLM).

Embedders have no wrapper doing retries for them, so :class:`OpenAIEmbedder` retries on its own:
up to ``max_attempts`` attempts per batch, with exponential backoff that honours the server's
``Retry-After``, and never more than ``retry_budget`` seconds of waiting per batch.
"""

from __future__ import annotations

import asyncio
import base64
from collections.abc import Mapping, Sequence
from types import TracebackType
from typing import Any

import httpx
import numpy as np

from ..calls import (
    OVERLOAD_BUDGET_S,
    Backoff,
    Failure,
    Limiter,
    RetryExhaustedError,
    build_headers,
    classify,
    display_url,
    error_from_response,
    error_from_transport,
    make_client,
    parse_json_body,
    resolve_api_key,
    resolve_base_url,
    retry,
    secrets_of,
    timeout_error,
)
from ..errors import ConfigError, EmbeddingError, ProviderError

__all__ = ["EmbeddingError", "OpenAIEmbedder"]

_ROLE = "embedding server"
# No jitter: the embedder's batches are few; a server's Retry-After is honoured up to 60 s.
_BACKOFF = Backoff(base_s=0.5, max_s=8.0, jitter=0.0, retry_after_cap_s=60.0)


class OpenAIEmbedder:
    """An :class:`~ragsight.embed.Embedder` over an OpenAI-compatible embeddings API.

    ``base_url`` and ``api_key`` resolve as for :class:`ragsight.judge.OpenAIProvider`
    (``$OPENAI_BASE_URL``, ``$OPENAI_API_KEY``; no Authorization header without a key). Texts go
    out in batches of ``batch_size``, at most ``max_concurrency`` batches at a time (a ceiling:
    below it the limit adapts to what the server accepts, see ``ragsight._limiter``); each request
    is bounded by ``timeout`` seconds. ``dimensions`` is passed to models that can shorten their
    vectors (text-embedding-3-*). Rows come back L2-normalised as float32.
    """

    name: str

    def __init__(
        self,
        model: str,
        base_url: str | None = None,
        api_key: str | None = None,
        *,
        batch_size: int = 64,
        max_concurrency: int = 64,
        timeout: float = 60.0,
        max_attempts: int = 4,
        retry_budget: float = 30.0,
        dimensions: int | None = None,
        extra_headers: Mapping[str, str] | None = None,
    ) -> None:
        if not isinstance(model, str) or not model.strip():
            raise ConfigError(
                "OpenAIEmbedder needs a model name, e.g. OpenAIEmbedder('text-embedding-3-small')"
            )
        if batch_size < 1:
            raise ConfigError(f"batch_size must be at least 1, got {batch_size!r}")
        if max_concurrency < 1:
            raise ConfigError(f"max_concurrency must be at least 1, got {max_concurrency!r}")
        if not timeout > 0:
            raise ConfigError(f"timeout must be a positive number of seconds, got {timeout!r}")
        if max_attempts < 1:
            raise ConfigError(f"max_attempts must be at least 1, got {max_attempts!r}")
        if retry_budget < 0:
            raise ConfigError(f"retry_budget must be >= 0 seconds, got {retry_budget!r}")
        if dimensions is not None and dimensions < 1:
            raise ConfigError(f"dimensions must be a positive integer or None, got {dimensions!r}")
        self.model = model
        self.name = f"openai:{model}"
        self.base_url = resolve_base_url(base_url)
        self.batch_size = batch_size
        self.max_concurrency = max_concurrency
        self.timeout = float(timeout)
        self.max_attempts = max_attempts
        self.retry_budget = float(retry_budget)
        self.dimensions = dimensions
        api_key = resolve_api_key(api_key)
        self._has_key = api_key is not None
        self._headers = build_headers(api_key, extra_headers)
        self._secrets = secrets_of(api_key, extra_headers)
        self._dim: int | None = dimensions
        self._client: httpx.AsyncClient | None = None
        self._loop: asyncio.AbstractEventLoop | None = None
        self._semaphore: asyncio.Semaphore | None = None
        self.limiter = Limiter(max_concurrency, retry_after_cap_s=_BACKOFF.retry_after_cap_s)

    def __repr__(self) -> str:
        return f"OpenAIEmbedder(model={self.model!r}, base_url={display_url(self.base_url)!r})"

    async def __aenter__(self) -> OpenAIEmbedder:
        return self

    async def __aexit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        await self.aclose()

    async def embed(self, texts: Sequence[str], kind: str = "passage") -> np.ndarray:
        """Return an array of shape (len(texts), dim), rows L2-normalised. A vector that cannot
        give a similarity (NaN, infinite, beyond float32, all zeros) is refused like a failed
        request: retried, then EmbeddingError with the cause. ``kind`` is ignored: OpenAI-style embedding models are symmetric. Empty strings,
        which OpenAI rejects, are sent as a single space. For no texts the result has shape
        (0, dim), with dim 0 while it is still unknown. Raises EmbeddingError."""
        if isinstance(texts, str):
            raise TypeError("embed() takes a sequence of texts, not one string; wrap it in a list")
        items = [t if t.strip() else " " for t in texts]
        if not items:
            return np.zeros((0, self._dim or 0), dtype=np.float32)
        batches = [items[i : i + self.batch_size] for i in range(0, len(items), self.batch_size)]
        client, semaphore = self._session()
        results = await asyncio.gather(
            *(self._embed_batch(client, semaphore, batch) for batch in batches)
        )
        matrix = np.concatenate(results, axis=0) if len(results) > 1 else results[0]
        norms = np.linalg.norm(matrix, axis=1, keepdims=True)
        if np.all(np.isfinite(norms)) and np.all(norms > 0):
            unit: np.ndarray = matrix / norms
            return unit
        # squares of very large (or very small) float32 values overflow (underflow): in float64
        wide = matrix.astype(np.float64)
        return (wide / np.linalg.norm(wide, axis=1, keepdims=True)).astype(np.float32)

    async def aclose(self) -> None:
        """Close the HTTP client. The embedder can still be used afterwards."""
        client, self._client = self._client, None
        loop, self._loop = self._loop, None
        self._semaphore = None
        if client is not None and loop is asyncio.get_running_loop():
            await client.aclose()

    def _session(self) -> tuple[httpx.AsyncClient, asyncio.Semaphore]:
        loop = asyncio.get_running_loop()
        if self._client is None or self._semaphore is None or self._loop is not loop:
            self._client = make_client(
                timeout=self.timeout, max_connections=self.max_concurrency, headers=self._headers
            )
            self._semaphore = asyncio.Semaphore(self.max_concurrency)
            self._loop = loop
        return self._client, self._semaphore

    async def _embed_batch(
        self, client: httpx.AsyncClient, semaphore: asyncio.Semaphore, batch: list[str]
    ) -> np.ndarray:
        def as_failure(exc: BaseException) -> Failure | None:
            if isinstance(exc, asyncio.TimeoutError):
                exc = timeout_error(role=_ROLE, base_url=self.base_url, timeout=self.timeout)
            return classify(exc) if isinstance(exc, ProviderError) else None

        async def once() -> np.ndarray:
            async with semaphore:
                permit = await self.limiter.acquire()
                t0 = asyncio.get_running_loop().time()
                try:
                    out = await asyncio.wait_for(self._request(client, batch), self.timeout)
                except Exception as exc:
                    failure = as_failure(exc)
                    if failure is None:
                        self.limiter.forfeit()
                    else:
                        self.limiter.release(permit, failure)
                    raise
                except BaseException:
                    self.limiter.forfeit()
                    raise
                self.limiter.release(permit, None, asyncio.get_running_loop().time() - t0)
                return out

        try:
            vectors, _ = await retry(once, attempts=self.max_attempts, backoff=_BACKOFF,
                                     classify_error=as_failure, budget_s=self.retry_budget,
                                     overload_budget_s=OVERLOAD_BUDGET_S)
        except RetryExhaustedError as stop:
            error = stop.failure.exc
            assert isinstance(error, ProviderError)
            raise self._give_up(error, stop.attempts, budget=stop.why == "budget") from error
        return vectors

    def _give_up(self, error: ProviderError, attempts: int, budget: bool = False) -> EmbeddingError:
        if error.fatal or not error.retryable:
            why = ""
        elif budget:
            why = f" (stopped after {attempts} attempts: waiting longer would exceed retry_budget)"
        else:
            why = f" (after {attempts} attempts)"
        return EmbeddingError(
            f"embedding with {self.name!r} failed{why}: {error}",
            status=error.status,
            fatal=error.fatal,
            attempts=attempts,
        )

    async def _request(self, client: httpx.AsyncClient, batch: list[str]) -> np.ndarray:
        body: dict[str, Any] = {"model": self.model, "input": batch}
        if self.dimensions is not None:
            body["dimensions"] = self.dimensions
        try:
            response = await client.post(f"{self.base_url}/embeddings", json=body)
        except httpx.HTTPError as exc:
            raise error_from_transport(
                exc, role=_ROLE, base_url=self.base_url, timeout=self.timeout
            ) from exc
        if not response.is_success:
            raise error_from_response(
                response,
                role=_ROLE,
                model=self.model,
                base_url=self.base_url,
                secrets=self._secrets,
                has_key=self._has_key,
            )
        data = parse_json_body(response, role=_ROLE, secrets=self._secrets)
        return self._vectors(data, len(batch))

    def _vectors(self, data: Any, expected: int) -> np.ndarray:
        rows = data.get("data") if isinstance(data, Mapping) else None
        if not isinstance(rows, list) or len(rows) != expected:
            got = len(rows) if isinstance(rows, list) else "no"
            raise ProviderError(
                f"the {_ROLE} returned {got} embeddings for {expected} texts.", retryable=True
            )
        ordered: list[Any] = [None] * expected
        for position, row in enumerate(rows):
            if not isinstance(row, Mapping):
                raise ProviderError(f"the {_ROLE} returned a malformed embedding.", retryable=True)
            index = row.get("index", position)
            if (
                not isinstance(index, int)
                or not 0 <= index < expected
                or ordered[index] is not None
            ):
                raise ProviderError(
                    f"the {_ROLE} returned embeddings with bad or repeated indexes.",
                    retryable=True,
                )
            ordered[index] = _vector(row.get("embedding"))
        dims = {len(v) for v in ordered}
        if len(dims) != 1 or 0 in dims:
            raise ProviderError(
                f"the {_ROLE} returned embeddings of differing or zero lengths {sorted(dims)}.",
                retryable=False,
            )
        dim = dims.pop()
        if self._dim is not None and dim != self._dim:
            raise ProviderError(
                f"the {_ROLE} returned {dim}-dimensional embeddings after {self._dim}-dimensional "
                f"ones for model {self.model!r}; check that base_url serves one model.",
                retryable=False,
                fatal=True,
            )
        self._dim = dim
        return np.asarray(ordered, dtype=np.float32)


_F32_MAX = float(np.finfo(np.float32).max)


def _vector(raw: Any) -> np.ndarray:
    """One embedding as float32, refused (ProviderError, retryable) when it cannot give a
    similarity: non-numeric, NaN or infinite values (also inside base64), values beyond float32,
    or all zeros."""
    if isinstance(raw, str):  # encoding_format="base64": little-endian float32
        try:
            data = base64.b64decode(raw, validate=True)
        except ValueError:
            raise ProviderError(
                f"the {_ROLE} returned an embedding that is not valid base64.", retryable=True
            ) from None
        if len(data) % 4:
            raise ProviderError(
                f"the {_ROLE} returned a base64 embedding of {len(data)} bytes, not a whole "
                "number of float32 values.", retryable=True
            )
        wide = np.frombuffer(data, dtype="<f4").astype(np.float64)
    elif isinstance(raw, list):
        try:
            wide = np.asarray(raw, dtype=np.float64)
        except (TypeError, ValueError, OverflowError):
            raise ProviderError(
                f"the {_ROLE} returned an embedding with non-numeric values.", retryable=True
            ) from None
        if wide.ndim != 1 or wide.dtype.kind not in "fiu":
            raise ProviderError(
                f"the {_ROLE} returned an embedding that is not a flat list of numbers.",
                retryable=True,
            )
    else:
        raise ProviderError(
            f"the {_ROLE} returned an embedding that is not a list.", retryable=True
        )
    if not np.all(np.isfinite(wide)):
        kind = "NaN" if np.any(np.isnan(wide)) else "infinite"
        raise ProviderError(
            f"the {_ROLE} returned an embedding with {kind} values.", retryable=True
        )
    if wide.size and float(np.max(np.abs(wide))) > _F32_MAX:
        raise ProviderError(
            f"the {_ROLE} returned an embedding with values beyond the float32 range "
            f"(largest {float(np.max(np.abs(wide))):.3g}).", retryable=True
        )
    if wide.size and not np.any(wide):
        raise ProviderError(
            f"the {_ROLE} returned an all-zero embedding (it has no direction: no similarity "
            "can be taken from it).", retryable=True
        )
    return wide.astype(np.float32)
