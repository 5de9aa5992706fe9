"""One text kit: the verdict signals, the test-set filters and the report's evidence highlighting
count "the same word" by the same rules (accents folded, one stop-word list, one stemmer)."""

from __future__ import annotations

from ragsight.analyses import STOP_WORDS, content_words, stem
from ragsight.report import best_matching_sentence
from ragsight.testset._filter import content_tokens, grounding


def test_the_three_users_agree_on_the_same_word() -> None:
    text = "The Flights were delayed; café staff counted 1,200 bags."
    words = content_words(text)
    assert words == ["flight", "delay", "cafe", "staff", "count", "1200", "bag"]
    # the test-set filter keeps the same stems (3+ letters) and numbers
    assert content_tokens(text) == words
    # inflections meet: a reference about "flight delays" is grounded in a context on "delayed flights"
    share, missing, _ = grounding("flight delays", ["Two delayed flights."])
    assert (share, missing) == (1.0, [])


def test_stop_words_and_stems_are_one_list() -> None:
    assert {"the", "however", "within"} <= STOP_WORDS
    assert stem("batteries") == "battery" and stem("charging") == "charg"


def test_report_highlights_the_sentence_sharing_stemmed_words() -> None:
    context = "Bags are weighed at the gate. Delayed flights get vouchers."
    match = best_matching_sentence("a voucher is given for a flight that was delayed", [context])
    assert match is not None
    assert (match.sentence, match.text, match.cover) == (1, "Delayed flights get vouchers.", 0.75)
