"""Lexical metrics: exact match, token F1, BLEU, chrF, ROUGE-N and ROUGE-L. No judge.

Each takes a prediction and one or more references (a string, or a sequence of acceptable
answers) and returns a value in [0, 1]. They count shared surface forms, so they underrate a
correct answer phrased differently from the reference ("Paris" vs "the French capital").

BLEU and chrF need the ``lexical`` extra (sacrebleu), imported only when called.
"""

from __future__ import annotations

import re
import string
from collections import Counter
from collections.abc import Sequence

from ragsight.errors import MissingExtraError

__all__ = ["bleu", "chrf", "exact_match", "rouge_l", "rouge_n", "token_f1"]

_PUNCTUATION = frozenset(string.punctuation)
_ARTICLES = re.compile(r"\b(a|an|the)\b")
_NON_ALNUM = re.compile(r"[\W_]+")
# Chinese and Japanese are written without spaces: each of these characters is a token of its
# own, as sacrebleu's zh tokenizer splits Chinese (CJK ideographs and their extensions and
# compatibility forms, hiragana, katakana and its half-width forms). Hangul keeps its words.
_CJK_CHAR = re.compile(
    "([\u3040-\u30ff\u31f0-\u31ff\u3400-\u4dbf\u4e00-\u9fff\uf900-\ufaff\uff66-\uff9f"
    "\U00020000-\U0003134f])")


def _references(references: str | Sequence[str]) -> tuple[str, ...]:
    """The references as a non-empty tuple of strings."""
    refs = (references,) if isinstance(references, str) else tuple(references)
    if not refs:
        raise ValueError("at least one reference is needed.")
    for ref in refs:
        if not isinstance(ref, str):
            raise TypeError(f"references must be strings, got {type(ref).__name__}.")
    return refs


def _squad_tokens(text: str) -> list[str]:
    """SQuAD's answer normalisation (lowercase, punctuation, articles, whitespace), split."""
    text = "".join(ch for ch in text.lower() if ch not in _PUNCTUATION)
    return _ARTICLES.sub(" ", text).split()


def exact_match(prediction: str, references: str | Sequence[str]) -> float:
    """1.0 when the prediction equals a reference after SQuAD normalisation, else 0.0.

    Normalisation (SQuAD's official script): lowercase, remove ASCII punctuation, remove the
    articles a/an/the, collapse whitespace. With several references, the best one counts.
    """
    pred = _squad_tokens(prediction)
    return 1.0 if any(pred == _squad_tokens(ref) for ref in _references(references)) else 0.0


def _f1_tokens(pred: list[str], ref: list[str]) -> float:
    if not pred or not ref:
        return 1.0 if pred == ref else 0.0
    common = sum((Counter(pred) & Counter(ref)).values())
    if common == 0:
        return 0.0
    precision = common / len(pred)
    recall = common / len(ref)
    return 2 * precision * recall / (precision + recall)


def token_f1(prediction: str, references: str | Sequence[str]) -> float:
    """SQuAD token F1: harmonic mean of token precision and recall (bag of tokens).

    Tokens come from SQuAD normalisation (see ``exact_match``). When either side has no tokens
    left, the score is 1.0 if both are empty and 0.0 otherwise (SQuAD 2.0's rule), so an exact
    match always has F1 1.0. With several references, the best one counts.
    """
    pred = _squad_tokens(prediction)
    return max(_f1_tokens(pred, _squad_tokens(ref)) for ref in _references(references))


def bleu(prediction: str, references: str | Sequence[str]) -> float:
    """Sentence-level BLEU from sacrebleu, scaled to [0, 1].

    ``sacrebleu.sentence_bleu`` with its defaults for single sentences: 13a tokenisation, case
    sensitive, n-grams up to 4, effective order (the geometric mean covers only the orders the
    prediction is long enough to have), and ``exp`` smoothing (Chen & Cherry's method 3, as in
    NIST's mteval: the k-th order with no matching n-gram gets precision 1 / (2^k * its n-gram
    count)). No matching unigram gives 0.0. Several references are used together, as BLEU
    defines (counts clipped by the most in any one reference, closest reference length).
    Needs the ``lexical`` extra (sacrebleu); raises ``MissingExtraError`` without it.
    """
    refs = _references(references)
    try:
        import sacrebleu
    except ImportError as exc:
        raise MissingExtraError("BLEU", "lexical", "sacrebleu") from exc
    score = sacrebleu.sentence_bleu(prediction, list(refs)).score
    return min(1.0, max(0.0, float(score) / 100.0))


