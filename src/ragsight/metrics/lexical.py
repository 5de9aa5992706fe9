"""Lexical metrics (no judge): exact_match, token_f1, bleu, rouge_1, rouge_2, rouge_l, chrf.

Each compares the response with the reference through the pure functions of ``_lexical``. With
several acceptable references (aliases), each is scored alone and the best counts; the evidence
records every alias's value and which one was best. They count shared surface forms, so they
underrate a correct answer that is phrased differently (see docs/metrics.md). BLEU and chrF
need the ``lexical`` extra (sacrebleu); without it they end ``failed`` saying what to install.
"""

from __future__ import annotations

from typing import ClassVar

from .._score import Evidence, Score
from ..analyses import SampleAnalyses
from ..errors import MissingExtraError
from . import _lexical, register
from ._base import Metric

__all__ = ["BLEU", "ROUGE1", "ROUGE2", "ROUGEL", "ChrF", "ExactMatch", "TokenF1"]


class _Lexical(Metric):
    requires = ("response", "reference")
    groups = frozenset({"lexical", "generation"})
    label: ClassVar[str]

    def function(self, prediction: str, reference: str) -> float:
        raise NotImplementedError

    async def compute(self, ctx: SampleAnalyses) -> Score:
        s = ctx.sample
        response = s.response or ""
        refs = s.references
        try:
            values = [self.function(response, ref) for ref in refs]
        except MissingExtraError as exc:
            return Score.failed(self.key, str(exc))
        best = max(range(len(values)), key=lambda i: values[i])
        ev = Evidence(details={"per_reference": [round(v, 6) for v in values], "best_reference": best})
        which = f" (best of {len(refs)} references: #{best + 1})" if len(refs) > 1 else ""
        return Score.scored(self.key, values[best], f"{self.label} {values[best]:.3f}{which}", ev)


class ExactMatch(_Lexical):
    """1 when the response equals the reference after SQuAD normalisation, else 0."""

    name = "exact_match"
    label = "exact match"

    def function(self, prediction: str, reference: str) -> float:
        return _lexical.exact_match(prediction, reference)


class TokenF1(_Lexical):
    """SQuAD token F1 (bag of normalised tokens)."""

    name = "token_f1"
    label = "token F1"

    def function(self, prediction: str, reference: str) -> float:
        return _lexical.token_f1(prediction, reference)


class BLEU(_Lexical):
    """Sentence BLEU (sacrebleu defaults), in [0, 1]."""

    name = "bleu"
    label = "BLEU"
    packages = (("sacrebleu", "lexical"),)

    def function(self, prediction: str, reference: str) -> float:
        return _lexical.bleu(prediction, reference)


class ROUGE1(_Lexical):
    """ROUGE-1 F-measure."""

    name = "rouge_1"
    label = "ROUGE-1"

    def function(self, prediction: str, reference: str) -> float:
        return _lexical.rouge_n(prediction, reference, 1)


class ROUGE2(_Lexical):
    """ROUGE-2 F-measure."""

    name = "rouge_2"
    label = "ROUGE-2"

    def function(self, prediction: str, reference: str) -> float:
        return _lexical.rouge_n(prediction, reference, 2)


class ROUGEL(_Lexical):
    """ROUGE-L F-measure (longest common subsequence)."""

    name = "rouge_l"
    label = "ROUGE-L"

    def function(self, prediction: str, reference: str) -> float:
        return _lexical.rouge_l(prediction, reference)


class ChrF(_Lexical):
    """Sentence chrF (sacrebleu defaults: character 6-grams, beta 2), in [0, 1]."""

    name = "chrf"
    label = "chrF"
    packages = (("sacrebleu", "lexical"),)

    def function(self, prediction: str, reference: str) -> float:
        return _lexical.chrf(prediction, reference)


for _cls in (ExactMatch, TokenF1, BLEU, ROUGE1, ROUGE2, ROUGEL, ChrF):
    register(_cls)
