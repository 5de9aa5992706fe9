"""The Ray backend on two nodes of one cluster (two raylets on this machine, each with its own
processes, object store and session folder: ``ray.cluster_utils.Cluster``): the samples are
evaluated on both nodes, the worker node is killed mid-run, and the results are those of one
process.

The head node (2 CPUs) runs the driver's actors (rate limiter, cache) and one worker; the second
node (1 CPU) runs the other. When the second node dies, the batches it held go back to the queue,
its worker is restarted on the head, and the run ends with every sample scored once, exactly as
the in-process engine scores them. Needs the ``ray`` extra; takes about half a minute.
"""

from __future__ import annotations

import asyncio
import functools
import logging
import os
import threading
import time
from collections.abc import Iterator, Mapping
from pathlib import Path
from typing import Any

import pytest

ray = pytest.importorskip("ray", reason="the Ray backend needs the 'ray' extra: pip install 'ragsight[ray]'")
from ray.cluster_utils import Cluster  # noqa: E402

from ragsight.engine import SampleOutcome  # noqa: E402
from ragsight.judge import ScriptedProvider  # noqa: E402
from tests.fakes.embedder import TableEmbedder  # noqa: E402
from tests.integration.test_ray import (  # noqa: E402
    HANDLERS,
    METRICS,
    Run,
    assert_same_scores,
    local_run,
    ray_run,
    rows,
)

pytestmark = [pytest.mark.slow, pytest.mark.ray]

ROOT = Path(__file__).resolve().parents[2]


def _slowly(handler: Any, v: Mapping[str, Any]) -> Any:
    time.sleep(0.03)  # a judge that takes time, so that work is in flight when the node dies
    return handler(v)


def slow_provider() -> ScriptedProvider:
    return ScriptedProvider({k: functools.partial(_slowly, h) for k, h in HANDLERS.items()}, model="scripted-world")


@pytest.fixture(scope="module")
def two_nodes() -> Iterator[tuple[Any, Any]]:
    """A head node (2 CPUs) and a worker node (1 CPU), each its own raylet; the driver connects
    to the head. The nodes inherit the repository on their PYTHONPATH (to import this module)."""
    if ray.is_initialized():
        pytest.skip("Ray is already initialised in this process")
    env = {"RAY_USAGE_STATS_ENABLED": "0",
           "PYTHONPATH": os.pathsep.join(p for p in (str(ROOT), os.environ.get("PYTHONPATH")) if p)}
    saved = {k: os.environ.get(k) for k in env}
    os.environ.update(env)
    cluster = Cluster(initialize_head=True, head_node_args={"num_cpus": 2, "include_dashboard": False})
    try:
        worker = cluster.add_node(num_cpus=1)
        cluster.wait_for_nodes()
        ray.init(address=cluster.address, log_to_driver=False, logging_level=logging.WARNING)
        yield cluster, worker
    finally:
        ray.shutdown()
        cluster.shutdown()
        for k, v in saved.items():
            if v is None:
                os.environ.pop(k, None)
            else:
                os.environ[k] = v


def test_two_nodes_lose_one_mid_run_and_match_one_process(two_nodes: tuple[Any, Any], tmp_path: Path) -> None:
    cluster, worker_node = two_nodes
    head_id = cluster.head_node.node_id
    worker_id = worker_node.node_id
    assert {n["NodeID"] for n in ray.nodes() if n["Alive"]} == {head_id, worker_id}
    raylet_pid = worker_node.all_processes["raylet"][0].process.pid
    os.kill(raylet_pid, 0)  # the worker node's raylet runs

    local = asyncio.run(local_run(tmp_path / "local.db", slow_provider(), TableEmbedder()))

    seen: list[tuple[float, str | None]] = []
    killed: dict[str, float] = {}

    def kill_worker_node() -> None:
        cluster.remove_node(worker_node, allow_graceful=False)
        killed["at"] = time.monotonic()

    def on_sample(outcome: SampleOutcome) -> None:
        seen.append((time.monotonic(), outcome.node))
        # once the worker node has saved a few samples (and holds more), kill it
        if "started" not in killed and sum(1 for _, n in seen if n == worker_id) >= 3:
            killed["started"] = time.monotonic()
            threading.Thread(target=kill_worker_node, daemon=True).start()

    dist: Run = asyncio.run(ray_run(tmp_path / "ray.db", slow_provider, TableEmbedder(), workers=2,
                                    batch_size=2, on_sample=on_sample))

    assert "at" in killed, "the worker node was never killed"
    nodes = {n for _, n in seen}
    assert worker_id in nodes and head_id in nodes  # samples were evaluated on both nodes
    after = [n for t, n in seen if t > killed["at"]]
    # the run went on, on the head alone: a batch the worker node finished just before it died
    # may still be saved after the kill (at most the batches it held: 2 of 2 samples), and
    # everything else after the kill, and the run's last sample, came from the head
    late = [n for n in after if n == worker_id]
    assert len(late) <= 4, f"{len(late)} samples of the dead node saved after it was removed"
    assert head_id in after and after[-1] == head_id
    assert set(after) <= {head_id, worker_id}
    with pytest.raises(ProcessLookupError):
        os.kill(raylet_pid, 0)  # the worker node's raylet is gone
    # results identical to one process; every sample saved once, with its steps once
    assert_same_scores(local, dist, ignore_cached=True)
    assert dist.calls() == local.calls()
    assert dist.store.finished_samples(dist.run_id) == {r["id"] for r in rows()}
    assert len(seen) == len(rows())
    assert sorted(local.scores()) == sorted(dist.scores()) and len(METRICS) == 7
