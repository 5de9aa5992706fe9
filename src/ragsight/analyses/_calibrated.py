"""The shipped combination: the judge's P(Yes) and deterministic signals -> P(supported).

Small models shipped as constants, so they are deterministic, need nothing but the standard
library, and can be read and audited. Two forms:

- ``mean`` (the embedded judge's claim verdicts): the mean of the listed inputs,
  each already a probability-like value in [0, 1] -- the judge's P(Yes) and the share of the
  claim's content words found in the text (``overlap``). Nothing is fitted. It was chosen over
  fitted logistic combinations by leave-one-dataset-out agreement with people (WiCE, ExpertQA,
  EVOUNA-TQ, RAGChecker pairs; ``bench/lodo.py``, docs/validity.md): fitted on some sets, the
  logistic ones fell below plain word overlap on another, the mean never did.
- ``logistic``: each feature standardised with the fitted mean and scale, then
  ``P = sigmoid(intercept + sum(coef * z))`` (``bench/validity.py fit``). Used for short answers
  against aliases and for the signals-only models.

Kinds per judge model:

- ``"judge"``: uses the judge's P(Yes) together with the signals;
- ``"signals"``: the signals alone; used when no probability is available
  (``judge_p is None``), e.g. remote judges that return a boolean verdict. See docs/validity.md
  for why the remote judge's own verdict is kept as it is and this value is recorded as evidence.

A feature missing from ``signals`` is imputed with its training mean (logistic: it then
contributes nothing) or left out of the mean. Both forms never decrease when the judge's
probability increases. Logistic coefficients are fitted with classes weighted equally
(balanced) where 0.5 is meant as the threshold; they belong to one judge model (probabilities of
different models are not on the same scale). For a judge model without a shipped entry,
:func:`combine` returns the judge's own probability unchanged.
"""

from __future__ import annotations

import functools
import math
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from ..judge import DEFAULT_MODEL
from ..prompts import fence
from ._signals import compute_signals, unfence

__all__ = [
    "ADDRESS_SCALE",
    "COEFFICIENTS",
    "DEFAULT_MODEL",
    "PRIOR_SOURCE",
    "WORD_SIGNALS",
    "CombinationModel",
    "assess_claim",
    "combine",
    "combine_answer",
    "conflict_capped",
    "feature_values",
    "get_model",
    "logit",
    "needs_prior",
    "number_capped",
    "scale_addresses",
]

# The source of the prior call: the claim asked against an empty context (same prompt).
PRIOR_SOURCE = fence("context", "", n=1)
_CLIP = 1e-4  # probabilities are clipped to [_CLIP, 1 - _CLIP] before taking log-odds


def logit(p: float) -> float:
    p = min(max(float(p), _CLIP), 1.0 - _CLIP)
    return math.log(p / (1.0 - p))


def _sigmoid(z: float) -> float:
    if z >= 0:
        return 1.0 / (1.0 + math.exp(-z))
    e = math.exp(z)
    return e / (1.0 + e)


def feature_values(judge_p: float | None, signals: Mapping[str, float]) -> dict[str, float]:
    """The model's raw inputs: the signals, plus ``judge_p`` (clipped to [0, 1]) and
    ``judge_logit`` (the log-odds of ``judge_p``)
    and, for every signal ``judge_<x>`` holding another judge probability (e.g. ``judge_prior``,
    P(Yes) for the claim against an empty context), its log-odds ``<x>_logit``."""
    out = {k: float(v) for k, v in signals.items()}
    if judge_p is not None:
        out["judge_p"] = min(max(float(judge_p), 0.0), 1.0)
        out["judge_logit"] = logit(judge_p)
    for k, v in signals.items():
        if k.startswith("judge_") and v is not None and math.isfinite(v):
            out[k[len("judge_"):] + "_logit"] = logit(v)
    return out


