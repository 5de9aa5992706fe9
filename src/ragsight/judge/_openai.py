"""A judge provider for any OpenAI-compatible chat-completions server.

Works with OpenAI and with servers that copy its API: vLLM, Ollama, the llama.cpp server, LiteLLM.
Servers differ in what they accept, so the provider negotiates once per instance and remembers:

- structured output: ``response_format`` ``json_schema``, else ``json_object`` with the schema
  described in the prompt, else the schema in the prompt only;
- ``logprobs``/``top_logprobs``: dropped when the server rejects them;
- ``max_tokens``: replaced by ``max_completion_tokens`` when the server asks for it.

With ``choices=True`` (judge spec ``openai-logprobs:MODEL``) the provider also answers yes/no
questions from the first output token's top log-probabilities (:meth:`score_choices`), as the
embedded judge does: one call per claim, a probability rather than a label. Meant for a larger
model served locally (llama.cpp's server, Ollama, vLLM) that returns ``top_logprobs``.

Each :meth:`OpenAIProvider.complete` makes one attempt (plus those re-sends when the server rejects a
parameter) and maps every failure to :class:`ProviderError`; retries, backoff, caching and JSON
repair are the job of the :class:`ragsight.judge.Judge` wrapper.
"""

from __future__ import annotations

import asyncio
import json
import math
from collections.abc import Callable, Mapping, Sequence
from types import TracebackType
from typing import Any

import httpx

from ..calls import (
    Backoff,
    Failure,
    RetryExhaustedError,
    build_headers,
    classify,
    clip,
    display_url,
    error_from_response,
    error_from_transport,
    error_text,
    make_client,
    parse_json_body,
    redact,
    redact_answer,
    resolve_api_key,
    resolve_base_url,
    retry,
    secrets_of,
    timeout_error,
)
from ..errors import ConfigError, JudgeUnavailableError
from ._choices import UnreadableChoicesError, choice_probabilities, usable_logprob
from ._protocol import ChoiceScores, Completion, JudgeRequest, Message, ProviderError, UsageReader

__all__ = ["OpenAIProvider"]

# Structured-output modes, strongest first; an instance only ever moves down this list.
_MODES = ("json_schema", "json_object", "prompt")
_TOP_LOGPROBS = 5
_CHOICE_TOP_LOGPROBS = 20  # yes/no verdicts: the most OpenAI accepts, so both answers are seen
# The preflight: up to 3 pings, each bounded by min(timeout, 30 s), all of it (waits included)
# bounded by 90 s. A server's Retry-After is honoured while it fits in that bound; a longer one
# ends the preflight at once, saying how long the server asked to wait.
_PREFLIGHT_ATTEMPTS = 3
PREFLIGHT_PING_S = 30.0
PREFLIGHT_LIMIT_S = 90.0
_PREFLIGHT_BACKOFF = Backoff(base_s=0.25, max_s=2.0, jitter=0.0, retry_after_cap_s=PREFLIGHT_LIMIT_S)
# Tell the user what the preflight waits for once it has waited this long.
_PREFLIGHT_SAY_AFTER_S = 2.0
# The largest HTTP body read from the judge (an answer with logprobs for 4,096 tokens is about
# 2 MB); a larger answer is cut there, counted and not used. The content itself may hold at
# most max(64 KiB, 16 characters per requested token).
MAX_ANSWER_BYTES = 8 * 1024 * 1024
_MIN_CONTENT_CHARS = 64 * 1024
_CHARS_PER_TOKEN_CAP = 16
_SCHEMA_NAME_CHARS = frozenset("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789_-")


