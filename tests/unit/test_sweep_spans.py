"""Placing a user pipeline's retrieved chunks in the sweep's documents, so the span metrics can
measure a LangChain or LlamaIndex pipeline factory: exact offsets on a hand-made corpus, in the
text as ragsight reads it (Markdown markup removed), and the cases that must stay unplaced."""

from __future__ import annotations

from pathlib import Path

import pytest

from ragsight.sweep import SpanLocator
from ragsight.testset import load_corpus

LEAVE = ("# Leave\n\nStaff get **25 days** each year. See the [leave policy](https://example.com/leave) page.\n"
         "Five days carry over each year.\n")
TRAVEL = "# Travel\n\nBusiness class is never booked. Staff get 25 days each year.\n"


@pytest.fixture()
def located(tmp_path: Path) -> tuple[SpanLocator, dict[str, str], Path]:
    (tmp_path / "leave.md").write_text(LEAVE, "utf-8")
    (tmp_path / "travel.md").write_text(TRAVEL, "utf-8")
    corpus = load_corpus(tmp_path)
    return SpanLocator(corpus.documents), {d.id: d.text for d in corpus.documents}, tmp_path


def test_ragsight_reads_the_markdown_without_its_markup(located: tuple[SpanLocator, dict[str, str], Path]) -> None:
    _, texts, _ = located
    assert texts["leave.md"] == ("Leave\n\nStaff get 25 days each year. See the leave policy page.\n"
                                 "Five days carry over each year.")


def test_a_raw_markdown_chunk_is_placed_in_the_text_ragsight_reads(
    located: tuple[SpanLocator, dict[str, str], Path],
) -> None:
    loc, texts, folder = located
    # cut from the raw file by the user's splitter (heading marks, bold), named by its path
    span = loc.span({"text": "# Leave\n\nStaff get **25 days** each year.",
                     "metadata": {"source": str(folder / "leave.md"), "start_index": 0}})
    assert span == {"doc_id": "leave.md", "start": 0, "end": 34}
    assert texts["leave.md"][0:34] == "Leave\n\nStaff get 25 days each year"
    # a Markdown link: found with the link's text in place of the link
    assert loc.span({"text": "See the [leave policy](https://example.com/leave) page.", "metadata": {}}) == {
        "doc_id": "leave.md", "start": 36, "end": 61}
    # found in one document only, with no name given
    assert loc.span({"text": "Business class is never", "metadata": {}}) == {"doc_id": "travel.md", "start": 8, "end": 31}


def test_ambiguous_chunks_stay_unplaced(located: tuple[SpanLocator, dict[str, str], Path]) -> None:
    loc, _texts, _ = located
    # in both documents, and nothing says which
    assert loc.span({"text": "Staff get 25 days each year.", "metadata": {}}) is None
    # ... unless the chunk names its document
    assert loc.span({"text": "Staff get 25 days each year.", "metadata": {"file_name": "travel.md"}}) == {
        "doc_id": "travel.md", "start": 40, "end": 67}
    # twice in its document with no offset; with LangChain's start_index or LlamaIndex's offsets,
    # the nearest occurrence
    assert loc.span({"text": "each year.", "metadata": {"source": "leave.md"}}) is None
    assert loc.span({"text": "each year.", "metadata": {"source": "leave.md", "start_index": 100}}) == {
        "doc_id": "leave.md", "start": 84, "end": 93}
    assert loc.span({"text": "each year.", "offsets": {"start": 20, "end": 30},
                     "metadata": {"file_name": "leave.md"}}) == {"doc_id": "leave.md", "start": 25, "end": 34}
    # too short to place without a document name; placed with one
    assert loc.span({"text": "Travel", "metadata": {}}) is None
    assert loc.span({"text": "Travel", "metadata": {"file_name": "travel.md"}}) == {
        "doc_id": "travel.md", "start": 0, "end": 6}
    # not in the documents at all
    assert loc.span({"text": "Dogs are welcome on Fridays.", "metadata": {}}) is None


def test_a_span_in_the_chunks_metadata_is_taken_as_given(located: tuple[SpanLocator, dict[str, str], Path]) -> None:
    loc, _, _ = located
    assert loc.span({"text": "anything", "metadata": {"doc_id": "leave.md", "start": 3, "end": 9}}) == {
        "doc_id": "leave.md", "start": 3, "end": 9}
    # without documents, only such spans are known
    assert SpanLocator(()).span({"text": "Staff get 25 days each year.", "metadata": {}}) is None
