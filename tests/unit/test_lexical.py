"""Lexical metrics: hand-worked values, agreement with sacrebleu, and properties."""

from __future__ import annotations

import sys
from collections.abc import Callable, Sequence

import pytest
import sacrebleu
from hypothesis import given
from hypothesis import strategies as st

from ragsight.errors import MissingExtraError
from ragsight.metrics._lexical import bleu, chrf, exact_match, rouge_l, rouge_n, token_f1

# --- exact match and token F1 (SQuAD) -------------------------------------------------------


@pytest.mark.parametrize(
    ("prediction", "reference", "want"),
    [
        ("The Eiffel Tower!", "eiffel tower", 1.0),  # case, punctuation, article
        ("  Eiffel\n\tTower ", "Eiffel Tower", 1.0),  # whitespace
        ("U.S.", "US", 1.0),  # punctuation is deleted, not replaced by a space
        ("Eiffel Tower in Paris", "Eiffel Tower", 0.0),
        ("another tower", "tower", 0.0),  # only whole-word articles go
        ("tower eiffel", "eiffel tower", 0.0),  # order matters
    ],
)
def test_exact_match_by_hand(prediction: str, reference: str, want: float) -> None:
    assert exact_match(prediction, reference) == want


def test_exact_match_takes_the_best_reference() -> None:
    assert exact_match("Denver Broncos", ["Broncos", "the Denver Broncos"]) == 1.0
    assert exact_match("Denver", ("Broncos", "Denver Broncos")) == 0.0


def test_token_f1_by_hand() -> None:
    # pred -> [cat, sat, on, mat], ref -> [cat, on, mat]: 3 shared, P = 3/4, R = 1, F1 = 6/7.
    assert token_f1("The cat sat on the mat.", "a cat on a mat") == pytest.approx(6 / 7)
    # A bag of tokens: "cat" is shared once. P = 1/3, R = 1, F1 = 1/2.
    assert token_f1("cat cat cat", "cat") == pytest.approx(0.5)
    assert token_f1("dog", "cat") == 0.0
    # Best reference: F1 vs "cat" is 1/2, vs "cat cat" is 2 * (2/3 * 1) / (5/3) = 4/5.
    assert token_f1("cat cat cat", ["cat", "cat cat"]) == pytest.approx(0.8)


def test_token_f1_when_nothing_is_left_after_normalisation() -> None:
    assert token_f1("", "") == 1.0
    assert token_f1("The", "a!") == 1.0
    assert exact_match("The", "a!") == 1.0
    assert token_f1("", "Paris") == 0.0
    assert token_f1("Paris", "...") == 0.0


@pytest.mark.parametrize("fn", [exact_match, token_f1, bleu, chrf, rouge_l])
def test_no_reference_is_an_error(fn: Callable[[str, Sequence[str]], float]) -> None:
    with pytest.raises(ValueError, match="at least one reference"):
        fn("Paris", [])


def test_a_reference_string_is_one_reference_not_characters() -> None:
    assert exact_match("Paris", "Paris") == 1.0
    assert token_f1("Paris", "Paris") == 1.0
    assert rouge_n("Paris", "Paris", 1) == 1.0


# --- BLEU and chrF (sacrebleu) --------------------------------------------------------------


def test_bleu_by_hand() -> None:
    # Clipped n-gram precisions 5/6, 3/5, 2/4, 1/3; same length, so no brevity penalty.
    got = bleu("the cat sat on the mat", "the cat sat on a mat")
    assert got == pytest.approx((5 / 6 * 3 / 5 * 2 / 4 * 1 / 3) ** (1 / 4))


def test_bleu_smoothing_and_effective_order() -> None:
    # 3 tokens: orders 1..3 only (effective order). Trigrams: 0 of 1 match, so exp smoothing
    # gives 1 / (2 * 1). BLEU = (2/3 * 1/2 * 1/2) ** (1/3).
    assert bleu("the cat sat", "the cat ran") == pytest.approx((2 / 3 * 1 / 2 * 1 / 2) ** (1 / 3))
    assert bleu("dog", "the cat ran") == 0.0


