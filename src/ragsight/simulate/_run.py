"""Holding the simulated conversations with the system under test.

For each scenario, what the user wants (``_user.SimulatedUser.needs``), then turn by turn: the
user's message (the scenario's ``first_message``, else written by the judge), the target's
answer to it with the history so far (the target kinds of ``ragsight answer``:
``module:function`` called with ``(question, history)``, HTTP with the history in the request,
``cmd:`` with it on stdin), then the judge's reading and the decision (``_user.decide``). The
conversation ends when the user's goal is met (``goal_met``), the user gives up (``gave_up``),
after ``max_turns`` user messages (``max_turns``), or when the target fails: an error, no answer
within ``timeout`` seconds, or junk (no answer text, an empty answer, text that is not valid
UTF-8) ends that conversation (``target_failed``, with the reason), never the run. Transient
failures (time-outs, connection errors, HTTP 408/409/429/5xx) are tried again ``retries`` times
first. A judge step with no usable output ends its conversation as ``judge_failed``; a judge
that cannot be reached stops the run.

Each row is a ragsight conversation (``turns`` with each answer and its contexts, ``scenario``,
``expected_outcome``) that ``ragsight evaluate`` reads; ``metadata`` says how it ended
(``ended``, ``ended_reason``), each turn's latency, attempts and decision (``turns``), what the
user wanted and the settings (``simulation``), and ``error`` for a target failure, as
``ragsight answer`` writes it.

Reproducible: the judge's steps are keyed on everything that changes them (the judge, the
prompts and their versions, the rendered scenario and conversation, the seed and temperature),
so with the judge's cache the same scenarios, seed, judge and answers give the same
conversations (and without it too at temperature 0, the default: greedy). Resumable: with ``resume_file``, each finished conversation (goal met, gave up,
max turns) is appended to it as it ends, under a fingerprint of what made it; a later run with
the same file keeps those and holds the others again.
"""

from __future__ import annotations

import asyncio
import hashlib
import json
import os
import random
import time
from collections import Counter
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from ..calls import MIN_SECRET_CHARS, Backoff, Failure, RetryExhaustedError, redact, retry
from ..errors import ConfigError, JudgeUnavailableError
from ..judge import Judge, JudgeFailedError
from ..prompts import load_prompt
from ..testset import TargetError, TargetReply
from ._scenario import Scenario
from ._user import PROMPTS, Decision, Reading, SimulatedUser, decide, scenario_language

__all__ = [
    "ENDINGS",
    "FINISHED",
    "USER_TEMPERATURE",
    "SimulationResult",
    "SimulationSettings",
    "asimulate",
    "fingerprint",
]

ENDINGS = ("goal_met", "gave_up", "max_turns", "target_failed", "judge_failed")
FINISHED = frozenset({"goal_met", "gave_up", "max_turns"})  # kept by a resumed run
USER_TEMPERATURE = 0.0  # greedy: the small embedded model writes its best, the same on every run
FORMAT = 1  # of the rows and of the resume file's fingerprint


@dataclass(frozen=True)
class SimulationSettings:
    """``max_turns``: user messages at most. ``temperature`` and ``seed``: the sampling of the
    user's messages (default 0, greedy: the same messages on every run, cache or not, and the
    embedded model's most careful ones; above 0 the seed picks the sample and the cache keeps it).
    ``timeout``, ``retries``, ``backoff``: each call to the target. ``concurrency``:
    conversations held at once (None: one with an in-process judge, whose calls run one at a
    time and reuse the previous prompt's prefix; else 4)."""

    max_turns: int = 6
    seed: int = 0
    temperature: float = USER_TEMPERATURE
    timeout: float = 60.0
    retries: int = 2
    backoff: float = 0.5
    concurrency: int | None = None

    def __post_init__(self) -> None:
        if not isinstance(self.max_turns, int) or self.max_turns < 1:
            raise ConfigError(f"--max-turns must be at least 1, got {self.max_turns!r}")
        if not 0 <= self.temperature <= 2:
            raise ConfigError(f"--temperature must be between 0 and 2, got {self.temperature!r}")
        if not self.timeout > 0:
            raise ConfigError(f"--timeout must be a positive number of seconds, got {self.timeout!r}")
        if self.retries < 0:
            raise ConfigError("--retries must be 0 or more")
        if self.concurrency is not None and self.concurrency < 1:
            raise ConfigError("--concurrency must be at least 1")


