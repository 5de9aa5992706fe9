"""``estimate()``: what an evaluation would cost, without calling the judge (``evaluate --dry-run``).

The estimate runs the evaluation itself, sample by sample, with the judge's provider replaced by
:class:`ragsight.judge.EstimatingProvider`: every prompt is rendered by the code a real run uses
(the same templates, fences and truncation), its tokens counted as the judge counts them, and
answered by documented rules instead of a model. A step already in the store's judge cache is
answered from there, as the real run would (it costs nothing, and its stored output feeds the
steps after it). The embedder is replaced too (vectors from a hash; the texts are counted, not
priced). Nothing is written: no run is created and the cache is only read.
"""

from __future__ import annotations

import asyncio
import hashlib
import os
import warnings
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any, NoReturn

import numpy as np

from ..analyses import AnalysisSettings
from ..calls import Price, format_usd, price_for, stale_note
from ..dataset import Dataset, Sample
from ..engine import score_sample, settings_for
from ..errors import ConfigError
from ..judge import (
    ESTIMATE_RULES,
    EstimatingProvider,
    Judge,
    JudgeCall,
    JudgeProvider,
    JudgeSpec,
    RetryPolicy,
    record_calls,
)
from ..metrics import Metric, named_on_their_own, resolve_metrics
from ..result import UNATTRIBUTED, metric_tokens
from ..store import SQLiteCallCache, Store
from ._options import RunOptions, refuse_moved
from ._preflight import chosen_metrics, left_out_line, split_refused

__all__ = ["Estimate", "aestimate"]


@dataclass(frozen=True)
class Estimate:
    """The calls, tokens and dollars an evaluation is expected to take, and how they were
    estimated (``basis``: one line per assumption)."""

    samples: int
    metrics: tuple[str, ...]
    judge: str | None
    calls: int
    cache_hits: int
    prompt_tokens: int
    completion_tokens: int
    embedding_texts: int
    tokens_by_metric: Mapping[str, tuple[float, float]]
    price: Price | None
    unsimulated: int = 0
    basis: tuple[str, ...] = field(default_factory=tuple)

    @property
    def usd(self) -> float | None:
        """Dollars for the judge calls; None when the judge's price is unknown."""
        return None if self.price is None else self.price.cost(self.prompt_tokens, self.completion_tokens)

    def usd_by_metric(self) -> dict[str, float | None]:
        return {m: (None if self.price is None else self.price.cost(p, c))
                for m, (p, c) in self.tokens_by_metric.items()}

    def lines(self) -> list[str]:
        """The estimate for a person, at 80 columns."""
        out = [f"{self.samples} samples, {len(self.metrics)} metrics: {', '.join(self.metrics)}"]
        if self.judge is None:
            out.append("judge: none of these metrics calls a judge: nothing to pay for")
        else:
            out.append(f"judge {self.judge}: about {self.calls:,} calls ({self.cache_hits:,} more steps "
                       f"answered by the cache), {self.prompt_tokens:,} prompt + "
                       f"{self.completion_tokens:,} completion tokens")
            out.append(f"cost: {format_usd(self.usd)}" + (
                f" (at ${self.price.input:g} in / ${self.price.output:g} out per million tokens, "
                f"{self.price.source}){stale_note(self.price)}" if self.price is not None else
                " (no price for this judge; give one with --price MODEL=IN/OUT)"))
            usd = self.usd_by_metric()
            for m, (p, c) in self.tokens_by_metric.items():
                out.append(f"  {m}: {p + c:,.0f} tokens, {format_usd(usd[m])}")
        if self.embedding_texts:
            out.append(f"embedder: {self.embedding_texts:,} texts to embed (not priced)")
        if self.unsimulated:
            out.append(f"NOT ESTIMATED: {self.unsimulated} (sample, metric) pairs could not be simulated "
                       "(their steps after the failing one are missing: the estimate is low)")
        out.append("basis of the estimate:")
        out.extend(f"  - {b}" for b in self.basis)
        return out

    def to_dict(self) -> dict[str, Any]:
        return {
            "samples": self.samples, "metrics": list(self.metrics), "judge": self.judge,
            "calls": self.calls, "cache_hits": self.cache_hits, "prompt_tokens": self.prompt_tokens,
            "completion_tokens": self.completion_tokens, "embedding_texts": self.embedding_texts,
            "usd": self.usd, "price": self.price.to_dict() if self.price else None,
            "tokens_by_metric": {m: list(v) for m, v in self.tokens_by_metric.items()},
            "usd_by_metric": self.usd_by_metric(), "unsimulated": self.unsimulated,
            "basis": list(self.basis),
        }