@dataclass(frozen=True)
class CombinationModel:
    """One shipped model (see the module docstring): ``form`` "logistic" (fitted) or "mean" (the
    mean of the listed inputs; ``mean``, ``scale``, ``coef`` and ``intercept`` unused)."""

    features: tuple[str, ...]
    mean: tuple[float, ...]
    scale: tuple[float, ...]
    coef: tuple[float, ...]
    intercept: float
    threshold: float = 0.5
    fitted_on: str = ""
    form: str = "logistic"

    @classmethod
    def from_dict(cls, d: Mapping[str, Any]) -> CombinationModel:
        feats = tuple(d["features"])
        if d.get("form", "logistic") == "mean":
            if not feats:
                raise ValueError("combination model: a mean needs at least one input")
            n = len(feats)
            return cls(features=feats, mean=(0.0,) * n, scale=(1.0,) * n, coef=(1.0 / n,) * n, intercept=0.0,
                       threshold=float(d.get("threshold", 0.5)), fitted_on=str(d.get("fitted_on", "")),
                       form="mean")
        if d.get("form", "logistic") != "logistic":
            raise ValueError(f"combination model: unknown form {d.get('form')!r}")
        m = cls(
            features=feats,
            mean=tuple(float(x) for x in d["mean"]),
            scale=tuple(float(x) for x in d["scale"]),
            coef=tuple(float(x) for x in d["coef"]),
            intercept=float(d["intercept"]),
            threshold=float(d.get("threshold", 0.5)),
            fitted_on=str(d.get("fitted_on", "")),
        )
        if not (len(m.mean) == len(m.scale) == len(m.coef) == len(feats)):
            raise ValueError("combination model: features, mean, scale and coef differ in length")
        if any(s <= 0 for s in m.scale):
            raise ValueError("combination model: every scale must be > 0")
        return m

    def linear(self, values: Mapping[str, float]) -> float:
        z = self.intercept
        for name, mu, sd, c in zip(self.features, self.mean, self.scale, self.coef):
            x = values.get(name)
            if x is None or not math.isfinite(x):
                continue  # imputed with the mean: contributes 0
            z += c * (float(x) - mu) / sd
        return z

    def predict(self, values: Mapping[str, float]) -> float:
        if self.form == "mean":
            got = [min(max(float(values[f]), 0.0), 1.0) for f in self.features
                   if values.get(f) is not None and math.isfinite(values[f])]
            return sum(got) / len(got) if got else 0.5
        return _sigmoid(self.linear(values))


# BEGIN COEFFICIENTS (written by `bench/validity.py fit`; do not edit by hand)
COEFFICIENTS: dict[str, dict[str, dict[str, Any]]] = {
    "qwen2.5-coder-1.5b": {
        "judge": {
            "form": "mean",
            "features": ["judge_p", "overlap"],
            "threshold": 0.5,
            "fitted_on": "nothing fitted: chosen by leave-one-dataset-out over WiCE, ExpertQA, EVOUNA-TQ and RAGChecker pairs (bench/lodo.py)",
        },
        "answer": {
            "features": ["judge_logit", "alias_contained", "alias_recall"],
            "mean": [1.252559, 0.745342, 0.80188],
            "scale": [1.163173, 0.435669, 0.370191],
            "coef": [0.929576, 0.758899, 0.922416],
            "intercept": 2.912966,
            "threshold": 0.5,
            "fitted_on": "EVOUNA-TQ dev split, 322 answers (265 correct)",
        },
    },
    "*": {
        "signals": {
            "features": ["overlap", "numbers", "entities"],
            "mean": [0.576761, 0.759819, 0.774716],
            "scale": [0.224376, 0.379837, 0.310773],
            "coef": [0.816204, 0.520605, 0.57421],
            "intercept": -0.436917,
            "threshold": 0.5,
            "fitted_on": "WiCE dev split, 230 claims (72 supported)",
        },
        "answer_signals": {
            "features": ["alias_contained", "alias_recall"],
            "mean": [0.75076, 0.806095],
            "scale": [0.432573, 0.367346],
            "coef": [0.910394, 1.130924],
            "intercept": 2.770705,
            "threshold": 0.5,
            "fitted_on": "EVOUNA-TQ dev split, 329 answers (272 correct)",
        },
    },
}
# END COEFFICIENTS


