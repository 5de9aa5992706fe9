"""Running a sweep: one test set, every configuration answered and evaluated as a run.

Each configuration becomes a run in the store, tagged with the sweep (``metadata.sweep``), its
configuration id and its settings, under a run id made of the sweep's name, the configuration's
id and a fingerprint of what the run measures (test set, metrics, judge, judged questions, target).
Running the same sweep again reuses every completed run, continues an interrupted one where it
stopped (``--resume`` semantics), and answers and evaluates only the configurations that are new;
the pipeline's stages and the judge's steps come from the content caches in the same store.

The questions and the run ids are in ``_questions.py``, the dry-run in ``_plan.py``, the
answering of one configuration in ``_answer.py``.
"""

from __future__ import annotations

import asyncio
import os
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from ..embed import make_embedder
from ..engine import Progress
from ..errors import ConfigError
from ..judge import Judge, JudgeSpec, make_judge
from ..metrics import resolve_metrics
from ..pipeline import RagPipeline
from ..result import load_result
from ..run import RunOptions, aevaluate
from ..store import Store
from ..testset import load_corpus
from ._answer import ConfigRun, _answer_factory, _answer_reference, _answer_target
from ._factory import SpanLocator, load_factory
from ._questions import (
    _CLAIM_POLL_S,
    _fingerprint,
    _load_rows,
    _split_metrics,
    judged_ids,
    run_id_for,
)
from ._spec import SweepSpec, load_sweep

__all__ = ["SweepResult", "asweep", "sweep"]


@dataclass
class SweepResult:
    """The runs of a sweep, in the order of its configurations (the baseline marked)."""

    spec: SweepSpec
    runs: list[ConfigRun]
    seconds: float
    store_path: str
    judge_stats: dict[str, Any] = field(default_factory=dict)

    @property
    def run_ids(self) -> list[str]:
        return [r.run_id for r in self.runs]

    @property
    def generator_calls(self) -> int:
        return sum(r.generator_calls for r in self.runs)

    @property
    def target_calls(self) -> int:
        return sum(r.target_calls for r in self.runs)


class _SharedEmbedder:
    """An embedder passed to several runs: a run's ``aclose`` leaves it open (the sweep closes
    it once, at the end)."""

    def __init__(self, inner: Any) -> None:
        self.inner = inner
        self.name = inner.name

    async def embed(self, texts: Sequence[str], kind: str = "passage") -> Any:
        return await self.inner.embed(texts, kind=kind)

    async def aclose(self) -> None:
        return None


