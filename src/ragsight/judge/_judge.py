"""The Judge: wraps a provider with caching, retries, timeouts, concurrency limits, output
parsing with re-asking, and a record of every call.

Analyses call :meth:`Judge.ask` (structured JSON output, validated) or :meth:`Judge.choose`
(probabilities of a closed set of answers, for judges that expose log-probabilities). Both return
an :class:`Answer` holding the value and the calls behind it, or raise :class:`JudgeFailedError`
holding the calls that were tried.
"""

from __future__ import annotations

import asyncio
import contextlib
import contextvars
import hashlib
import json
import random
import time
from collections import OrderedDict
from collections.abc import Awaitable, Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field, replace
from typing import Any, Generic, Protocol, TypeVar

from ..calls import (
    OVERLOAD_BUDGET_S,
    Backoff,
    Failure,
    Limiter,
    LimiterStats,
    Permit,
    Price,
    classify,
    display_url,
    may_try_again,
)
from ..errors import BudgetExceededError, ConfigError, JudgeError, JudgeUnavailableError
from ..prompts import Prompt
from ._parse import OutputError, close_repeating_list, extract_json_object
from ._protocol import ChoiceScores, Completion, JudgeProvider, JudgeRequest, Message, ProviderError

__all__ = [
    "Answer",
    "CallCache",
    "CallSink",
    "Judge",
    "JudgeCall",
    "JudgeFailedError",
    "JudgeStats",
    "MemoryCallCache",
    "RetryPolicy",
    "SpendLimit",
    "record_calls",
]

T = TypeVar("T")
R = TypeVar("R")


# Answers a Judge without a cache keeps for repeats within a run (see Judge._memo).
MEMO_SIZE = 4096


@dataclass(frozen=True)
class JudgeCall:
    """One round trip to the model (or one cache hit), as recorded in the store.

    ``step`` is the cache key of the logical step the call belongs to; a step may take several
    calls (retries after transport errors, re-asks after unusable output). ``attempt`` numbers
    them from 1.
    """

    step: str
    attempt: int
    prompt_id: str
    prompt_version: str
    prompt_hash: str
    judge: str
    model: str
    messages: tuple[Message, ...]
    raw_output: str | None
    parsed: Any
    prompt_tokens: int
    completion_tokens: int
    latency_s: float
    cached: bool
    error: str | None
    started_at: float
    structured: str = ""
    kind: str = "json"  # "json" | "choices"

    def to_dict(self) -> dict[str, Any]:
        return {
            "step": self.step,
            "attempt": self.attempt,
            "prompt_id": self.prompt_id,
            "prompt_version": self.prompt_version,
            "prompt_hash": self.prompt_hash,
            "judge": self.judge,
            "model": self.model,
            "messages": [{"role": m.role, "content": m.content} for m in self.messages],
            "raw_output": self.raw_output,
            "parsed": self.parsed,
            "prompt_tokens": self.prompt_tokens,
            "completion_tokens": self.completion_tokens,
            "latency_s": self.latency_s,
            "cached": self.cached,
            "error": self.error,
            "started_at": self.started_at,
            "structured": self.structured,
            "kind": self.kind,
        }


@dataclass(frozen=True)
class Answer(Generic[T]):
    value: T
    step: str
    calls: tuple[JudgeCall, ...]
    prompt_id: str
    prompt_version: str

    @property
    def cached(self) -> bool:
        return bool(self.calls) and all(c.cached for c in self.calls)


class JudgeFailedError(JudgeError):
    """A judge step produced no usable result after its retries and re-asks."""

    def __init__(self, message: str, step: str, calls: Sequence[JudgeCall]) -> None:
        super().__init__(message)
        self.step = step
        self.calls = tuple(calls)


class JudgeRejectedError(JudgeFailedError, JudgeUnavailableError):
    """A judge call met a failure no retry or wait can help: the key is rejected (HTTP 401/403),
    the model is unknown (404), the quota is exhausted, the host does not resolve. It stops the
    run at once, as the preflight would have (finished samples are saved; ``--resume``
    continues once it is fixed); the Judge sends no further call. A JudgeFailedError for the
    step that met it (``step``, ``calls``), and a JudgeUnavailableError for the run."""


