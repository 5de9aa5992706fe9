"""The sweep's questions: the test set (read, or generated once while claimed in the store), each
question's id, which questions are judged, the fingerprint that names a configuration's run, and
a question answered in one configuration as that run's sample row.

Every configuration sees the same questions with the same ids, so every comparison is paired.
Judge metrics run on the first ``judge_questions`` questions of each kind (in scope, out of
scope); the other questions carry no response or reference in their sample, so judge metrics
skip them (counted, with the reason) while the span metrics score every question.
"""

from __future__ import annotations

import asyncio
import hashlib
import json
import os
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from ..calls import display_url
from ..dataset import atomic_write, check_writable_target
from ..errors import ConfigError, InputError
from ..metrics import resolve_metrics
from ..store import Store
from ..testset import ChunkSettings, TestsetSettings, agenerate, load_corpus, read_testset
from ._spec import Configuration, SweepSpec

__all__ = ["judged_ids", "run_id_for"]

OUT_OF_SCOPE = "out_of_scope"

_CLAIM_POLL_S = 0.5  # how often a sweep looks whether another sweep's configuration is done


def _slug(name: str) -> str:
    return "".join(c if c.isalnum() or c in "-_" else "-" for c in name.lower()).strip("-") or "sweep"


def _row_id(row: Mapping[str, Any]) -> str:
    if row.get("id") is not None:
        return str(row["id"])
    q = str(row.get("question", row.get("user_input", "")))
    return "q-" + hashlib.sha256(q.encode()).hexdigest()[:10]


def _is_oos(row: Mapping[str, Any]) -> bool:
    return (row.get("metadata") or {}).get("question_type") == OUT_OF_SCOPE


def judged_ids(rows: Sequence[Mapping[str, Any]], n: int | None, n_oos: int | None = -1) -> set[str]:
    """The first ``n`` questions in scope and the first ``n_oos`` out of scope (default ``n``;
    None: all)."""
    inside = [_row_id(r) for r in rows if not _is_oos(r)]
    outside = [_row_id(r) for r in rows if _is_oos(r)]
    k = n if n_oos == -1 else n_oos
    return set(inside if n is None else inside[:n]) | set(outside if k is None else outside[:k])


def _split_metrics(names: Sequence[str]) -> tuple[list[str], list[str]]:
    metrics = resolve_metrics(list(names))
    judge = [m.key for m in metrics if m.needs_judge or m.needs_embedder]
    other = [m.key for m in metrics if not (m.needs_judge or m.needs_embedder)]
    return other, judge


def _who(model: Any) -> Any:
    """What names a judge or embedder in the fingerprint: its spec, or an instance's identity
    (server, model, model file) or name."""
    if model is None or isinstance(model, str):
        return model
    ident = getattr(model, "identity", None)
    if callable(ident):
        ident = ident()
    if isinstance(ident, Mapping):
        return {str(k): v for k, v in ident.items()}
    inner = getattr(model, "inner", None) or getattr(model, "provider", None)
    return [getattr(model, "name", type(model).__name__), _who(inner) if inner is not None else None]


def _fingerprint(spec: SweepSpec, rows: Sequence[Mapping[str, Any]], *, judge: Any = None,
                 embedder: Any = None) -> str:
    """Everything that changes an answer or a score: the questions, metrics, judge and embedder
    actually used (``judge``/``embedder``: the command line's, else the file's), the server
    they are asked at, the target or pipeline, and the sweep's exact name (two names that slug
    alike never share runs)."""
    basis = {
        "rows": [[_row_id(r), r.get("question"), r.get("reference"),
                  (r.get("metadata") or {}).get("reference_spans")] for r in rows],
        "metrics": list(spec.metrics),
        "judge": _who(judge if judge is not None else spec.judge),
        "embedder": _who(embedder if embedder is not None else spec.embedder),
        "judged": [spec.judge_questions, spec.judge_out_of_scope], "target": spec.target, "template": spec.request_template,
        "documents": [os.path.abspath(spec.path(d)) for d in spec.documents] if spec.reference or spec.factory else None,
    }
    if spec.factory is not None:  # only then: the run ids of the other sweeps stay as they were
        basis["factory"] = [spec.factory, dict(spec.factory_options)]
    server = spec.base_url or os.environ.get("OPENAI_BASE_URL")
    if server:  # the judge, embedder and generator are asked there
        basis["base_url"] = display_url(server.strip().rstrip("/"))
    if _slug(spec.name) != spec.name:
        basis["name"] = spec.name
    return hashlib.sha256(json.dumps(basis, sort_keys=True, default=str).encode()).hexdigest()[:6]