class OpenAIProvider:
    """A :class:`~ragsight.judge.JudgeProvider` over an OpenAI-compatible HTTP API.

    ``base_url`` defaults to ``$OPENAI_BASE_URL``, then ``https://api.openai.com/v1``; ``api_key``
    to ``$OPENAI_API_KEY``. With no key (typical for local servers) no Authorization header is
    sent. ``timeout`` bounds each call as a whole (connecting alone may take up to 10 s of it),
    so a server that trickles bytes cannot hold a call longer. ``logprobs=False`` never asks for
    the first token's top log-probabilities. An answer larger than ``max_answer_bytes`` (8 MiB),
    or whose content is longer than its ``max_tokens`` could make, is cut there and refused
    (ProviderError with ``too_large``; the Judge counts it). A successful answer's content and
    ``model`` field have the API key removed before anyone sees them. The HTTP client is created
    lazily inside the running event loop; call :meth:`aclose` (or use ``async with``) when done.
    """

    name: str
    model: str
    supports_choices: bool
    max_concurrency: int
    context_window: int | None

    def __init__(
        self,
        model: str,
        base_url: str | None = None,
        api_key: str | None = None,
        *,
        timeout: float = 60.0,
        max_concurrency: int = 256,
        context_window: int | None = None,
        extra_headers: Mapping[str, str] | None = None,
        logprobs: bool = True,
        choices: bool = False,
        max_answer_bytes: int = MAX_ANSWER_BYTES,
        notice: Callable[[str], None] | None = None,
    ) -> None:
        if not isinstance(model, str) or not model.strip():
            raise ConfigError("OpenAIProvider needs a model name, e.g. OpenAIProvider('gpt-4o-mini')")
        if max_answer_bytes < 1024:
            raise ConfigError(f"max_answer_bytes must be at least 1024, got {max_answer_bytes!r}")
        if not timeout > 0:
            raise ConfigError(f"timeout must be a positive number of seconds, got {timeout!r}")
        if max_concurrency < 1:
            raise ConfigError(f"max_concurrency must be at least 1, got {max_concurrency!r}")
        if context_window is not None and context_window < 1:
            raise ConfigError(
                f"context_window must be a positive token count or None, got {context_window!r}"
            )
        self.model = model
        self.name = f"openai-logprobs:{model}" if choices else f"openai:{model}"
        self.supports_choices = bool(choices)
        self.max_concurrency = max_concurrency
        self.context_window = context_window
        self.max_answer_bytes = int(max_answer_bytes)
        self.notice = notice  # one-line messages for the user (the preflight's waits)
        # pings refused as overloaded (429, 503, 529): the run's count of refusals includes them
        self.preflight_overloads = 0
        self.base_url = resolve_base_url(base_url)
        self.timeout = float(timeout)
        api_key = resolve_api_key(api_key)
        self._has_key = api_key is not None
        self._headers = build_headers(api_key, extra_headers)
        self._secrets = secrets_of(api_key, extra_headers)
        self._usage = UsageReader(self.name)
        # negotiated with the server, remembered for the life of the instance
        self._structured = _MODES[0]
        self._logprobs = bool(logprobs)
        self._tokens_param = "max_tokens"
        self._client: httpx.AsyncClient | None = None
        self._loop: asyncio.AbstractEventLoop | None = None
        self._semaphore: asyncio.Semaphore | None = None

    def __repr__(self) -> str:
        return f"OpenAIProvider(model={self.model!r}, base_url={display_url(self.base_url)!r})"

    @property
    def structured_mode(self) -> str:
        """The structured-output mode used for requests with a schema: "json_schema",
        "json_object" or "prompt" (moves down that list when the server rejects a mode)."""
        return self._structured

    @property
    def logprobs(self) -> bool:
        """Whether requests ask for the first token's top log-probabilities (turns False when
        the server rejects the parameter)."""
        return self._logprobs

    @property
    def tokens_param(self) -> str:
        """The name sent for the output limit: "max_tokens" or "max_completion_tokens"."""
        return self._tokens_param

    async def __aenter__(self) -> OpenAIProvider:
        return self

    async def __aexit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        await self.aclose()

    # -- the protocol -------------------------------------------------------------------------

    async def complete(self, request: JudgeRequest) -> Completion:
        """Send ``request`` once and return the first choice. Raises ProviderError."""
        return await self._call(request, logprobs=self._logprobs)

    async def score_choices(self, request: JudgeRequest, choices: Sequence[str]) -> ChoiceScores:
        """P(choice) from the first output token's top log-probabilities, normalised over the
        choices (tokens compared without surrounding space and case: "Yes", " yes"). Needs
        ``choices=True`` and a server that returns ``top_logprobs``; raises ProviderError
        (not retryable) when none of the choices is among them."""
        if not self.supports_choices:
            raise NotImplementedError(
                "OpenAIProvider scores choices from log-probabilities only with choices=True "
                "(supports_choices is False; judge spec openai-logprobs:MODEL)"
            )
        one = JudgeRequest(prompt_id=request.prompt_id, prompt_version=request.prompt_version,
                           messages=request.messages, max_tokens=1, temperature=0.0, seed=request.seed)
        completion = await self._call(one, logprobs=True, top=_CHOICE_TOP_LOGPROBS)
        try:
            probs, raw = choice_probabilities(completion.top_logprobs or {}, choices)
        except UnreadableChoicesError as exc:
            raise ProviderError(
                f"judge {self.name!r} {exc}; serve a model with top_logprobs support, or use "
                "openai:MODEL (JSON verdicts)", retryable=False) from None
        return ChoiceScores(probs=probs, prompt_tokens=completion.prompt_tokens, raw_logprobs=raw)

    def count_tokens(self, text: str) -> int:
        """An estimate, not a tokenizer: ``ceil(len(text) / 4)``, about right for English with
        OpenAI's tokenizers. Used for budgeting and when the server reports no usage."""
        return -(-len(text) // 4)

    async def preflight(self) -> None:
        """Send a 1-token "ping". Raises JudgeUnavailableError when the host cannot be reached,
        the key is rejected or the model is unknown. Transient failures are tried again, up to
        3 pings of at most min(timeout, 30 s) each and 90 s in all, waits included; a server's
        Retry-After is honoured while it fits in those 90 s. After 2 s without an answer the
        user is told (``notice``) what the preflight waits for and when it gives up."""
        ping = JudgeRequest(
            prompt_id="preflight",
            prompt_version="1",
            messages=(Message("user", "ping"),),
            max_tokens=1,
            temperature=0.0,
            seed=None,
        )
        per_ping = min(self.timeout, PREFLIGHT_PING_S)
        limit = PREFLIGHT_LIMIT_S
        loop = asyncio.get_running_loop()
        start = loop.time()
        where = f"judge {self.name!r} at {display_url(self.base_url)}"
        said = False

        def say(text: str) -> None:
            nonlocal said
            said = True
            if self.notice is not None:
                self.notice(text)

        async def once() -> Completion:
            task = asyncio.ensure_future(self._call(ping, logprobs=False, timeout=per_ping))
            try:
                if not said:
                    done, _ = await asyncio.wait({task}, timeout=_PREFLIGHT_SAY_AFTER_S)
                    if not done:
                        say(f"waiting for the {where} to answer a 1-token ping (up to "
                            f"{_PREFLIGHT_ATTEMPTS} pings of {per_ping:g} s each; giving up after "
                            f"{limit:g} s in all at most)")
                return await task
            finally:
                if not task.done():
                    task.cancel()

        def classify_ping(exc: BaseException) -> Failure | None:
            if not isinstance(exc, ProviderError):
                return None
            failure = classify(exc)
            if exc.status in (429, 503, 529):
                self.preflight_overloads += 1
            if failure is None or failure.fatal or not failure.retryable:
                return failure
            used = loop.time() - start
            if failure.retry_after is not None:
                if used + failure.retry_after + per_ping > limit:
                    return Failure(f"{failure.message} That wait is longer than the preflight's "
                                   f"{limit:g} s limit; try again later.", False, None, False, exc)
                say(f"the {where} asked to wait {failure.retry_after:g} s (HTTP {exc.status}); "
                    f"waiting (the preflight gives up after {limit:g} s in all)")
            elif used + per_ping > limit:
                return Failure(f"{failure.message} (the preflight's {limit:g} s are up)",
                               False, None, False, exc)
            else:
                say(f"the preflight ping to the {where} failed ({failure.message}); trying again "
                    f"(giving up after {limit:g} s in all)")
            return failure

        try:
            await retry(once, attempts=_PREFLIGHT_ATTEMPTS, backoff=_PREFLIGHT_BACKOFF,
                        classify_error=classify_ping, budget_s=limit)
        except RetryExhaustedError as stop:
            elapsed = loop.time() - start
            times = f" {stop.attempts} times in {elapsed:.0f} s" if stop.attempts > 1 else ""
            raise JudgeUnavailableError(
                f"the preflight call to judge {self.name!r} failed{times}: {stop.failure.message}"
            ) from stop.failure.exc

    async def aclose(self) -> None:
        """Close the HTTP client. The judge can still be used afterwards (a new client opens)."""
        client, self._client = self._client, None
        loop, self._loop = self._loop, None
        self._semaphore = None
        if client is not None and loop is asyncio.get_running_loop():
            await client.aclose()

    # -- internals ----------------------------------------------------------------------------

    def _session(self) -> tuple[httpx.AsyncClient, asyncio.Semaphore]:
        loop = asyncio.get_running_loop()
        if self._client is None or self._semaphore is None or self._loop is not loop:
            # first use, or a new event loop (a second asyncio.run): the old client is bound to
            # the old loop and cannot be reused
            self._client = make_client(
                timeout=self.timeout, max_connections=self.max_concurrency, headers=self._headers
            )
            self._semaphore = asyncio.Semaphore(self.max_concurrency)
            self._loop = loop
        return self._client, self._semaphore

    async def _call(
        self, request: JudgeRequest, *, logprobs: bool, top: int = _TOP_LOGPROBS, timeout: float | None = None
    ) -> Completion:
        client, semaphore = self._session()
        limit = self.timeout if timeout is None else timeout
        async with semaphore:
            try:
                return await asyncio.wait_for(
                    self._negotiate(client, request, logprobs=logprobs, top=top), limit
                )
            except asyncio.TimeoutError:
                raise timeout_error(role="judge", base_url=self.base_url, timeout=limit) from None

    async def _negotiate(
        self, client: httpx.AsyncClient, request: JudgeRequest, *, logprobs: bool, top: int = _TOP_LOGPROBS
    ) -> Completion:
        url = f"{self.base_url}/chat/completions"
        while True:
            mode = self._structured if request.schema is not None else None
            use_logprobs = logprobs and self._logprobs
            tokens_param = self._tokens_param
            body = self._body(request, mode, use_logprobs, tokens_param, top)
            try:
                response = await self._post(client, url, body)
            except httpx.HTTPError as exc:
                raise error_from_transport(
                    exc, role="judge", base_url=self.base_url, timeout=self.timeout
                ) from exc
            if response.is_success:
                data = parse_json_body(response, role="judge", secrets=self._secrets)
                return self._completion(data, body, mode, request.max_tokens)
            if response.status_code in (400, 422) and self._adapt(
                response, mode, use_logprobs, tokens_param
            ):
                continue
            raise error_from_response(
                response,
                role="judge",
                model=self.model,
                base_url=self.base_url,
                secrets=self._secrets,
                has_key=self._has_key,
            )

    async def _post(self, client: httpx.AsyncClient, url: str, body: Any) -> httpx.Response:
        """POST ``body`` and read the answer, at most ``max_answer_bytes`` of it: a larger
        answer raises ProviderError (``too_large``) after that many bytes, so a server that
        sends 100 MB costs 8 MiB of memory, not 100 MB."""
        async with client.stream("POST", url, json=body) as streamed:
            chunks: list[bytes] = []
            size = 0
            async for chunk in streamed.aiter_bytes():
                size += len(chunk)
                if size > self.max_answer_bytes:
                    head = redact(b"".join(chunks)[:200].decode("utf-8", "replace"), self._secrets)
                    raise ProviderError(
                        f"the judge's answer (HTTP {streamed.status_code}) is larger than "
                        f"{self.max_answer_bytes:,} bytes; it was cut there and not used "
                        f"(it starts with {clip(' '.join(head.split()), 80)!r}).",
                        retryable=True, status=streamed.status_code, too_large=True,
                    )
                chunks.append(chunk)
        # a plain response over the bytes read (already decoded: no content-encoding left)
        headers = [(k, v) for k, v in streamed.headers.multi_items()
                   if k.lower() not in ("content-encoding", "content-length", "transfer-encoding")]
        return httpx.Response(streamed.status_code, headers=headers, content=b"".join(chunks),
                              request=streamed.request)

    def _adapt(
        self, response: httpx.Response, mode: str | None, used_logprobs: bool, tokens_param: str
    ) -> bool:
        """After a 400/422: drop or change the parameter the server rejected and say whether
        to send again. Every change moves down a finite list, so re-sending ends."""
        text = (error_text(response) + " " + response.text[:4000]).lower()
        if tokens_param == "max_tokens" and (
            "max_completion_tokens" in text
            or ("max_tokens" in text and ("unsupported" in text or "not supported" in text))
        ):
            self._tokens_param = "max_completion_tokens"
            return True
        if used_logprobs and "logprobs" in text:
            self._logprobs = False
            return True
        if mode in ("json_schema", "json_object") and (
            "response_format" in text
            or "json_schema" in text
            or "json_object" in text
            or "not supported" in text
        ):
            lower = _MODES[_MODES.index(mode) + 1]
            # another call may have moved down already; never move back up
            if _MODES.index(lower) > _MODES.index(self._structured):
                self._structured = lower
            return True
        return False

    def _body(
        self, request: JudgeRequest, mode: str | None, logprobs: bool, tokens_param: str,
        top: int = _TOP_LOGPROBS,
    ) -> dict[str, Any]:
        messages = [{"role": m.role, "content": m.content} for m in request.messages]
        body: dict[str, Any] = {
            "model": self.model,
            "messages": messages,
            "temperature": request.temperature,
            tokens_param: request.max_tokens,
        }
        if request.seed is not None:
            body["seed"] = request.seed
        if logprobs:
            body["logprobs"] = True
            body["top_logprobs"] = top
        if request.schema is not None and mode is not None:
            schema = _plain(request.schema)
            if mode == "json_schema":
                body["response_format"] = {
                    "type": "json_schema",
                    "json_schema": {
                        "name": _schema_name(request.prompt_id),
                        "schema": schema,
                        "strict": False,
                    },
                }
            else:
                if mode == "json_object":
                    body["response_format"] = {"type": "json_object"}
                _describe_schema(messages, schema)
        return body

    def _completion(
        self, data: Any, body: Mapping[str, Any], mode: str | None, max_tokens: int
    ) -> Completion:
        choice = _first_choice(data)
        if choice is None:
            detail = ""
            if isinstance(data, Mapping) and "error" in data:
                detail = " Server said: " + clip(redact(json.dumps(data["error"]), self._secrets), 300)
            raise ProviderError(
                f"the judge answered without a completion choice.{detail}", retryable=True
            )
        message = choice.get("message")
        text = _content_text(message.get("content") if isinstance(message, Mapping) else None)
        # a server that echoes the key in its answer must not get it stored (content and model)
        text = redact_answer(text, self._secrets)
        most = max(_MIN_CONTENT_CHARS, _CHARS_PER_TOKEN_CAP * max(1, max_tokens))
        if len(text) > most:
            raise ProviderError(
                f"the judge answered {len(text):,} characters for max_tokens={max_tokens} (at most "
                f"{most:,} expected); the answer was cut there and not used (it starts with "
                f"{clip(' '.join(text[:200].split()), 80)!r}).",
                retryable=True, too_large=True,
            )
        finish = choice.get("finish_reason")
        usage = data.get("usage")
        if not isinstance(usage, Mapping):
            usage = {}
        prompt_tokens = self._usage.count(usage.get("prompt_tokens"), "prompt_tokens",
                                          floor=1 if any(m["content"] for m in body["messages"]) else 0)
        completion_tokens = self._usage.count(usage.get("completion_tokens"), "completion_tokens",
                                              floor=1 if text else 0)
        if prompt_tokens is None:  # estimated: the server reported no usage
            prompt_tokens = sum(self.count_tokens(m["content"]) for m in body["messages"])
        if completion_tokens is None:
            completion_tokens = self.count_tokens(text)
        model = data.get("model")
        if isinstance(model, str):
            model = clip(redact_answer(model, self._secrets), 200)
        return Completion(
            text=text,
            prompt_tokens=prompt_tokens,
            completion_tokens=completion_tokens,
            finish_reason=finish if isinstance(finish, str) else None,
            model=model if isinstance(model, str) and model else self.model,
            structured=mode or "prompt",
            top_logprobs=_first_top_logprobs(choice.get("logprobs")),
        )


def _plain(value: Any) -> Any:
    """A JSON-serialisable copy: Mappings become dicts, non-string sequences lists."""
    if isinstance(value, Mapping):
        return {str(k): _plain(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [_plain(v) for v in value]
    return value


def _schema_name(prompt_id: str) -> str:
    """OpenAI wants ``^[a-zA-Z0-9_-]{1,64}$`` as the schema name."""
    name = "".join(c if c in _SCHEMA_NAME_CHARS else "_" for c in prompt_id)[:64]
    return name or "output"


def _describe_schema(messages: list[dict[str, Any]], schema: Any) -> None:
    note = (
        "\n\nReply with one JSON object matching this JSON schema, and nothing else:\n"
        + json.dumps(schema, ensure_ascii=False)
    )
    for message in reversed(messages):
        if message["role"] == "user":
            message["content"] = message["content"] + note
            return
    messages.append({"role": "user", "content": note.lstrip()})


def _first_choice(data: Any) -> Mapping[str, Any] | None:
    if not isinstance(data, Mapping):
        return None
    choices = data.get("choices")
    if not isinstance(choices, list) or not choices or not isinstance(choices[0], Mapping):
        return None
    return choices[0]


def _content_text(content: Any) -> str:
    if isinstance(content, str):
        return content
    if isinstance(content, list):  # content parts: [{"type": "text", "text": ...}]
        return "".join(str(part.get("text", "")) for part in content if isinstance(part, Mapping))
    return ""


def _first_top_logprobs(logprobs: Any) -> dict[str, float] | None:
    """The first output token's top candidates as {token: logprob}, from the chat format
    (``content[0].top_logprobs``) or the legacy completions format (``top_logprobs[0]``)."""
    if not isinstance(logprobs, Mapping):
        return None
    found: dict[str, float] = {}
    content = logprobs.get("content")
    if isinstance(content, list) and content and isinstance(content[0], Mapping):
        first = content[0]
        tops = first.get("top_logprobs")
        for item in tops if isinstance(tops, list) else []:
            if isinstance(item, Mapping):
                token, value = item.get("token"), usable_logprob(item.get("logprob"))
                if isinstance(token, str) and value is not None:
                    found[token] = max(value, found.get(token, -math.inf))
        if not found:
            token, value = first.get("token"), usable_logprob(first.get("logprob"))
            if isinstance(token, str) and value is not None:
                found[token] = value
    else:
        legacy = logprobs.get("top_logprobs")
        if isinstance(legacy, list) and legacy and isinstance(legacy[0], Mapping):
            for token, raw in legacy[0].items():
                value = usable_logprob(raw)
                if value is not None:
                    found[str(token)] = value
    return found or None