class CallCache(Protocol):
    """Content-addressed store of finished judge steps: key -> (parsed value, raw output, calls).

    Async, so that a cache across processes (the Ray backend's cache actor) is awaited like any
    other I/O and the Judge needs no subclass to prefetch from it."""

    async def get(self, key: str) -> dict[str, Any] | None: ...

    async def put(self, key: str, entry: dict[str, Any]) -> None: ...


class MemoryCallCache:
    """An in-process cache (for tests and one-off use)."""

    def __init__(self) -> None:
        self._d: dict[str, dict[str, Any]] = {}

    async def get(self, key: str) -> dict[str, Any] | None:
        return self._d.get(key)

    async def put(self, key: str, entry: dict[str, Any]) -> None:
        self._d[key] = entry

    def __len__(self) -> int:
        return len(self._d)


CallSink = Callable[[JudgeCall], None]

# Where the calls made in the current task go besides the Judge's own sink: set by
# :func:`record_calls` around one sample's work, so each call lands in that sample's trail while
# one Judge serves every sample of a run. Tasks started inside inherit it (contextvars).
_recorder: contextvars.ContextVar[CallSink | None] = contextvars.ContextVar("ragsight_calls", default=None)


@contextlib.contextmanager
def record_calls(sink: CallSink) -> Iterator[None]:
    """Send every judge call made inside the block (and in tasks it starts) to ``sink``."""
    token = _recorder.set(sink)
    try:
        yield
    finally:
        _recorder.reset(token)


@dataclass(frozen=True)
class RetryPolicy:
    """Bounds on how hard one step tries.

    ``max_attempts``: transport attempts per model call (429, 5xx, timeouts, resets).
    ``max_reasks``: extra calls after an unusable output, each telling the judge what was wrong.
    A re-ask costs a call only when an output was unusable; with 3, a judge that breaks 20% of
    its outputs fails 0.2^4 = 0.16% of steps (0.8% with 2).
    ``step_deadline_s``: wall-time cap for a whole step, retries and waits included.
    ``overload_budget_s``: refusals for overload (429, 503, 529) without Retry-After are tried
    again beyond ``max_attempts`` while this much of the step's time is not spent (a burst of
    refusals costs waits, not scores); see ``ragsight._retry.may_try_again``.
    """

    max_attempts: int = 4
    max_reasks: int = 3
    backoff_base_s: float = 0.5
    backoff_max_s: float = 20.0
    call_timeout_s: float = 120.0
    step_deadline_s: float = 300.0
    overload_budget_s: float = OVERLOAD_BUDGET_S

    def __post_init__(self) -> None:
        problems = []
        if not isinstance(self.max_attempts, int) or self.max_attempts < 1:
            problems.append(f"max_attempts must be at least 1 (the CLI's --max-retries + 1), got {self.max_attempts!r}")
        if not isinstance(self.max_reasks, int) or self.max_reasks < 0:
            problems.append(f"max_reasks must be 0 or more, got {self.max_reasks!r}")
        for name in ("call_timeout_s", "step_deadline_s"):
            value = getattr(self, name)
            if not isinstance(value, (int, float)) or not value > 0 or value != value:
                flag = " (the CLI's --timeout)" if name == "call_timeout_s" else ""
                problems.append(f"{name} must be a positive number of seconds{flag}, got {value!r}")
        for name in ("backoff_base_s", "backoff_max_s", "overload_budget_s"):
            value = getattr(self, name)
            if not isinstance(value, (int, float)) or not value >= 0:
                problems.append(f"{name} must be 0 or more seconds, got {value!r}")
        if problems:
            raise ConfigError("invalid retry policy: " + "; ".join(problems))