class _ReadOnlyCache:
    """The store's judge cache, read but never written (an estimate's replies are not answers)."""

    def __init__(self, inner: SQLiteCallCache) -> None:
        self.inner = inner
        self.hits = 0

    async def get(self, key: str) -> dict[str, Any] | None:
        hit = await self.inner.get(key)
        self.hits += hit is not None
        return hit

    async def put(self, key: str, entry: dict[str, Any]) -> None:
        return None


class _CountingEmbedder:
    """Unit vectors from a hash of each text; counts the texts a real run would embed."""

    name = "estimate"

    def __init__(self) -> None:
        self.texts = 0

    async def embed(self, texts: Sequence[str], kind: str = "passage") -> np.ndarray:
        self.texts += len(texts)
        rows = []
        for t in texts:
            seed = int.from_bytes(hashlib.sha256(t.encode("utf-8")).digest()[:8], "little")
            v = np.random.default_rng(seed).standard_normal(16)
            rows.append(v / np.linalg.norm(v))
        return np.vstack(rows) if rows else np.zeros((0, 16))

    async def aclose(self) -> None:
        return None


def _token_rule(provider: EstimatingProvider) -> str:
    if provider.supports_choices:
        return ("tokens counted at 4 characters per token (the embedded model's own tokenizer is not "
                "loaded for an estimate)")
    per = provider.count_tokens("word " * 80)
    return (f"tokens counted as the judge counts them ({per} for 400 characters of English), plus 4 "
            "per message")


async def aestimate(
    data: Any,
    metrics: Sequence[str | Metric] | str | None = None,
    *,
    judge: str | JudgeSpec | JudgeProvider | Judge | None = None,
    store: str | os.PathLike[str] | None = None,
    resume: str | None = None,
    options: RunOptions | None = None,
    **moved: NoReturn,
) -> Estimate:
    """Estimate the judge calls, tokens and dollars of ``evaluate(data, metrics, judge=...)``
    (or of the rest of the stored run ``resume``) without calling the judge or the embedder.
    The judge's server and prices come from ``judge`` (a :class:`~ragsight.JudgeSpec`); of
    ``options``, ``cache``, ``settings`` and ``concurrency`` (samples simulated at once, 16 by
    default) are read."""
    refuse_moved("aestimate", moved, ("judge", "store", "resume", "options"), judge=judge)
    opts = options if options is not None else RunOptions()
    cache, concurrency = opts.cache, opts.concurrency or 16
    st = Store(store) if store is not None and str(store) != ":memory:" and Path(store).exists() else None
    try:
        samples, chosen, spec, settings = _what(data, metrics, JudgeSpec.of(judge), st, resume, opts.settings)
        need_judge = any(m.needs_judge for m in chosen)
        real = spec.make(policy=RetryPolicy(max_attempts=1, max_reasks=0)) if need_judge else None
        if real is not None and resume is None:  # what the run would leave out, or refuse, as it would
            chosen, left_out = split_refused(chosen, real, named_on_their_own(metrics))
            if left_out:
                warnings.warn(f"{left_out_line(left_out)}; the other metrics run", UserWarning, stacklevel=2)
        provider = EstimatingProvider(real.provider) if real is not None else None
        reader = _ReadOnlyCache(SQLiteCallCache(st)) if (st is not None and cache) else None
        jd = (Judge(provider, cache=reader, policy=RetryPolicy(max_attempts=1, max_reasks=0))
              if provider is not None else None)
        emb = _CountingEmbedder() if any(m.needs_embedder for m in chosen) else None
        run_settings = settings_for(chosen, replace(settings, use_cache=cache))
        tokens: dict[str, list[float]] = {}
        unsimulated = 0
        queue = iter(samples)

        async def worker() -> None:
            nonlocal unsimulated
            for s in queue:
                calls: list[JudgeCall] = []
                with record_calls(calls.append):
                    scores = await score_sample(s, chosen, jd, emb, run_settings)
                unsimulated += sum(1 for sc in scores if sc.outcome.value == "failed")
                rows = [(s.id, c.step, c.prompt_tokens, c.completion_tokens) for c in calls if not c.cached]
                for m, (p, c) in metric_tokens(rows, {s.id: {sc.metric: sc for sc in scores}}).items():
                    acc = tokens.setdefault(m, [0.0, 0.0])
                    acc[0] += p
                    acc[1] += c

        try:
            await asyncio.gather(*(worker() for _ in range(max(1, min(concurrency, len(samples))))))
        finally:
            if jd is not None:
                await jd.aclose()
        price = price_for(jd.name, jd.model, spec.price_table) if jd is not None else None
        basis = _basis(len(samples), jd, provider, reader, st, cache, emb)
        stats = jd.stats if jd is not None else None
        order = [m.key for m in chosen if m.key in tokens] + ([UNATTRIBUTED] if UNATTRIBUTED in tokens else [])
        return Estimate(
            samples=len(samples), metrics=tuple(m.key for m in chosen), judge=jd.name if jd else None,
            calls=stats.calls if stats else 0, cache_hits=stats.cache_hits if stats else 0,
            prompt_tokens=stats.prompt_tokens if stats else 0,
            completion_tokens=stats.completion_tokens if stats else 0,
            embedding_texts=emb.texts if emb else 0,
            tokens_by_metric={m: (tokens[m][0], tokens[m][1]) for m in order},
            price=price, unsimulated=unsimulated, basis=basis,
        )
    finally:
        if st is not None:
            st.close()