@dataclass
class SimulationResult:
    """The conversations in scenario order, how many a resumed run kept, the time taken and the
    judge's spend (``ragsight.judge.JudgeStats.to_dict`` of both steps, summed)."""

    rows: list[dict[str, Any]]
    kept: int
    seconds: float
    judge_stats: dict[str, Any] = field(default_factory=dict)

    @property
    def endings(self) -> dict[str, int]:
        counts = Counter(r["metadata"]["ended"] for r in self.rows)
        return {e: counts[e] for e in ENDINGS if counts[e]}


def fingerprint(sc: Scenario, target: str, judge: Judge, st: SimulationSettings) -> str:
    """What made a conversation, hashed: the scenario, the target, the judge (its identity), the
    prompts and the settings that change what is said."""
    prompts = {p: load_prompt(p).hash for p in PROMPTS}
    basis = {"format": FORMAT, "scenario": sc.to_dict(), "target": target, "judge": judge.identity,
             "model": judge.model, "prompts": prompts,
             "settings": [st.max_turns, st.seed, st.temperature]}
    return hashlib.sha256(json.dumps(basis, sort_keys=True, ensure_ascii=False, default=str).encode()).hexdigest()


def _env_secrets() -> tuple[str, ...]:
    """Values of environment variables named like credentials, kept out of error texts."""
    names = ("KEY", "TOKEN", "SECRET", "PASSWORD", "PASSWD", "CREDENTIAL")
    return tuple(v for k, v in os.environ.items() if any(n in k.upper() for n in names)
                 and len(v) >= MIN_SECRET_CHARS)


def _checked(reply: Any, where: str) -> TargetReply:
    """The reply when it can be part of a conversation; junk raises TargetError."""
    if not isinstance(reply, TargetReply):
        raise TargetError(f"{where}: the target returned {type(reply).__name__}, not a reply", retryable=False)
    if not reply.answer.strip():
        raise TargetError(f"{where}: the answer is empty", retryable=False)
    try:
        json.dumps([reply.answer, reply.contexts, reply.context_ids], ensure_ascii=False).encode("utf-8")
    except (UnicodeEncodeError, TypeError, ValueError) as exc:
        raise TargetError(f"{where}: the reply is not valid text ({type(exc).__name__})", retryable=False) from None
    return reply


async def _ask(target: Any, message: str, history: Sequence[Mapping[str, Any]], st: SimulationSettings,
               rng: random.Random) -> tuple[TargetReply | None, str | None, int, float]:
    """(reply, error, attempts, seconds of the last attempt): one user message to the target."""
    name = getattr(target, "name", "target")
    last = time.monotonic()

    async def once() -> TargetReply:
        nonlocal last
        last = time.monotonic()
        try:
            reply = await asyncio.wait_for(target(message, list(history)), timeout=st.timeout)
        except asyncio.TimeoutError:
            raise TargetError(f"{name}: no answer within {st.timeout:g} s", retryable=True) from None
        return _checked(reply, name)

    def as_failure(exc: BaseException) -> Failure | None:
        if isinstance(exc, TargetError):
            return Failure(redact(str(exc), _env_secrets())[:500], exc.retryable, exc.retry_after, False, exc)
        if isinstance(exc, Exception):  # a bug in the target ends its conversation, not the run
            return Failure(redact(f"{name}: {type(exc).__name__}: {exc}", _env_secrets())[:500], False, None,
                           False, exc)
        return None

    try:
        reply, attempts = await retry(once, attempts=st.retries + 1,
                                      backoff=Backoff(base_s=st.backoff, max_s=30.0, jitter=0.5,
                                                      retry_after_cap_s=30.0),
                                      classify_error=as_failure, rng=rng)
    except RetryExhaustedError as stop:
        return None, stop.failure.message, stop.attempts, time.monotonic() - last
    return reply, None, attempts, time.monotonic() - last