@pytest.mark.parametrize(
    ("prediction", "references"),
    [
        ("The quick brown fox jumps over the lazy dog.", ["A quick brown fox leaps over a dog."]),
        ("Paris is the capital.", ["Paris is the capital of France.", "The capital is Paris."]),
        ("It was 1969, in July.", ["Apollo 11 landed in July 1969."]),
    ],
)
def test_bleu_and_chrf_equal_a_direct_sacrebleu_call(
    prediction: str, references: list[str]
) -> None:
    want_bleu = sacrebleu.sentence_bleu(prediction, references).score / 100
    want_chrf = sacrebleu.sentence_chrf(prediction, references).score / 100
    assert 0.0 < want_bleu < 1.0 and 0.0 < want_chrf < 1.0
    assert bleu(prediction, references) == pytest.approx(want_bleu, abs=1e-12)
    assert chrf(prediction, references) == pytest.approx(want_chrf, abs=1e-12)


def test_identical_text_scores_exactly_one() -> None:
    # sacrebleu returns 100.00000000000004 here; the value must stay in [0, 1].
    assert bleu("the cat sat on the mat", "the cat sat on the mat") == 1.0
    assert chrf("the cat sat on the mat", ["the cat sat on the mat"]) == 1.0


@pytest.mark.parametrize(("fn", "feature"), [(bleu, "BLEU"), (chrf, "chrF")])
def test_missing_sacrebleu_names_the_extra(
    fn: Callable[[str, str], float], feature: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setitem(sys.modules, "sacrebleu", None)  # makes `import sacrebleu` fail
    with pytest.raises(MissingExtraError, match=r"ragsight\[lexical\]") as info:
        fn("a cat", "a cat")
    assert info.value.extra == "lexical"
    assert info.value.module == "sacrebleu"
    assert str(info.value).startswith(feature)


# --- ROUGE ----------------------------------------------------------------------------------

PRED = "The cat was found under the bed."
REF = "the cat was under the bed"


def test_rouge_1_by_hand() -> None:
    # 7 vs 6 tokens, 6 shared (the x2, cat, was, under, bed): P = 6/7, R = 1, F = 12/13.
    assert rouge_n(PRED, REF, 1) == pytest.approx(12 / 13)


def test_rouge_2_by_hand() -> None:
    # Bigrams 6 vs 5, shared: the cat, cat was, under the, the bed. P = 4/6, R = 4/5, F = 8/11.
    assert rouge_n(PRED, REF, 2) == pytest.approx(8 / 11)


def test_rouge_l_by_hand() -> None:
    # LCS = the cat was under the bed (6): P = 6/7, R = 6/6, F = 12/13.
    assert rouge_l(PRED, REF) == pytest.approx(12 / 13)
    # Lin (2004): LCS(police killed the gunman, police kill the gunman) = police the gunman.
    assert rouge_l("police killed the gunman", "police kill the gunman") == pytest.approx(0.75)
    # Order matters, unlike ROUGE-1: LCS = "the gunman" (2 of 4).
    assert rouge_l("the gunman kill police", "police kill the gunman") == pytest.approx(0.5)
    assert rouge_n("the gunman kill police", "police kill the gunman", 1) == 1.0


def test_rouge_tokenisation() -> None:
    # Lowercase; apostrophes, hyphens and underscores split tokens; no stemming.
    assert rouge_n("Don't stop-believing", "don t stop believing", 1) == 1.0
    assert rouge_n("snake_case", "snake case", 2) == 1.0
    assert rouge_n("cats", "cat", 1) == 0.0
    # Letters outside ASCII are kept (rouge-score would delete them): 1 of 3 vs 1 of 1.
    assert rouge_n("Café au lait", "café", 1) == pytest.approx(0.5)
    assert rouge_n("東京", "東京", 1) == 1.0


def test_rouge_reads_chinese_and_japanese_character_by_character() -> None:
    # written without spaces: a run of Han characters was one token, so ROUGE was 0 or 1
    assert rouge_n("北京是中国的首都", "中国的首都是北京", 1) == 1.0
    assert rouge_l("北京是中国的首都", "中国的首都是北京") == pytest.approx(5 / 8)  # 中国的首都
    assert rouge_n("北京是中国的首都", "中国的首都是北京", 2) == pytest.approx(5 / 7)  # 北京 中国 国的 的首 首都: 5 of 7 bigrams
    assert rouge_n("首都是上海", "首都是北京", 1) == pytest.approx(3 / 5)
    assert rouge_n("東京は日本の首都です", "日本の首都は東京です", 1) == 1.0  # kanji and kana alike
    assert rouge_n("2020年に東京で", "東京 2020 年", 1) == pytest.approx(2 * 4 / 6 / (4 / 6 + 1))  # digits stay a word
    assert rouge_n("서울은 수도", "서울은 수도", 1) == 1.0 and rouge_n("서울은", "서울", 1) == 0.0  # Hangul: words


def test_rouge_splits_chinese_as_sacrebleus_zh_tokenizer() -> None:
    tokenizer_zh = pytest.importorskip("sacrebleu.tokenizers.tokenizer_zh")
    from ragsight.metrics._lexical import _rouge_tokens

    text = "北京是中华人民共和国的首都，也是全国的政治中心"
    expected = [t for t in tokenizer_zh.TokenizerZh()(text).split() if t not in ("，",)]
    assert _rouge_tokens(text) == expected


def test_rouge_without_ngrams_is_zero() -> None:
    assert rouge_n("Paris", "Paris", 2) == 0.0
    assert rouge_l("", "") == 0.0
    assert rouge_l("!!!", "Paris") == 0.0


def test_rouge_takes_the_best_reference() -> None:
    assert rouge_l(PRED, ["dog", REF]) == pytest.approx(12 / 13)
    assert rouge_n(PRED, ["dog", REF], 2) == pytest.approx(8 / 11)


@pytest.mark.parametrize("n", [0, -1, True])
def test_rouge_n_rejects_bad_n(n: int) -> None:
    with pytest.raises(ValueError, match="n must be an integer >= 1"):
        rouge_n(PRED, REF, n)


# --- properties -----------------------------------------------------------------------------

WORDS = ["the", "a", "an", "Cat", "cat", "sat", "on", "mat", "dog", "!", "U.S.", "café", "x_y"]
texts = st.one_of(
    st.lists(st.sampled_from(WORDS), max_size=10).map(" ".join),
    st.text(max_size=40),
)
reference_lists = st.lists(texts, min_size=1, max_size=3)
ALL: list[Callable[[str, Sequence[str]], float]] = [
    exact_match,
    token_f1,
    rouge_l,
    lambda p, r: rouge_n(p, r, 1),
    lambda p, r: rouge_n(p, r, 2),
    bleu,
    chrf,
]


@given(texts, reference_lists)
def test_every_value_lies_in_unit_interval(prediction: str, references: list[str]) -> None:
    for fn in ALL:
        value = fn(prediction, references)
        assert 0.0 <= value <= 1.0


@given(texts, reference_lists)
def test_exact_match_implies_full_token_f1(prediction: str, references: list[str]) -> None:
    if exact_match(prediction, references) == 1.0:
        assert token_f1(prediction, references) == 1.0


@given(texts, texts)
def test_token_f1_and_exact_match_of_a_text_with_itself(a: str, b: str) -> None:
    assert exact_match(a, a) == 1.0
    assert token_f1(a, a) == 1.0
    assert token_f1(a, b) == token_f1(b, a)


@given(texts, texts, st.integers(1, 3))
def test_rouge_f_measure_is_symmetric(a: str, b: str, n: int) -> None:
    assert rouge_n(a, b, n) == pytest.approx(rouge_n(b, a, n))
    assert rouge_l(a, b) == pytest.approx(rouge_l(b, a))


@given(texts, texts)
def test_rouge_l_never_exceeds_rouge_1(a: str, b: str) -> None:
    # The LCS is a common multiset of tokens, so it is at most the clipped unigram overlap.
    assert rouge_l(a, b) <= rouge_n(a, b, 1) + 1e-12


@given(texts, reference_lists)
def test_several_references_take_the_best(prediction: str, references: list[str]) -> None:
    for fn in ALL[:5]:
        assert fn(prediction, references) == max(fn(prediction, [r]) for r in references)
