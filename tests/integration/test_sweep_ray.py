"""A sweep with --backend ray: every configuration's samples are evaluated by a local Ray cluster's
workers, and the scores equal those of the in-process sweep."""

from __future__ import annotations

from pathlib import Path

import pytest

from ragsight import Store
from ragsight.judge import ScriptedProvider
from ragsight.sweep import asweep, load_sweep
from tests.fakes.embedder import TableEmbedder
from tests.integration.test_ray import ray_cluster  # noqa: F401 - the module's Ray instance
from tests.unit.test_sweep import (
    claims_handler,
    declines_handler,
    generator_provider,
    make_world,
    pipeline,
    spec_dict,
    verify_handler,
)

pytestmark = [pytest.mark.slow, pytest.mark.ray]  # a Ray instance


def judge() -> ScriptedProvider:
    return ScriptedProvider({"extract_claims": claims_handler, "verify_claims": verify_handler,
                             "declines_json": declines_handler}, model="judge-model")


async def test_a_sweep_on_ray_scores_as_the_local_sweep(ray_cluster: None, tmp_path: Path) -> None:  # noqa: F811
    docs, ts = make_world(tmp_path)
    spec = load_sweep(spec_dict(docs, ts))
    runs = {}
    for backend in ("local", "ray"):
        store = Store(tmp_path / f"{backend}.db")
        gen, emb = generator_provider(), TableEmbedder(dim=12)
        result = await asweep(spec, store=store, judge=judge(), embedder=emb, backend=backend, preflight=False,
                              pipeline=pipeline(docs, store, gen, emb))
        assert [r.status for r in result.runs] == ["completed"] * 4
        runs[backend] = {r.config.id: {sid: {m: (s.outcome, s.value) for m, s in per.items()}
                                       for sid, per in store.scores(r.run_id).items()} for r in result.runs}
        store.close()
    assert runs["ray"] == runs["local"]
