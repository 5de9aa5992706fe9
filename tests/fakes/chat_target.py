"""A small chat assistant to simulate users against: a handbook of a few facts, each found by
its keywords (English and German), one fact per answer, the history read for follow-ups
("and by when?" after a question on carrying leave over). Deterministic, no model.

    ragsight simulate scenarios.jsonl --target tests.fakes.chat_target:answer --out conv.jsonl

``answer`` is the chat target; ``broken``, ``junk``, ``hangs`` and ``no_history`` are targets that
fail in the ways a real one does.
"""

from __future__ import annotations

import asyncio
from collections.abc import Mapping, Sequence
from typing import Any

__all__ = ["DECLINE", "FACTS", "answer", "broken", "hangs", "junk", "no_history"]

# id, keywords (lower case), text
FACTS: tuple[tuple[str, tuple[str, ...], str], ...] = (
    ("leave#carry", ("carry", "übertrag", "mitnehm", "unused"),
     "Staff can carry over up to 5 days of unused annual leave into the next year."),
    ("leave#deadline", ("when", "deadline", "expire", "use them", "date", "march", "wann", "verfall", "frist"),
     "Carried-over leave must be used by 31 March, or it is lost."),
    ("expenses#meals", ("meal", "dinner", "lunch", "food", "essen"),
     "Meals on business trips are reimbursed up to 40 euros a day."),
    ("expenses#receipts", ("receipt", "claim", "submit", "beleg"),
     "Expense claims need the receipts and must be submitted within 30 days of the trip."),
)
DECLINE = "Sorry, the handbook does not say anything about that."


def _find(text: str, skip: set[str]) -> tuple[str, str] | None:
    low = text.lower()
    for fid, keys, fact in FACTS:
        if fid not in skip and any(k in low for k in keys):
            return fid, fact
    return None


def answer(question: str, history: Sequence[Mapping[str, Any]]) -> dict[str, Any]:
    """The first fact the question names that was not given yet; else a decline."""
    given = {fid for t in history if t.get("role") == "assistant" for fid, _, fact in FACTS if fact in str(t["content"])}
    hit = _find(question, given)
    if hit is None:
        return {"answer": DECLINE, "contexts": []}
    fid, fact = hit
    return {"answer": fact, "contexts": [{"id": fid, "text": fact}]}


def broken(question: str, history: Sequence[Mapping[str, Any]]) -> dict[str, Any]:
    raise RuntimeError("index not loaded")


def junk(question: str, history: Sequence[Mapping[str, Any]]) -> Any:
    return {"reply": ["not", "an", "answer"]}


async def hangs(question: str, history: Sequence[Mapping[str, Any]]) -> dict[str, Any]:
    await asyncio.sleep(60)
    return {"answer": "too late"}


def no_history(question: str) -> dict[str, Any]:
    return {"answer": "I answer single questions only."}