class SpendLimit:
    """A run's money limit (``--max-cost``): no call is sent that could take the spend past it.

    Before each call its worst cost is reserved: the prompt counted at one token per
    :data:`BYTES_PER_TOKEN` bytes of its text (more tokens than common tokenizers make of
    English, about one per character of Chinese or Japanese) and the whole ``max_tokens`` reply.
    When the spend so far, the reservations of the calls in flight and this reservation exceed
    the limit, :class:`BudgetExceededError` is raised instead of the call. A finished call
    replaces its reservation by its reported cost. ``spent`` counts this process's calls only.
    """

    BYTES_PER_TOKEN = 3

    def __init__(self, limit_usd: float, price: Price) -> None:
        self.limit = float(limit_usd)
        self.price = price
        self.spent = 0.0
        self.reserved = 0.0

    def worst_cost(self, request: JudgeRequest) -> float:
        size = sum(len(m.content.encode("utf-8")) for m in request.messages)
        prompt = -(-size // self.BYTES_PER_TOKEN) + 4 * len(request.messages)
        return self.price.cost(prompt, request.max_tokens)

    def admit(self, request: JudgeRequest) -> float:
        worst = self.worst_cost(request)
        if self.spent + self.reserved + worst > self.limit:
            raise BudgetExceededError(
                f"the next judge call could cost up to ${worst:.4f}, and ${self.spent:.4f} is spent "
                f"(${self.reserved:.4f} more in flight) of the ${self.limit:g} limit (--max-cost)",
                spent=self.spent, limit=self.limit)
        self.reserved += worst
        return worst

    def settle(self, reservation: float, used: tuple[int, int] | None) -> None:
        """Replace a call's reservation by its cost: ``used`` (prompt, completion tokens) as
        reported, or None for a call that may have been billed unseen (counted at its worst)."""
        self.reserved = max(0.0, self.reserved - reservation)
        self.spent += reservation if used is None else self.price.cost(*used)


@dataclass
class JudgeStats:
    steps: int = 0
    calls: int = 0
    cache_hits: int = 0
    retries: int = 0
    reasks: int = 0
    failed_steps: int = 0
    answers_too_large: int = 0  # answers cut at the provider's size cap and not used
    prompt_tokens: int = 0
    completion_tokens: int = 0
    latency_s: float = 0.0
    by_prompt: dict[str, int] = field(default_factory=dict)
    # the concurrency limit's figures (ragsight._limiter), live: the progress line reads them
    limiter: LimiterStats | None = None

    def to_dict(self) -> dict[str, Any]:
        extra = {"concurrency": self.limiter.to_dict()} if self.limiter is not None else {}
        return {
            "steps": self.steps,
            "calls": self.calls,
            "cache_hits": self.cache_hits,
            "retries": self.retries,
            "reasks": self.reasks,
            "failed_steps": self.failed_steps,
            "answers_too_large": self.answers_too_large,
            "prompt_tokens": self.prompt_tokens,
            "completion_tokens": self.completion_tokens,
            "latency_s": round(self.latency_s, 3),
            "by_prompt": dict(self.by_prompt),
            **extra,
        }


class _DeadlineReached(Exception):
    """The step's deadline passed while the call waited for a concurrency slot."""


def provider_identity(provider: Any) -> dict[str, Any]:
    """What of a provider changes its answers, for the cache key and the run's record: the
    provider's own ``identity`` mapping when it has one (the embedded judge: its model file; a
    wrapping provider: its inner one's), else its name, model, server (``base_url`` or
    ``api_base``, without user info or query) and ``api_version``."""
    own = getattr(provider, "identity", None)
    if callable(own):
        own = own()
    if isinstance(own, Mapping):
        return {str(k): v for k, v in own.items()}
    ident: dict[str, Any] = {"provider": provider.name, "model": provider.model}
    for attr in ("base_url", "api_base"):  # OpenAI-compatible servers; LiteLLM's endpoint
        base = getattr(provider, attr, None)
        if isinstance(base, str) and base:
            ident["base_url"] = display_url(base)
            break
    version = getattr(provider, "api_version", None)
    if isinstance(version, str) and version:
        ident["api_version"] = version
    return ident


def step_key(
    judge_model: str, request: JudgeRequest, prompt_hash: str, kind: str, extra: Any = None,
    identity: Mapping[str, Any] | None = None,
) -> str:
    """The cache key of one judge step: the provider's identity (server, model, model file:
    :func:`provider_identity`), the prompt and its hash, the rendered messages, the output
    schema, the sampling settings and the kind of step. Two servers that serve different models
    under one name therefore never share an answer."""
    basis = {
        "model": judge_model,
        "provider": dict(identity) if identity is not None else None,
        "prompt": [request.prompt_id, request.prompt_version, prompt_hash],
        "messages": [[m.role, m.content] for m in request.messages],
        "schema": request.schema,
        "settings": [request.max_tokens, request.temperature, request.seed],
        "kind": kind,
        "extra": extra,
    }
    return hashlib.sha256(json.dumps(basis, sort_keys=True, ensure_ascii=False, default=str).encode()).hexdigest()


class Judge:
    """A provider wrapped with everything a reliable evaluation needs.

    One ``Judge`` is shared by all samples of a run: its limiter (``ragsight._limiter``) bounds
    the calls in flight, adapting the limit to what the provider accepts up to the ceiling
    ``max_concurrency`` (``adaptive=False``: a fixed limit at the ceiling); its stats count calls,
    tokens and failures, and ``sink`` receives every call. It is configured at construction and
    not changed during a run: :meth:`for_run` gives a fresh wrapper on the same provider with a
    run's cache and seed; :func:`record_calls` routes a sample's calls.
    """

    def __init__(
        self,
        provider: JudgeProvider,
        *,
        cache: CallCache | None = None,
        policy: RetryPolicy | None = None,
        max_concurrency: int | None = None,
        sink: CallSink | None = None,
        seed: int = 0,
        temperature: float = 0.0,
        adaptive: bool = True,
        spend_limit: SpendLimit | None = None,
    ) -> None:
        self.provider = provider
        self.spend_limit = spend_limit
        self.identity = provider_identity(provider)
        self.cache = cache
        self.policy = policy or RetryPolicy()
        limit = max_concurrency or provider.max_concurrency
        self._limit = max(1, min(limit, provider.max_concurrency))
        self._adaptive = adaptive
        # one model in this process (max_concurrency 1) has nothing to adapt
        self.limiter = Limiter(self._limit, adaptive=adaptive and self._limit > 1,
                               retry_after_cap_s=self.policy.backoff_max_s * 3)
        self.sink = sink
        self.seed = seed
        self.temperature = temperature
        self.stats = JudgeStats(limiter=self.limiter.stats)
        self._rng = random.Random(seed)
        self._backoff = Backoff(self.policy.backoff_base_s, self.policy.backoff_max_s, jitter=0.5,
                                retry_after_cap_s=self.policy.backoff_max_s * 3)
        self._inflight: dict[str, asyncio.Future[Any]] = {}
        # Without a cache, the answers of this judge's finished steps, so that a step asked again
        # later in the run (two samples sharing a reference text) is not sent again. One Judge
        # per run, and every run of ``--repeats`` has its own (and its own seed), so repeated
        # runs still ask afresh. Bounded (least recently used out): an answer holds its call
        # records, prompts included, and repeats come from nearby samples.
        self._memo: OrderedDict[str, Answer[Any]] = OrderedDict()
        # the first fatal failure (a rejected key...): every later step raises it, sends nothing
        self._rejected: JudgeRejectedError | None = None

    def for_run(
        self, *, cache: CallCache | None = None, seed: int | None = None,
        temperature: float | None = None, sink: CallSink | None = None,
        spend_limit: SpendLimit | None = None,
    ) -> Judge:
        """A fresh Judge on the same provider, policy and concurrency limit, for one run: its
        own cache, stats and memo (and money limit, when given); the seed and temperature kept
        unless given."""
        return Judge(
            self.provider, cache=cache, policy=self.policy, max_concurrency=self._limit,
            adaptive=self._adaptive, sink=sink if sink is not None else self.sink,
            seed=self.seed if seed is None else seed,
            temperature=self.temperature if temperature is None else temperature,
            spend_limit=spend_limit,
        )

    @property
    def name(self) -> str:
        return self.provider.name

    @property
    def model(self) -> str:
        return self.provider.model

    @property
    def supports_choices(self) -> bool:
        return self.provider.supports_choices

    def start_run(self) -> None:
        """Forget the answers memorised in an earlier run (used when there is no cache)."""
        self._memo.clear()

    @property
    def adaptive(self) -> bool:
        """Whether the limit of calls in flight adapts below the ceiling."""
        return self._adaptive

    @property
    def max_concurrency(self) -> int:
        """The ceiling of calls in flight (the limit in effect is ``limiter.limit``)."""
        return self._limit

    def _emit(self, call: JudgeCall) -> None:
        st = self.stats
        if call.cached:
            st.cache_hits += 1
        else:
            st.calls += 1
            st.prompt_tokens += call.prompt_tokens
            st.completion_tokens += call.completion_tokens
            st.latency_s += call.latency_s
            st.by_prompt[call.prompt_id] = st.by_prompt.get(call.prompt_id, 0) + 1
        if self.sink is not None:
            self.sink(call)
        recorder = _recorder.get()
        if recorder is not None:
            recorder(call)

    def request(
        self, prompt: Prompt, values: Mapping[str, Any], *, count: int | None = None,
        max_tokens: int = 512, schema: bool = True,
    ) -> JudgeRequest:
        rendered = {k: v for k, v in values.items() if isinstance(v, str)}
        return JudgeRequest(
            prompt_id=prompt.id,
            prompt_version=prompt.version,
            messages=prompt.render(**rendered),
            schema=prompt.schema_for(count) if schema else None,
            max_tokens=max_tokens,
            temperature=self.temperature,
            seed=self.seed,
            variables=dict(values),
        )

    # ---- structured output ----------------------------------------------------------------

    async def ask(
        self,
        prompt: Prompt,
        values: Mapping[str, Any],
        validate: Callable[[dict[str, Any]], T],
        *,
        count: int | None = None,
        max_tokens: int = 512,
        use_cache: bool = True,
    ) -> Answer[T]:
        """Render ``prompt``, call the judge, parse one JSON object and pass it to ``validate``,
        which returns the value or raises OutputError (ValueError) saying what is wrong."""
        request = self.request(prompt, values, count=count, max_tokens=max_tokens)
        key = step_key(self.model, request, prompt.hash, "json", identity=self.identity)
        return await self._dedup(key, lambda: self._ask(prompt, request, key, validate, use_cache))

    def _reuse(self, result: Any) -> Any:
        # A step answered by another caller's call is recorded as a cache hit of that call.
        if isinstance(result, Answer) and result.calls:
            call = replace(result.calls[-1], attempt=1, cached=True, prompt_tokens=0,
                           completion_tokens=0, latency_s=0.0, error=None, started_at=time.time())
            self._emit(call)
            return Answer(result.value, result.step, (call,), result.prompt_id, result.prompt_version)
        return result

    async def _dedup(self, key: str, make: Callable[[], Any]) -> Any:
        # The same step asked twice at once (two samples sharing a text) is sent once. The waiter
        # records a cache hit, so each sample's trail lists every step behind its scores whatever
        # the timing. Without a cache (``cache=False``, whose runs also pass use_cache=False), a
        # step asked again after it finished is answered from the run's memo in the same way.
        if self.cache is None and key in self._memo:
            self._memo.move_to_end(key)
            return self._reuse(self._memo[key])
        fut = self._inflight.get(key)
        if fut is not None:
            return self._reuse(await asyncio.shield(fut))
        loop = asyncio.get_running_loop()
        fut = loop.create_future()
        self._inflight[key] = fut
        try:
            result = await make()
        except BaseException as exc:
            fut.set_exception(exc)
            fut.exception()  # mark retrieved
            raise
        else:
            fut.set_result(result)
            if self.cache is None and isinstance(result, Answer):
                self._memo[key] = result
                if len(self._memo) > MEMO_SIZE:
                    self._memo.popitem(last=False)
            return result
        finally:
            del self._inflight[key]

    async def _ask(
        self, prompt: Prompt, request: JudgeRequest, key: str,
        validate: Callable[[dict[str, Any]], T], use_cache: bool,
    ) -> Answer[T]:
        self.stats.steps += 1
        if use_cache and self.cache is not None:
            hit = await self.cache.get(key)
            if hit is not None:
                try:
                    cached_value = validate(hit["parsed"])
                except (OutputError, ValueError, KeyError, TypeError):
                    pass  # a stale entry that no longer validates: ask again
                else:
                    call = self._cached_call(prompt, request, key, hit, "json")
                    self._emit(call)
                    return Answer(cached_value, key, (call,), prompt.id, prompt.version)
        calls: list[JudgeCall] = []
        deadline = time.monotonic() + self.policy.step_deadline_s
        messages = request.messages
        max_tokens = request.max_tokens
        problem = ""
        repeats = 0
        for reask in range(self.policy.max_reasks + 1):
            if reask:
                self.stats.reasks += 1
            req = replace(request, messages=messages, max_tokens=max_tokens)
            completion, attempt_calls = await self._complete(prompt, req, key, deadline, len(calls))
            calls.extend(attempt_calls)
            if completion is None:
                problem = calls[-1].error or "the judge did not answer"
                break
            try:
                if completion.finish_reason in ("length", "repeat"):
                    # A reply cut off while the judge repeated its list loses only repeats: closed
                    # as it is (the repair is noted in the parsed output). Anything else: re-ask.
                    repaired = close_repeating_list(completion.text)
                    if repaired is None and completion.finish_reason == "repeat":
                        # the embedded judge stopped itself: more room would only repeat more
                        repeats += 1
                        raise OutputError(f"the judge repeated itself and was stopped after "
                                          f"{completion.completion_tokens} tokens")
                    if repaired is None:
                        max_tokens = min(max_tokens * 2, 4096)
                        raise OutputError(f"the reply was cut off at {req.max_tokens} tokens")
                    parsed = repaired
                else:
                    parsed = extract_json_object(completion.text)
                value = validate(parsed)
            except (OutputError, ValueError, KeyError, TypeError) as exc:
                problem = f"{type(exc).__name__}: {exc}" if not isinstance(exc, OutputError) else str(exc)
                calls[-1] = replace(calls[-1], error=f"unusable output: {problem}")
                self._emit(calls[-1])
                if time.monotonic() >= deadline or repeats >= 2:
                    break  # twice in a loop: asked again, a greedy judge loops again
                messages = (
                    *request.messages,
                    Message("assistant", completion.text[:4000]),
                    Message("user", f"Your reply could not be used: {problem}. Reply again with only "
                            "the JSON object, complete, as asked."),
                )
                continue
            calls[-1] = replace(calls[-1], parsed=parsed)
            self._emit(calls[-1])
            if use_cache and self.cache is not None:
                await self.cache.put(key, {
                    "parsed": parsed, "raw_output": completion.text,
                    "prompt_tokens": sum(c.prompt_tokens for c in calls),
                    "completion_tokens": sum(c.completion_tokens for c in calls),
                    "model": self.model, "prompt_id": prompt.id, "prompt_version": prompt.version,
                })
            return Answer(value, key, tuple(calls), prompt.id, prompt.version)
        self.stats.failed_steps += 1
        raise JudgeFailedError(
            f"{prompt.id}: no usable output after {len(calls)} call(s): {problem}", key, calls
        )

    async def _complete(
        self, prompt: Prompt, request: JudgeRequest, key: str, deadline: float, offset: int
    ) -> tuple[Completion | None, list[JudgeCall]]:
        """Transport-level retries. Returns the completion (its call not yet emitted) or None."""
        completion, calls, latency, started = await self._attempts(
            prompt, request, key, deadline, offset, self.provider.complete,
        )
        if completion is None:
            return None, calls
        calls.append(JudgeCall(
            step=key, attempt=offset + len(calls) + 1, prompt_id=prompt.id,
            prompt_version=prompt.version, prompt_hash=prompt.hash, judge=self.name,
            model=completion.model or self.model, messages=request.messages,
            raw_output=completion.text, parsed=None, prompt_tokens=completion.prompt_tokens,
            completion_tokens=completion.completion_tokens, latency_s=latency, cached=False,
            error=None, started_at=started, structured=completion.structured,
        ))
        return completion, calls

    async def _attempts(
        self, prompt: Prompt, request: JudgeRequest, key: str, deadline: float, offset: int,
        send: Callable[[JudgeRequest], Awaitable[R]], *, also_retry: tuple[type[Exception], ...] = (),
    ) -> tuple[R | None, list[JudgeCall], float, float]:
        """The one transport loop of both kinds of step: a permit from the limiter, the call
        under the step's deadline, and on failure a recorded error call and the shared backoff
        (``ragsight._retry``). A refusal that cut the limit is sent again at once, once per step
        (the lower limit paces it); a server's Retry-After pauses the whole provider. Returns
        (result or None, the error calls, latency and start time of the successful attempt). A
        fatal failure (bad key, unknown model) raises JudgeFailedError."""
        calls: list[JudgeCall] = []
        pol = self.policy
        limiter = self.limiter
        quick_retry_used = False
        first = time.monotonic()
        attempt = 0
        while True:
            attempt += 1
            stopped = limiter.stopped_answering
            if stopped is not None:  # the circuit is open: no call goes to a judge that went silent
                raise JudgeUnavailableError(self._silent_message(stopped))
            if self._rejected is not None:  # a rejected key does not come back within a run
                raise JudgeRejectedError(str(self._rejected), key, calls)
            started = time.time()
            t0 = time.monotonic()
            permit: Permit | None = None
            try:
                permit = await limiter.acquire()
                # the call's clock starts when it may go out, not while it waits for a permit
                started = time.time()
                t0 = time.monotonic()
                remaining = deadline - t0
                if remaining <= 0:
                    raise _DeadlineReached
                limit = self.spend_limit
                reserved = limit.admit(request) if limit is not None else 0.0
                try:
                    result = await asyncio.wait_for(send(request), timeout=min(pol.call_timeout_s, remaining))
                except BaseException as exc:
                    if limit is not None:
                        # a refusal is not billed; a call cut off (time-out, reset) may be: at its worst
                        limit.settle(reserved, (0, 0) if isinstance(exc, ProviderError) else None)
                    raise
                if limit is not None:
                    limit.settle(reserved, (int(getattr(result, "prompt_tokens", 0) or 0),
                                            int(getattr(result, "completion_tokens", 0) or 0)))
            except _DeadlineReached:
                limiter.forfeit()
                calls.append(self._error_call(prompt, request, key, offset + attempt, started, 0.0,
                                              "step deadline reached before the call"))
                self._emit(calls[-1])
                return None, calls, 0.0, started
            except Exception as exc:
                if not isinstance(exc, (ProviderError, asyncio.TimeoutError, OSError, *also_retry)):
                    if permit is not None:
                        limiter.forfeit()
                    raise
                failure = classify(exc) or Failure(f"{type(exc).__name__}: {exc}", True, None, False, exc)
                cut = limiter.release(permit, failure) if permit is not None else False
                if getattr(exc, "too_large", False):
                    self.stats.answers_too_large += 1
                calls.append(self._error_call(prompt, request, key, offset + attempt, started,
                                              time.monotonic() - t0, failure.message))
                self._emit(calls[-1])
                if failure.fatal:
                    self.stats.failed_steps += 1
                    if self._rejected is None:
                        self._rejected = JudgeRejectedError(
                            f"judge {self.name!r}, step {prompt.id}: {failure.message.rstrip().rstrip('.')}. The "
                            "run stops here (finished samples are saved; --resume continues it once this is "
                            "fixed)", key, calls)
                    raise JudgeRejectedError(str(self._rejected), key, calls) from exc
                if limiter.stopped_answering is not None:
                    raise JudgeUnavailableError(self._silent_message(limiter.stopped_answering)) from exc
                if cut and failure.retry_after is None and not quick_retry_used:
                    quick_retry_used = True
                    wait = 0.0
                else:
                    wait = self._backoff.delay(attempt, failure.retry_after, self._rng)
                if not may_try_again(failure, attempt, pol.max_attempts, time.monotonic() - first, wait,
                                     pol.overload_budget_s):
                    return None, calls, 0.0, started
                if time.monotonic() + wait >= deadline:
                    return None, calls, 0.0, started
                self.stats.retries += 1
                await asyncio.sleep(wait)
                continue
            except BaseException:
                if permit is not None:
                    limiter.forfeit()
                raise
            latency = time.monotonic() - t0
            limiter.release(permit, None, latency)
            return result, calls, latency, started

    def _silent_message(self, silent: tuple[int, float]) -> str:
        where = getattr(self.provider, "base_url", None)
        at = f" at {display_url(where)}" if isinstance(where, str) and where else ""
        return (f"judge {self.name!r}{at} stopped answering: {silent[0]} calls in a row got no answer "
                f"within their time limit over {silent[1]:.0f} s, none answered since; the run stops "
                "here (finished samples are saved; --resume continues it once the judge answers)")

    def _error_call(
        self, prompt: Prompt, request: JudgeRequest, key: str, attempt: int, started: float,
        latency: float, error: str,
    ) -> JudgeCall:
        return JudgeCall(
            step=key, attempt=attempt, prompt_id=prompt.id, prompt_version=prompt.version,
            prompt_hash=prompt.hash, judge=self.name, model=self.model, messages=request.messages,
            raw_output=None, parsed=None, prompt_tokens=0, completion_tokens=0, latency_s=latency,
            cached=False, error=error, started_at=started,
        )

    def _cached_call(
        self, prompt: Prompt, request: JudgeRequest, key: str, hit: Mapping[str, Any], kind: str
    ) -> JudgeCall:
        return JudgeCall(
            step=key, attempt=1, prompt_id=prompt.id, prompt_version=prompt.version,
            prompt_hash=prompt.hash, judge=self.name, model=self.model, messages=request.messages,
            raw_output=hit.get("raw_output"), parsed=hit.get("parsed"), prompt_tokens=0,
            completion_tokens=0, latency_s=0.0, cached=True, error=None, started_at=time.time(),
            kind=kind,
        )

    # ---- closed-set answers from log-probabilities ------------------------------------------

    async def choose(
        self,
        prompt: Prompt,
        values: Mapping[str, Any],
        choices: Sequence[str] = ("Yes", "No"),
        *,
        use_cache: bool = True,
    ) -> Answer[dict[str, float]]:
        """P(choice) for each choice, from next-token log-probabilities (embedded judge)."""
        request = self.request(prompt, values, max_tokens=1, schema=False)
        key = step_key(self.model, request, prompt.hash, "choices", list(choices), identity=self.identity)
        return await self._dedup(key, lambda: self._choose(prompt, request, key, choices, use_cache))

    async def _choose(
        self, prompt: Prompt, request: JudgeRequest, key: str, choices: Sequence[str], use_cache: bool
    ) -> Answer[dict[str, float]]:
        self.stats.steps += 1
        if use_cache and self.cache is not None:
            hit = await self.cache.get(key)
            if hit is not None and _probabilities(hit.get("parsed"), choices) is not None:
                call = self._cached_call(prompt, request, key, hit, "choices")
                self._emit(call)
                return Answer(dict(hit["parsed"]), key, (call,), prompt.id, prompt.version)
        deadline = time.monotonic() + self.policy.step_deadline_s

        async def send(req: JudgeRequest) -> ChoiceScores:
            return await self.provider.score_choices(req, choices)

        # RuntimeError: the embedded model's own failures are worth another attempt
        scores, calls, latency, started = await self._attempts(
            prompt, request, key, deadline, 0, send, also_retry=(RuntimeError,),
        )
        probs_read = None if scores is None else _probabilities(scores.probs, choices)
        if scores is not None and probs_read is None:
            # a provider's non-finite or out-of-range probability is never stored or used
            calls.append(self._error_call(
                prompt, request, key, len(calls) + 1, started, latency,
                f"the judge gave probabilities that are not numbers in [0, 1]: {dict(scores.probs)!r}"))
            self._emit(calls[-1])
        if scores is not None and probs_read is not None:
            probs = probs_read
            call = JudgeCall(
                step=key, attempt=len(calls) + 1, prompt_id=prompt.id, prompt_version=prompt.version,
                prompt_hash=prompt.hash, judge=self.name, model=self.model,
                messages=request.messages, raw_output=json.dumps(dict(scores.raw_logprobs)),
                parsed=probs, prompt_tokens=scores.prompt_tokens, completion_tokens=0,
                latency_s=latency, cached=False, error=None, started_at=started,
                structured="logprobs", kind="choices",
            )
            calls.append(call)
            self._emit(call)
            if use_cache and self.cache is not None:
                await self.cache.put(key, {"parsed": probs, "raw_output": call.raw_output,
                                           "prompt_tokens": call.prompt_tokens, "completion_tokens": 0,
                                           "model": self.model, "prompt_id": prompt.id,
                                           "prompt_version": prompt.version})
            return Answer(probs, key, tuple(calls), prompt.id, prompt.version)
        self.stats.failed_steps += 1
        raise JudgeFailedError(f"{prompt.id}: {calls[-1].error if calls else 'no answer'}", key, calls)

    async def aclose(self) -> None:
        await self.provider.aclose()


def _probabilities(value: Any, choices: Sequence[str]) -> dict[str, float] | None:
    """{choice: probability} when ``value`` holds a finite probability in [0, 1] for every
    choice (a cached answer or a provider's); None otherwise (never NaN downstream)."""
    if not isinstance(value, Mapping):
        return None
    out: dict[str, float] = {}
    for c in choices:
        p = value.get(c, 0.0)
        if isinstance(p, bool) or not isinstance(p, (int, float)) or not 0.0 <= float(p) <= 1.0:
            return None
        out[c] = float(p)
    return out
