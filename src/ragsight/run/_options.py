"""How a run is carried out, as opposed to what it measures: :class:`RunOptions` (public), the
:class:`Plan` a run is given (judge spec, embedder spec, options), and the TypeError that tells a
caller where a keyword :func:`ragsight.evaluate` no longer takes has gone."""

from __future__ import annotations

import difflib
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, fields
from typing import Any

from ..analyses import AnalysisSettings
from ..calls import PriceTable
from ..embed import EmbedderSpec
from ..engine import Progress
from ..errors import ConfigError
from ..judge import JudgeSpec, RetryPolicy

__all__ = ["Plan", "RunOptions", "refuse_moved"]

BACKENDS = ("local", "ray")
MAX_SAMPLES_IN_FLIGHT = 4096


@dataclass(frozen=True)
class RunOptions:
    """How :func:`ragsight.evaluate` carries out a run, given whole as ``options=``; every field
    has its default, so ``RunOptions(max_cost=2.0)`` changes one thing.

    ``cache``: read and write the judge cache in the store (``--no-cache`` turns it off).
    ``concurrency``: samples in flight (default: 16 for a remote judge, or enough to fill its
    ceiling of calls; 1 for the embedded one). ``settings``: the analyses' settings (claim
    support threshold, explanations...). ``policy``: how hard one judge step tries (retries,
    re-asks, time-outs). ``preflight``: ping the judge and embed one text before the run's
    first write (False skips it: a cached run again makes no call at all). ``progress``:
    counters the caller shows itself (then no display of ours unless ``show_progress`` asks);
    ``show_progress``: None shows a progress bar on a terminal and in a notebook and nothing when
    the output goes to a file, True always one (a text line where rich cannot draw), False
    never. ``notice``: receives one-line messages for the user (the judge chosen, the embedder
    used...). ``backend``: ``"local"`` (this process) or ``"ray"`` (a Ray cluster at
    ``ray_address``; needs ``ragsight[ray]``, docs/scale.md). ``max_cost``: stop before the judge
    calls of this call could cost more than this many US dollars (raises
    :class:`~ragsight.errors.BudgetExceededError` after saving the finished samples; ``resume=``
    continues; the judge's price comes from the price table or :class:`ragsight.JudgeSpec`'s
    ``prices``).

    Example::

        options = ragsight.RunOptions(concurrency=8, max_cost=5.0, show_progress=False)
        result = ragsight.evaluate("data.jsonl", judge="openai:gpt-4o-mini", options=options)
    """

    cache: bool = True
    concurrency: int | None = None
    settings: AnalysisSettings | None = None
    policy: RetryPolicy | None = None
    preflight: bool = True
    progress: Progress | None = None
    show_progress: bool | str | None = None
    notice: Callable[[str], None] | None = None
    backend: str = "local"
    ray_address: str | None = None
    max_cost: float | None = None

    def __post_init__(self) -> None:
        for name, kind, what in (("settings", AnalysisSettings, "ragsight.AnalysisSettings(...)"),
                                 ("policy", RetryPolicy, "ragsight.judge.RetryPolicy(...)"),
                                 ("progress", Progress, "ragsight.engine.Progress()")):
            value = getattr(self, name)
            if value is not None and not isinstance(value, kind):
                raise ConfigError(f"RunOptions({name}=...) takes {what} or None, not {type(value).__name__} "
                                  f"{value!r:.60}")
        if self.notice is not None and not callable(self.notice):
            raise ConfigError(f"RunOptions(notice=...) takes a function of one text or None, not "
                              f"{type(self.notice).__name__}")
        c = self.concurrency
        if c is not None and (isinstance(c, bool) or not isinstance(c, int) or not 1 <= c <= MAX_SAMPLES_IN_FLIGHT):
            raise ConfigError(f"concurrency (--concurrency) is a whole number of samples in flight from 1 to "
                              f"{MAX_SAMPLES_IN_FLIGHT}, not {c!r}")
        if self.backend not in BACKENDS:
            raise ConfigError(f"unknown backend '{self.backend}'; use 'local' (this process) or 'ray' "
                              "(a Ray cluster)")
        value = self.max_cost
        if value is not None:
            if (isinstance(value, bool) or not isinstance(value, (int, float)) or not value > 0
                    or value == float("inf")):
                raise ConfigError(f"max_cost (--max-cost) must be a positive number of US dollars, "
                                  f"not {value!r}")
            object.__setattr__(self, "max_cost", float(value))


