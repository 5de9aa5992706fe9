"""What a question kind is: the base :class:`QuestionKind` and the records its steps pass around.

A kind names its generation prompt (``prompts/testset_<name>``), draws the chunks each candidate
is made from, checks the generator's JSON, turns it into a question and reference, adds checks of
its own, chooses what the critic sees and shapes the accepted row. The base class is the plain
kind, a question that its chunks answer (``single_hop``, ``reasoning``, and with ``pairs=True``
``multi_context`` and ``comparative``); a kind that differs subclasses it in a module of its own
and joins the registry in ``_kinds.py``.
"""

from __future__ import annotations

import hashlib
import random
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

from ..errors import OutputError
from ._chunk import Chunk
from ._filter import FilterSettings
from ._ingest import Corpus
from ._pairs import Pair

__all__ = [
    "CandidateSpec",
    "Generated",
    "Outcome",
    "QuestionKind",
    "row_id",
    "validate_qa",
]


@dataclass(frozen=True)
class CandidateSpec:
    """What one candidate is made from: decided before any model call."""

    question_type: str
    index: int  # n-th candidate of its type
    style: str
    chunk_ids: tuple[str, ...]
    shared: tuple[str, ...] = ()


@dataclass(frozen=True)
class Generated:
    """The generator's answer, checked: a question and its answer (or, out of scope, what the
    documents miss), and a follow-up with its answer for a conversation."""

    question: str
    answer: str
    missing: str = ""
    follow_up: str = ""
    follow_up_answer: str = ""


def validate_qa(data: dict[str, Any]) -> Generated:
    q, a = data.get("question"), data.get("answer", data.get("missing"))
    if not isinstance(q, str) or not q.strip():
        raise OutputError('"question" must be a non-empty string')
    if not isinstance(a, str) or not a.strip():
        key = "missing" if "missing" in data else "answer"
        raise OutputError(f'"{key}" must be a non-empty string')
    if "missing" in data:
        return Generated(" ".join(q.split()), "", " ".join(a.split()))
    return Generated(" ".join(q.split()), " ".join(a.split()))


@dataclass
class Outcome:
    """One candidate as it goes through generation and the checks; rejected when ``reasons``."""

    spec: CandidateSpec
    question: str = ""
    reference: str = ""
    contexts: tuple[Chunk, ...] = ()
    reasons: list[str] = field(default_factory=list)
    details: dict[str, Any] = field(default_factory=dict)
    prompts: dict[str, str] = field(default_factory=dict)
    follow_up: str = ""  # a follow_up conversation's second question and its reference
    follow_up_reference: str = ""


def row_id(question: str, chunk_ids: Sequence[str], qtype: str) -> str:
    basis = "\x1f".join([qtype, question, *chunk_ids])
    return "ts-" + hashlib.sha256(basis.encode()).hexdigest()[:10]


@dataclass(frozen=True)
class QuestionKind:
    """A kind of question whose chunks answer it: one chunk, or with ``pairs`` two chunks that
    share named entities (``_pairs.entity_pairs``). Each step is a method that a kind of its own
    may override."""

    name: str
    pairs: bool = False

    @property
    def prompt(self) -> str:
        """The generation prompt's id."""
        return f"testset_{self.name}"

    def draw(
        self, n: int, rng: random.Random, singles: Sequence[Chunk], pairs: Sequence[Pair]
    ) -> list[tuple[tuple[str, ...], tuple[str, ...]]]:
        """The chunk ids and shared entities of ``n`` candidates, in the kind's own random order.
        ``singles`` are the chunks long enough to stand alone, ``pairs`` the linked pairs (empty
        unless a pair kind is asked for)."""
        if self.pairs:
            pool = list(pairs[: max(20, 3 * n)])
            rng.shuffle(pool)
            picks = [pool[i % len(pool)] for i in range(n)]
            return [((a, b), shared[:5]) for _, a, b, shared in picks]
        order = list(singles)
        rng.shuffle(order)
        return [((order[i % len(order)].id,), ()) for i in range(n)]

    def validate(self, data: dict[str, Any]) -> Generated:
        """The generator's JSON object, checked; raises OutputError saying what is wrong."""
        return validate_qa(data)

    def take(self, out: Outcome, gen: Generated, chunks: tuple[Chunk, ...]) -> None:
        """Set the candidate's reference and reference contexts from the generator's answer."""
        out.reference = gen.answer
        out.contexts = chunks

    def more_checks(
        self, out: Outcome, gen: Generated, chunks: tuple[Chunk, ...], settings: FilterSettings,
        reasons: list[str],
    ) -> list[str]:
        """The rejection reasons after the deterministic checks (``reasons``), with the kind's own."""
        return reasons

    def critic_view(
        self, corpus: Corpus, out: Outcome, chunks: tuple[Chunk, ...], sample: int
    ) -> tuple[list[str], str]:
        """The texts the critic reads and the critic prompt's id."""
        return [c.text for c in chunks], "testset_critique"

    def row(self, o: Outcome, meta: dict[str, Any], ids: list[str]) -> dict[str, Any]:
        """The accepted row, JSON-ready, with its metadata ``meta``."""
        return {
            "id": row_id(o.question, o.spec.chunk_ids, o.spec.question_type),
            "question": o.question,
            "reference": o.reference,
            "reference_contexts": [c.text for c in o.contexts],
            "relevant_ids": ids,
            "metadata": meta,
        }
