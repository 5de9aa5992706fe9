"""The HTTP target: POST the question as JSON (or a request template with placeholders filled),
read the answer and the contexts from the reply at dotted paths (:class:`HttpFields`); custom
headers, ``NAME=env:VAR`` among them, are kept out of every message.
"""

from __future__ import annotations

import os
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import httpx

from ..calls import display_url, error_text, make_client, parse_retry_after, redact
from ..errors import ConfigError
from ._reply import TargetError, TargetReply, reply_from, set_path

__all__ = ["MAX_REPLY_BYTES", "HttpFields", "HttpTarget", "fill_template", "parse_headers"]

MAX_REPLY_BYTES = 32 * 2**20
"""The most of a target's reply that is read (an HTTP body, a command's output): a target that
sends more has its answer refused at that point and its connection closed, or its process
killed, instead of filling the memory until the time-out."""


@dataclass(frozen=True)
class HttpFields:
    """Where the question goes in the request and where the reply keeps answer and contexts
    (dotted paths). ``contexts`` items are strings or objects with ``text`` and ``id``."""

    request: str = "question"
    answer: str = "answer"
    contexts: str = "contexts"
    context_text: str = "text"
    context_id: str = "id"


_PLACEHOLDER = re.compile(r"\{([A-Za-z_][A-Za-z0-9_]*)\}")


def fill_template(template: Any, values: Mapping[str, Any]) -> Any:
    """A copy of a JSON request template with ``{name}`` placeholders filled from ``values``. A
    string that is exactly one placeholder takes the value as it is (a number stays a number);
    placeholders inside longer strings are replaced by the value's text. An unknown name raises
    ConfigError naming it."""

    def one(name: str) -> Any:
        if name not in values:
            raise ConfigError(
                f"request template: '{{{name}}}' names no value; known: {', '.join(sorted(values))}"
            )
        return values[name]

    if isinstance(template, str):
        whole = _PLACEHOLDER.fullmatch(template)
        if whole:
            return one(whole.group(1))
        return _PLACEHOLDER.sub(lambda m: str(one(m.group(1))), template)
    if isinstance(template, Mapping):
        return {k: fill_template(v, values) for k, v in template.items()}
    if isinstance(template, list):
        return [fill_template(v, values) for v in template]
    return template


def parse_headers(pairs: Sequence[str], environ: Mapping[str, str] | None = None) -> dict[str, str]:
    """``NAME=VALUE`` or ``NAME=env:VAR`` (the value read from the environment)."""
    env = os.environ if environ is None else environ
    out: dict[str, str] = {}
    for pair in pairs:
        name, sep, value = pair.partition("=")
        if not sep or not name.strip():
            raise ConfigError(f"--header '{name}': use NAME=VALUE or NAME=env:VARIABLE")
        if value.startswith("env:"):
            var = value[4:]
            if var not in env:
                raise ConfigError(
                    f"--header {name.strip()}: the environment variable {var} is not set"
                )
            value = env[var]
        out[name.strip()] = value
    return out


class HttpTarget:
    """POST the question as JSON; read the reply at dotted paths."""

    def __init__(
        self,
        url: str,
        fields: HttpFields | None = None,
        headers: Mapping[str, str] | None = None,
        timeout: float = 60.0,
        max_connections: int = 8,
        config: Mapping[str, Any] | None = None,
        template: Mapping[str, Any] | None = None,
    ) -> None:
        self.url = url
        self.config = dict(config or {})
        self.template = template
        self.name = display_url(url)
        self.fields = fields or HttpFields()
        self.headers = {
            "Content-Type": "application/json",
            "Accept": "application/json",
            **dict(headers or {}),
        }
        # every header value counts as a secret in messages: custom headers carry keys
        self.secrets = tuple(
            sorted(
                {v for k, v in (headers or {}).items() if v and len(v) >= 4}, key=len, reverse=True
            )
        )
        self.timeout = timeout
        self.max_connections = max_connections
        self._client: httpx.AsyncClient | None = None

    def _http(self) -> httpx.AsyncClient:
        if self._client is None:
            self._client = make_client(
                timeout=self.timeout, max_connections=self.max_connections, headers=self.headers
            )
        return self._client

    async def __call__(self, question: str, history: Sequence[Mapping[str, Any]] | None = None) -> TargetReply:
        body: dict[str, Any] = {}
        earlier = [dict(m) for m in history] if history is not None else None
        if self.template is not None:
            body = fill_template(self.template, {**self.config, "question": question,
                                                 **({"history": earlier} if earlier is not None else {})})
        else:
            set_path(body, self.fields.request, question)
            if earlier is not None:
                body["history"] = earlier
            if self.config:
                body["config"] = self.config
        try:
            response = await self._post(body)
        except httpx.TimeoutException:
            raise TargetError(
                f"{self.name}: no answer within {self.timeout:g} s", retryable=True
            ) from None
        except httpx.HTTPError as exc:
            raise TargetError(
                f"{self.name}: {type(exc).__name__}: {redact(str(exc), self.secrets)}",
                retryable=True,
            ) from None
        status = response.status_code
        if 300 <= status < 400:
            where = response.headers.get("location", "")
            raise TargetError(
                f"{self.name}: HTTP {status}, a redirect" + (f" to {display_url(where)}" if where else "")
                + "; give the URL that answers (redirects are not followed: the question would go elsewhere)",
                retryable=False,
            )
        if status >= 400 or status < 200:
            detail = error_text(response, self.secrets)  # redacted before it is cut
            retryable = status in (408, 409, 429) or status >= 500
            raise TargetError(
                f"{self.name}: HTTP {status}" + (f": {detail}" if detail else ""),
                retryable=retryable,
                retry_after=parse_retry_after(response.headers),
            )
        try:
            data = response.json()
        except (ValueError, UnicodeDecodeError):
            snippet = redact(" ".join(response.text.split()), self.secrets)[:120]
            raise TargetError(
                f"{self.name}: the reply is not JSON: {snippet!r}", retryable=False
            ) from None
        f = self.fields
        return reply_from(
            data,
            answer_field=f.answer,
            contexts_field=f.contexts,
            context_text_field=f.context_text,
            context_id_field=f.context_id,
            where=self.name,
        )

    async def _post(self, body: Any) -> httpx.Response:
        """POST ``body`` and read the reply, at most :data:`MAX_REPLY_BYTES` of it (a larger one
        is a TargetError at that point, the connection closed)."""
        async with self._http().stream("POST", self.url, json=body) as streamed:
            chunks: list[bytes] = []
            size = 0
            async for chunk in streamed.aiter_bytes():
                size += len(chunk)
                if size > MAX_REPLY_BYTES:
                    raise TargetError(f"{self.name}: the reply (HTTP {streamed.status_code}) is larger than "
                                      f"{MAX_REPLY_BYTES // 2**20} MB; it was cut there and not used", retryable=False)
                chunks.append(chunk)
        headers = [(k, v) for k, v in streamed.headers.multi_items()
                   if k.lower() not in ("content-encoding", "content-length", "transfer-encoding")]
        return httpx.Response(streamed.status_code, headers=headers, content=b"".join(chunks),
                              request=streamed.request)

    async def aclose(self) -> None:
        if self._client is not None:
            await self._client.aclose()
            self._client = None