@dataclass(frozen=True)
class Plan:
    """What a run is given: its judge, its embedder and its options (built by ``aevaluate``
    and passed whole to the run and to a resume)."""

    judge: JudgeSpec
    embedder: EmbedderSpec
    options: RunOptions

    @property
    def price_table(self) -> PriceTable:
        return self.judge.price_table

    @property
    def embedder_url(self) -> str | None:
        """The embedder's server: its own URL, else the judge's."""
        return self.embedder.base_url or self.judge.base_url


# Keywords evaluate() took before the judge spec and the run options: where each went, under
# which name there.
_TO_JUDGE = {"base_url": "base_url", "api_version": "api_version", "judge_concurrency": "concurrency",
             "prices": "prices"}
_TO_EMBEDDER = {"embedder_base_url": "base_url"}
_TO_OPTIONS = {f.name: f.name for f in fields(RunOptions)}


def refuse_moved(function: str, given: Mapping[str, Any], accepted: Iterable[str], *, judge: Any = None,
                 embedder: Any = None) -> None:
    """Raise TypeError for the keywords in ``given`` that ``function`` does not take, saying
    for each that moved where it is now (``judge=ragsight.JudgeSpec(...)``,
    ``embedder=ragsight.EmbedderSpec(...)``, ``options=ragsight.RunOptions(...)``) and for any
    other the name it may have meant. Nothing given: nothing raised."""
    if not given:
        return
    names = list(accepted)
    parts = []
    known: set[str] = set()
    for table, target, what, call, value in (
        (_TO_JUDGE, "judge", "the judge spec", "JudgeSpec", _example(judge, "openai:MODEL")),
        (_TO_EMBEDDER, "embedder", "the embedder spec", "EmbedderSpec", _example(embedder, "openai:MODEL")),
        (_TO_OPTIONS, "options", "the run options", "RunOptions", None),
    ):
        moved = [k for k in given if k in table] if target in names else []
        if not moved:
            continue
        known.update(moved)
        renamed = [f"{k}= as {table[k]}=" for k in moved if table[k] != k]
        args = ", ".join([*([repr(value)] if value is not None else []), *(f"{table[k]}=..." for k in moved)])
        parts.append(f"{_names(moved)} {'is' if len(moved) == 1 else 'are'} part of {what} now"
                     f"{' (' + ', '.join(renamed) + ')' if renamed else ''}: {target}=ragsight.{call}({args})")
    option_fields = list(_TO_OPTIONS) if "options" in names else []
    for k in given:
        if k not in known:
            close = difflib.get_close_matches(k, [*names, *option_fields], n=1)
            meant = ("" if not close else f" (did you mean {close[0]}=?)" if close[0] in names
                     else f" (did you mean options=ragsight.RunOptions({close[0]}=...)?)")
            parts.append(f"got an unexpected keyword argument {k!r}{meant}")
    raise TypeError(f"{function}(): " + "; ".join(parts))


def _example(value: Any, default: str) -> str:
    """The name to show in the example call: the caller's own when it gave one."""
    model = getattr(value, "model", value) if isinstance(value, (JudgeSpec, EmbedderSpec)) else value
    return model if isinstance(model, str) else default


def _names(keys: list[str]) -> str:
    shown = [f"{k}=" for k in keys]
    return shown[0] if len(shown) == 1 else ", ".join(shown[:-1]) + " and " + shown[-1]
