"""P(choice) from a first token's top log-probabilities: the one rule for every provider that
reads yes/no verdicts from an OpenAI-shaped ``top_logprobs`` list.

The honest reading of a top list:

- only finite log-probabilities at most 0 are evidence; ``NaN``, ``Infinity`` and
  ``-Infinity`` (some servers' way of writing "probability 0"), and positive values are
  dropped before anything is computed, so no non-finite number ever becomes a probability;
- a choice in the list has the probability the list gives it (spellings that differ only in
  surrounding space and case, "Yes" and " yes", are summed);
- a choice missing from the list is *unknown*, somewhere between 0 and the smaller of the
  mass the list leaves unseen (1 minus the sum of its probabilities) and the lowest listed
  probability (the list is ranked). It is read as the middle of that range only when the
  range moves no choice's probability by more than :data:`MAX_SPREAD`; otherwise the answer
  is refused (a ProviderError that is not retried: the same question gets the same list).

So a server that returns one top token, "Yes" at log-probability -1.1 (p = 0.33), does not
make P(Yes) 2/3: P(No) may be anything up to 0.33, the verdict is unknown and the step fails,
counted. "Yes" at -0.01 alone leaves at most 0.01 for "No": P(Yes) = 0.995.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence

__all__ = ["MAX_SPREAD", "UnreadableChoicesError", "choice_probabilities", "usable_logprob"]

# The most the unknown mass of a missing choice may move any choice's probability.
MAX_SPREAD = 0.1


class UnreadableChoicesError(ValueError):
    """The top log-probabilities do not determine the choices' probabilities."""


def usable_logprob(value: object) -> float | None:
    """``value`` as a log-probability when it is one: a finite real number at most 0 (a
    rounding excess up to 1e-6 is read as 0); None otherwise."""
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        return None
    number = float(value)
    if not math.isfinite(number) or number > 1e-6:
        return None
    return min(number, 0.0)


def choice_probabilities(
    tops: Mapping[str, float], choices: Sequence[str]
) -> tuple[dict[str, float], dict[str, float]]:
    """(probabilities normalised over ``choices``, the log-probability read for each choice).

    Raises UnreadableChoicesError when no choice is in the usable list, or when a missing
    choice's unknown probability leaves the answer open (see the module docstring)."""
    usable = {t: v for t, raw in tops.items() if (v := usable_logprob(raw)) is not None}
    seen: dict[str, float] = {}
    for c in choices:
        want = c.strip().lower()
        mass = sum(math.exp(v) for t, v in usable.items() if t.strip().lower() == want)
        if mass > 0.0:
            seen[c] = min(mass, 1.0)
    if not seen:
        raise UnreadableChoicesError(
            "returned no usable log-probabilities" if not usable
            else f"ranked none of {list(choices)} among its top tokens")
    missing = [c for c in choices if c not in seen]
    hi = 0.0
    if missing:
        listed = [math.exp(v) for v in usable.values()]
        unseen = max(0.0, 1.0 - sum(listed))
        hi = min(unseen, min(listed))  # the list is ranked: a missing token is below its lowest
        known = sum(seen.values())
        # each missing choice anywhere in [0, hi]: the share they may take between them is how
        # far any choice's probability can move
        spread = hi * len(missing) / (known + hi * len(missing))
        if spread > MAX_SPREAD:
            shown = ", ".join(f"{c}={p:.3g}" for c, p in seen.items())
            raise UnreadableChoicesError(
                f"left {', '.join(missing)} unknown: its top tokens give {shown} and leave up to "
                f"{hi:.3g} for the rest, so the verdict could be anywhere in a range of "
                f"{spread:.2f}")
    raw = dict(seen)
    for c in missing:
        raw[c] = hi / 2.0
    total = sum(raw.values())
    probs = {c: raw[c] / total for c in choices}
    logs = {c: math.log(p) if p > 0.0 else -745.0 for c, p in raw.items()}
    return probs, logs
