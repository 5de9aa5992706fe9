"""A follow-up's evidence: its own contexts, else the tool results since its user message, else
the evidence of a recent earlier turn that the assistant still had in view (marked inherited), so
its claims are checked rather than skipped. And a long chat is indexed in one pass."""

from __future__ import annotations

import time

from ragsight.conversation import Conversation, ToolCall, Turn
from ragsight.sample import turn_samples

PRUNE = "-prune: if the file is a directory, do not descend into it. You cannot usefully use -prune and -delete together."


def chat(*extra: Turn) -> Conversation:
    return Conversation("find", (
        Turn("user", "How do I skip the build folder with find?"),
        Turn("assistant", "", tool_calls=(ToolCall("man", {"page": "find"}),)),
        Turn("tool", PRUNE, name="man"),
        Turn("assistant", "Use -prune: find . -path ./build -prune -o -print."),
        Turn("user", "Can I combine it with -delete?"),
        Turn("assistant", "Yes, -prune works well together with -delete."),
        *extra,
    ))


def test_a_follow_up_without_evidence_inherits_the_last_tool_result_and_says_so() -> None:
    first, follow_up, conv = turn_samples(chat())
    assert first.contexts == (PRUNE,) and "contexts_inherited_from_turn" not in first.metadata
    assert follow_up.contexts == (PRUNE,)
    assert follow_up.metadata["contexts_inherited_from_turn"] == 0
    assert conv.turn is None


def test_own_evidence_wins_and_nothing_is_inherited_from_too_far_back() -> None:
    later = [Turn("user", f"Question {i}?") if i % 2 == 0 else Turn("assistant", f"Answer {i}.", contexts=("x",))
             for i in range(2)]
    samples = turn_samples(chat(*later))
    assert samples[2].contexts == ("x",) and "contexts_inherited_from_turn" not in samples[2].metadata
    quiet = [Turn("user", f"Question {i}?") if i % 2 == 0 else Turn("assistant", f"Answer {i}.") for i in range(8)]
    far = turn_samples(chat(*quiet))
    assert far[2].metadata["contexts_inherited_from_turn"] == 0  # turn 2 sees turn 0's result
    assert far[-2].contexts is None  # five turns on, the tool result is no longer counted as in view


def test_a_long_chat_is_indexed_in_one_pass() -> None:
    msgs: list[Turn] = []
    for i in range(2500):
        msgs += [Turn("user", f"question {i}"), Turn("assistant", f"answer {i}", contexts=(f"ctx {i}",))]
    t0 = time.perf_counter()
    conv = Conversation("big", tuple(msgs))
    assert len(conv.assistant_turns) == 2500
    assert len(turn_samples(conv)) == 2501
    assert time.perf_counter() - t0 < 5  # quadratic indexing took minutes at this size
