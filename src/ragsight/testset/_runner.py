"""Running the system under test over a test set.

A target answers one question. Three kinds, chosen by the spec string:

- ``module:function``: a Python callable (sync or async) taking the question string and
  returning ``{"answer": str, "contexts": [{"id": ..., "text": ...}] | [str]}`` or an object with
  ``answer`` and ``contexts`` attributes (an optional ``model`` names the generating model). A
  sync callable runs in a worker thread so it never blocks the others.
- ``http://...`` / ``https://...``: POST a JSON body with the question at ``request_field`` (a
  dotted path), read the answer and the contexts from the reply at dotted paths.
- ``cmd:COMMAND``: run the command with ``{"question": ...}`` as JSON on stdin; it prints the JSON
  answer (as for a callable) on stdout.

A target can be given a configuration (``config``, for ``ragsight sweep``): a callable is then
called as ``fn(question, **config)``; a command receives ``{"question": ..., "config": {...}}``;
an HTTP target sends its request ``template`` with ``{question}`` and ``{name}`` placeholders
filled (a string that is exactly one placeholder takes the value with its JSON type), or, without
a template, the question at ``request_field`` and the configuration under ``config``. A context
may carry its document span (``doc_id``, ``start``, ``end``: character offsets), kept in the
row's metadata as ``retrieved_spans`` for span-based retrieval metrics.

:func:`arun` calls the target for every row, at most ``concurrency`` at a time, each call within
``timeout`` seconds, retrying transient failures (timeouts, connection errors, HTTP 408/409/429/
5xx) up to ``retries`` times with exponential backoff. A call that still fails is recorded in the
row's metadata (``error``) with no response, so ``ragsight evaluate`` marks its metrics skipped;
the run goes on.
"""

from __future__ import annotations

import asyncio
import contextlib
import importlib
import inspect
import json
import os
import random
import re
import shlex
import signal
import sys
import time
from collections.abc import Awaitable, Callable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import httpx

from ..calls import (
    MIN_SECRET_CHARS,
    Backoff,
    Failure,
    RetryExhaustedError,
    display_url,
    error_text,
    make_client,
    parse_retry_after,
    redact,
    retry,
)
from ..errors import ConfigError, InputError

__all__ = [
    "CallableTarget",
    "CommandTarget",
    "HttpFields",
    "HttpTarget",
    "RunResult",
    "Target",
    "TargetError",
    "TargetReply",
    "arun",
    "fill_template",
    "get_path",
    "make_target",
    "parse_headers",
    "read_testset",
    "reply_from",
    "set_path",
]


class TargetError(Exception):
    """One call to the target failed. ``retryable``: a later attempt may succeed."""

    def __init__(self, message: str, *, retryable: bool, retry_after: float | None = None) -> None:
        super().__init__(message)
        self.retryable = retryable
        self.retry_after = retry_after


@dataclass(frozen=True)
class TargetReply:
    answer: str
    contexts: tuple[str, ...] | None
    context_ids: tuple[str, ...] | None
    model: str | None = None
    # per context: {"doc_id", "start", "end"} when the target said where the chunk comes from
    context_spans: tuple[dict[str, Any] | None, ...] | None = None


Target = Callable[[str], Awaitable[TargetReply]]

_MISSING = object()


def get_path(data: Any, path: str) -> Any:
    """The value at a dotted path (``data.answer``, ``choices.0.text``); ``_MISSING`` if absent."""
    cur = data
    for part in path.split(".") if path else []:
        if isinstance(cur, Mapping) and part in cur:
            cur = cur[part]
        elif (
            isinstance(cur, list)
            and part.lstrip("-").isdigit()
            and -len(cur) <= int(part) < len(cur)
        ):
            cur = cur[int(part)]
        else:
            return _MISSING
    return cur


def set_path(data: dict[str, Any], path: str, value: Any) -> None:
    parts = path.split(".")
    cur = data
    for part in parts[:-1]:
        nxt = cur.setdefault(part, {})
        if not isinstance(nxt, dict):
            raise ConfigError(f"--request-field {path}: '{part}' is already a value, not an object")
        cur = nxt
    cur[parts[-1]] = value


