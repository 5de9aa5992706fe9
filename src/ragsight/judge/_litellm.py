"""A judge provider for every model LiteLLM reaches: Anthropic, Gemini, Bedrock, Azure OpenAI,
Vertex AI, Mistral... through one adapter (``pip install 'ragsight[litellm]'``).

LiteLLM translates one OpenAI-shaped request into each provider's wire format (the Anthropic
Messages API, Gemini's generateContent, Bedrock's Converse, Azure's deployments URL with the
``api-key`` header and ``api-version``). This provider makes one attempt per call, as the
protocol asks: LiteLLM's own retries are switched off (``num_retries=0``, ``max_retries=0``)
and every failure is mapped to :class:`ProviderError` (with the server's Retry-After), so
retries, caching, parsing and call records come from :class:`ragsight.judge.Judge` exactly as
for the other providers.

Structured output: a JSON schema is sent as ``response_format`` when LiteLLM says the
provider takes one (it becomes a forced tool call for Anthropic and Bedrock, a response schema
for Gemini); else the schema is written into the prompt. A provider that rejects the schema,
the log-probabilities or the seed is asked again without it, and the instance remembers.

Nothing phones home: LiteLLM is imported only when the first call is made, with its model cost
map read from the package and its offline mode on (``LITELLM_LOCAL_MODEL_COST_MAP``,
``LITELLM_OFFLINE_MODE``), its debug banners off and no Hugging Face tokenizer download; the ``TIKTOKEN_CACHE_DIR`` it sets at import is put back.
"""

from __future__ import annotations

import asyncio
import json
import os
import socket
from collections.abc import Mapping, Sequence
from typing import Any

from ..calls import (
    Backoff,
    RetryExhaustedError,
    classify,
    clip,
    display_url,
    parse_retry_after,
    redact,
    redact_answer,
    retry,
)
from ..errors import ConfigError, JudgeUnavailableError, MissingExtraError
from ._choices import usable_logprob
from ._protocol import ChoiceScores, Completion, JudgeRequest, Message, ProviderError, UsageReader

__all__ = ["LITELLM_KINDS", "LiteLLMProvider", "import_litellm", "litellm_model"]

# judge spec prefixes served by this provider: "anthropic:MODEL" -> LiteLLM's "anthropic/MODEL";
# "litellm:PROVIDER/MODEL" passes any LiteLLM model string through.
LITELLM_KINDS = ("anthropic", "gemini", "bedrock", "azure", "vertex_ai", "mistral", "litellm")
# Environment variables whose values LiteLLM may send as credentials (redacted from answers).
_SECRET_VARS = ("_API_KEY", "_SECRET_ACCESS_KEY", "_SESSION_TOKEN")
# where each provider's key is read from, for messages
_KEY_HINT = {
    "anthropic": "ANTHROPIC_API_KEY",
    "gemini": "GEMINI_API_KEY",
    "azure": "AZURE_API_KEY",
    "bedrock": "the AWS credentials (AWS_ACCESS_KEY_ID / AWS_PROFILE)",
    "vertex_ai": "GOOGLE_APPLICATION_CREDENTIALS",
    "mistral": "MISTRAL_API_KEY",
    "openai": "OPENAI_API_KEY",
}
_MODES = ("json_schema", "prompt")
_TOP_LOGPROBS = 5
_PREFLIGHT_ATTEMPTS = 3
_PREFLIGHT_BACKOFF = Backoff(base_s=0.25, max_s=2.0, jitter=0.0, retry_after_cap_s=2.0)
_SCHEMA_NAME_CHARS = frozenset("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789_-")
_DNS_TRANSIENT = {getattr(socket, "EAI_AGAIN", -3)}


def import_litellm() -> Any:
    """LiteLLM, imported offline and quiet. Raises MissingExtraError when it is not installed."""
    # Read at import: without them LiteLLM fetches its model price list from the internet (and
    # keeps retrying in a background thread), and may fetch tokenizers and checks later.
    os.environ.setdefault("LITELLM_LOCAL_MODEL_COST_MAP", "True")
    os.environ.setdefault("LITELLM_OFFLINE_MODE", "true")
    before = os.environ.get("TIKTOKEN_CACHE_DIR")
    try:
        import litellm
    except ImportError as exc:
        raise MissingExtraError("the LiteLLM judge (anthropic:, gemini:, bedrock:, azure:...)",
                                "litellm", "litellm") from exc
    finally:
        # LiteLLM points tiktoken at its own copy of one encoding for the whole process; leave
        # the user's setting as it was.
        if before is None:
            os.environ.pop("TIKTOKEN_CACHE_DIR", None)
        else:
            os.environ["TIKTOKEN_CACHE_DIR"] = before
    litellm.suppress_debug_info = True
    litellm.disable_hf_tokenizer_download = True
    return litellm


