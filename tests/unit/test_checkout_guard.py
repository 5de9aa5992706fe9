"""The suite's guard against tests that write into the checkout (tests/conftest.py): a file left in
the top folder is named, the tools' own folders are not."""

from __future__ import annotations

import uuid

from tests.conftest import CHECKOUT, _top_level, left_in_checkout


def test_a_file_left_in_the_checkout_is_named_and_the_tools_folders_are_not() -> None:
    before = _top_level()
    stray = CHECKOUT / f"sweep-guard-{uuid.uuid4().hex[:8]}.jsonl"
    try:
        stray.write_text("{}\n", encoding="utf-8")
        assert left_in_checkout(before) == [stray.name]
    finally:
        stray.unlink()
    assert left_in_checkout(before) == []
    assert ".pytest_cache" not in _top_level() and ".hypothesis" not in _top_level()