def _span(get: Callable[[str], Any], where: str) -> dict[str, Any] | None:
    """A context's document span, when it names one: doc_id and integer start <= end."""
    doc, start, end = get("doc_id"), get("start"), get("end")
    if doc is None and start is None and end is None:
        return None
    if (
        doc is None
        or isinstance(start, bool)
        or isinstance(end, bool)
        or not isinstance(start, int)
        or not isinstance(end, int)
        or not 0 <= start <= end
    ):
        raise TargetError(
            f"{where}: a context's span needs doc_id and integer start <= end (character "
            f"offsets), got doc_id={doc!r}, start={start!r}, end={end!r}",
            retryable=False,
        )
    return {"doc_id": str(doc), "start": start, "end": end}


def _context_item(
    item: Any, text_field: str, id_field: str, where: str
) -> tuple[str, str | None, dict[str, Any] | None]:
    if isinstance(item, str):
        return item, None, None
    if isinstance(item, Mapping):
        text = get_path(item, text_field)
        if not isinstance(text, str):
            raise TargetError(
                f"{where}: a context has no text string at '{text_field}'", retryable=False
            )
        cid = get_path(item, id_field)
        return (
            text,
            (None if cid is _MISSING or cid is None else str(cid)),
            _span(item.get, where),
        )
    text = getattr(item, "text", None)
    if isinstance(text, str):
        cid = getattr(item, "id", None)
        return (
            text,
            None if cid is None else str(cid),
            _span(lambda name: getattr(item, name, None), where),
        )
    raise TargetError(
        f"{where}: a context is {type(item).__name__}, not text or an object with text",
        retryable=False,
    )


def reply_from(
    data: Any,
    *,
    answer_field: str = "answer",
    contexts_field: str = "contexts",
    context_text_field: str = "text",
    context_id_field: str = "id",
    where: str = "target",
) -> TargetReply:
    """Read a reply: a mapping (dotted paths) or an object with attributes."""
    if isinstance(data, Mapping):
        answer = get_path(data, answer_field)
        if answer is _MISSING and answer_field == "answer":
            answer = get_path(data, "response")
        contexts = get_path(data, contexts_field)
        model = data.get("model")
    else:
        answer = getattr(data, answer_field, _MISSING)
        contexts = getattr(data, contexts_field, _MISSING)
        model = getattr(data, "model", None)
    if answer is _MISSING:
        raise TargetError(f"{where}: the reply has no answer at '{answer_field}'", retryable=False)
    if not isinstance(answer, str):
        raise TargetError(
            f"{where}: the answer at '{answer_field}' is {type(answer).__name__}, not text",
            retryable=False,
        )
    if contexts is _MISSING or contexts is None:
        return TargetReply(answer, None, None, model if isinstance(model, str) else None)
    if isinstance(contexts, (str, bytes)) or not isinstance(contexts, Sequence):
        raise TargetError(
            f"{where}: the contexts at '{contexts_field}' are not a list", retryable=False
        )
    items = [_context_item(c, context_text_field, context_id_field, where) for c in contexts]
    texts = tuple(t for t, _, _ in items)
    ids = tuple(i for _, i, _ in items)
    spans = tuple(sp for _, _, sp in items)
    all_ids = tuple(i for i in ids if i is not None)
    return TargetReply(
        answer,
        texts,
        all_ids if len(all_ids) == len(ids) and ids else None,
        model if isinstance(model, str) else None,
        spans if any(sp is not None for sp in spans) else None,
    )


# ---- callables ---------------------------------------------------------------------------------


