"""What the analyses share: their settings, what a metric can ask for (``Need``), the result
types, and the validators and prompt blocks every analysis uses."""

from __future__ import annotations

import asyncio
import enum
from collections.abc import Awaitable, Sequence
from dataclasses import dataclass
from typing import Any

from .._score import ClaimVerdict, JudgeCallRef
from ..errors import OutputError
from ..judge import Answer
from ..prompts import fence, neutralise

__all__ = [
    "AddressVerdict",
    "AnalysisSettings",
    "ChunkJudgement",
    "ClaimList",
    "ConversationVerdicts",
    "EntityList",
    "GeneratedQuestions",
    "Need",
    "Resolution",
    "SentenceLabels",
    "ShortAnswer",
    "VerdictList",
    "contexts_block",
    "lenient_bool",
    "list_of_str",
    "numbered",
    "refs",
    "verdict_items",
]


class Need(enum.Enum):
    """A shared analysis a metric needs planned for the whole run (``Metric.needs``). Each member
    turns on the :class:`AnalysisSettings` field of its value, so that e.g. faithfulness and
    context recall share one verdict step against the contexts."""

    RESPONSE_VS_CONTEXTS = "verify_response_vs_contexts"
    REFERENCE_VS_CONTEXTS = "verify_reference_vs_contexts"
    CHUNK_SUPPORT = "need_chunk_support"


@dataclass(frozen=True)
class AnalysisSettings:
    """Knobs shared by the analyses of a run (recorded with the run)."""

    n_questions: int = 3
    support_threshold: float = 0.5  # P(Yes) at or above which a claim counts as supported
    # embedded judge: "none" | "unsupported" (unsupported claims, borderline chunk verdicts) | "all"
    explain: str = "unsupported"
    max_claims: int = 64
    need_chunk_support: bool = False  # per-chunk attribution (noise sensitivity)
    verify_reference_vs_contexts: bool = False  # context recall / noise sensitivity in the run
    verify_response_vs_contexts: bool = False  # faithfulness / noise sensitivity in the run
    use_cache: bool = True
    # Claim verdicts of the embedded judge combine its P(Yes) with deterministic signals and its
    # plausibility prior (analyses/_calibrated.py); False keeps the bare P(Yes).
    calibrated: bool = True
    # A reference whose shortest alias has at most SHORT_ANSWER_WORDS words is graded as a whole
    # (question, response, every alias) instead of being split into claims; False turns this off.
    short_answers: bool = True
    # A response or reference that is one sentence of at most 25 words is its own claim, with no
    # extraction call (analyses/_claims.py); False always asks the judge to extract claims.
    own_claim: bool = True
    # Claims from sentences (off by default): a plain sentence (one clause, at most one
    # number, no pronoun, at most 25 words) is its own claim, and only the other sentences are
    # sent to the judge to split (``extract_claims_part``, with the whole text to resolve
    # pronouns). Measured with the embedded judge on the airline kit, it generated as many claim
    # tokens as extracting whole texts (docs/benchmarks.md), so it is not on for any judge.
    sentence_claims: bool = False
    # The embedded judge only: answer relevancy asks it for this many questions
    # instead of ``n_questions`` (generating them was a fifth of its time per sample).
    embedded_questions: int = 1
    # Non-answers: extracted claims not found in the text are asked once more, then
    # dropped (analyses/_claims.py); a decline gets no faithfulness and zero answer relevancy.
    # False keeps the behaviour before (for bench/nonanswer_check.py's before/after figures).
    nonanswers: bool = True
    # A reference's claims are its sentences, the judge splitting only those with several facts,
    # and each claim it writes checked against the reference (analyses/_reference.py); False
    # extracts the whole reference unchecked, as before (for the before/after bench).
    reference_facts: bool = True
    # An alignment fitted from human labels ('ragsight align', docs/review.md): worked examples
    # added to the claim-verdict prompts (fenced; the prompts' version becomes
    # '<version>+<verdict_examples_tag>'), and the alignment's name, recorded with the run.
    verdict_examples: str = ""
    verdict_examples_tag: str = ""
    alignment: str = ""

    def to_dict(self) -> dict[str, Any]:
        return {k: getattr(self, k) for k in self.__dataclass_fields__}


