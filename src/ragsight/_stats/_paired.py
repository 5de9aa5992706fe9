"""Two runs on the same samples: the paired permutation test and the CI that inverts it, and
the fewest pairs that can show a difference."""

from __future__ import annotations

import math
from collections.abc import Hashable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import TypeVar

import numpy as np
import numpy.typing as npt

from ._common import (
    _BOOT_CHUNK,
    Floats,
    _check_confidence,
    _check_positive,
    _floats,
    _format_p,
    _same_length,
)

__all__ = ["EXACT_PERMUTATION_MAX", "MIN_PAIRED_SHARE", "LevelPairing", "PairedDifference", "Pairing",
           "count_units", "describe_counts", "paired_difference", "pairs_to_detect", "too_few_paired"]


_Key = TypeVar("_Key", bound=Hashable)

EXACT_PERMUTATION_MAX = 16
"""The permutation test enumerates all sign flips when at most this many pairs differ."""


@dataclass(frozen=True)
class PairedDifference:
    """Two runs compared on the same samples: ``diff`` is mean(b - a), so positive means B is
    higher than A.

    ``p_value`` is a two-sided paired permutation (sign-flip) test of "the differences are
    symmetric about 0"; ``exact`` says whether it enumerated every sign assignment (at most 16
    pairs) or drew Monte Carlo flips (p = (1 + hits) / (1 + n_perm)). ``ci_low``/``ci_high``
    invert that same test (the shifts it does not reject at 1 - ``confidence``), so the CI
    excludes 0 exactly when ``p_value < 1 - confidence``. Both ends are ``None`` when the
    interval is unbounded: too few pairs for the test to reject anything (at most 5 at 95%).
    The CI is unadjusted: it speaks for this one comparison, not for a family of them.
    """

    n: int
    mean_a: float | None
    mean_b: float | None
    diff: float | None
    ci_low: float | None
    ci_high: float | None
    confidence: float
    p_value: float | None
    exact: bool

    @property
    def ci_excludes_zero(self) -> bool:
        """Whether the CI lies wholly on one side of 0 (never when it is unbounded)."""
        if self.ci_low is None or self.ci_high is None:
            return False
        return self.ci_low > 0 or self.ci_high < 0

    def verdict(
        self,
        *,
        higher_is_better: bool = True,
        alpha: float = 0.05,
        names: tuple[str, str] = ("A", "B"),
    ) -> str:
        """Say which run is better, e.g. ``"B is better (p=0.003)"``.

        A difference counts when ``p_value < alpha``; otherwise the verdict is
        ``"no significant difference (p=...)"``. ``names`` labels run A and run B.
        """
        if self.p_value is None or self.diff is None:
            return "not enough paired samples to compare"
        p_text = _format_p(self.p_value)
        if self.p_value >= alpha or self.diff == 0:
            return f"no significant difference ({p_text})"
        b_wins = (self.diff > 0) == higher_is_better
        return f"{names[1] if b_wins else names[0]} is better ({p_text})"


