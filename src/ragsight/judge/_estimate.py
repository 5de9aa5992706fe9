"""A provider that answers without calling any model, for ``evaluate --dry-run``.

It wraps the run's real provider: the same name, model and identity (so the cache keys are the
real run's, and a step already in the cache is answered from there, as it would be), the same
token count, and a reply synthesised from the step's output schema by fixed rules, so that the
steps that depend on an earlier step's output (claims extracted, then verified) are rendered by
the real prompt code with plausible inputs. Nothing is sent anywhere.

The rules for a reply (documented in docs/cost.md):

- an array whose length the request states (one verdict per claim, ``n`` questions) has that
  many items;
- a list of claims or statements with no stated length has one item per sentence of the text it
  decomposes, each item that sentence; another list of strings (entities) one item of
  :data:`ITEM_WORDS` words per sentence;
- a ``reason`` is :data:`REASON_WORDS` words; a generated question is as long as the sample's
  question (else :data:`QUESTION_WORDS` words); other strings :data:`ITEM_WORDS` words;
- booleans are True (a claim is supported, a chunk relevant: no step that only follows a "no"
  is added), except ``noncommittal``, ``declines`` and ``copied``; an ``id`` numbers its item
  from 1, other integers are the schema's minimum or 1, a list of integers is ``[1]``;
- a log-probability step (the embedded judge) answers P(first choice) = 1.

For the embedded judge it also estimates the time (:meth:`EstimatingProvider.time_line`): the
prompt tokens it would evaluate (each prompt less the longest start it shares with one of the
last prompts, which llama.cpp keeps in its cache) and the tokens it would generate, at the speeds
the last run of that model measured on this machine (kept in the user cache by
:func:`record_local_speed`), or at conservative default speeds until one has.
"""

from __future__ import annotations

import contextlib
import json
import os
import re
import tempfile
import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from ._protocol import ChoiceScores, Completion, JudgeProvider, JudgeRequest

__all__ = ["ESTIMATE_RULES", "EstimatingProvider", "LocalSpeed", "read_local_speed", "record_local_speed"]

REASON_WORDS = 20
QUESTION_WORDS = 12
ITEM_WORDS = 3
MESSAGE_OVERHEAD = 4  # tokens a chat API adds per message (role and separators)

ESTIMATE_RULES = (
    "a list with a stated length has that many items; claims: one per sentence of the text they "
    f"come from; a reason {REASON_WORDS} words; every claim supported and every chunk relevant "
    "(no extra steps for a 'no')"
)

# The embedded judge's speeds until a run on this machine has measured them: conservative, about
# the slowest seen on a 2-core machine with two threads (docs/benchmarks.md: 50-114 prompt tokens
# evaluated and 10-13 tokens generated per second), so that an estimate errs long.
DEFAULT_PROMPT_PER_S = 50.0
DEFAULT_GENERATED_PER_S = 9.0
CALL_OVERHEAD_S = 0.05  # rendering, tokenizing, the grammar and the saved prefixes, per call
SPEED_FILE = "local_speed.json"
# A run that evaluated or generated fewer tokens than these measures nothing worth keeping.
MIN_MEASURED_PROMPT = 400
MIN_MEASURED_GENERATED = 100
# What the estimate assumes of the embedded judge's cache: its live prompt and 12 saved prefixes
# (judge/_local.py), and a tail of at least 8 tokens evaluated after a shared start.
_REMEMBERED_PROMPTS = 13
_MIN_TAIL = 8
_CHARS_PER_TOKEN = 4


@dataclass(frozen=True)
class LocalSpeed:
    """Speeds of the embedded judge: prompt tokens evaluated and tokens generated per second;
    ``measured_at`` the date of the run that measured them, None for the defaults."""

    prompt_per_s: float
    generated_per_s: float
    measured_at: str | None = None


def _speed_path(cache_dir: str | os.PathLike[str] | None) -> Path:
    from ._model_files import default_cache_dir

    return (Path(cache_dir).expanduser() if cache_dir is not None else default_cache_dir()) / SPEED_FILE


def _speed_key(model: str, threads: int) -> str:
    return f"{model} / {threads} threads"


def _read_speeds(path: Path) -> dict[str, Any]:
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return {}
    return data if isinstance(data, dict) else {}


def _rate(value: Any) -> bool:
    return isinstance(value, (int, float)) and not isinstance(value, bool) and 0.01 < value < 1e6