async def started_together(*steps: Awaitable[Any]) -> None:
    """Start analyses that do not depend on each other at once and wait for all of them (their
    results and errors are kept by the sample's analyses, read by the awaits that follow): two
    chains of two judge calls take two round trips, not four."""
    await asyncio.gather(*steps, return_exceptions=True)


def refs(*answers: Answer[Any] | None) -> tuple[JudgeCallRef, ...]:
    out: list[JudgeCallRef] = []
    for a in answers:
        if a is None:
            continue
        out.append(JudgeCallRef(a.step, a.prompt_id, a.prompt_version, a.cached))
    return tuple(out)


@dataclass(frozen=True)
class ClaimList:
    source: str  # "response" | "reference"
    claims: tuple[str, ...]
    refs: tuple[JudgeCallRef, ...] = ()
    dropped: tuple[str, ...] = ()  # extracted, but not found in the text even when asked again
    # the claims the judge wrote for a reference, each checked against the reference itself
    # (kept when supported, else dropped: analyses/_reference.py)
    checks: tuple[ClaimVerdict, ...] = ()


@dataclass(frozen=True)
class VerdictList:
    """Verdicts for claims against one target text, in claim order.

    ``chunk_support[i]`` is the set of chunk numbers (1-based) that support claim i, when the
    analysis asked for per-chunk attribution (else None).
    """

    target: str
    verdicts: tuple[ClaimVerdict, ...]
    chunk_support: tuple[frozenset[int], ...] | None = None
    refs: tuple[JudgeCallRef, ...] = ()


@dataclass(frozen=True)
class ChunkJudgement:
    against: str  # "reference" | "response"
    relevant: tuple[bool, ...]
    reasons: tuple[str, ...]
    probabilities: tuple[float | None, ...]
    refs: tuple[JudgeCallRef, ...] = ()
    # judged through the reference's claims (embedded judge): the claims, and per chunk the
    # 1-based numbers of the claims it supports; empty when judged chunk by chunk
    claims: tuple[str, ...] = ()
    supports: tuple[tuple[int, ...], ...] = ()


@dataclass(frozen=True)
class ShortAnswer:
    """A response graded as a whole against a short-form reference (every alias counts).

    ``verdict.claim`` is the response; ``verdict.probability`` the P(correct) of the embedded
    judge combined with the alias signals (None for a judge without probabilities, whose
    boolean verdict stands); the signals are in ``verdict.signals``."""

    verdict: ClaimVerdict
    refs: tuple[JudgeCallRef, ...] = ()

    @property
    def p_correct(self) -> float:
        p = self.verdict.probability
        return float(self.verdict.supported) if p is None else p


@dataclass(frozen=True)
class GeneratedQuestions:
    questions: tuple[str, ...]
    noncommittal: bool
    refs: tuple[JudgeCallRef, ...] = ()
    # a turn of a conversation: the user's question rewritten to stand alone (else None), and a
    # rewrite set aside because it shares no content word with what the user said (else None)
    standalone_question: str | None = None
    standalone_rejected: str | None = None


@dataclass(frozen=True)
class AddressVerdict:
    """Whether the response responds to the question (answer relevancy, a judge with yes/no
    probabilities): the probability (the judge's P(Yes) on its model's shipped scale, or P(Yes)
    itself), the verdict at the run's threshold, a reason when one was asked for (a verdict of
    No, or every verdict with explain="all"), and the judge's own P(Yes)."""

    question: str  # the question as judged (a turn's question rewritten to stand alone)
    probability: float
    addresses: bool
    reason: str = ""
    refs: tuple[JudgeCallRef, ...] = ()
    judge_p: float | None = None  # the judge's P(Yes) before its scale (None: the same as probability)