def _flip_intervals(
    d: npt.NDArray[np.float64], rng: np.random.Generator, n_perm: int
) -> tuple[npt.NDArray[np.float64], npt.NDArray[np.float64], bool]:
    """The sign-flip reference set of ``d``, as one interval of shifts per sign assignment.

    A sign assignment flips the differences in a set F and keeps the rest K. Testing the shift
    ``d0`` (the differences ``d - d0`` are symmetric about 0), the assignment is at least as
    extreme as the observed one, ``|sum_K(d - d0) - sum_F(d - d0)| >= |sum(d - d0)|``, exactly
    when ``sum_F(d - d0) * sum_K(d - d0) <= 0``, i.e. when ``d0`` lies between mean(d over F) and
    mean(d over K) (the whole line when F or K is empty). Every such interval holds mean(d),
    so p(d0) = (number of intervals holding d0) / (number of assignments) falls away from
    mean(d) on both sides and the shifts not rejected form one interval.

    The assignments are all 2**n when n <= EXACT_PERMUTATION_MAX (exact), else the identity
    plus ``n_perm`` random ones (p = (1 + hits) / (1 + n_perm) at every shift). Returns the
    lower and upper ends of the intervals and whether the set is exact.
    """
    n = d.shape[0]
    total = float(np.sum(d))
    tol = 1e-9 * float(np.sum(np.abs(d)))  # a subset sum this close to 0 is 0 (rounding)
    exact = n <= EXACT_PERMUTATION_MAX
    if exact:
        codes = np.arange(2**n, dtype=np.int64)[:, None]
        flips = ((codes >> np.arange(n, dtype=np.int64)) & 1).astype(np.float64)
        sum_f, count_f = flips @ d, flips.sum(axis=1)
    else:
        sum_f = np.empty(n_perm + 1, dtype=np.float64)
        count_f = np.empty(n_perm + 1, dtype=np.float64)
        sum_f[0] = count_f[0] = 0.0  # the observed assignment itself
        batch = max(1, _BOOT_CHUNK // n)
        for start in range(0, n_perm, batch):
            k = min(batch, n_perm - start)
            flips = rng.integers(0, 2, size=(k, n)).astype(np.float64)
            sum_f[1 + start : 1 + start + k] = flips @ d
            count_f[1 + start : 1 + start + k] = flips.sum(axis=1)
    sum_k, count_k = total - sum_f, n - count_f
    sum_f[np.abs(sum_f) <= tol] = 0.0
    sum_k[np.abs(sum_k) <= tol] = 0.0
    whole = (count_f == 0) | (count_k == 0)
    with np.errstate(divide="ignore", invalid="ignore"):
        mean_f = np.where(whole, 0.0, sum_f / np.where(whole, 1.0, count_f))
        mean_k = np.where(whole, 0.0, sum_k / np.where(whole, 1.0, count_k))
    centre = float(np.mean(d))
    # min/max with the mean itself: every interval holds it in floating point too, which is
    # what makes "0 lies in the CI" and "p >= 1 - confidence" the same statement.
    low = np.where(whole, -np.inf, np.minimum(np.minimum(mean_f, mean_k), centre))
    high = np.where(whole, np.inf, np.maximum(np.maximum(mean_f, mean_k), centre))
    return low, high, exact


def _count_for(alpha: float, size: int) -> int:
    """The fewest hits k out of ``size`` with k / size >= alpha (the test does not reject)."""
    k = max(0, math.ceil(alpha * size) - 1)
    while k / size < alpha:
        k += 1
    return k


def _inverted_ci(
    low: npt.NDArray[np.float64], high: npt.NDArray[np.float64], alpha: float
) -> tuple[float | None, float | None]:
    """The shifts d0 with p(d0) >= alpha: [k-th smallest low end, k-th largest high end]."""
    k = max(1, _count_for(alpha, low.shape[0]))
    lo = float(np.partition(low, k - 1)[k - 1])
    hi = float(-np.partition(-high, k - 1)[k - 1])
    return (lo if math.isfinite(lo) else None), (hi if math.isfinite(hi) else None)


def pairs_to_detect(n: int, comparisons: int, alpha: float) -> int | None:
    """None when an exact two-sided sign-flip test on ``n`` pairs can reach ``alpha`` after
    Holm's adjustment over ``comparisons`` tests; else the fewest pairs at which it could. The
    smallest p of the exact test is 2 / 2**n, and Holm multiplies the smallest p by the number
    of comparisons, so below that many pairs "no significant difference" says nothing about the
    data, whatever the scores."""
    m = max(1, comparisons)
    if m * 2 / 2**n < alpha:
        return None
    need = n
    while m * 2 / 2**need >= alpha:
        need += 1
    return need


def paired_difference(
    a: Floats,
    b: Floats,
    seed: int = 0,
    n_perm: int = 10000,
    confidence: float = 0.95,
) -> PairedDifference:
    """Compare run B with run A on the same samples (``a[i]`` and ``b[i]`` score sample i).

    ``diff`` = mean(b - a). The p-value is a two-sided paired permutation test: under "no
    difference" the sign of each per-sample difference is a coin flip, and p is the share of
    sign assignments whose |sum| is at least the observed one. Every assignment is enumerated
    when there are at most 16 pairs (exact; the smallest attainable p is 2 / 2**n), otherwise
    ``n_perm`` random ones (generator seeded with ``seed``) with the +1 correction.

    The CI inverts that same test: it holds every shift d0 for which the test of "the
    differences are symmetric about d0" (the same sign assignments applied to ``d - d0``) gives
    p >= 1 - ``confidence`` (Ernst 2004, "Permutation methods: a basis for exact inference";
    the ends are means of subsets of the differences, as in Hartigan 1969). So the CI excludes
    0 exactly when p < 1 - confidence: the interval and the unadjusted test cannot disagree. A
    percentile bootstrap could (with 14 pairs of which 4 differ it excluded 0 at p = 0.125).
    When no shift can be rejected (at most 5 pairs at 95%: p >= 2 / 2**n > 0.05) the interval
    is unbounded and both ends are ``None``.
    """
    _check_confidence(confidence)
    _check_positive("n_perm", n_perm)
    xa = _floats(a, "a")
    xb = _floats(b, "b")
    _same_length("a", xa, "b", xb)
    n = xa.shape[0]
    if n == 0:
        return PairedDifference(0, None, None, None, None, None, confidence, None, False)
    d = xb - xa
    low, high, exact = _flip_intervals(d, np.random.default_rng(seed), n_perm)
    p_value = int(np.count_nonzero((low <= 0.0) & (high >= 0.0))) / low.shape[0]
    ci_low, ci_high = _inverted_ci(low, high, round(1.0 - confidence, 12))
    return PairedDifference(
        n=n,
        mean_a=float(np.mean(xa)),
        mean_b=float(np.mean(xb)),
        diff=float(np.mean(d)),
        ci_low=ci_low,
        ci_high=ci_high,
        confidence=confidence,
        p_value=p_value,
        exact=exact,
    )


# Below this share of samples paired with the baseline, a comparison says little about the runs:
# compare() and diagnose RUN_A RUN_B refuse unless asked (allow_poor_pairing). The share is taken
# per level (turns and conversations each on their own), the worst level deciding. Any unpaired
# sample is warned about.
MIN_PAIRED_SHARE = 0.8


def _count(n: int, unit: str) -> str:
    return f"{n} {unit}{'' if n == 1 else 's'}"


def _plural(units: Sequence[str]) -> str:
    """"turns", "conversations and turns", "turns, conversations and samples"."""
    words = [f"{u}s" for u in units]
    return " and ".join(words) if len(words) <= 2 else f"{', '.join(words[:-1])} and {words[-1]}"


def count_units(units: Iterable[str]) -> tuple[tuple[str, int], ...]:
    """How many rows of each unit ("sample", "turn", "conversation"), in the order the units
    first come."""
    counts: dict[str, int] = {}
    for unit in units:
        counts[unit] = counts.get(unit, 0) + 1
    return tuple(counts.items())


def describe_counts(counts: Sequence[tuple[str, int]]) -> str:
    """A run's rows counted as its pairing line counts them: "17 samples" for data without
    conversations, each level on its own for a conversation data set ("12 turns, 5
    conversations")."""
    if not counts:
        return _count(0, "sample")
    return ", ".join(_count(n, unit) for unit, n in counts)


@dataclass(frozen=True)
class LevelPairing:
    """One level's part of a :class:`Pairing`: the rows of one kind (``unit``: "sample" for data
    without conversations, "turn" or "conversation") in each run, and those paired."""

    unit: str
    n_baseline: int
    n_other: int
    paired: int

    @property
    def most(self) -> int:
        return max(self.n_baseline, self.n_other)

    @property
    def share(self) -> float:
        """The paired rows of this level over the larger of the two runs' counts of it."""
        return self.paired / self.most if self.most else 0.0

    @property
    def poor(self) -> bool:
        return self.share < MIN_PAIRED_SHARE

    @property
    def partial(self) -> bool:
        return self.paired < self.most


@dataclass(frozen=True)
class Pairing:
    """How one run's samples pair with the baseline's, by sample id.

    ``levels``: the counts per level (turns and conversations of a conversation data set, each
    paired on its own; one "sample" level for data without conversations), see :meth:`of`.
    ``share`` is the worst level's paired rows over the larger of the two runs' rows of that
    level, so a run missing 3 of 5 conversations but none of the turns has a share of 40%; below
    :data:`MIN_PAIRED_SHARE` the pairing is ``poor``: the paired differences of that level then
    speak for a part of the data only (the usual cause: rows without ids whose question or
    reference text differs between the runs, or two different data sets). :meth:`describe`
    states every level; :meth:`shortfall` says what a warning or a refusal says, the worst level
    first."""

    baseline: str
    other: str
    n_baseline: int
    n_other: int
    paired: int
    levels: tuple[LevelPairing, ...] = ()

    @classmethod
    def of(cls, baseline: str, other: str, keys_baseline: Mapping[_Key, str],
           keys_other: Mapping[_Key, str]) -> Pairing:
        """The pairing of two runs from their pairing keys, each mapped to the unit of its level
        ("sample", "turn", "conversation"): a key pairs with the same key of the other run. The
        levels come in the order the runs first name them."""
        units = list(dict.fromkeys([*keys_baseline.values(), *keys_other.values()]))
        levels = tuple(
            LevelPairing(unit, sum(1 for u in keys_baseline.values() if u == unit),
                         sum(1 for u in keys_other.values() if u == unit),
                         sum(1 for k, u in keys_baseline.items() if u == unit and k in keys_other))
            for unit in units)
        return cls(baseline, other, len(keys_baseline), len(keys_other),
                   sum(1 for k in keys_baseline if k in keys_other), levels)

    @property
    def _levels(self) -> tuple[LevelPairing, ...]:
        """The levels, or all the rows as one "sample" level when none were given."""
        return self.levels or (LevelPairing("sample", self.n_baseline, self.n_other, self.paired),)

    @property
    def worst(self) -> LevelPairing:
        """The level with the smallest share (the first of those alike): the one that decides."""
        return min(self._levels, key=lambda lv: lv.share)

    @property
    def share(self) -> float:
        return self.worst.share

    @property
    def poor(self) -> bool:
        return self.share < MIN_PAIRED_SHARE

    @property
    def poor_units(self) -> tuple[str, ...]:
        """The units of the levels paired below :data:`MIN_PAIRED_SHARE`, worst first."""
        return tuple(lv.unit for lv in sorted(self._levels, key=lambda lv: lv.share) if lv.poor)

    @property
    def partial(self) -> bool:
        """Some sample of either run has no partner (a warning, and a refusal when poor)."""
        return any(lv.partial for lv in self._levels)

    def _unpaired(self) -> str:
        unpaired = []
        for run, counts in ((self.baseline, [(lv.n_baseline - lv.paired, lv.unit) for lv in self.levels]),
                            (self.other, [(lv.n_other - lv.paired, lv.unit) for lv in self.levels])):
            if any(n for n, _ in counts):
                unpaired.append(f"in {run}: {', '.join(_count(n, unit) for n, unit in counts if n)}")
        return f"; unpaired {'; '.join(unpaired)}" if unpaired else ""

    def describe(self) -> str:
        """Says "20 of 20 samples paired between A (20) and B (20)"; for a conversation data set,
        each level on its own: "12 of 12 turns, 5 of 5 conversations paired between A and B",
        then what is unpaired ("; unpaired in A: 2 turns, 1 conversation")."""
        if len(self.levels) > 1:
            paired = ", ".join(f"{lv.paired} of {_count(lv.most, lv.unit)}" for lv in self.levels)
            return f"{paired} paired between {self.baseline} and {self.other}{self._unpaired()}"
        unit = self.levels[0].unit if self.levels else "sample"
        text = (f"{self.paired} of {_count(max(self.n_baseline, self.n_other), unit)} paired between "
                f"{self.baseline} ({self.n_baseline}) and {self.other} ({self.n_other})")
        unpaired_a, unpaired_b = self.n_baseline - self.paired, self.n_other - self.paired
        if unpaired_a or unpaired_b:
            text += f"; unpaired: {unpaired_a} in {self.baseline}, {unpaired_b} in {self.other}"
        return text

    def shortfall(self) -> str:
        """What follows "only" in a warning: :meth:`describe` with the share, "14 of 20 samples
        paired between A (20) and B (14); unpaired: 6 in A, 0 in B (70%)"; for a conversation
        data set each level with its own share, the worst first, so the level that decides is
        named: "2 of 5 conversations (40%), 12 of 12 turns (100%) paired between A and B;
        unpaired in A: 3 conversations"."""
        if len(self.levels) <= 1:
            return f"{self.describe()} ({self.share:.0%})"
        paired = ", ".join(f"{lv.paired} of {_count(lv.most, lv.unit)} ({lv.share:.0%})"
                           for lv in sorted(self.levels, key=lambda lv: lv.share))
        return f"{paired} paired between {self.baseline} and {self.other}{self._unpaired()}"


def too_few_paired(pairings: Sequence[Pairing]) -> tuple[str, str]:
    """What a refusal of poor pairings says: the rows too few of them pair ("samples",
    "conversations", "conversations and turns") and the pairings themselves (each as
    :meth:`Pairing.describe` says it for data without conversations, as
    :meth:`Pairing.shortfall` for a conversation data set), for the poor ones among
    ``pairings``."""
    poor = [pr for pr in pairings if pr.poor]
    units = list(dict.fromkeys(u for pr in poor for u in pr.poor_units))
    said = "; ".join(pr.describe() if len(pr.levels) <= 1 else pr.shortfall() for pr in poor)
    return _plural(units), said
