"""What one judge step does once it is to be asked (the Judge dedups it first):
:func:`ask_step` reads the cache, calls, parses one JSON object and re-asks after an unusable
reply; :func:`choose_step` reads the probabilities of a closed set of answers from the
next-token log-probabilities. Both send through the Judge's transport loop and record every
call."""

from __future__ import annotations

import json
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import replace
from typing import TYPE_CHECKING, Any, TypeVar

from ..prompts import Prompt
from ._parse import OutputError, close_repeating_list, extract_json_object
from ._protocol import ChoiceScores, Completion, JudgeRequest, Message
from ._records import Answer, JudgeCall, JudgeFailedError

if TYPE_CHECKING:
    from ._judge import Judge

__all__ = ["ask_step", "choose_step"]

T = TypeVar("T")


async def ask_step(
    judge: Judge, prompt: Prompt, request: JudgeRequest, key: str,
    validate: Callable[[dict[str, Any]], T], use_cache: bool,
) -> Answer[T]:
    """One structured step (:meth:`Judge.ask`): the cached answer when it still validates, else
    calls until a reply parses and validates, re-asking with what was wrong, within the step's
    deadline and the policy's re-asks."""
    judge.stats.steps += 1
    if use_cache and judge.cache is not None:
        hit = await judge.cache.get(key)
        if hit is not None:
            try:
                cached_value = validate(hit["parsed"])
            except (OutputError, ValueError, KeyError, TypeError):
                pass  # a stale entry that no longer validates: ask again
            else:
                call = judge._cached_call(prompt, request, key, hit, "json")
                judge._emit(call)
                return Answer(cached_value, key, (call,), prompt.id, prompt.version)
    calls: list[JudgeCall] = []
    deadline = time.monotonic() + judge.policy.step_deadline_s
    messages = request.messages
    max_tokens = request.max_tokens
    problem = ""
    repeats = 0
    for reask in range(judge.policy.max_reasks + 1):
        if reask:
            judge.stats.reasks += 1
        req = replace(request, messages=messages, max_tokens=max_tokens)
        completion, attempt_calls = await _complete(judge, prompt, req, key, deadline, len(calls))
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
            judge._emit(calls[-1])
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
        judge._emit(calls[-1])
        if use_cache and judge.cache is not None:
            await judge.cache.put(key, {
                "parsed": parsed, "raw_output": completion.text,
                "prompt_tokens": sum(c.prompt_tokens for c in calls),
                "completion_tokens": sum(c.completion_tokens for c in calls),
                "model": judge.model, "prompt_id": prompt.id, "prompt_version": prompt.version,
            })
        return Answer(value, key, tuple(calls), prompt.id, prompt.version)
    judge.stats.failed_steps += 1
    raise JudgeFailedError(
        f"{prompt.id}: no usable output after {len(calls)} call(s): {problem}", key, calls
    )


async def _complete(
    judge: Judge, prompt: Prompt, request: JudgeRequest, key: str, deadline: float, offset: int
) -> tuple[Completion | None, list[JudgeCall]]:
    """Transport-level retries. Returns the completion (its call not yet emitted) or None."""
    completion, calls, latency, started = await judge._attempts(
        prompt, request, key, deadline, offset, judge.provider.complete,
    )
    if completion is None:
        return None, calls
    calls.append(JudgeCall(
        step=key, attempt=offset + len(calls) + 1, prompt_id=prompt.id,
        prompt_version=prompt.version, prompt_hash=prompt.hash, judge=judge.name,
        model=completion.model or judge.model, messages=request.messages,
        raw_output=completion.text, parsed=None, prompt_tokens=completion.prompt_tokens,
        completion_tokens=completion.completion_tokens, latency_s=latency, cached=False,
        error=None, started_at=started, structured=completion.structured,
    ))
    return completion, calls


async def choose_step(
    judge: Judge, prompt: Prompt, request: JudgeRequest, key: str, choices: Sequence[str], use_cache: bool
) -> Answer[dict[str, float]]:
    """One closed-set step (:meth:`Judge.choose`): the cached probabilities, else the
    provider's, checked to be probabilities before they are stored or used."""
    judge.stats.steps += 1
    if use_cache and judge.cache is not None:
        hit = await judge.cache.get(key)
        if hit is not None and _probabilities(hit.get("parsed"), choices) is not None:
            call = judge._cached_call(prompt, request, key, hit, "choices")
            judge._emit(call)
            return Answer(dict(hit["parsed"]), key, (call,), prompt.id, prompt.version)
    deadline = time.monotonic() + judge.policy.step_deadline_s

    async def send(req: JudgeRequest) -> ChoiceScores:
        return await judge.provider.score_choices(req, choices)

    # RuntimeError: the embedded model's own failures are worth another attempt
    scores, calls, latency, started = await judge._attempts(
        prompt, request, key, deadline, 0, send, also_retry=(RuntimeError,),
    )
    probs_read = None if scores is None else _probabilities(scores.probs, choices)
    if scores is not None and probs_read is None:
        # a provider's non-finite or out-of-range probability is never stored or used
        calls.append(judge._error_call(
            prompt, request, key, len(calls) + 1, started, latency,
            f"the judge gave probabilities that are not numbers in [0, 1]: {dict(scores.probs)!r}"))
        judge._emit(calls[-1])
    if scores is not None and probs_read is not None:
        probs = probs_read
        call = JudgeCall(
            step=key, attempt=len(calls) + 1, prompt_id=prompt.id, prompt_version=prompt.version,
            prompt_hash=prompt.hash, judge=judge.name, model=judge.model,
            messages=request.messages, raw_output=json.dumps(dict(scores.raw_logprobs)),
            parsed=probs, prompt_tokens=scores.prompt_tokens, completion_tokens=0,
            latency_s=latency, cached=False, error=None, started_at=started,
            structured="logprobs", kind="choices",
        )
        calls.append(call)
        judge._emit(call)
        if use_cache and judge.cache is not None:
            await judge.cache.put(key, {"parsed": probs, "raw_output": call.raw_output,
                                        "prompt_tokens": call.prompt_tokens, "completion_tokens": 0,
                                        "model": judge.model, "prompt_id": prompt.id,
                                        "prompt_version": prompt.version})
        return Answer(probs, key, tuple(calls), prompt.id, prompt.version)
    judge.stats.failed_steps += 1
    raise JudgeFailedError(f"{prompt.id}: {calls[-1].error if calls else 'no answer'}", key, calls)


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