async def asweep(
    source: str | os.PathLike[str] | Mapping[str, Any] | SweepSpec,
    *,
    store: str | os.PathLike[str] | Store = "ragsight.db",
    judge: Any = None,
    embedder: Any = None,
    target: Callable[..., Any] | None = None,
    factory: Callable[..., Any] | None = None,
    pipeline: RagPipeline | None = None,
    backend: str = "local",
    ray_address: str | None = None,
    progress: Callable[[str, ConfigRun, int, int], None] | None = None,
    eval_progress: Progress | None = None,
    notice: Any = None,
    preflight: bool = True,
) -> SweepResult:
    """Run a sweep: answer the test set in every configuration and evaluate each as a run.

    ``source``: a sweep file (.toml, .yaml), a dict or a :class:`SweepSpec`. ``judge`` /
    ``embedder``: for the judge metrics (specs or instances; default: the sweep's own, else the
    embedded ones). ``target``: a Python callable ``fn(question, **config)`` to sweep instead of
    the definition's pipeline. ``factory``: a LangChain / LlamaIndex pipeline factory
    ``make_pipeline(**config)`` returning an LCEL runnable or a query engine, built once per
    configuration and asked through ``ragsight.integrations`` (docs/integrations/).
    ``pipeline``: a ready :class:`RagPipeline` (tests). ``progress`` is called with (event, run,
    index, total) as configurations start and finish.
    """
    spec = load_sweep(source)
    if target is not None and factory is not None:
        raise ConfigError("give sweep(..., target=fn) or sweep(..., factory=fn), not both")
    if target is not None:
        spec = SweepSpec(**{**spec.__dict__, "target": "callable", "factory": None})
    elif factory is not None:
        spec = SweepSpec(**{**spec.__dict__, "factory": "callable", "target": None})
    elif spec.target == "callable":
        raise ConfigError("the sweep's pipeline is 'callable': pass the function, sweep(..., target=fn)")
    elif spec.factory == "callable":
        raise ConfigError("the sweep's pipeline factory is 'callable': pass it, sweep(..., factory=make_pipeline)")
    if spec.target is not None and spec.factory is not None:
        raise ConfigError("the sweep names a target and a pipeline factory: give one")
    make: Callable[..., Any] | None = None
    if spec.factory is not None:
        make = factory if factory is not None else load_factory(spec.factory)
    own_store = not isinstance(store, Store)
    st = store if isinstance(store, Store) else Store(store)
    t0 = time.monotonic()
    judge_spec = judge if judge is not None else spec.judge
    emb_spec = embedder if embedder is not None else spec.embedder
    shared_emb: Any = None
    own: list[Any] = []
    try:
        rows = await _load_rows(spec, st, judge_spec, notice)
        _, judge_metrics = _split_metrics(spec.metrics)
        fp = _fingerprint(spec, rows, judge=judge_spec, embedder=emb_spec)
        judged = judged_ids(rows, spec.judge_questions, spec.judge_out_of_scope)
        needs_embedder = any(m.needs_embedder for m in resolve_metrics(list(spec.metrics)))
        if needs_embedder or spec.reference:
            base = make_embedder(emb_spec, base_url=spec.base_url, notice=notice)
            own.append(base)
            shared_emb = _SharedEmbedder(base)
        if spec.reference and pipeline is None:
            pipeline = RagPipeline(
                [spec.path(d) for d in spec.documents], store=st,
                embedders={"local": shared_emb} if (emb_spec in (None, "local")) else None,
                base_url=spec.base_url, notice=notice,
            )
            own.append(pipeline)
        locator: SpanLocator | None = None
        if make is not None and spec.documents:  # to place the factory's chunks in the documents
            locator = SpanLocator(load_corpus([spec.path(d) for d in spec.documents]).documents)
        elif make is not None and notice and any(m.startswith("span_") for m in spec.metrics):
            notice("the span metrics need each retrieved chunk's document span: name the sweep's documents "
                   "(the chunks are found in them) or give doc_id, start and end in each chunk's metadata")
        eval_judge: Any = judge_spec
        if judge_metrics and not isinstance(judge_spec, Judge):
            eval_judge = make_judge(judge_spec, base_url=spec.base_url, notice=notice)
            own.append(eval_judge)
        total = len(spec.configurations)
        runs = [ConfigRun(config, run_id_for(spec, config, fp)) for config in spec.configurations]

        async def one(i: int, run: ConfigRun) -> None:
            config = run.config
            if progress:
                progress("start", run, i, total)
            c0 = time.monotonic()
            known = {r.id: r.status for r in st.runs()}
            meta = {"sweep": spec.name, "sweep_config": config.label, "config_id": config.id,
                    "baseline": i == spec.baseline_index, **dict(config.params)}
            # a Ray cluster's workers build their own judge and embedder from the specs
            on_ray = backend == "ray"
            common: dict[str, Any] = dict(
                judge=JudgeSpec(judge_spec if on_ray else eval_judge, base_url=spec.base_url),
                embedder=emb_spec if on_ray else shared_emb, store=st,
                options=RunOptions(backend=backend, ray_address=ray_address, progress=eval_progress,
                                   notice=notice, preflight=preflight))
            if known.get(run.run_id) == "completed":
                run.status = "reused"
                run.result = load_result(st, run.run_id)
            elif run.run_id in known:
                run.result = await aevaluate(None, resume=run.run_id, **common)
                run.status = run.result.status
            else:
                if spec.reference:
                    assert pipeline is not None
                    samples = await _answer_reference(pipeline, rows, config, spec, judged, run)
                elif make is not None:
                    samples = await _answer_factory(make, rows, config, spec, judged, run, locator)
                else:
                    samples = await _answer_target(target if target is not None else spec.target, rows,
                                                   config, spec, judged, run, st)
                run.result = await aevaluate(samples, list(spec.metrics), metadata=meta, run_id=run.run_id,
                                             **common)
                run.status = run.result.status
            run.seconds = time.monotonic() - c0
            if progress:
                progress("done", run, i, total)

        def finished(run: ConfigRun) -> bool:
            return any(r.id == run.run_id and r.status == "completed" for r in st.runs())

        # Each configuration is claimed in the store while it is answered and evaluated: a second
        # sweep of the same file on the same store runs the others meanwhile, then waits for the
        # claimed ones and reuses them (nothing is paid twice, no run is written by two).
        deferred: list[tuple[int, ConfigRun]] = []
        for i, run in enumerate(runs):
            holder = None if finished(run) else st.claim(run.run_id)
            if holder is not None:
                deferred.append((i, run))
                if notice:
                    notice(f"configuration {run.config.label} is being run by another sweep ({holder}); "
                           "the others first, then it is reused from the store")
                continue
            try:
                await one(i, run)
            finally:
                st.release(run.run_id)
        for i, run in deferred:
            said = time.monotonic()
            while not finished(run):
                held_by = st.claim(run.run_id)
                if held_by is None:  # its holder stopped before finishing it: this sweep continues it
                    break
                if notice and time.monotonic() - said > 30:
                    notice(f"still waiting for configuration {run.config.label} ({held_by})")
                    said = time.monotonic()
                await asyncio.sleep(_CLAIM_POLL_S)
            try:
                await one(i, run)
            finally:
                st.release(run.run_id)
        return SweepResult(spec, runs, time.monotonic() - t0, st.path)
    finally:
        for obj in reversed(own):
            await obj.aclose()
        if own_store:
            st.close()


def sweep(source: str | os.PathLike[str] | Mapping[str, Any] | SweepSpec, **kwargs: Any) -> SweepResult:
    """Synchronous :func:`asweep`.

    Example::

        def my_rag(question, top_k, chunk_size):
            ...
            return {"answer": ..., "contexts": [{"id", "text", "doc_id", "start", "end"}]}

        result = ragsight.sweep({"name": "mine", "testset": "ts.jsonl", "pipeline": {"target": "x"},
                                 "grid": {"top_k": [3, 5], "chunk_size": [256, 512]}},
                                target=my_rag, store="runs.db")
    """
    return asyncio.run(asweep(source, **kwargs))