def litellm_model(spec_kind: str, rest: str) -> str:
    """LiteLLM's model string for a judge spec: ``anthropic:claude-x`` -> ``anthropic/claude-x``;
    ``litellm:openrouter/x`` -> ``openrouter/x``."""
    return rest if spec_kind == "litellm" else f"{spec_kind}/{rest}"


class LiteLLMProvider:
    """A :class:`~ragsight.judge.JudgeProvider` over LiteLLM.

    ``model`` is LiteLLM's model string (``"anthropic/claude-3-5-haiku-latest"``,
    ``"gemini/gemini-2.0-flash"``, ``"bedrock/anthropic.claude-3-haiku-20240307-v1:0"``,
    ``"azure/DEPLOYMENT"``); it is also the model recorded with each call and part of every cache
    key, so the same model name reached through two providers never shares cached answers.
    ``api_base`` / ``api_key`` / ``api_version`` default to LiteLLM's environment variables
    (``ANTHROPIC_API_KEY``, ``AZURE_API_BASE``, ``AZURE_API_KEY``, ``AZURE_API_VERSION``...).
    ``name`` is the spec the user gave (default ``litellm:MODEL``).
    """

    name: str
    model: str
    supports_choices: bool
    max_concurrency: int
    context_window: int | None

    def __init__(
        self,
        model: str,
        *,
        api_base: str | None = None,
        api_key: str | None = None,
        api_version: str | None = None,
        name: str | None = None,
        timeout: float = 60.0,
        max_concurrency: int = 16,
        context_window: int | None = None,
        extra_headers: Mapping[str, str] | None = None,
        logprobs: bool = True,
    ) -> None:
        if not isinstance(model, str) or "/" not in model.strip("/"):
            raise ConfigError(
                f"LiteLLMProvider needs a model as PROVIDER/MODEL, e.g. 'anthropic/claude-3-5-haiku-latest', "
                f"not {model!r}"
            )
        if not timeout > 0:
            raise ConfigError(f"timeout must be a positive number of seconds, got {timeout!r}")
        if max_concurrency < 1:
            raise ConfigError(f"max_concurrency must be at least 1, got {max_concurrency!r}")
        self.model = model.strip()
        self.provider = self.model.split("/", 1)[0]
        self.name = name or f"litellm:{self.model}"
        self._usage = UsageReader(self.name)
        if self.provider == "azure":
            api_base = api_base or os.environ.get("AZURE_API_BASE")
            api_version = api_version or os.environ.get("AZURE_API_VERSION")
            if not api_base:
                raise ConfigError(
                    "an Azure OpenAI judge needs the resource's endpoint: --base-url "
                    "https://RESOURCE.openai.azure.com (or AZURE_API_BASE)"
                )
            if not api_version:
                raise ConfigError(
                    "an Azure OpenAI judge needs the API version: --api-version 2024-10-21 "
                    "(or AZURE_API_VERSION)"
                )
        self.api_base = api_base.rstrip("/") if api_base else None
        self.api_version = api_version
        self.timeout = float(timeout)
        self.supports_choices = False
        self.max_concurrency = max_concurrency
        self.context_window = context_window
        self._api_key = api_key.strip() if api_key and api_key.strip() else None
        self._extra_headers = dict(extra_headers or {})
        # LiteLLM reads keys from the environment itself: those are secrets of this judge too
        from_env = [v for k, v in os.environ.items() if k.endswith(_SECRET_VARS) and v.strip()]
        self._secrets = tuple(sorted({s for s in (self._api_key, *self._extra_headers.values(), *from_env) if s},
                                     key=len, reverse=True))
        self._logprobs = bool(logprobs)
        self._structured = _MODES[0]
        self._seed = True
        self._params: frozenset[str] | None = None
        self._semaphore: asyncio.Semaphore | None = None
        self._loop: asyncio.AbstractEventLoop | None = None

    def __repr__(self) -> str:
        where = f", api_base={display_url(self.api_base)!r}" if self.api_base else ""
        return f"LiteLLMProvider(model={self.model!r}{where})"

    @property
    def structured_mode(self) -> str:
        """"json_schema" (sent as response_format, translated by LiteLLM) or "prompt"."""
        return self._structured

    @property
    def logprobs(self) -> bool:
        """Whether requests ask for the first token's top log-probabilities."""
        return self._logprobs

    # -- the protocol -------------------------------------------------------------------------

    async def complete(self, request: JudgeRequest) -> Completion:
        """Send ``request`` once (plus re-sends without a parameter the provider rejected) and
        return the first choice. Raises ProviderError."""
        return await self._call(request, logprobs=self._logprobs)

    async def score_choices(self, request: JudgeRequest, choices: Sequence[str]) -> ChoiceScores:
        raise NotImplementedError(
            "LiteLLMProvider cannot score choices from next-token log-probabilities "
            "(supports_choices is False); use complete() instead"
        )

    def count_tokens(self, text: str) -> int:
        """An estimate, ``ceil(len(text) / 4)``: no tokenizer is loaded (LiteLLM's would
        download some from the internet)."""
        return -(-len(text) // 4)

    async def preflight(self) -> None:
        """A 1-token "ping"; raises JudgeUnavailableError when the provider cannot be reached,
        rejects the key or does not know the model."""
        ping = JudgeRequest(prompt_id="preflight", prompt_version="1",
                            messages=(Message("user", "ping"),), max_tokens=1, seed=None)
        try:
            await retry(lambda: self._call(ping, logprobs=False), attempts=_PREFLIGHT_ATTEMPTS,
                        backoff=_PREFLIGHT_BACKOFF,
                        classify_error=lambda e: classify(e) if isinstance(e, ProviderError) else None)
        except RetryExhaustedError as stop:
            times = f" {stop.attempts} times" if stop.why == "attempts" else ""
            raise JudgeUnavailableError(
                f"the preflight call to judge {self.name!r} failed{times}: {stop.failure.message}"
            ) from stop.failure.exc

    async def aclose(self) -> None:
        """Nothing to close: LiteLLM keeps its own HTTP clients."""
        self._semaphore = None
        self._loop = None

    # -- internals ----------------------------------------------------------------------------

    def _supported(self, litellm: Any) -> frozenset[str]:
        if self._params is None:
            try:
                model, provider, _, _ = litellm.get_llm_provider(self.model)
                params = litellm.get_supported_openai_params(model=model, custom_llm_provider=provider)
            except Exception as exc:  # an unknown provider prefix
                raise ConfigError(f"LiteLLM does not know the model {self.model!r}: {exc}") from None
            self._params = frozenset(params or ())
            if "response_format" not in self._params:
                self._structured = "prompt"
            if "logprobs" not in self._params:
                self._logprobs = False
            if "seed" not in self._params:
                self._seed = False
            if self.context_window is None:
                self.context_window = _context_window(litellm, self.model)
        return self._params

    def _sem(self) -> asyncio.Semaphore:
        loop = asyncio.get_running_loop()
        if self._semaphore is None or self._loop is not loop:
            self._semaphore = asyncio.Semaphore(self.max_concurrency)
            self._loop = loop
        return self._semaphore

    async def _call(self, request: JudgeRequest, *, logprobs: bool) -> Completion:
        litellm = import_litellm()
        self._supported(litellm)
        async with self._sem():
            try:
                return await asyncio.wait_for(self._negotiate(litellm, request, logprobs), self.timeout)
            except asyncio.TimeoutError:
                raise ProviderError(
                    f"the judge {self.name} gave no complete answer within {self.timeout:g} s.",
                    retryable=True,
                ) from None

    async def _negotiate(self, litellm: Any, request: JudgeRequest, logprobs: bool) -> Completion:
        while True:
            mode = self._structured if request.schema is not None else None
            use_logprobs = logprobs and self._logprobs
            use_seed = self._seed and request.seed is not None
            kwargs = self._kwargs(request, mode, use_logprobs, use_seed)
            try:
                response = await litellm.acompletion(**kwargs)
            except Exception as exc:
                if not _transport_error(exc):
                    raise  # a defect, not a failed call: never retried or hidden
                error = self._error(litellm, exc)
                if error.status in (400, 422) and self._adapt(str(exc), mode, use_logprobs, use_seed):
                    continue
                raise error from exc
            return self._completion(response, kwargs, mode)

    def _adapt(self, text: str, mode: str | None, used_logprobs: bool, used_seed: bool) -> bool:
        """After a 400/422: stop sending what the provider rejected; say whether to send again."""
        text = text.lower()
        if used_logprobs and "logprobs" in text:
            self._logprobs = False
            return True
        if used_seed and "seed" in text:
            self._seed = False
            return True
        if mode == "json_schema" and any(w in text for w in ("response_format", "json_schema", "schema",
                                                              "tool", "not supported")):
            self._structured = "prompt"
            return True
        return False

    def _kwargs(self, request: JudgeRequest, mode: str | None, logprobs: bool, seed: bool) -> dict[str, Any]:
        messages = [{"role": m.role, "content": m.content} for m in request.messages]
        kwargs: dict[str, Any] = {
            "model": self.model,
            "messages": messages,
            "temperature": request.temperature,
            "max_tokens": request.max_tokens,
            "timeout": self.timeout,
            "num_retries": 0,  # the Judge retries, by the one rule of ragsight._retry
            "max_retries": 0,
        }
        if seed:
            kwargs["seed"] = request.seed
        if logprobs:
            kwargs["logprobs"] = True
            kwargs["top_logprobs"] = _TOP_LOGPROBS
        if request.schema is not None and mode is not None:
            schema = _plain(request.schema)
            if mode == "json_schema":
                kwargs["response_format"] = {
                    "type": "json_schema",
                    "json_schema": {"name": _schema_name(request.prompt_id), "schema": schema,
                                    "strict": False},
                }
            else:
                _describe_schema(messages, schema)
        if self.api_base:
            kwargs["api_base"] = self.api_base
        if self._api_key:
            kwargs["api_key"] = self._api_key
        if self.api_version:
            kwargs["api_version"] = self.api_version
        if self._extra_headers:
            kwargs["extra_headers"] = dict(self._extra_headers)
        return kwargs

    def _completion(self, response: Any, kwargs: Mapping[str, Any], mode: str | None) -> Completion:
        choices = getattr(response, "choices", None) or []
        if not choices:
            raise ProviderError(f"the judge {self.name} answered without a completion choice.",
                                retryable=True)
        choice = choices[0]
        message = getattr(choice, "message", None)
        # a server that echoes the key in its answer must not get it stored (content and model)
        text = redact_answer(_text(getattr(message, "content", None)), self._secrets)
        finish = getattr(choice, "finish_reason", None)
        usage = getattr(response, "usage", None)
        prompt_tokens = self._usage.count(getattr(usage, "prompt_tokens", None), "prompt_tokens")
        completion_tokens = self._usage.count(getattr(usage, "completion_tokens", None), "completion_tokens")
        if prompt_tokens is None:
            prompt_tokens = sum(self.count_tokens(m["content"]) for m in kwargs["messages"])
        if completion_tokens is None:
            completion_tokens = self.count_tokens(text)
        model = getattr(response, "model", None)
        if isinstance(model, str):
            model = clip(redact_answer(model, self._secrets), 200)
        return Completion(
            text=text,
            prompt_tokens=prompt_tokens,
            completion_tokens=completion_tokens,
            finish_reason=finish if isinstance(finish, str) else None,
            model=model if isinstance(model, str) and model else self.model,
            structured=mode or "prompt",
            top_logprobs=_first_top_logprobs(getattr(choice, "logprobs", None)),
        )

    def _error(self, litellm: Any, exc: Exception) -> ProviderError:
        """One LiteLLM exception as a ProviderError: 401/403/404 and quota fatal; 408/409/429,
        5xx, time-outs and connection failures retryable with the server's Retry-After."""
        if isinstance(exc, ProviderError):
            return exc
        status = getattr(exc, "status_code", None)
        status = status if isinstance(status, int) else None
        said = clip(redact(" ".join(str(exc).split()), self._secrets), 300)  # redact, then cut
        headers = _headers_of(exc)
        retry_after = parse_retry_after(headers) if headers else None
        key_hint = _KEY_HINT.get(self.provider, "the provider's API key")
        if isinstance(exc, litellm.Timeout):
            return ProviderError(f"the judge {self.name} timed out. {said}", retryable=True, status=status)
        if isinstance(exc, litellm.APIConnectionError):
            for cause in _chain(exc):
                if isinstance(cause, socket.gaierror) and cause.errno not in _DNS_TRANSIENT:
                    return ProviderError(f"the judge {self.name}'s host does not resolve (DNS lookup "
                                         f"failed); check --base-url. {said}", retryable=False, fatal=True)
            return ProviderError(f"could not reach the judge {self.name}. {said}", retryable=True)
        if status in (401, 403) or isinstance(exc, (litellm.AuthenticationError, litellm.PermissionDeniedError)):
            return ProviderError(f"the judge {self.name} rejected the credentials (HTTP {status or 401}); "
                                 f"check {key_hint}. {said}", retryable=False, status=status, fatal=True)
        if status == 404 or isinstance(exc, litellm.NotFoundError):
            where = f" at {display_url(self.api_base)}" if self.api_base else ""
            return ProviderError(f"the judge{where} does not know model {self.model!r} (HTTP 404); check "
                                 f"the model name{' and --base-url' if where else ''}. {said}",
                                 retryable=False, status=404, fatal=True)
        if status == 429 or isinstance(exc, litellm.RateLimitError):
            if "insufficient_quota" in str(exc):
                return ProviderError(f"the judge {self.name}'s account has no quota left (HTTP 429 "
                                     f"insufficient_quota). {said}", retryable=False, status=429, fatal=True)
            wait = f" It asked to wait {retry_after:g} s." if retry_after is not None else ""
            return ProviderError(f"the judge {self.name} is rate limiting requests (HTTP 429).{wait} {said}",
                                 retryable=True, status=429, retry_after=retry_after)
        if status is not None and (status in (408, 409) or status >= 500):
            return ProviderError(f"the judge {self.name} failed with HTTP {status} (temporary). {said}",
                                 retryable=True, status=status, retry_after=retry_after)
        if isinstance(exc, litellm.BadRequestError) and status is None:
            status = 400
        if status is not None:
            return ProviderError(f"the judge {self.name} refused the request (HTTP {status}). {said}",
                                 retryable=False, status=status)
        return ProviderError(f"the judge {self.name} failed: {type(exc).__name__}: {said}", retryable=True)


def _transport_error(exc: BaseException) -> bool:
    """An error of the call itself (LiteLLM's exceptions, built on the OpenAI SDK's, and the HTTP
    clients' below them), as opposed to a defect to let through."""
    if isinstance(exc, (ProviderError, OSError)):
        return True
    root = type(exc).__module__.split(".", 1)[0]
    return root in ("litellm", "openai", "httpx", "httpcore", "aiohttp", "botocore")


def _context_window(litellm: Any, model: str) -> int | None:
    try:
        info = litellm.get_model_info(model)  # the packaged model map: no network
    except Exception:
        return None
    value = info.get("max_input_tokens") if isinstance(info, Mapping) else None
    return value if isinstance(value, int) and value > 0 else None


def _headers_of(exc: BaseException) -> dict[str, str]:
    for source in (getattr(exc, "litellm_response_headers", None),
                   getattr(getattr(exc, "response", None), "headers", None)):
        if source is not None:
            try:
                return {str(k): str(v) for k, v in dict(source).items()}
            except (TypeError, ValueError):
                continue
    return {}


def _chain(exc: BaseException) -> list[BaseException]:
    seen: list[BaseException] = []
    current: BaseException | None = exc
    while current is not None and current not in seen:
        seen.append(current)
        current = current.__cause__ or current.__context__
    return seen


def _plain(value: Any) -> Any:
    if isinstance(value, Mapping):
        return {str(k): _plain(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [_plain(v) for v in value]
    return value


def _schema_name(prompt_id: str) -> str:
    name = "".join(c if c in _SCHEMA_NAME_CHARS else "_" for c in prompt_id)[:64]
    return name or "output"


def _describe_schema(messages: list[dict[str, Any]], schema: Any) -> None:
    note = ("\n\nReply with one JSON object matching this JSON schema, and nothing else:\n"
            + json.dumps(schema, ensure_ascii=False))
    for message in reversed(messages):
        if message["role"] == "user":
            message["content"] = message["content"] + note
            return
    messages.append({"role": "user", "content": note.lstrip()})


def _text(content: Any) -> str:
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        return "".join(str(p.get("text", "")) for p in content if isinstance(p, Mapping))
    return ""


def _first_top_logprobs(logprobs: Any) -> dict[str, float] | None:
    """The first output token's top candidates {token: logprob}, from LiteLLM's OpenAI-shaped
    ``ChoiceLogprobs`` (or a plain dict of the same shape)."""
    if logprobs is None:
        return None
    content = logprobs.get("content") if isinstance(logprobs, Mapping) else getattr(logprobs, "content", None)
    if not isinstance(content, list) or not content:
        return None
    first = content[0]

    def get(obj: Any, key: str) -> Any:
        return obj.get(key) if isinstance(obj, Mapping) else getattr(obj, key, None)

    found: dict[str, float] = {}
    for item in get(first, "top_logprobs") or []:
        token, value = get(item, "token"), get(item, "logprob")
        value = usable_logprob(value)
        if isinstance(token, str) and value is not None:
            found[token] = max(value, found.get(token, float("-inf")))
    if not found:
        token, value = get(first, "token"), get(first, "logprob")
        value = usable_logprob(value)
        if isinstance(token, str) and value is not None:
            found[token] = value
    return found or None
