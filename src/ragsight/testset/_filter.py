"""Filtering generated candidates: deterministic checks, the critic judge, near-duplicates.

Deterministic checks (no model):

- ``copied``: the question shares a run of ``max_copied_ngram`` or more consecutive words with a
  reference context (after lower-casing and dropping punctuation).
- ``reference_not_grounded``: fewer than ``min_grounding`` of the reference answer's content
  words and numbers occur in the reference contexts, or a number or a name of the reference
  (a capitalised word inside a sentence) occurs in none of them (a reasoning answer may compute
  its numbers: only its names are checked) (out-of-scope questions are
  exempt: their reference says the documents do not contain the answer). The critic also
  rejects a reference as ``reference_not_grounded`` when it finds it contradicted by its contexts.
- ``single_chunk`` (multi-context only): every content word of the reference found in the
  contexts is found in one chunk alone, so the others add nothing.
- ``malformed``: an empty or one-word question, or an empty reference.
- ``long_reference``: a reference of more than ``max_reference_words`` words (default 80); small
  generators often paste the whole context as the "answer", which also defeats the grounding
  and single-chunk checks.

The critic then checks answerability (for out-of-scope: that the most related chunks of the
corpus do *not* answer it), self-containment and copying. Finally candidates whose question
embeddings have a cosine similarity of ``dedup_threshold`` or more with an accepted question are
dropped as ``duplicate`` (exact duplicates after normalisation are dropped without an embedder).
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from ..analyses import content_words, number_form, split_sentences, tokens
from ..errors import OutputError
from ..judge import Answer, Judge, JudgeFailedError
from ..prompts import fence, load_prompt

__all__ = [
    "REASONS",
    "CriticVerdict",
    "FilterSettings",
    "content_tokens",
    "critique",
    "deterministic_checks",
    "grounding",
    "longest_common_ngram",
    "missing_facts",
    "normalise_question",
]

REASONS = {
    "generation_failed": "the generator gave no usable question",
    "malformed": "empty or one-word question, or empty reference",
    "copied": "the question copies a run of words from its context",
    "reference_not_grounded": "the reference states what its contexts do not (numbers, names or most "
                              "words absent, or the critic found it contradicted)",
    "long_reference": "the reference is longer than an answer should be (often a copy of the context)",
    "single_chunk": "a multi-context answer that one chunk alone contains",
    "not_answerable": "the critic found the question not answerable from its reference contexts",
    "answerable_from_corpus": "an out-of-scope question that the documents do answer",
    "not_self_contained": "the critic found the question not self-contained",
    "critic_failed": "the critic gave no usable verdict",
    "duplicate": "a near-duplicate of an accepted question",
    "off_topic": "a scenario whose first message is not about its goal",
}


@dataclass(frozen=True)
class FilterSettings:
    """Thresholds of the filter.

    ``dedup_threshold``: cosine similarity of question embeddings at or above which a candidate
    is a duplicate. The default 0.93 suits the local e5-small embedder, on which questions about
    one handbook score 0.77-0.84 when unrelated, 0.91 when they differ in one name ("... in
    Leeds" / "... in Porto"), and 0.86-0.96 when they are paraphrases (a paraphrase in another
    style scores lowest); other embedders need their own value.
    """

    max_copied_ngram: int = 8
    min_grounding: float = 0.5
    dedup_threshold: float = 0.93
    max_reference_words: int = 80


def _words(text: str) -> list[str]:
    """Lower-cased words and normalised numbers ('1,200' -> '1200'), accents folded, in order."""
    return [number_form(t) if t[:1].isdigit() else t.lower() for t in tokens(text)]


def content_tokens(text: str) -> list[str]:
    """Content words (stemmed, not stop words, 3+ letters) and numbers, in order: the analyses'
    text kit (``ragsight.analyses``), so the filters count "the same word" as the verdicts do."""
    return [w for w in content_words(text) if w[:1].isdigit() or len(w) >= 3]


def _stems(text: str) -> set[str]:
    return set(content_tokens(text))


def grounding(reference: str, contexts: Sequence[str]) -> tuple[float, list[str], list[set[str]]]:
    """Share of the reference's content tokens found in the contexts, the tokens missing, and
    per context the reference tokens it contains. 1.0 when the reference has no content token."""
    ref = list(dict.fromkeys(content_tokens(reference)))
    if not ref:
        return 1.0, [], [set() for _ in contexts]
    per = [_stems(c) for c in contexts]
    found_in = [set(ref) & p for p in per]
    everywhere = set().union(*found_in) if found_in else set()
    missing = [w for w in ref if w not in everywhere]
    return (len(ref) - len(missing)) / len(ref), missing, found_in


_NAME_OR_NUMBER = re.compile(r"\d+(?:[.,]\d+)*|[A-Z][\w'-]*")


def missing_facts(reference: str, contexts: Sequence[str], numbers: bool = True) -> list[str]:
    """The numbers (when ``numbers``) and names of the reference that occur in none of the
    contexts. A name is a word with a capital letter inside a sentence (a sentence's first word
    is not counted)."""
    found = {number_form(t) if t[:1].isdigit() else t.lower() for c in contexts for t in tokens(c)}
    out: list[str] = []
    for sentence in split_sentences(reference):
        words = tokens(sentence)
        for i, w in enumerate(words):
            is_number = w[:1].isdigit()
            if is_number and not numbers:
                continue
            if not is_number and (i == 0 or not w[:1].isupper() or len(w) < 2):
                continue
            key = number_form(w) if is_number else w.lower()
            if key not in found and w not in out:
                out.append(w)
    return out


def longest_common_ngram(question: str, text: str) -> int:
    """Length in words of the longest run of consecutive words shared by both texts."""
    a, b = _words(question), _words(text)
    if not a or not b:
        return 0
    best = 0
    prev = [0] * (len(b) + 1)
    for i in range(1, len(a) + 1):
        cur = [0] * (len(b) + 1)
        ai = a[i - 1]
        for j in range(1, len(b) + 1):
            if ai == b[j - 1]:
                cur[j] = prev[j - 1] + 1
                if cur[j] > best:
                    best = cur[j]
        prev = cur
    return best


def normalise_question(q: str) -> str:
    return " ".join(_words(q))


def deterministic_checks(
    question_type: str,
    question: str,
    reference: str,
    contexts: Sequence[str],
    settings: FilterSettings,
) -> tuple[list[str], dict[str, Any]]:
    """Reasons to reject found without a model, and the measurements behind them."""
    reasons: list[str] = []
    details: dict[str, Any] = {}
    if len(question.split()) < 2 or not reference.strip():
        reasons.append("malformed")
    if len(reference.split()) > settings.max_reference_words:
        reasons.append("long_reference")
    overlap = max((longest_common_ngram(question, c) for c in contexts), default=0)
    details["copied_ngram"] = overlap
    if overlap >= settings.max_copied_ngram:
        reasons.append("copied")
    if question_type != "out_of_scope":
        share, missing, found_in = grounding(reference, contexts)
        details["grounding"] = round(share, 3)
        details["ungrounded_tokens"] = missing[:20]
        # a reasoning answer may compute a number ("25 years later"); its names must still be there
        absent = missing_facts(reference, contexts, numbers=question_type != "reasoning")
        if absent:
            details["not_in_contexts"] = absent[:20]
        if share < settings.min_grounding or absent:
            reasons.append("reference_not_grounded")
        if len(contexts) > 1:
            details["tokens_per_context"] = [len(f) for f in found_in]
            union = set().union(*found_in)
            if union and any(f >= union for f in found_in) and question_type == "multi_context":
                reasons.append("single_chunk")
    return reasons, details


# ---- critic ------------------------------------------------------------------------------------


@dataclass(frozen=True)
class CriticVerdict:
    answerable: bool
    self_contained: bool
    copied: bool
    reason: str
    calls: Sequence[Any] = field(default=(), compare=False)
    contradicted: bool = False  # the contexts contradict the proposed answer


def _bool(data: Mapping[str, Any], key: str) -> bool:
    v = data[key]
    if not isinstance(v, bool):
        raise OutputError(f'"{key}" must be true or false')
    return v


def _verdict(data: dict[str, Any]) -> CriticVerdict:
    reason = data.get("reason", "")
    if not isinstance(reason, str):
        raise OutputError('"reason" must be a string')
    copied = _bool(data, "copied") if "copied" in data else False
    contradicted = _bool(data, "contradicted") if "contradicted" in data else False
    return CriticVerdict(
        _bool(data, "answerable"), _bool(data, "self_contained"), copied, reason.strip(),
        contradicted=contradicted,
    )


def numbered(texts: Iterable[str], tag: str = "chunk") -> str:
    return "\n\n".join(fence(tag, t, n=i) for i, t in enumerate(texts, start=1))


async def critique(
    critic: Judge,
    question_type: str,
    question: str,
    reference: str,
    contexts: Sequence[str],
) -> tuple[list[str], CriticVerdict | None, Answer[CriticVerdict] | None]:
    """Ask the critic. ``contexts`` are the reference contexts, or for out-of-scope questions the
    chunks of the corpus most related to the question. Returns the reasons to reject."""
    try:
        if question_type == "out_of_scope":
            prompt = load_prompt("testset_critique_oos")
            values = {"contexts": numbered(contexts), "question": fence("question", question)}
        else:
            prompt = load_prompt("testset_critique")
            values = {
                "contexts": numbered(contexts),
                "question": fence("question", question),
                "reference": fence("reference", reference),
            }
        answer = await critic.ask(prompt, values, _verdict, max_tokens=200)
    except JudgeFailedError:
        return ["critic_failed"], None, None
    v = answer.value
    reasons: list[str] = []
    if question_type == "out_of_scope":
        if v.answerable:
            reasons.append("answerable_from_corpus")
    else:
        if v.contradicted:
            reasons.append("reference_not_grounded")
        if not v.answerable:
            reasons.append("not_answerable")
    if not v.self_contained:
        reasons.append("not_self_contained")
    if v.copied and question_type != "out_of_scope":
        reasons.append("copied")
    return reasons, v, answer