class CallableTarget:
    """A Python function ``module:function`` (or any callable)."""

    def __init__(
        self, fn: Callable[..., Any], name: str, config: Mapping[str, Any] | None = None
    ) -> None:
        self.fn = fn
        self.name = name
        self.config = dict(config or {})

    @classmethod
    def load(cls, spec: str) -> CallableTarget:
        module, _, attr = spec.partition(":")
        if not module or not attr:
            raise ConfigError(f"target '{spec}': use module:function, http(s)://URL or cmd:COMMAND")
        if os.getcwd() not in sys.path and "" not in sys.path:
            sys.path.insert(0, os.getcwd())  # like `python -m`: modules beside the user
        try:
            mod = importlib.import_module(module)
        except ImportError as exc:
            raise ConfigError(f"target '{spec}': cannot import module '{module}' ({exc})") from exc
        fn: Any = mod
        for part in attr.split("."):
            fn = getattr(fn, part, None)
            if fn is None:
                raise ConfigError(f"target '{spec}': module '{module}' has no '{attr}'")
        if not callable(fn):
            raise ConfigError(f"target '{spec}': '{attr}' is not callable")
        return cls(fn, spec)

    def _takes_history(self) -> bool:
        try:
            params = inspect.signature(self.fn).parameters
        except (TypeError, ValueError):
            return True
        return "history" in params or any(p.kind is inspect.Parameter.VAR_KEYWORD for p in params.values())

    async def __call__(self, question: str, history: Sequence[Mapping[str, Any]] | None = None) -> TargetReply:
        kwargs = dict(self.config)
        if history is not None:
            if not self._takes_history():
                raise TargetError(f"{self.name} takes no 'history' argument; a conversation's turns need it: "
                                  "def answer(question, history): ... (history: the earlier messages, each "
                                  "{'role', 'content'})", retryable=False)
            kwargs["history"] = [dict(m) for m in history]
        try:
            if inspect.iscoroutinefunction(self.fn):
                result = await self.fn(question, **kwargs)
            else:
                result = await asyncio.to_thread(self.fn, question, **kwargs)
                if inspect.isawaitable(result):
                    result = await result
        except TargetError:
            raise
        except (Exception, SystemExit) as exc:  # sys.exit() in the user's code fails its question only
            raise TargetError(
                f"{self.name} raised {type(exc).__name__}: {exc}", retryable=False
            ) from exc
        return reply_from(result, where=self.name)


# ---- HTTP --------------------------------------------------------------------------------------


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
            response = await self._http().post(self.url, json=body)
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

    async def aclose(self) -> None:
        if self._client is not None:
            await self._client.aclose()
            self._client = None


# ---- shell commands ----------------------------------------------------------------------------