def chrf(prediction: str, references: str | Sequence[str]) -> float:
    """Sentence-level chrF from sacrebleu, scaled to [0, 1].

    ``sacrebleu.sentence_chrf`` with its defaults: character n-grams up to 6, no word n-grams
    (chrF, not chrF++), beta 2 (recall weighted twice as much as precision), whitespace ignored.
    With several references, sacrebleu keeps the best-scoring one. Needs the ``lexical`` extra
    (sacrebleu); raises ``MissingExtraError`` without it.
    """
    refs = _references(references)
    try:
        import sacrebleu
    except ImportError as exc:
        raise MissingExtraError("chrF", "lexical", "sacrebleu") from exc
    score = sacrebleu.sentence_chrf(prediction, list(refs)).score
    return min(1.0, max(0.0, float(score) / 100.0))


def _rouge_tokens(text: str) -> list[str]:
    """Lowercase, turn runs of non-alphanumerics (Unicode-aware) into spaces, split; each
    Chinese or Japanese character is a token (``_CJK_CHAR``), so a sentence written without
    spaces is not one all-or-nothing token."""
    return _CJK_CHAR.sub(r" \1 ", _NON_ALNUM.sub(" ", text.lower())).split()


def _ngrams(tokens: list[str], n: int) -> Counter[tuple[str, ...]]:
    return Counter(tuple(tokens[i : i + n]) for i in range(len(tokens) - n + 1))


def _f_measure(overlap: int, pred_count: int, ref_count: int) -> float:
    if overlap == 0:
        return 0.0
    precision = overlap / pred_count
    recall = overlap / ref_count
    return 2 * precision * recall / (precision + recall)


def rouge_n(prediction: str, references: str | Sequence[str], n: int) -> float:
    """ROUGE-N F-measure: overlap of n-grams (clipped counts) between prediction and reference.

    precision = overlap / prediction n-grams, recall = overlap / reference n-grams, F is their
    harmonic mean; 0.0 when either side has no n-gram (as rouge-score). Tokenisation follows
    rouge-score's default: lowercase, every run of characters other than letters and digits
    separates tokens, no stemming (rouge-score's ``use_stemmer=False``). One deliberate
    difference: letters and digits outside ASCII are kept, where rouge-score deletes them ("café"
    becomes "caf" there, and non-Latin text has no tokens at all); on ASCII text the two agree.
    With several references, the best F counts (rouge-score's ``score_multi``).
    """
    if not isinstance(n, int) or isinstance(n, bool) or n < 1:
        raise ValueError(f"n must be an integer >= 1, got {n!r}.")
    pred = _ngrams(_rouge_tokens(prediction), n)
    best = 0.0
    for ref_text in _references(references):
        ref = _ngrams(_rouge_tokens(ref_text), n)
        overlap = sum((pred & ref).values())
        best = max(best, _f_measure(overlap, sum(pred.values()), sum(ref.values())))
    return best


def _lcs_length(a: list[str], b: list[str]) -> int:
    """Length of the longest common subsequence, in O(len(a) * len(b)) time, O(len(b)) memory."""
    prev = [0] * (len(b) + 1)
    for x in a:
        cur = [0]
        for j, y in enumerate(b, start=1):
            cur.append(prev[j - 1] + 1 if x == y else max(prev[j], cur[j - 1]))
        prev = cur
    return prev[-1]


def rouge_l(prediction: str, references: str | Sequence[str]) -> float:
    """ROUGE-L F-measure: longest common subsequence of tokens (rouge-score's ``rougeL``).

    precision = LCS / prediction tokens, recall = LCS / reference tokens, F is their harmonic
    mean; 0.0 when either side has no tokens. The whole text is one sequence (not the
    sentence-level ``rougeLsum``). Tokenisation as ``rouge_n``. With several references, the
    best F counts.
    """
    pred = _rouge_tokens(prediction)
    best = 0.0
    for ref_text in _references(references):
        ref = _rouge_tokens(ref_text)
        best = max(best, _f_measure(_lcs_length(pred, ref), len(pred), len(ref)))
    return best