@dataclass(frozen=True)
class Resolution:
    """Which earlier message of a conversation tells what a claim refers to.

    ``message`` is the message's 0-based position in the sample's ``history``, ``turn`` the
    0-based assistant turn it belongs to (a user message belongs to the turn that answers it),
    ``role`` its author; ``probabilities`` maps each message position tried to P(supported)
    with that message alone (the embedded judge; None for a judge that names the message).
    """

    claim: str
    message: int
    turn: int
    role: str
    probabilities: dict[int, float] | None = None

    def to_dict(self) -> dict[str, Any]:
        out: dict[str, Any] = {"claim": self.claim, "message": self.message, "turn": self.turn,
                               "role": self.role}
        if self.probabilities is not None:
            out["probabilities"] = {str(k): round(v, 6) for k, v in self.probabilities.items()}
        return out


@dataclass(frozen=True)
class ConversationVerdicts:
    """Response claims of a conversation turn, checked against its contexts read in the
    conversation (faithfulness with history).

    ``verdicts`` are in claim order; a verdict's ``target`` says how it was reached:
    ``contexts`` (the contexts alone), ``contexts+conversation`` (the contexts, with what the
    claim refers to read from the conversation) or ``user`` (not in the contexts, but a
    restatement of what the user said: not counted as a hallucination). ``resolutions`` name
    the earlier message that resolved each claim supported through the conversation.
    """

    verdicts: tuple[ClaimVerdict, ...]
    resolutions: tuple[Resolution, ...]
    messages_shown: int
    refs: tuple[JudgeCallRef, ...] = ()


@dataclass(frozen=True)
class EntityList:
    source: str
    entities: tuple[str, ...]
    normalised: frozenset[str]
    refs: tuple[JudgeCallRef, ...] = ()


@dataclass(frozen=True)
class SentenceLabels:
    sentences: tuple[tuple[int, str], ...]  # (chunk index 0-based, sentence)
    relevant: tuple[bool, ...]
    refs: tuple[JudgeCallRef, ...] = ()


def lenient_bool(v: Any, what: str) -> bool:
    """A judge's yes/no field: a boolean, yes/no/true/false in any case, or 0/1."""
    if isinstance(v, bool):
        return v
    if isinstance(v, str) and v.strip().lower() in ("yes", "true", "no", "false"):
        return v.strip().lower() in ("yes", "true")
    if isinstance(v, int) and v in (0, 1):
        return bool(v)
    raise OutputError(f"{what} must be true or false, got {v!r}")


def list_of_str(d: dict[str, Any], key: str) -> list[str]:
    value = d.get(key)
    if not isinstance(value, list):
        raise OutputError(f'expected "{key}" to be a list')
    out = []
    for i, item in enumerate(value):
        if not isinstance(item, str):
            raise OutputError(f'"{key}" item {i + 1} is not a string')
        if item.strip():
            # one line: a judge's "\n" or tab inside an item broke the line a person reads
            out.append(" ".join(item.split()))
    return out


def verdict_items(d: dict[str, Any], n: int, what: str) -> list[dict[str, Any]]:
    items = d.get("verdicts")
    if not isinstance(items, list):
        raise OutputError('expected "verdicts" to be a list')
    if len(items) != n:
        raise OutputError(f"expected exactly {n} verdicts, one per {what}, got {len(items)}")
    for i, item in enumerate(items):
        if not isinstance(item, dict):
            raise OutputError(f"verdict {i + 1} is not an object")
    return items


def numbered(tag: str, items: Sequence[str]) -> str:
    """A numbered list of untrusted items inside one fenced block."""
    body = "\n".join(f"{i}. {neutralise(' '.join(s.split()))}" for i, s in enumerate(items, start=1))
    return f"<{tag}>\n{body}\n</{tag}>"


def contexts_block(contexts: Sequence[str]) -> str:
    return "\n".join(fence("context", c, n=i) for i, c in enumerate(contexts, start=1))