class _ResumeFile:
    """Finished conversations, one JSON line each, appended as they end: ``{"fingerprint",
    "row"}``. A line cut short by a crash is ignored."""

    def __init__(self, path: str | os.PathLike[str]) -> None:
        self.path = Path(path)

    def load(self) -> dict[str, dict[str, Any]]:
        if not self.path.is_file():
            return {}
        kept: dict[str, dict[str, Any]] = {}
        # lines end at "\n" only: a U+2028, NEL, FF or VT inside a message is part of its text
        for line in self.path.read_text("utf-8", errors="replace").split("\n"):
            try:
                entry = json.loads(line)
            except json.JSONDecodeError:
                continue
            if (isinstance(entry, dict) and isinstance(entry.get("fingerprint"), str)
                    and isinstance(entry.get("row"), dict)):
                kept[entry["fingerprint"]] = entry["row"]
        return kept

    def append(self, fp: str, row: Mapping[str, Any]) -> None:
        # never through a symbolic link (O_NOFOLLOW, where the system has it): the file is ours
        flags = os.O_WRONLY | os.O_APPEND | os.O_CREAT | getattr(os, "O_NOFOLLOW", 0)
        with os.fdopen(os.open(self.path, flags, 0o644), "a", encoding="utf-8") as f:
            f.write(json.dumps({"fingerprint": fp, "row": row}, ensure_ascii=False) + "\n")
            f.flush()
            os.fsync(f.fileno())


async def _converse(sc: Scenario, target: Any, user: SimulatedUser, st: SimulationSettings,
                    rng: random.Random) -> dict[str, Any]:
    name = getattr(target, "name", "target")
    lang = scenario_language(sc)
    turns: list[dict[str, Any]] = []
    per_turn: list[dict[str, Any]] = []
    ended, why, error = "max_turns", "", None
    latency = 0.0
    last: Decision | None = None
    readings: list[Reading] = []
    needs: tuple[str, ...] = ()
    try:
        needs, _ = await user.needs(sc, lang)
    except JudgeUnavailableError:
        raise
    except JudgeFailedError as exc:
        ended, why = "judge_failed", f"what the simulated user wants could not be listed: {exc}"
    for k in range(st.max_turns if needs else 0):
        missing = [n for n, g in zip(needs, readings[-1].given) if not g] if readings else list(needs)
        if k == 0 and sc.first_message:
            message, written = sc.first_message, "scenario"
        else:
            try:
                message, written = (await user.write(sc, turns, lang, missing)).value, "judge"
            except JudgeUnavailableError:
                raise
            except JudgeFailedError as exc:
                ended, why = "judge_failed", f"the simulated user's message {k + 1} could not be written: {exc}"
                break
        start = time.monotonic()
        history = [{"role": t["role"], "content": t["content"]} for t in turns]  # as `ragsight answer` sends it
        reply, err, attempts, seconds = await _ask(target, message, history, st, rng)
        latency += seconds
        turns.append({"role": "user", "content": message})
        record: dict[str, Any] = {"latency_s": round(seconds, 4), "elapsed_s": round(time.monotonic() - start, 4),
                                  "attempts": attempts, "error": err, "user_message": written}
        per_turn.append(record)
        if reply is None:
            ended, why, error = "target_failed", str(err), f"turn {k}: {err}"
            break
        answer: dict[str, Any] = {"role": "assistant", "content": reply.answer}
        if reply.contexts is not None:
            answer["contexts"] = list(reply.contexts)
        if reply.context_ids is not None:
            answer["retrieved_ids"] = list(reply.context_ids)
        turns.append(answer)
        try:
            reading = await user.read(sc, turns, needs)
        except JudgeUnavailableError:
            raise
        except JudgeFailedError as exc:
            ended, why = "judge_failed", f"the simulated user's reading of answer {k + 1} failed: {exc}"
            break
        last = decide(reading, readings, turns)
        readings.append(reading)
        record["decision"] = {"status": last.status, "given": list(reading.given), "declined": reading.declined,
                              "reason": last.reason}
        if last.status != "continue":
            ended, why = last.status, last.reason
            break
    else:
        if needs:
            tail = f"; last: {last.reason}" if last is not None and last.reason else ""
            s = "s" if st.max_turns != 1 else ""
            why = f"the goal was not met within {st.max_turns} user message{s}{tail}"
    meta = dict(sc.metadata)
    meta.update({
        "ended": ended,
        "ended_reason": why,
        "target": name,
        "error": error,
        "latency_s": round(latency, 4),
        "turns": per_turn,
        "simulation": {
            "user_messages": sum(1 for t in turns if t["role"] == "user"),
            "needs": list(needs),
            "max_turns": st.max_turns, "seed": st.seed, "temperature": st.temperature,
            "judge": user.writer.name, "language": lang,
            "prompts": {p: load_prompt(p).version for p in PROMPTS},
            **{k: v for k, v in (("persona", sc.persona), ("first_message", sc.first_message),
                                 ("stop_when", sc.stop_when)) if v is not None},
        },
    })
    return {"id": sc.id, "scenario": sc.scenario, "expected_outcome": sc.expected_outcome, "turns": turns,
            "metadata": meta}


