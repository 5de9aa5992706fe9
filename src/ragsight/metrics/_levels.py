"""What a conversation-level metric (``Metric.level == "conversation"``) accepts."""

from __future__ import annotations

from ..dataset import Sample

__all__ = ["NOT_A_CONVERSATION", "conversation_only"]

NOT_A_CONVERSATION = "not a conversation (this metric judges a whole conversation)"


def conversation_only(sample: Sample) -> str | None:
    """A skip reason for a sample that is not a conversation-level sample (``conversation_id``
    set, ``turn`` None), else None."""
    if sample.conversation_id is None or sample.turn is not None:
        return NOT_A_CONVERSATION
    return None
