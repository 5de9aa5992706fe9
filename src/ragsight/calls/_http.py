"""HTTP plumbing shared by the OpenAI-compatible providers (judge and embedder).

Settings resolution (base URL, API key), request headers, and the mapping of every way an HTTP
call can fail onto :class:`~ragsight.errors.ProviderError`.

Secrets never reach a message: text taken from a server's answer goes through :func:`redact`
(which removes the API key, bearer tokens and ``sk-...`` strings), URLs are shown by
:func:`display_url` (without user info or query), and no header is ever quoted.
"""

from __future__ import annotations

import email.utils
import json
import math
import os
import re
import socket
import ssl
import time
from collections.abc import AsyncIterator, Callable, Iterable, Iterator, Mapping
from typing import Any

import httpx

from ..errors import ConfigError, ProviderError

__all__ = [
    "CONNECT_TIMEOUT",
    "DEFAULT_BASE_URL",
    "MIN_SECRET_CHARS",
    "build_headers",
    "clip",
    "display_url",
    "error_from_response",
    "error_from_transport",
    "error_text",
    "make_client",
    "parse_json_body",
    "parse_retry_after",
    "redact",
    "redact_answer",
    "resolve_api_key",
    "resolve_base_url",
    "secrets_of",
    "timeout_error",
]

DEFAULT_BASE_URL = "https://api.openai.com/v1"
CONNECT_TIMEOUT = 10.0
_DETAIL_LIMIT = 300
_SENSITIVE_HEADER_WORDS = ("auth", "key", "token", "secret", "cookie")
_BEARER = re.compile(r"(?i)\bbearer\s+\S+")
_SK_TOKEN = re.compile(r"\bsk-[A-Za-z0-9_\-*.]{4,}")
# getaddrinfo codes that mean "this name does not resolve" rather than "the resolver is busy".
_DNS_TRANSIENT = {getattr(socket, "EAI_AGAIN", -3)}


def resolve_base_url(base_url: str | None) -> str:
    """The argument, else ``$OPENAI_BASE_URL``, else the OpenAI API; without a trailing slash.

    Raises ConfigError when the URL is not an absolute http(s) URL.
    """
    raw = base_url if base_url else os.environ.get("OPENAI_BASE_URL") or DEFAULT_BASE_URL
    raw = raw.strip().rstrip("/")
    try:
        url = httpx.URL(raw)
        port = url.port
    except (httpx.InvalidURL, ValueError) as exc:
        raise ConfigError(f"base_url {display_url(raw)!r} is not a valid URL ({exc})") from None
    if port is not None and not 1 <= port <= 65535:
        raise ConfigError(f"base_url {display_url(raw)!r}: the port {port} is not a port number (1 to 65535)")
    if url.scheme not in ("http", "https") or not url.host:
        raise ConfigError(
            f"base_url {display_url(raw)!r} must be an absolute http:// or https:// URL, "
            "e.g. https://api.openai.com/v1 or http://localhost:8000/v1"
        )
    return raw


def resolve_api_key(api_key: str | None) -> str | None:
    """The argument, else ``$OPENAI_API_KEY``; None when neither is set (local servers)."""
    key = api_key if api_key is not None else os.environ.get("OPENAI_API_KEY")
    key = key.strip() if key else None
    return key or None


def build_headers(api_key: str | None, extra_headers: Mapping[str, str] | None) -> dict[str, str]:
    """Request headers: JSON content type, ``Authorization: Bearer`` when a key is set, then the
    caller's extra headers (which win)."""
    headers = {"Content-Type": "application/json", "Accept": "application/json"}
    if api_key:
        headers["Authorization"] = f"Bearer {api_key}"
    if extra_headers:
        headers.update({str(k): str(v) for k, v in extra_headers.items()})
    return headers


def secrets_of(api_key: str | None, extra_headers: Mapping[str, str] | None) -> tuple[str, ...]:
    """The strings that must never appear in a message: the key and credential-like header
    values."""
    found: list[str] = []
    if api_key:
        found.append(api_key)
    for name, value in (extra_headers or {}).items():
        if any(word in name.lower() for word in _SENSITIVE_HEADER_WORDS) and value:
            found.append(str(value))
            # "Bearer xyz": the token alone must go too
            found.extend(part for part in str(value).split() if len(part) >= 8)
    return tuple(sorted(set(found), key=len, reverse=True))


def redact(text: str, secrets: Iterable[str] = ()) -> str:
    """``text`` with the given secrets, bearer tokens and ``sk-...`` keys replaced by ``***``."""
    for secret in secrets:
        if secret:
            text = text.replace(secret, "***")
    text = _BEARER.sub("Bearer ***", text)
    return _SK_TOKEN.sub("sk-***", text)


