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

The targets are in ``_target_callable.py``, ``_target_http.py`` and ``_target_command.py``, what
they answer in ``_reply.py``, the rows read and written in ``_rows.py``.
"""

from __future__ import annotations

import asyncio
import random
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from ..calls import Backoff, Failure, RetryExhaustedError, redact, retry
from ..errors import ConfigError
from ._reply import TargetError, TargetReply, env_secrets
from ._rows import answered_row
from ._target_callable import CallableTarget
from ._target_command import CommandTarget
from ._target_http import HttpFields, HttpTarget

__all__ = ["RunResult", "arun", "make_target"]


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
        return answered_row(row, name, reply, error, latency, elapsed, attempts)

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
