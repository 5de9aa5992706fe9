"""The embedded judge's prefix bookkeeping and prompt-lookup drafts (no model needed)."""

from __future__ import annotations

import numpy as np

from ragsight.judge._local import _common_prefix, _draft, _PrefixStates


def test_common_prefix_stops_at_the_first_difference() -> None:
    assert _common_prefix(np.array([1, 2, 3, 4]), [1, 2, 9, 4]) == 2
    assert _common_prefix(np.array([1, 2]), [1, 2, 3]) == 2
    assert _common_prefix(np.array([], dtype=int), [1]) == 0
    assert _common_prefix(np.array([5]), [1]) == 0


def test_draft_copies_what_followed_the_latest_match() -> None:
    # prompt: "a b c d e f", output so far ends with "b c" -> propose "d e f"
    prompt = [10, 11, 12, 13, 14, 15]
    assert _draft([*prompt, 99, 11, 12], len(prompt), 8) == [13, 14, 15, 99, 11, 12]
    assert _draft([*prompt, 99, 11, 12], len(prompt), 2) == [13, 14]
    # the latest occurrence wins
    history = [1, 2, 3, 7, 1, 2, 3, 8, 0, 2, 3]
    assert _draft(history, 8, 1) == [8]
    # nothing to copy
    assert _draft([1, 2, 3, 4], 4, 8) == []
    assert _draft([1, 2, 1, 2], 2, 0) == []


def test_saved_state_with_the_longest_shared_prefix_is_chosen() -> None:
    states = _PrefixStates(max_states=3)
    states._items = [(np.array([1, 2, 3]), b"x"), (np.array([1, 2, 3, 4, 5]), b"y"), (np.array([7]), b"z")]
    assert states.best([1, 2, 3, 4, 6]) == (1, 4)
    assert states.best([1, 2, 9]) == (0, 2)
    assert states.best([8]) == (-1, 0)