def read_local_speed(model: str, threads: int, cache_dir: str | os.PathLike[str] | None = None) -> LocalSpeed:
    """The speeds the last run of ``model`` with ``threads`` threads measured on this machine, or
    the defaults (no such run, or an unreadable file)."""
    entry = _read_speeds(_speed_path(cache_dir)).get(_speed_key(model, threads))
    if isinstance(entry, dict):
        p, g, when = entry.get("prompt_per_s"), entry.get("generated_per_s"), entry.get("measured_at")
        if isinstance(p, (int, float)) and isinstance(g, (int, float)) and _rate(p) and _rate(g):
            return LocalSpeed(float(p), float(g), when if isinstance(when, str) else None)
    return LocalSpeed(DEFAULT_PROMPT_PER_S, DEFAULT_GENERATED_PER_S)


def record_local_speed(model: str, threads: int, prompt_tokens: int, prompt_s: float, generated: int,
                       generation_s: float, cache_dir: str | os.PathLike[str] | None = None) -> bool:
    """Keep the speeds a run of the embedded judge measured (tokens evaluated over the seconds spent
    evaluating prompts, tokens generated over the seconds spent generating), replacing the
    previous ones of that model and thread count; written atomically. False when the run measured
    too little to say, or the file could not be written (a run never fails on it)."""
    if prompt_tokens < MIN_MEASURED_PROMPT or generated < MIN_MEASURED_GENERATED or prompt_s <= 0 or generation_s <= 0:
        return False
    path = _speed_path(cache_dir)
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        data = _read_speeds(path)
        data[_speed_key(model, threads)] = {
            "prompt_per_s": round(prompt_tokens / prompt_s, 2),
            "generated_per_s": round(generated / generation_s, 2),
            "measured_at": time.strftime("%Y-%m-%d"),
            "prompt_tokens": prompt_tokens, "generated_tokens": generated,
        }
        fd, tmp = tempfile.mkstemp(prefix=".local_speed.", dir=path.parent)
        try:
            with os.fdopen(fd, "w", encoding="utf-8") as f:
                json.dump(data, f, indent=1, sort_keys=True)
            os.replace(tmp, path)
        except BaseException:
            with contextlib.suppress(OSError):
                os.unlink(tmp)
            raise
    except OSError:
        return False
    return True


def _chatml(messages: Sequence[Any]) -> str:
    """The prompt as the embedded models' chat template lays it out (ChatML)."""
    return "".join(f"<|im_start|>{m.role}\n{m.content}<|im_end|>\n" for m in messages) + "<|im_start|>assistant\n"


def _shared_chars(a: str, b: str) -> int:
    n = min(len(a), len(b))
    lo, hi = 0, n  # the longest common prefix, by bisection on slices
    while lo < hi:
        mid = (lo + hi + 1) // 2
        if a[:mid] == b[:mid]:
            lo = mid
        else:
            hi = mid - 1
    return lo


def _duration(seconds: float) -> str:
    if seconds < 90:
        return f"{seconds:.0f} s"
    if seconds < 600:
        return f"{seconds / 60:.1f} min"
    if seconds < 5400:
        return f"{seconds / 60:.0f} min"
    return f"{seconds / 3600:.1f} h"


_SENTENCE = re.compile(r"(?<=[.!?。！？])\s*")
_FENCED = re.compile(r"<(response|reference|text|answer)\b[^>]*>\n?(.*?)\n?</\1>", re.S)
_FALSE = {"noncommittal", "declines", "copied"}


def sentences(text: str) -> list[str]:
    return [p.strip() for p in _SENTENCE.split(text.strip()) if len(p.strip()) > 3]


def _words(n: int) -> str:
    return " ".join(["word"] * n)


