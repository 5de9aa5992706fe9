"""The Judge: wraps a provider with caching, retries, timeouts, concurrency limits, output
parsing with re-asking, and a record of every call.

Analyses call :meth:`Judge.ask` (structured JSON output, validated) or :meth:`Judge.choose`
(probabilities of a closed set of answers, for judges that expose log-probabilities). Both return
an :class:`Answer` holding the value and the calls behind it, or raise :class:`JudgeFailedError`
holding the calls that were tried. This module holds the wrapper and its transport loop; what a
step does between its calls is in ``_steps.py``, the records in ``_records.py``, the cache keys in
``_keys.py``, the retry policy and money limit in ``_policy.py``.
"""

from __future__ import annotations

import asyncio
import random
import time
from collections import OrderedDict
from collections.abc import Awaitable, Callable, Mapping, Sequence
from dataclasses import replace
from typing import Any, TypeVar

from ..calls import Backoff, Failure, Limiter, Permit, classify, display_url, may_try_again
from ..errors import JudgeUnavailableError
from ..prompts import Prompt
from ._keys import provider_identity, step_key
from ._policy import RetryPolicy, SpendLimit
from ._protocol import JudgeProvider, JudgeRequest, ProviderError
from ._records import (
    Answer,
    CallCache,
    CallSink,
    JudgeCall,
    JudgeRejectedError,
    JudgeStats,
    current_recorder,
)
from ._steps import ask_step, choose_step

__all__ = ["MEMO_SIZE", "Judge"]

T = TypeVar("T")
R = TypeVar("R")


# Answers a Judge without a cache keeps for repeats within a run (see Judge._memo).
MEMO_SIZE = 4096


class _DeadlineReached(Exception):
    """The step's deadline passed while the call waited for a concurrency slot."""



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
        recorder = current_recorder()
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
        return await self._dedup(key, lambda: ask_step(self, prompt, request, key, validate, use_cache))

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
                        # a refusal is not billed; a call cut off (the run stopping, a time-out, a reset)
                        # reported no usage: counted apart, at its worst (SpendLimit)
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
        return await self._dedup(key, lambda: choose_step(self, prompt, request, key, choices, use_cache))

    async def aclose(self) -> None:
        await self.provider.aclose()