MIN_SECRET_CHARS = 8


def redact_answer(text: str, secrets: Iterable[str]) -> str:
    """A successful answer (content, model name) with each secret of at least
    :data:`MIN_SECRET_CHARS` characters replaced by ``***``: a server that echoes the key in
    what it answers must not get it stored. Only the exact secrets are replaced (an answer may
    rightly say "Bearer bonds" or "sk-learn"); shorter keys are placeholders that local servers
    accept (``EMPTY``, ``ollama``), and replacing them would corrupt ordinary words."""
    for secret in secrets:
        if len(secret) >= MIN_SECRET_CHARS and secret in text:
            text = text.replace(secret, "***")
    return text


def display_url(url: str | httpx.URL) -> str:
    """``url`` fit for a message: no user info, query or fragment (they can carry keys)."""
    try:
        parsed = httpx.URL(str(url))
        _ = parsed.port
    except (httpx.InvalidURL, ValueError):
        return "<invalid URL>"
    if not parsed.host:
        return redact(str(url).split("?", 1)[0].split("@")[-1])
    port = f":{parsed.port}" if parsed.port is not None else ""
    return f"{parsed.scheme}://{parsed.host}{port}{parsed.path}".rstrip("/")


def make_client(
    *, timeout: float, max_connections: int, headers: Mapping[str, str]
) -> httpx.AsyncClient:
    """An AsyncClient with a 10 s connect timeout and ``timeout`` for each read, write and wait for
    a pooled connection. Call inside the event loop that will use it. More than
    :data:`POOL_SHARD` connections are spread over several pools (see :class:`ShardedTransport`)."""
    limits = httpx.Limits(max_connections=max_connections, max_keepalive_connections=max_connections)
    return httpx.AsyncClient(
        headers=dict(headers),
        timeout=httpx.Timeout(timeout, connect=CONNECT_TIMEOUT),
        limits=limits,
        verify=ssl_context(),
        transport=ShardedTransport(max_connections) if max_connections > POOL_SHARD else None,
        follow_redirects=False,
    )


_SSL_CONTEXT: ssl.SSLContext | None = None


def ssl_context() -> ssl.SSLContext:
    """httpx's default TLS context (certifi's roots), made once per process: each costs 25-50 ms
    of CPU to load, and a run makes a client for the judge and one for the embedder."""
    global _SSL_CONTEXT
    if _SSL_CONTEXT is None:
        _SSL_CONTEXT = httpx.create_ssl_context()
    return _SSL_CONTEXT


# httpcore's connection pool (1.0) walks every connection for each queued request, and every idle
# connection against all the others, whenever a request starts or ends: its CPU cost grows with
# the square of the pool. At 100 connections that was 60 ms of CPU per sample on the benchmark
# kit, more than all of ragsight's own work; pools of 16 cost nothing measurable.
POOL_SHARD = 16