def run_id_for(spec: SweepSpec, config: Configuration, fingerprint: str) -> str:
    return f"sweep-{_slug(spec.name)}-{config.id}-{fingerprint}"


def _sample_row(
    row: Mapping[str, Any], config: Configuration, spec: SweepSpec, *, judged: bool,
    response: str | None, contexts: Sequence[str] | None, ids: Sequence[str] | None,
    spans: Sequence[Mapping[str, Any] | None] | None, meta: Mapping[str, Any],
) -> dict[str, Any]:
    src = dict(row.get("metadata") or {})
    metadata: dict[str, Any] = {
        "question_type": src.get("question_type"),
        "reference_spans": src.get("reference_spans") or [],
        "sweep": spec.name, "config_id": config.id, "judged": judged, **meta,
    }
    if spans is not None:
        metadata["retrieved_spans"] = list(spans)
    out: dict[str, Any] = {"id": _row_id(row), "question": str(row.get("question", row.get("user_input")))}
    if contexts is not None:
        out["contexts"] = list(contexts)
    if ids is not None:
        out["retrieved_ids"] = list(ids)
    if judged:
        if response is not None:
            out["response"] = response
        if row.get("reference") is not None:
            out["reference"] = row["reference"]
        if row.get("reference_contexts"):
            out["reference_contexts"] = row["reference_contexts"]
    elif response is not None:
        metadata["unjudged_response"] = response
    out["metadata"] = {k: v for k, v in metadata.items() if v is not None}
    return out


async def _load_rows(spec: SweepSpec, store: Store, generator: Any, notice: Any) -> list[dict[str, Any]]:
    if spec.testset is None:
        raise ConfigError("sweep: no test set")
    path = Path(spec.path(spec.testset))
    if not path.is_file():
        if spec.generate is None:
            raise InputError(f"{path}: no such test set; give an existing file or [generate] settings")
        try:  # the generated test set is written after paying for it: its path is checked first
            check_writable_target(path, "test set to generate")
        except OSError as exc:
            raise InputError(str(exc)) from None
        # claimed in the store while it is generated: a second sweep waits for the file, and
        # does not pay for another one
        claim = "sweep-testset/" + str(path.resolve())
        told = False
        while not path.is_file() and (holder := store.claim(claim)) is not None:
            if notice and not told:
                notice(f"the test set {path} is being generated by another sweep ({holder}); waiting for it")
                told = True
            await asyncio.sleep(_CLAIM_POLL_S)
        try:
            if not path.is_file():
                await _generate_testset(spec, path, generator, notice)
        finally:
            store.release(claim)
    rows = read_testset(path)
    ids = [_row_id(r) for r in rows]
    if len(set(ids)) != len(ids):
        dup = next(i for i in ids if ids.count(i) > 1)
        raise InputError(f"{path}: question id '{dup}' occurs twice; every question needs its own id "
                         "so that the configurations pair")
    return rows


async def _generate_testset(spec: SweepSpec, path: Path, generator: Any, notice: Any) -> None:
    g = spec.generate
    assert g is not None
    if notice:
        notice(f"generating the test set once: {g.size} questions from {', '.join(spec.documents)} "
               f"(seed {g.seed}) -> {path}")
    corpus = load_corpus([spec.path(d) for d in spec.documents],
                         ChunkSettings(g.chunk_size, g.chunk_overlap, "words"))
    settings = (TestsetSettings(size=g.size, seed=g.seed, types=g.types) if g.types
                else TestsetSettings(size=g.size, seed=g.seed))
    gen = g.generator if g.generator is not None else generator
    result = await agenerate(corpus, gen, settings=settings, notice=notice)
    with atomic_write(path) as f:
        f.write("".join(json.dumps(r, ensure_ascii=False) + "\n" for r in result.rows))