# The scale of answer relevancy's judged P(Yes) ("does the answer tell what the question asks
# for?"), per judge model: Platt scaling, P' = sigmoid(coef * logit(P) + intercept), coef > 0 so
# it ranks answers as P does. The embedded judge's P runs low (correct answers 0.35-0.59, the
# others 0.18-0.38): at 0.5 its verdict called half the correct answers "does not respond".
# Fitted on the development half of bench/relevancy_set.jsonl by the rule of docs/validity.md
# (#answer-relevancy-scale), checked on the other half (`bench/relevancy_check.py --fit`).
ADDRESS_SCALE: dict[str, dict[str, Any]] = {
    "qwen2.5-coder-1.5b": {
        "features": ["judge_logit"],
        "mean": [0.0],
        "scale": [1.0],
        "coef": [3.67553],
        "intercept": 1.742067,
        "threshold": 0.5,
        "fitted_on": "bench/relevancy_set.jsonl development pairs, 18 answers (9 respond), Platt's targets",
    },
}


@functools.cache
def _address_scale(model: str) -> CombinationModel | None:
    d = ADDRESS_SCALE.get(model)
    return CombinationModel.from_dict(d) if d is not None else None


def scale_addresses(judge_p: float, *, model: str = DEFAULT_MODEL) -> float:
    """Answer relevancy's value from the judge's P(Yes) that the answer responds: its shipped
    scale for the judge model (:data:`ADDRESS_SCALE`), or ``judge_p`` unchanged (clipped to
    [0, 1]) for a model without one."""
    fitted = _address_scale(model)
    if fitted is None:
        return min(max(float(judge_p), 0.0), 1.0)
    return fitted.predict(feature_values(judge_p, {}))


@functools.cache
def get_model(kind: str, model: str = DEFAULT_MODEL) -> CombinationModel | None:
    """The fitted model of ``kind`` for a judge model, or None. Kinds: "judge" and "signals"
    (claims against a source), "answer" and "answer_signals" (short answers against aliases);
    the signals-only kinds do not depend on the judge model (table ``"*"``). Parsed once per
    (kind, model): it is asked for every verdict."""
    table = COEFFICIENTS.get(model, {})
    d = table.get(kind) or (COEFFICIENTS["*"].get(kind) if kind.endswith("signals") else None)
    return CombinationModel.from_dict(d) if d is not None else None


def _combine(kind: str, judge_p: float | None, signals: Mapping[str, float], model: str) -> float:
    """The fitted ``kind`` model on the judge's probability and the signals; with ``judge_p``
    None, the ``<kind>_signals`` model (``"signals"`` for claims); for a judge model without
    fitted coefficients, ``judge_p`` unchanged (clipped to [0, 1])."""
    if judge_p is not None:
        fitted = get_model(kind, model)
        if fitted is None:
            return min(max(float(judge_p), 0.0), 1.0)
    else:
        fitted = get_model("signals" if kind == "judge" else f"{kind}_signals", model)
        assert fitted is not None
    return fitted.predict(feature_values(judge_p, signals))


def number_capped(judge_p: float | None, signals: Mapping[str, float]) -> bool:
    """Whether the number guard applies: the judge gave a probability and a number the claim
    writes in digits is not in the source (``digits`` below 1)."""
    return judge_p is not None and signals.get("n_digits", 0.0) > 0 and signals.get("digits", 1.0) < 1.0


def conflict_capped(judge_p: float | None, signals: Mapping[str, float]) -> bool:
    """Whether the conflict guard applies: the judge gave a probability and the source sentence
    closest to the claim says otherwise (``says_otherwise``: another number, a negation, an
    opposite word; :mod:`._conflict`)."""
    return judge_p is not None and signals.get("says_otherwise", 0.0) > 0


