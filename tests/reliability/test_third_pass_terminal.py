"""Text under evaluation (e.g. imported production traces), ids and run
metadata reach the terminal through ``evaluate``, ``show``, ``runs`` and ``compare`` with their
control characters made visible: no window title, screen clear, cursor move, fake hyperlink or
bidirectional override gets through. The rows are written as a hostile source writes them."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from ragsight import cli
from ragsight.store import Store

TITLE = "\x1b]0;pwned\x07"          # retitles the window
CLEAR = "\x1b[2J\x1b[H"             # clears the screen
LINK = "\x1b]8;;https://evil.example/\x1b\\click\x1b]8;;\x1b\\"  # a hyperlink
CSI_C1 = "\x9b2J"                   # the one-byte CSI of C1
BIDI = "\u202eelif.exe"             # shows a name reversed
HOSTILE = [TITLE, CLEAR, LINK, CSI_C1, BIDI]
RAW = ("\x1b", "\x07", "\x9b", "\u202e")


def rows() -> list[dict[str, object]]:
    return [{"id": f"s{i}{h}", "question": f"Where is the tower?{h}", "response": f"In Paris.{h}",
             "reference": f"In Paris.{h}", "contexts": [f"The tower is in Paris.{h}"],
             "retrieved_ids": [f"d1{h}"], "relevant_ids": [f"d1{h}"]}
            for i, h in enumerate(HOSTILE)]


def assert_visible(text: str) -> None:
    for ch in RAW:
        assert ch not in text, f"raw {ch!r} printed: {text[max(0, text.find(ch) - 40):text.find(ch) + 40]!r}"
    assert "␛" in text  # ESC shown, not obeyed


def test_evaluate_show_runs_and_compare_print_control_characters_visibly(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    data = tmp_path / "traces.jsonl"
    data.write_text("".join(json.dumps(r) + "\n" for r in rows()), encoding="utf-8")
    store = str(tmp_path / "runs.db")
    metrics = "hit_rate,exact_match"
    for _ in range(2):
        code = cli.main(["evaluate", str(data), "--metrics", metrics, "--store", store,
                         "--metadata", f"note={TITLE}{CLEAR}"])
        assert code == 0, capsys.readouterr().err
    printed = capsys.readouterr()
    assert_visible(printed.out + printed.err)
    with Store(store) as st:
        first, second = (r.id for r in reversed(st.runs()))
        sample = st.samples(first)[0].id
    assert "\x1b" in sample  # stored as given: only what is printed changes
    for args in (["show", first, "--store", store],
                 ["show", first, "--sample", sample, "--store", store],
                 ["runs", "--store", store],
                 ["compare", first, second, "--store", store]):
        code = cli.main(args)
        printed = capsys.readouterr()
        assert code == 0, (args, printed.err)
        text = printed.out + printed.err
        for ch in RAW:
            assert ch not in text, (args, ch)
    # show --sample prints the hostile question, made visible
    cli.main(["show", first, "--sample", sample, "--store", store])
    assert "Where is the tower?␛]0;pwned" in capsys.readouterr().out
