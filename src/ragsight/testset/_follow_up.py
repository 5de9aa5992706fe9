"""The ``follow_up`` question kind: a two-turn conversation on one chunk, a question and then a
follow-up that needs the first turn. The follow-up's answer is held to the same deterministic
checks as the first, and the accepted row is a conversation (``turns``) that ``ragsight answer``
asks turn by turn.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from ..errors import OutputError
from ._chunk import Chunk
from ._filter import FilterSettings, deterministic_checks, normalise_question
from ._kind import Generated, Outcome, QuestionKind, row_id, validate_qa

__all__ = ["FOLLOW_UP", "FollowUp", "validate_follow_up"]


def validate_follow_up(data: dict[str, Any]) -> Generated:
    first = validate_qa(data)
    q, a = data.get("follow_up"), data.get("follow_up_answer")
    if not isinstance(q, str) or not q.strip():
        raise OutputError('"follow_up" must be a non-empty string')
    if not isinstance(a, str) or not a.strip():
        raise OutputError('"follow_up_answer" must be a non-empty string')
    return Generated(first.question, first.answer, follow_up=" ".join(q.split()),
                     follow_up_answer=" ".join(a.split()))


@dataclass(frozen=True)
class FollowUp(QuestionKind):
    """A question and a follow-up that leans on it, each with its reference."""

    def validate(self, data: dict[str, Any]) -> Generated:
        return validate_follow_up(data)

    def more_checks(
        self, out: Outcome, gen: Generated, chunks: tuple[Chunk, ...], settings: FilterSettings,
        reasons: list[str],
    ) -> list[str]:
        # the follow-up's answer is held to the same rules
        out.follow_up, out.follow_up_reference = gen.follow_up, gen.follow_up_answer
        more, fdetails = deterministic_checks(self.name, gen.follow_up, gen.follow_up_answer,
                                              [c.text for c in chunks], settings)
        out.details["follow_up_grounding"] = fdetails.get("grounding")
        reasons = list(dict.fromkeys([*reasons, *more]))
        if normalise_question(gen.follow_up) == normalise_question(gen.question):
            reasons.append("duplicate")
        return reasons

    def row(self, o: Outcome, meta: dict[str, Any], ids: list[str]) -> dict[str, Any]:
        # a conversation: ragsight answer holds it turn by turn
        meta["follow_up_grounding"] = o.details.get("follow_up_grounding")
        return {
            "id": row_id(o.question + "\x1f" + o.follow_up, o.spec.chunk_ids, o.spec.question_type),
            "turns": [{"role": "user", "content": o.question}, {"role": "assistant", "reference": o.reference},
                      {"role": "user", "content": o.follow_up},
                      {"role": "assistant", "reference": o.follow_up_reference}],
            "reference_contexts": [c.text for c in o.contexts],
            "relevant_ids": ids,
            "metadata": meta,
        }


FOLLOW_UP = FollowUp("follow_up")