def _what(
    data: Any, metrics: Any, judge: JudgeSpec, st: Store | None, resume: str | None,
    settings: AnalysisSettings | None,
) -> tuple[list[Sample], list[Metric], JudgeSpec, AnalysisSettings]:
    """The samples and metrics to estimate: the data's, or what a stored run has left to do."""
    if resume is None:
        ds = Dataset.load(data)
        if not ds.samples:
            raise ConfigError(f"no usable sample in {ds.source}")
        return list(ds.samples), chosen_metrics(metrics, ds.samples), judge, settings or AnalysisSettings()
    if st is None:
        raise ConfigError("--dry-run --resume needs the store that holds the run (--store)")
    run_id = st.resolve_run(resume)
    info = st.run(run_id)
    done = st.finished_samples(run_id)
    samples = [s for s in st.samples(run_id) if s.id not in done]
    chosen = resolve_metrics([m["key"] for m in info.metrics], samples)
    stored = info.config.get("settings", {})
    kept = AnalysisSettings(**{k: v for k, v in stored.items() if k in AnalysisSettings.__dataclass_fields__})
    run_judge = replace(judge, model=judge.model if judge.model is not None else info.config.get("judge_spec"),
                        base_url=judge.base_url or info.config.get("base_url"))
    return samples, chosen, run_judge, kept


def _basis(n: int, jd: Judge | None, provider: EstimatingProvider | None, reader: _ReadOnlyCache | None,
           st: Store | None, cache: bool, emb: _CountingEmbedder | None) -> tuple[str, ...]:
    out = [f"prompts: rendered for the {n} samples by the judge's own templates; nothing was sent"]
    if jd is None or provider is None:
        return tuple(out)
    if reader is not None and st is not None:
        out.append(f"cache: {reader.hits} steps found in the judge cache of {st.path} (they cost "
                   "nothing; their stored replies feed the steps after them)")
    elif not cache:
        out.append("cache: not read (--no-cache): every step is counted as a call")
    else:
        out.append("cache: none yet (no store file): every step is counted as a call")
    out.append("replies not in the cache: by rule (docs/cost.md): " + ESTIMATE_RULES)
    out.append(_token_rule(provider))
    out.append("no retries or re-asks assumed (a real run pays for each)")
    if (time_line := provider.time_line()) is not None:
        out.append(time_line)
    if emb is not None:
        out.append("embeddings: counted, not priced")
    return tuple(out)
