"""The registry of question kinds, in plan order, and the default mix.

- ``single_hop``: one chunk; a fact stated in it.
- ``multi_context``: two chunks that share named-entity-like tokens (``_pairs.py``).
- ``reasoning``: one chunk; the answer follows from it by one inference step.
- ``comparative``: two chunks chosen like multi-context pairs; the question compares two things.
- ``out_of_scope``: one chunk as the topic; the documents do not answer it (``_out_of_scope.py``).
- ``follow_up``: a two-turn conversation (``_follow_up.py``).

A new kind is a module with its :class:`QuestionKind` (and a prompt ``testset_<name>``) and one
line in ``KINDS``. The order of ``KINDS`` is the order of the plan and of the accepted rows:
append, so that the kinds before keep their place.
"""

from __future__ import annotations

from collections.abc import Mapping

from ._follow_up import FOLLOW_UP
from ._kind import QuestionKind
from ._out_of_scope import OUT_OF_SCOPE

__all__ = ["DEFAULT_TYPES", "KIND", "KINDS", "PAIR_TYPES", "QUESTION_TYPES"]

KINDS: tuple[QuestionKind, ...] = (
    QuestionKind("single_hop"),
    QuestionKind("multi_context", pairs=True),
    QuestionKind("reasoning"),
    QuestionKind("comparative", pairs=True),
    OUT_OF_SCOPE,
    FOLLOW_UP,
    # scenarios for ragsight simulate (_scenarios.py): drawn from one chunk each, written and
    # checked by their own steps; never in the default mix, never mixed with questions
    QuestionKind("scenario"),
    QuestionKind("scenario_out_of_scope"),
)
KIND: Mapping[str, QuestionKind] = {k.name: k for k in KINDS}

QUESTION_TYPES = tuple(k.name for k in KINDS)
PAIR_TYPES = tuple(k.name for k in KINDS if k.pairs)

# follow_up is not in the default mix: ask for it with --types (e.g. single_hop=0.7,follow_up=0.3)
DEFAULT_TYPES: Mapping[str, float] = {
    "single_hop": 0.4,
    "multi_context": 0.2,
    "reasoning": 0.15,
    "comparative": 0.1,
    "out_of_scope": 0.15,
}