def _add_stats(total: dict[str, Any], one: Mapping[str, Any]) -> None:
    for k, v in one.items():
        if isinstance(v, (int, float)) and not isinstance(v, bool):
            total[k] = total.get(k, 0) + v


async def asimulate(
    scenarios: Sequence[Scenario],
    target: Any,
    judge: Judge,
    settings: SimulationSettings | None = None,
    *,
    resume_file: str | os.PathLike[str] | None = None,
    progress: Callable[[int, int, dict[str, Any]], None] | None = None,
) -> SimulationResult:
    """Hold one simulated conversation per scenario with ``target`` (from
    ``ragsight.testset.make_target``), the user played by ``judge`` (give it a cache, e.g.
    ``judge.for_run(cache=...)``, for conversations that replay). ``progress(done, total, row)``
    is called as each conversation ends. The target is closed at the end."""
    st = settings or SimulationSettings()
    # greedy writing gives the same messages whatever the seed: one cache entry for all seeds
    writer = judge.for_run(cache=judge.cache, seed=st.seed if st.temperature > 0 else 0, temperature=st.temperature)
    decider = judge.for_run(cache=judge.cache, seed=0, temperature=0.0)  # greedy: no seed to vary
    user = SimulatedUser(writer, decider)
    name = getattr(target, "name", "target")
    resume = _ResumeFile(resume_file) if resume_file is not None else None
    kept_rows = resume.load() if resume is not None else {}
    prints = [fingerprint(sc, name, judge, st) for sc in scenarios]
    concurrency = st.concurrency or (1 if judge.provider.max_concurrency == 1 else 4)
    sem = asyncio.Semaphore(concurrency)
    rng = random.Random(st.seed)
    t0 = time.monotonic()
    done = 0
    kept = 0

    async def one(sc: Scenario, fp: str) -> dict[str, Any]:
        nonlocal done, kept
        row = kept_rows.get(fp)
        if row is not None:
            kept += 1
        else:
            async with sem:
                row = await _converse(sc, target, user, st, rng)
            if resume is not None and row["metadata"]["ended"] in FINISHED:
                resume.append(fp, row)
        done += 1
        if progress is not None:
            progress(done, len(scenarios), row)
        return row

    try:
        rows = list(await asyncio.gather(*(one(sc, fp) for sc, fp in zip(scenarios, prints))))
    finally:
        close = getattr(target, "aclose", None)
        if close is not None:
            await close()
    stats: dict[str, Any] = {}
    for j in (writer, decider):
        _add_stats(stats, {k: v for k, v in j.stats.to_dict().items() if k != "by_prompt"})
    return SimulationResult(rows, kept, time.monotonic() - t0, stats)