class CommandTarget:
    """``cmd:python my_rag.py``: question as JSON on stdin, JSON answer on stdout."""

    def __init__(
        self,
        command: str,
        timeout: float = 60.0,
        fields: HttpFields | None = None,
        config: Mapping[str, Any] | None = None,
    ) -> None:
        self.config = dict(config or {})
        self.argv = shlex.split(command)
        if not self.argv:
            raise ConfigError("target 'cmd:' needs a command, e.g. cmd:python my_rag.py")
        self.name = f"cmd:{command}"
        self.timeout = timeout
        self.fields = fields or HttpFields()

    async def __call__(self, question: str, history: Sequence[Mapping[str, Any]] | None = None) -> TargetReply:
        try:
            # its own process group: at the time-out the command and every child it started are
            # killed together (a child holding stdout would otherwise outlive it, and hold the call)
            proc = await asyncio.create_subprocess_exec(
                *self.argv,
                stdin=asyncio.subprocess.PIPE,
                stdout=asyncio.subprocess.PIPE,
                stderr=asyncio.subprocess.PIPE,
                start_new_session=hasattr(os, "killpg"),
            )
        except (OSError, ValueError) as exc:
            raise TargetError(f"{self.name}: cannot start ({exc})", retryable=False) from exc
        message: dict[str, Any] = {"question": question}
        if history is not None:
            message["history"] = [dict(m) for m in history]
        if self.config:
            message["config"] = self.config
        payload = json.dumps(message).encode()
        try:
            out, err = await asyncio.wait_for(proc.communicate(payload), timeout=self.timeout)
        except asyncio.TimeoutError:
            await _kill_group(proc)
            raise TargetError(
                f"{self.name}: no answer within {self.timeout:g} s", retryable=True
            ) from None
        except BaseException:
            await _kill_group(proc)
            raise
        await _kill_group(proc)  # what it left running in the background
        if proc.returncode != 0:
            tail = " ".join(redact(err.decode("utf-8", "replace"), env_secrets()).split())[-300:]
            raise TargetError(
                f"{self.name}: exited with status {proc.returncode}"
                + (f": {tail}" if tail else ""),
                retryable=False,
            )
        text = out.decode("utf-8", "replace").strip()
        try:
            data = json.loads(text)
        except json.JSONDecodeError:
            # allow log lines before the answer: take the last line that parses
            data = _MISSING
            for line in reversed(text.splitlines()):
                try:
                    data = json.loads(line)
                    break
                except json.JSONDecodeError:
                    continue
            if data is _MISSING:
                raise TargetError(
                    f"{self.name}: printed no JSON: {text[:120]!r}", retryable=False
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


async def _kill_group(proc: asyncio.subprocess.Process) -> None:
    """Kill ``proc`` and every process of its group (started with ``start_new_session``), then
    reap it."""
    with contextlib.suppress(ProcessLookupError, PermissionError, OSError):
        if hasattr(os, "killpg"):
            os.killpg(proc.pid, signal.SIGKILL)
        elif proc.returncode is None:
            proc.kill()
    with contextlib.suppress(ProcessLookupError):
        await proc.wait()


_SECRET_NAME = re.compile(r"(KEY|TOKEN|SECRET|PASSWORD|PASSWD|CREDENTIAL)", re.IGNORECASE)


def env_secrets(environ: Mapping[str, str] | None = None) -> tuple[str, ...]:
    """The values of environment variables named like credentials (``*KEY*``, ``*TOKEN*``,
    ``*SECRET*``, ``*PASSWORD*``), at least 8 characters long: what a target's error output
    must not carry into the store, reports and exports."""
    env = os.environ if environ is None else environ
    return tuple(v for k, v in env.items() if _SECRET_NAME.search(k) and len(v) >= MIN_SECRET_CHARS)


def make_target(
    spec: str | Callable[..., Any],
    *,
    fields: HttpFields | None = None,
    headers: Mapping[str, str] | None = None,
    timeout: float = 60.0,
    max_connections: int = 8,
    config: Mapping[str, Any] | None = None,
    template: Mapping[str, Any] | None = None,
) -> Any:
    """A target from a spec: ``http(s)://URL``, ``cmd:COMMAND``, ``module:function``, or a
    callable. ``config``: the configuration to pass with every question (see the module's
    docstring); ``template``: the JSON request body of an HTTP target, with placeholders."""
    if template is not None and not (
        isinstance(spec, str) and spec.startswith(("http://", "https://"))
    ):
        raise ConfigError("a request template is for an http(s):// target only")
    if not isinstance(spec, str):
        if not callable(spec):
            raise ConfigError(f"cannot use {type(spec).__name__} as a target")
        return CallableTarget(spec, getattr(spec, "__qualname__", "callable"), config)
    if spec.startswith(("http://", "https://")):
        return HttpTarget(spec, fields, headers, timeout, max_connections, config, template)
    if spec.startswith("cmd:"):
        return CommandTarget(spec[4:], timeout, fields, config)
    target = CallableTarget.load(spec)
    target.config = dict(config or {})
    return target


# ---- the run -----------------------------------------------------------------------------------


def read_testset(path: str | os.PathLike[str]) -> list[dict[str, Any]]:
    """The rows of a JSONL test set (each needs a ``question``)."""
    p = Path(path)
    if not p.is_file():
        raise InputError(f"{p}: no such file. Give the test set written by 'ragsight generate'.")
    rows: list[dict[str, Any]] = []
    for n, line in enumerate(p.read_text("utf-8-sig").splitlines(), start=1):
        if not line.strip():
            continue
        try:
            row = json.loads(line)
        except json.JSONDecodeError as exc:
            raise InputError(f"{p}, line {n}: not valid JSON ({exc.msg}).") from exc
        if isinstance(row, dict) and isinstance(row.get("turns"), list):
            users = [t for t in row["turns"] if isinstance(t, dict) and t.get("role") == "user"]
            if not users or not all(isinstance(t.get("content"), str) and t["content"].strip() for t in users):
                raise InputError(f"{p}, line {n}: a conversation needs 'turns' with user messages "
                                 '({"role": "user", "content": "..."}), each with text.')
            rows.append(row)
            continue
        q = row.get("question", row.get("user_input")) if isinstance(row, dict) else None
        if not isinstance(q, str) or not q.strip():
            raise InputError(f"{p}, line {n}: the row has no 'question' text.")
        rows.append(row)
    if not rows:
        raise InputError(f"{p}: the test set is empty.")
    return rows


@dataclass
class RunResult:
    rows: list[dict[str, Any]]
    seconds: float
    errors: dict[str, int] = field(default_factory=dict)

    @property
    def failed(self) -> int:
        return sum(1 for r in self.rows if r["metadata"].get("error"))


async def _call_with_retries(
    target: Any,
    question: str,
    timeout: float,
    retries: int,
    backoff: float,
    rng: random.Random,
    history: Sequence[Mapping[str, Any]] | None = None,
) -> tuple[TargetReply | None, str | None, int, float]:
    """(reply, error, attempts, seconds of the last attempt), with the shared retry rule
    (``ragsight._retry``): the target's Retry-After, else exponential from ``backoff``, capped at
    30 s, with jitter."""
    last_start = time.monotonic()

    async def once() -> TargetReply:
        nonlocal last_start
        last_start = time.monotonic()
        try:
            call = target(question) if history is None else target(question, history)
            reply: TargetReply = await asyncio.wait_for(call, timeout=timeout)
        except asyncio.TimeoutError:
            raise TargetError(f"{getattr(target, 'name', 'target')}: no answer within {timeout:g} s",
                              retryable=True) from None
        return reply

    def as_failure(exc: BaseException) -> Failure | None:
        if isinstance(exc, TargetError):
            return Failure(redact(str(exc), env_secrets()), exc.retryable, exc.retry_after, False, exc)
        if isinstance(exc, Exception):  # one bad answer fails its question, not the whole run
            name = getattr(target, "name", "target")
            return Failure(redact(f"{name}: {type(exc).__name__}: {exc}", env_secrets())[:500], False, None,
                           False, exc)
        return None

    try:
        reply, attempts = await retry(once, attempts=retries + 1,
                                      backoff=Backoff(base_s=backoff, max_s=30.0, jitter=0.5,
                                                      retry_after_cap_s=30.0),
                                      classify_error=as_failure, rng=rng)
    except RetryExhaustedError as stop:
        return None, stop.failure.message, stop.attempts, time.monotonic() - last_start
    return reply, None, attempts, time.monotonic() - last_start


_ANSWER_KEYS = ("response", "answer", "contexts", "retrieved_contexts", "retrieved_ids", "metadata")


def _out_row(
    row: Mapping[str, Any],
    target_name: str,
    reply: TargetReply | None,
    error: str | None,
    latency: float,
    elapsed: float,
    attempts: int,
) -> dict[str, Any]:
    # the test set's fields (question, reference, reference_contexts, relevant_ids, id...) as given
    out: dict[str, Any] = {k: v for k, v in row.items() if k not in _ANSWER_KEYS}
    meta = dict(row.get("metadata") or {})
    meta.update(
        {
            "latency_s": round(latency, 4),
            "elapsed_s": round(elapsed, 4),
            "target": target_name,
            "error": error,
            "attempts": attempts,
        }
    )
    if reply is not None:
        out["response"] = reply.answer
        if reply.contexts is not None:
            out["contexts"] = list(reply.contexts)
        if reply.context_ids is not None:
            out["retrieved_ids"] = list(reply.context_ids)
        if reply.context_spans is not None:
            meta["retrieved_spans"] = list(reply.context_spans)
        if reply.model:
            meta["generator_model"] = reply.model
    out["metadata"] = meta
    return out


async def _converse(row: Mapping[str, Any], target: Any, name: str, timeout: float, retries: int,
                    backoff: float, rng: random.Random) -> dict[str, Any]:
    """A conversation of the test set, turn by turn: each user message is sent with the history
    so far (every earlier message as ``{"role", "content"}``), the reply becomes the assistant's
    turn (with its contexts), and an assistant turn written in the test set after that user
    message gives its reference (``reference``, ``reference_tool_calls``). A failed turn ends the
    conversation there; ``metadata.error`` names it."""
    made: list[dict[str, Any]] = []
    history: list[dict[str, Any]] = []
    per_turn: list[dict[str, Any]] = []
    error: str | None = None
    latency = 0.0
    planned = [t for t in row["turns"] if isinstance(t, Mapping)]
    for i, t in enumerate(planned):
        if t.get("role") != "user":
            continue
        question = str(t["content"])
        start = time.monotonic()
        reply, err, attempts, seconds = await _call_with_retries(target, question, timeout, retries, backoff, rng,
                                                                 history=list(history))
        latency += seconds
        made.append({"role": "user", "content": question})
        history.append({"role": "user", "content": question})
        k = len(per_turn)
        per_turn.append({"latency_s": round(seconds, 4), "elapsed_s": round(time.monotonic() - start, 4),
                         "attempts": attempts, "error": err})
        if reply is None:
            error = f"turn {k}: {err}"
            break
        answer: dict[str, Any] = {"role": "assistant", "content": reply.answer}
        if reply.contexts is not None:
            answer["contexts"] = list(reply.contexts)
        if reply.context_ids is not None:
            answer["retrieved_ids"] = list(reply.context_ids)
        nxt = planned[i + 1] if i + 1 < len(planned) else None
        if nxt is not None and nxt.get("role") == "assistant":
            for key in ("reference", "reference_tool_calls"):
                if nxt.get(key) is not None:
                    answer[key] = nxt[key]
        made.append(answer)
        history.append({"role": "assistant", "content": reply.answer})
    out: dict[str, Any] = {k: v for k, v in row.items() if k not in ("turns", "metadata")}
    meta = dict(row.get("metadata") or {})
    meta.update({"target": name, "error": error, "latency_s": round(latency, 4), "turns": per_turn})
    out["turns"] = made
    out["metadata"] = meta
    return out


async def arun(
    rows: Sequence[Mapping[str, Any]],
    target: Any,
    *,
    concurrency: int = 4,
    timeout: float = 60.0,
    retries: int = 2,
    backoff: float = 0.5,
    progress: Callable[[int, int], None] | None = None,
    seed: int = 0,
) -> RunResult:
    """Call ``target`` for each row; rows come back in input order, failures recorded."""
    if concurrency < 1:
        raise ConfigError("--concurrency must be at least 1")
    sem = asyncio.Semaphore(concurrency)
    name = getattr(target, "name", "target")
    done = 0
    rng = random.Random(seed)
    t0 = time.monotonic()

    async def one(row: Mapping[str, Any]) -> dict[str, Any]:
        nonlocal done
        if isinstance(row.get("turns"), list):
            async with sem:
                out_row = await _converse(row, target, name, timeout, retries, backoff, rng)
            done += 1
            if progress is not None:
                progress(done, len(rows))
            return out_row
        question = str(row.get("question", row.get("user_input")))
        async with sem:
            start = time.monotonic()
            reply, error, attempts, latency = await _call_with_retries(
                target, question, timeout, retries, backoff, rng
            )
            elapsed = time.monotonic() - start
        done += 1
        if progress is not None:
            progress(done, len(rows))
        return _out_row(row, name, reply, error, latency, elapsed, attempts)

    try:
        out = await asyncio.gather(*(one(r) for r in rows))
    finally:
        close = getattr(target, "aclose", None)
        if close is not None:
            await close()
    errors: dict[str, int] = {}
    for r in out:
        e = r["metadata"]["error"]
        if e:
            key = e.split(": ", 1)[-1][:80]
            errors[key] = errors.get(key, 0) + 1
    return RunResult(list(out), time.monotonic() - t0, errors)
