"""What the bench scripts put around a judge: a provider that forwards every call to another (to
be subclassed by the wrappers that record or change calls), one that makes the kit mock's
repeated questions distinct, and a call cache kept in a JSONL file."""

from __future__ import annotations

import dataclasses
import json
from collections import Counter
from collections.abc import Sequence
from pathlib import Path
from typing import Any


class Forwarding:
    """A JudgeProvider that passes every call to ``inner`` and shows its name, model and limits;
    a subclass overrides the calls it records or changes."""

    def __init__(self, inner: Any) -> None:
        self.inner = inner
        self.name = inner.name
        self.model = inner.model
        self.supports_choices = inner.supports_choices
        self.max_concurrency = inner.max_concurrency
        self.context_window = inner.context_window

    async def complete(self, request: Any) -> Any:
        return await self.inner.complete(request)

    async def score_choices(self, request: Any, choices: Sequence[str]) -> Any:
        return await self.inner.score_choices(request, choices)

    def count_tokens(self, text: str) -> int:
        return int(self.inner.count_tokens(text))

    async def preflight(self) -> None:
        await self.inner.preflight()

    async def aclose(self) -> None:
        await self.inner.aclose()


class DistinctQuestions(Forwarding):
    """A provider whose ``generate_questions`` replies have their repeated questions made distinct
    (" (variant 2)", ...): the kit's mock repeats one fixed question, a real judge writes N
    different ones. A broken reply stays broken."""

    async def complete(self, request: Any) -> Any:
        c = await self.inner.complete(request)
        if request.prompt_id != "generate_questions":
            return c
        try:
            d = json.loads(c.text)
            qs = d["questions"]
        except Exception:  # a broken output stays broken
            return c
        if not isinstance(qs, list):
            return c
        seen: Counter[str] = Counter()
        out = []
        for q in qs:
            if isinstance(q, str):
                seen[q] += 1
                if seen[q] > 1:
                    q = f"{q.rstrip('?')} (variant {seen[q]})?"
            out.append(q)
        d["questions"] = out
        return dataclasses.replace(c, text=json.dumps(d))


class JsonlCache:
    """A CallCache backed by an append-only JSONL file; each entry written also holds
    ``last_cost`` (what the caller last set there: the call's seconds and tokens, or nothing)."""

    def __init__(self, path: Path) -> None:
        self.path = path
        self.d: dict[str, dict[str, Any]] = {}
        self.last_cost: dict[str, float] = {}
        if path.exists():
            for line in path.read_text("utf-8").splitlines():
                try:
                    rec = json.loads(line)
                except json.JSONDecodeError:
                    continue  # a line cut by a crash
                self.d[rec["key"]] = rec["entry"]

    def lookup(self, key: str) -> dict[str, Any] | None:
        return self.d.get(key)

    async def get(self, key: str) -> dict[str, Any] | None:
        return self.lookup(key)

    async def put(self, key: str, entry: dict[str, Any]) -> None:
        entry = {**entry, **self.last_cost}
        self.d[key] = entry
        self.path.parent.mkdir(parents=True, exist_ok=True)
        with self.path.open("a", encoding="utf-8") as f:
            f.write(json.dumps({"key": key, "entry": entry}, ensure_ascii=False) + "\n")