def combine(
    judge_p: float | None, signals: Mapping[str, float], *, model: str = DEFAULT_MODEL,
    number_guard: bool = True, conflict_guard: bool = True,
) -> float:
    """P(supported) in [0, 1] from the judge's P(Yes) (or None) and the signals.

    With ``judge_p`` None the signals-only model is used. For a judge model that has no fitted
    coefficients, ``judge_p`` is returned unchanged.

    The number guard (``bench/number_guard.py``): when a number the claim writes in
    digits is not in the source, the result is at most the judge's own P(Yes). A new-user trial's
    invented "RSA keys of 4096 bits" had P(Yes) 0.14 and was lifted to 0.51 by its words alone.

    The conflict guard (``bench/conflict_check.py``): when the source sentence closest to the
    claim holds its words with another number, a negation or an opposite word, the result is at
    most the judge's own P(Yes): overlap never lifts a claim its source says otherwise about ("a
    plain BEGIN starts an IMMEDIATE transaction", judge 0.44, was accepted at 0.68 by its words
    against "the default transaction behavior is DEFERRED").
    """
    p = _combine("judge", judge_p, signals, model)
    if judge_p is not None and ((number_guard and number_capped(judge_p, signals))
                                or (conflict_guard and conflict_capped(judge_p, signals))):
        p = min(p, min(max(float(judge_p), 0.0), 1.0))
    return p


def combine_answer(
    judge_p: float | None, signals: Mapping[str, float], *, model: str = DEFAULT_MODEL
) -> float:
    """P(the answer is correct) in [0, 1] for a short answer graded against reference aliases,
    from the judge's P(Yes) for prompt ``verify_claim_answer`` (or None) and
    :func:`ragsight.analyses._signals.alias_signals`. With ``judge_p`` None the alias signals
    alone decide; for a judge model without fitted coefficients ``judge_p`` is returned
    unchanged."""
    return _combine("answer", judge_p, signals, model)


def needs_prior(model: str = DEFAULT_MODEL) -> bool:
    """Whether the fitted claim model of this judge model uses the empty-context prior (so the
    caller should make the extra call)."""
    fitted = get_model("judge", model)
    return fitted is not None and "prior_logit" in fitted.features


WORD_SIGNALS = ("overlap", "overlap_best", "bigram_overlap", "missing")
"""The signals read from the claim's words found in the source: meaningless when the claim and the
source are in different languages, and left out then (:func:`assess_claim`)."""


def assess_claim(
    claim: str, source: str, judge_p: float | None, prior_p: float | None = None,
    *, model: str = DEFAULT_MODEL, question: str = "", across_languages: bool = False,
) -> tuple[float | None, dict[str, float]]:
    """One claim verdict's probability and evidence.

    ``source`` is the text the claim was checked against, as rendered for the judge (fenced
    blocks are unwrapped); ``judge_p`` the judge's P(Yes), or None for a judge without
    probabilities; ``prior_p`` its P(Yes) against :data:`PRIOR_SOURCE`, when made.

    Returns (P(supported) from :func:`combine`, or None when ``judge_p`` is None; the signals
    to record in ``ClaimVerdict.signals``). The evidence holds every deterministic signal, the
    judge's probabilities (``judge_yes``, ``judge_prior``) and the combined value
    (``p_combined``; ``p_signals``, the signals-only model, when there is no probability).

    ``question``: the user's question; for the number guard, a number the claim takes from it is
    not invented (a trial: "split -n l/3" for "split a file into 3 files" was capped).

    ``across_languages``: the claim and the source are in different languages (a German answer
    over English documents): the word signals (:data:`WORD_SIGNALS`) are left out, so the
    combination reads the judge with the numbers and names (the mean: the judge's P alone), and
    ``across_languages`` is recorded as 1.0.
    """
    signals = compute_signals(claim, unfence(source), question)
    if across_languages:
        signals = {k: v for k, v in signals.items() if k not in WORD_SIGNALS}
        signals["across_languages"] = 1.0
    if prior_p is not None:
        signals["judge_prior"] = float(prior_p)
    if judge_p is None:
        signals["p_signals"] = combine(None, signals, model=model)
        return None, signals
    p = combine(judge_p, signals, model=model)
    unguarded = combine(judge_p, signals, model=model, number_guard=False, conflict_guard=False)
    if number_capped(judge_p, signals) and p < unguarded:
        signals["capped_by_number"] = 1.0
    if conflict_capped(judge_p, signals) and p < unguarded:
        signals["capped_by_conflict"] = 1.0
    signals["judge_yes"] = float(judge_p)
    signals["p_combined"] = p
    return p, signals