class ShardedTransport(httpx.AsyncBaseTransport):
    """``max_connections`` spread over pools of at most :data:`POOL_SHARD` connections; each
    request goes to the pool with the fewest requests in flight (counted until its response is
    closed)."""

    def __init__(self, max_connections: int, shard: int = POOL_SHARD) -> None:
        k = -(-max_connections // shard)
        per = -(-max_connections // k)
        limits = httpx.Limits(max_connections=per, max_keepalive_connections=per)
        self._pools = [httpx.AsyncHTTPTransport(verify=ssl_context(), limits=limits) for _ in range(k)]
        self._load = [0] * k

    async def handle_async_request(self, request: httpx.Request) -> httpx.Response:
        i = min(range(len(self._pools)), key=self._load.__getitem__)
        self._load[i] += 1
        try:
            response = await self._pools[i].handle_async_request(request)
        except BaseException:
            self._load[i] -= 1
            raise
        stream = response.stream
        assert isinstance(stream, httpx.AsyncByteStream)
        response.stream = _Released(stream, lambda: self._release(i))
        return response

    def _release(self, i: int) -> None:
        self._load[i] -= 1

    async def aclose(self) -> None:
        for pool in self._pools:
            await pool.aclose()


class _Released(httpx.AsyncByteStream):
    """A response body that calls ``done`` once when it is closed."""

    def __init__(self, inner: httpx.AsyncByteStream, done: Callable[[], None]) -> None:
        self._inner = inner
        self._done: Callable[[], None] | None = done

    async def __aiter__(self) -> AsyncIterator[bytes]:
        async for chunk in self._inner:
            yield chunk

    async def aclose(self) -> None:
        try:
            await self._inner.aclose()
        finally:
            done, self._done = self._done, None
            if done is not None:
                done()


def parse_retry_after(headers: Mapping[str, str], *, now: float | None = None) -> float | None:
    """Seconds the server asked to wait: ``retry-after-ms`` (OpenAI, milliseconds) first, then
    ``Retry-After`` as seconds or as an HTTP date. None when absent or unreadable; never negative.
    """
    lower = {k.lower(): v for k, v in headers.items()}
    ms = lower.get("retry-after-ms")
    if ms is not None:
        seconds = _as_seconds(ms)
        if seconds is not None:
            return seconds / 1000.0
    value = lower.get("retry-after")
    if value is None:
        return None
    seconds = _as_seconds(value)
    if seconds is not None:
        return seconds
    try:
        when = email.utils.parsedate_to_datetime(value.strip())
    except (TypeError, ValueError, IndexError):
        return None
    if when.tzinfo is None:  # an HTTP date is always GMT
        return None
    current = time.time() if now is None else now
    return max(0.0, when.timestamp() - current)


def _as_seconds(value: str) -> float | None:
    try:
        seconds = float(value.strip())
    except ValueError:
        return None
    if math.isnan(seconds) or math.isinf(seconds):
        return None
    return max(0.0, seconds)


def error_text(response: httpx.Response, secrets: Iterable[str] = ()) -> str:
    """The server's own error message from a response body (OpenAI ``{"error": {"message"}}``,
    ``{"error": "..."}``, FastAPI ``{"detail": ...}`` or plain text), one line, redacted with
    :func:`redact` *before* it is cut to 300 characters (cutting first could keep part of a key
    that straddles the cut)."""
    try:
        body: Any = response.json()
    except (ValueError, UnicodeDecodeError):
        text = response.text
    else:
        text = _message_of(body)
    return clip(redact(" ".join(text.split()), secrets), _DETAIL_LIMIT)


def clip(text: str, limit: int) -> str:
    """``text`` cut to ``limit`` characters with "..." (redact before clipping, never after)."""
    return text if len(text) <= limit else text[: limit - 3] + "..."


def _message_of(body: Any) -> str:
    """The message of an error body, whole (the caller redacts, then cuts)."""
    if isinstance(body, Mapping):
        for key in ("error", "detail", "message"):
            if key in body:
                inner = body[key]
                if isinstance(inner, Mapping):
                    parts = [str(inner.get("message") or "")]
                    code = inner.get("code") or inner.get("type")
                    if code and str(code) not in parts[0]:
                        parts.append(f"[{code}]")
                    return " ".join(p for p in parts if p) or json.dumps(inner)
                if isinstance(inner, str):
                    return inner
                return json.dumps(inner)
    return json.dumps(body)


def error_from_response(
    response: httpx.Response,
    *,
    role: str,
    model: str,
    base_url: str,
    secrets: Iterable[str],
    has_key: bool,
) -> ProviderError:
    """Map a non-2xx answer to a ProviderError. ``role`` names the server in messages
    ("judge", "embedding server").

    401/403 and 404 are fatal; 408, 409, 429 and 5xx are retryable (429 ``insufficient_quota``
    is fatal: no wait will help); other statuses are neither.
    """
    status = response.status_code
    detail = error_text(response, secrets)
    said = f" Server said: {detail}" if detail else ""
    retry_after = parse_retry_after(response.headers)
    where = display_url(base_url)
    if status in (401, 403):
        if has_key:
            msg = f"the {role} rejected the API key (HTTP {status}); check OPENAI_API_KEY."
        else:
            msg = (
                f"the {role} at {where} requires an API key (HTTP {status}) and none was set; "
                "set OPENAI_API_KEY or pass api_key."
            )
        return ProviderError(msg + said, retryable=False, status=status, fatal=True)
    if status == 404:
        return ProviderError(
            f"the {role} at {where} answered HTTP 404 for model {model!r}; check the model name "
            f"and that base_url points at the API root (usually ending in /v1).{said}",
            retryable=False,
            status=status,
            fatal=True,
        )
    if status == 429:
        if "insufficient_quota" in response.text:
            return ProviderError(
                f"the {role} account has no quota left (HTTP 429 insufficient_quota); check the "
                f"plan and billing of the API key.{said}",
                retryable=False,
                status=status,
                fatal=True,
            )
        wait = f" It asked to wait {retry_after:g} s." if retry_after is not None else ""
        return ProviderError(
            f"the {role} is rate limiting requests (HTTP 429).{wait}{said}",
            retryable=True,
            status=status,
            retry_after=retry_after,
        )
    if status in (408, 409) or status >= 500:
        return ProviderError(
            f"the {role} at {where} failed with HTTP {status} (temporary).{said}",
            retryable=True,
            status=status,
            retry_after=retry_after,
        )
    if 300 <= status < 400:
        location = display_url(response.headers.get("location", "")) or "elsewhere"
        return ProviderError(
            f"the {role} at {where} redirects (HTTP {status}) to {location}; set base_url to "
            "the final address.",
            retryable=False,
            status=status,
            fatal=True,
        )
    return ProviderError(
        f"the {role} refused the request (HTTP {status}).{said}",
        retryable=False,
        status=status,
    )


def _chain(exc: BaseException) -> Iterator[BaseException]:
    seen: set[int] = set()
    current: BaseException | None = exc
    while current is not None and id(current) not in seen:
        seen.add(id(current))
        yield current
        current = current.__cause__ or current.__context__


def error_from_transport(
    exc: httpx.HTTPError, *, role: str, base_url: str, timeout: float
) -> ProviderError:
    """Map an httpx transport failure (no HTTP answer) to a ProviderError.

    A host name that does not resolve, a TLS certificate that fails verification and an
    unsupported URL scheme are fatal; refused or reset connections and timeouts are retryable.
    """
    where = display_url(base_url)
    host = httpx.URL(base_url).host
    for cause in _chain(exc):
        if isinstance(cause, socket.gaierror):
            if cause.errno in _DNS_TRANSIENT:
                return ProviderError(
                    f"temporary DNS failure resolving the {role} host {host!r}; "
                    "check the network connection.",
                    retryable=True,
                )
            return ProviderError(
                f"the {role} host {host!r} does not resolve (DNS lookup failed); check base_url "
                "or OPENAI_BASE_URL.",
                retryable=False,
                fatal=True,
            )
        if isinstance(cause, ssl.SSLCertVerificationError):
            return ProviderError(
                f"the TLS certificate of the {role} at {where} could not be verified "
                f"({cause.verify_message}); check base_url.",
                retryable=False,
                fatal=True,
            )
        if isinstance(cause, ConnectionRefusedError):
            return ProviderError(
                f"could not connect to the {role} at {where}: connection refused "
                "(is the server running?).",
                retryable=True,
            )
    if isinstance(exc, httpx.UnsupportedProtocol):
        return ProviderError(
            f"the {role} URL {where} has an unsupported scheme; use http:// or https://.",
            retryable=False,
            fatal=True,
        )
    if isinstance(exc, httpx.ConnectTimeout):
        return ProviderError(f"timed out connecting to the {role} at {where}.", retryable=True)
    if isinstance(exc, httpx.TimeoutException):
        return timeout_error(role=role, base_url=base_url, timeout=timeout)
    if isinstance(exc, httpx.RemoteProtocolError):
        return ProviderError(
            f"the {role} at {where} closed the connection without a complete answer.",
            retryable=True,
        )
    if isinstance(exc, (httpx.ReadError, httpx.WriteError)):
        return ProviderError(
            f"the connection to the {role} at {where} was reset or closed before the answer "
            f"arrived ({type(exc).__name__}).",
            retryable=True,
        )
    if isinstance(exc, httpx.ConnectError):
        return ProviderError(
            f"could not connect to the {role} at {where}: {type(exc).__name__}.", retryable=True
        )
    if isinstance(exc, httpx.DecodingError):
        return ProviderError(
            f"the {role} at {where} sent a body that could not be decoded.", retryable=True
        )
    return ProviderError(
        f"the connection to the {role} at {where} failed ({type(exc).__name__}: "
        f"{clip(redact(str(exc)), _DETAIL_LIMIT)}).",
        retryable=True,
    )


def timeout_error(*, role: str, base_url: str, timeout: float) -> ProviderError:
    """The error for a call that got no complete answer within ``timeout`` seconds."""
    return ProviderError(
        f"the {role} at {display_url(base_url)} gave no complete answer within {timeout:g} s.",
        retryable=True,
        timed_out=True,
    )


def parse_json_body(response: httpx.Response, *, role: str, secrets: Iterable[str]) -> Any:
    """The JSON body of a 2xx answer; a retryable ProviderError when it is not JSON."""
    try:
        return response.json()
    except (ValueError, UnicodeDecodeError):
        start = clip(redact(" ".join(response.text[:4000].split()), secrets), 80)
        raise ProviderError(
            f"the {role} answered HTTP {response.status_code} with a body that is not JSON "
            f"(starts with {start!r}).",
            retryable=True,
            status=response.status_code,
        ) from None
