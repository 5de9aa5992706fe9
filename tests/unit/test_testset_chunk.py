"""Chunking: deterministic ids, sentence-aligned cuts, overlap, size limits."""

from __future__ import annotations

import itertools

import pytest

from ragsight.analyses import split_sentences
from ragsight.errors import ConfigError
from ragsight.testset import ChunkSettings, chunk_document
from ragsight.testset._chunk import measure

TEXT = " ".join(
    f"Sentence number {i} talks about topic {i} and has exactly twelve words in it."
    for i in range(1, 21)
)  # 20 sentences x 14 words


def test_same_text_same_chunks_and_ids() -> None:
    a = chunk_document("guide/a.md", TEXT, ChunkSettings(size=50, overlap=15))
    b = chunk_document("guide/a.md", TEXT, ChunkSettings(size=50, overlap=15))
    assert a == b
    assert [c.id for c in a] == [f"guide/a.md#{i}" for i in range(len(a))]
    assert all(c.doc_id == "guide/a.md" for c in a)
    assert len(a) > 3


def test_chunks_respect_size_and_cut_at_sentence_ends() -> None:
    chunks = chunk_document("d", TEXT, ChunkSettings(size=50, overlap=15))
    sentences = set(split_sentences(TEXT))
    for c in chunks:
        assert measure(c.text) <= 50
        # every chunk is a run of whole sentences
        for s in split_sentences(c.text):
            assert s in sentences


def test_overlap_repeats_the_last_whole_sentence() -> None:
    chunks = chunk_document("d", TEXT, ChunkSettings(size=50, overlap=15))
    for prev, nxt in itertools.pairwise(chunks):
        last = split_sentences(prev.text)[-1]
        assert split_sentences(nxt.text)[0] == last  # one 14-word sentence fits in 15
    no_overlap = chunk_document("d", TEXT, ChunkSettings(size=50, overlap=0))
    joined = [s for c in no_overlap for s in split_sentences(c.text)]
    assert joined == split_sentences(TEXT)  # nothing repeated, nothing lost


def test_every_sentence_lands_in_some_chunk() -> None:
    chunks = chunk_document("d", TEXT, ChunkSettings(size=40, overlap=20))
    covered = {s for c in chunks for s in split_sentences(c.text)}
    assert covered == set(split_sentences(TEXT))


def test_a_sentence_longer_than_the_size_is_cut_by_words() -> None:
    long = " ".join(f"w{i}" for i in range(55)) + "."
    chunks = chunk_document("d", long, ChunkSettings(size=20, overlap=0))
    assert [measure(c.text) for c in chunks] == [20, 20, 15]
    assert " ".join(c.text for c in chunks) == long


def test_headings_stay_with_the_paragraph_after_them() -> None:
    text = "Annual leave\n\nStaff get 25 days of leave. Requests go through Roost.\n\nSick leave\n\nTell your lead."
    chunks = chunk_document("d", text, ChunkSettings(size=12, overlap=0))
    assert chunks[0].text.startswith("Annual leave Staff get 25 days")
    assert not any(c.text.endswith("Sick leave") for c in chunks)


def test_token_unit_counts_characters() -> None:
    assert measure("abcdefgh abcdefgh", "tokens") == 5  # 17 characters / 4, rounded up
    assert measure("a b c d e f", "tokens") == 6  # never fewer than the words
    chunks = chunk_document("d", TEXT, ChunkSettings(size=60, overlap=0, unit="tokens"))
    assert all(measure(c.text, "tokens") <= 60 for c in chunks)


@pytest.mark.parametrize(
    "kwargs", [{"size": 5}, {"size": 50, "overlap": 50}, {"unit": "pages"}, {"overlap": -1}]
)
def test_bad_settings_are_refused(kwargs: dict[str, object]) -> None:
    with pytest.raises(ConfigError):
        ChunkSettings(**kwargs)  # type: ignore[arg-type]
