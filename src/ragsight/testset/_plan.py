"""Planning a test set: its settings, the question styles, and the candidates to try.

Planning is deterministic for a seed: the number of questions of each type is apportioned from
the type mix (largest remainders); each type draws its chunks and styles from its own
``random.Random(f"{seed}/{type}")``, so adding a type or changing the size of another does not
change a type's draws.
"""

from __future__ import annotations

import math
import random
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field

from ..errors import ConfigError
from ._filter import FilterSettings
from ._ingest import Corpus
from ._kind import CandidateSpec
from ._kinds import DEFAULT_TYPES, KIND, PAIR_TYPES, QUESTION_TYPES
from ._pairs import entity_pairs
from ._scenarios import check_mix

__all__ = [
    "DEFAULT_STYLES",
    "STYLES",
    "STYLES_VERSION",
    "TestsetSettings",
    "parse_mix",
    "plan",
    "quotas",
]

DEFAULT_STYLES: Mapping[str, float] = {
    "well_formed": 0.4,
    "keywords": 0.2,
    "informal_typos": 0.2,
    "long_detailed": 0.2,
}

STYLES_VERSION = "1"
STYLES: Mapping[str, str] = {
    "well_formed": "a clear, grammatical, complete question, as a careful writer would ask it.",
    "keywords": (
        "a short search-engine query of two to six keywords, without a question mark "
        "and without full grammar (for example: parental leave weeks secondary carer)."
    ),
    "informal_typos": (
        "casual and informal, all in lower case, with one or two realistic spelling "
        "mistakes, as typed quickly in a chat (for example: how many days can i "
        "carry ovr to next yr)."
    ),
    "long_detailed": (
        "a long, detailed question of two or three sentences that first describes "
        "the asker's situation and then asks."
    ),
}


def parse_mix(
    text: str | Mapping[str, float] | None,
    known: Sequence[str],
    what: str,
    default: Mapping[str, float],
) -> dict[str, float]:
    """``"a=0.4,b=0.6"`` (or a mapping) to weights that sum to 1. Unknown names raise."""
    if text is None:
        raw: Mapping[str, float] = default
    elif isinstance(text, str):
        parsed: dict[str, float] = {}
        for part in text.split(","):
            part = part.strip()
            if not part:
                continue
            name, sep, value = part.partition("=")
            try:
                parsed[name.strip()] = float(value) if sep else 1.0
            except ValueError:
                raise ConfigError(
                    f"--{what} '{part}': the weight must be a number, e.g. {name}=0.3"
                ) from None
        raw = parsed
    else:
        raw = text
    for name, w in raw.items():
        if name not in known:
            raise ConfigError(f"unknown {what[:-1]} '{name}'; known: {', '.join(known)}")
        if not math.isfinite(w) or w < 0:
            raise ConfigError(f"--{what}: the weight of '{name}' must be a number >= 0")
    total = sum(raw.values())
    if total <= 0:
        raise ConfigError(f"--{what}: at least one weight must be above 0")
    return {n: raw[n] / total for n in known if raw.get(n, 0) > 0}


def quotas(size: int, mix: Mapping[str, float]) -> dict[str, int]:
    """Apportion ``size`` by the weights (largest remainders; ties to the earlier name)."""
    exact = {n: size * w for n, w in mix.items()}
    out = {n: math.floor(v) for n, v in exact.items()}
    left = size - sum(out.values())
    order = sorted(mix, key=lambda n: (-(exact[n] - out[n]), list(mix).index(n)))
    for n in order[:left]:
        out[n] += 1
    return out


@dataclass(frozen=True)
class TestsetSettings:
    """How a test set is generated. ``attempts``: candidates per wanted question, at most, for
    each type. ``min_chunk_words``: shorter chunks are not used on their own."""

    __test__ = False  # not a pytest class

    size: int = 10
    seed: int = 0
    types: Mapping[str, float] | str = field(default_factory=lambda: dict(DEFAULT_TYPES))
    styles: Mapping[str, float] | str = field(default_factory=lambda: dict(DEFAULT_STYLES))
    filter: FilterSettings = field(default_factory=FilterSettings)
    attempts: float = 3.0
    min_chunk_words: int = 40
    critic_sample: int = 6

    def __post_init__(self) -> None:
        if self.size < 1:
            raise ConfigError("--size must be at least 1")
        if self.attempts < 1:
            raise ConfigError("--attempts must be at least 1")
        check_mix(parse_mix(self.types, QUESTION_TYPES, "types", DEFAULT_TYPES))  # fail early on a typo
        parse_mix(self.styles, tuple(STYLES), "styles", DEFAULT_STYLES)


def plan(
    corpus: Corpus, settings: TestsetSettings
) -> tuple[dict[str, list[CandidateSpec]], dict[str, int], list[str]]:
    """Candidate specs per type (as many as may be tried), the quotas, and notes for the user."""
    types = parse_mix(settings.types, QUESTION_TYPES, "types", DEFAULT_TYPES)
    styles = parse_mix(settings.styles, tuple(STYLES), "styles", DEFAULT_STYLES)
    quota = quotas(settings.size, types)
    notes: list[str] = []
    singles = [c for c in corpus.chunks if len(c.text.split()) >= settings.min_chunk_words] or list(
        corpus.chunks
    )
    pairs = entity_pairs(corpus) if any(quota.get(t) for t in PAIR_TYPES) else []
    for t in PAIR_TYPES:
        if quota.get(t) and not pairs:
            notes.append(
                f"no two chunks share a named entity or number, so the {quota[t]} {t} "
                "question(s) are generated as single_hop"
            )
            quota["single_hop"] = quota.get("single_hop", 0) + quota[t]
            quota[t] = 0
    style_names = list(styles)
    style_weights = [styles[s] for s in style_names]
    specs: dict[str, list[CandidateSpec]] = {}
    for t in QUESTION_TYPES:
        q = quota.get(t, 0)
        if not q:
            continue
        n = max(q, math.ceil(q * settings.attempts))
        rng = random.Random(f"{settings.seed}/{t}")
        style_rng = random.Random(f"{settings.seed}/{t}/style")
        out: list[CandidateSpec] = []
        for i, (chunk_ids, shared) in enumerate(KIND[t].draw(n, rng, singles, pairs)):
            style = style_rng.choices(style_names, style_weights)[0]
            out.append(CandidateSpec(t, i, style, chunk_ids, shared))
        specs[t] = out
    return specs, quota, notes