class EstimatingProvider:
    """Answers every request by the rules above, and counts what a real run would send:
    ``requests`` (those that reached it: the cache answered the rest)."""

    def __init__(self, inner: JudgeProvider) -> None:
        self.inner = inner
        self.name = inner.name
        self.model = inner.model
        self.supports_choices = inner.supports_choices
        self.max_concurrency = max(1, inner.max_concurrency)
        self.context_window = getattr(inner, "context_window", None)
        self.requests = 0
        # the embedded judge's work, for the time estimate
        self.local = bool(inner.supports_choices)
        self.local_calls = 0
        self.evaluated_tokens = 0  # prompt tokens it would evaluate, after prefix reuse
        self.generated_tokens = 0
        self._recent: list[str] = []  # rendered prompts, most recent last
        self.speed: LocalSpeed | None = None
        if self.local:
            threads = getattr(inner, "n_threads", None)
            self.speed = (read_local_speed(str(self.model), threads) if isinstance(threads, int)
                          else LocalSpeed(DEFAULT_PROMPT_PER_S, DEFAULT_GENERATED_PER_S))
        from ._judge import provider_identity

        self._identity = provider_identity(inner)

    def identity(self) -> Mapping[str, Any]:
        return self._identity

    def count_tokens(self, text: str) -> int:
        if self.supports_choices:  # the embedded model's tokenizer means loading the model
            return -(-len(text) // 4)
        return self.inner.count_tokens(text)

    def _prompt_tokens(self, request: JudgeRequest) -> int:
        return sum(self.count_tokens(m.content) + MESSAGE_OVERHEAD for m in request.messages)

    def _local_work(self, request: JudgeRequest, generated: int) -> None:
        """Count what the embedded judge would evaluate of this prompt (what it does not share
        with one of the prompts its cache holds) and generate."""
        text = _chatml(request.messages)
        shared = max((_shared_chars(text, seen) for seen in self._recent), default=0)
        self._recent.append(text)
        del self._recent[:-_REMEMBERED_PROMPTS]
        self.local_calls += 1
        self.evaluated_tokens += max(_MIN_TAIL, -(-(len(text) - shared) // _CHARS_PER_TOKEN))
        self.generated_tokens += generated

    @property
    def seconds(self) -> float | None:
        """The embedded judge's estimated time for the calls counted (None for another judge)."""
        if self.speed is None:
            return None
        return (self.evaluated_tokens / self.speed.prompt_per_s
                + self.generated_tokens / self.speed.generated_per_s + self.local_calls * CALL_OVERHEAD_S)

    def time_line(self) -> str | None:
        """One line for the dry run: the embedded judge's estimated time and its basis."""
        seconds, speed = self.seconds, self.speed
        if seconds is None or speed is None:
            return None
        source = (f"the speeds its last run measured on this machine ({speed.measured_at})" if speed.measured_at
                  else "conservative default speeds: no run of it on this machine has measured them yet")
        return (f"time, embedded judge: about {_duration(seconds)} ({self.evaluated_tokens:,} prompt tokens "
                f"evaluated after prefix reuse at {speed.prompt_per_s:.0f}/s, {self.generated_tokens:,} "
                f"generated at {speed.generated_per_s:.1f}/s; {source})")

    async def complete(self, request: JudgeRequest) -> Completion:
        self.requests += 1
        reply = _synth(request.schema or {"type": "object", "properties": {}}, request, "")
        text = json.dumps(reply, ensure_ascii=False) if request.schema is not None else _words(REASON_WORDS)
        n_out = self.count_tokens(text)
        if self.local:
            self._local_work(request, n_out + 1)  # and the end-of-reply token
        return Completion(text=text, prompt_tokens=self._prompt_tokens(request),
                          completion_tokens=n_out, finish_reason="stop",
                          model=self.model, structured="estimate")

    async def score_choices(self, request: JudgeRequest, choices: Sequence[str]) -> ChoiceScores:
        self.requests += 1
        if self.local:
            self._local_work(request, 0)
        probs = {c: (1.0 if i == 0 else 0.0) for i, c in enumerate(choices)}
        return ChoiceScores(probs=probs, prompt_tokens=self._prompt_tokens(request),
                            raw_logprobs={c: (0.0 if p else -100.0) for c, p in probs.items()})

    async def preflight(self) -> None:
        return None

    async def aclose(self) -> None:
        await self.inner.aclose()


def _source_text(request: JudgeRequest) -> str:
    raw = request.variables.get("raw_text")
    if isinstance(raw, str):
        return raw
    user = request.messages[-1].content if request.messages else ""
    found = _FENCED.findall(user)
    return found[-1][1] if found else user


def _string(name: str, request: JudgeRequest, index: int) -> str:
    n = name.lower()
    if "reason" in n:
        return _words(REASON_WORDS)
    if "question" in n:  # numbered: generated questions are distinct
        q = request.variables.get("question_text") or request.variables.get("raw_question")
        return f"{q if isinstance(q, str) and q else _words(QUESTION_WORDS - 1)} {index + 1}"
    return _words(ITEM_WORDS)


def _synth(schema: Mapping[str, Any], request: JudgeRequest, name: str, index: int = 0) -> Any:
    typ = schema.get("type")
    if "enum" in schema:
        return schema["enum"][0]
    if typ == "object" or (typ is None and "properties" in schema):
        return {k: _synth(v, request, k, index) for k, v in schema.get("properties", {}).items()}
    if typ == "array":
        item = schema.get("items", {})
        count = schema.get("minItems")
        if count is None:
            if item.get("type") == "integer":
                return [1]
            sents = sentences(_source_text(request))
            if item.get("type") == "string" and any(w in name for w in ("claim", "statement")):
                return sents
            count = len(sents)
        return [_synth(item, request, name.rstrip("s"), i) for i in range(int(count))]
    if typ == "boolean":
        return name not in _FALSE
    if typ == "integer":
        return index + 1 if name == "id" else int(schema.get("minimum", 1))
    if typ == "number":
        return float(schema.get("minimum", 1.0))
    if typ == "string":
        return _string(name, request, index)
    return None
