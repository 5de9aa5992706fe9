"""A LangChain or LlamaIndex pipeline factory as a sweep target.

``make_pipeline(**config)`` builds the user's pipeline for one configuration (chunk size, top-k,
whatever its parameters are) and returns a LangChain runnable (an LCEL chain) or a LlamaIndex
query engine. The sweep calls it once per configuration it runs and asks the result every
question through the integrations' adapters (``aanswer_with_langchain`` /
``aanswer_with_llamaindex``), which capture the retrieved documents through the library's own
callbacks or instrumentation events.

The span metrics need each retrieved chunk's place in its document. A chunk's metadata may say it
(``doc_id``, ``start``, ``end``: character offsets in the document as ragsight reads it); else,
when the sweep names its ``documents``, the chunk's text is found in them: letters and digits
compared, case, spacing, punctuation and markup ignored, so a chunk cut from the raw Markdown
file is found in the text ragsight reads from it. The document a chunk names (LangChain's
``source``, LlamaIndex's ``file_path`` / ``file_name``...) narrows the search, and its start offset
(LangChain's ``start_index``, LlamaIndex's ``start_char_idx``) picks between repeated passages. A chunk is not placed when it is found in
two documents, repeated in one with no offset to choose, or shorter than 12 letters and digits
without naming its document: the span metrics end ``undetermined`` for that sample, with the
rank, and the sample's ``spans_located`` says how many of its chunks were placed.
"""

from __future__ import annotations

import asyncio
import importlib
import inspect
import os
import re
import sys
import warnings
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import PurePath
from typing import Any

from ..errors import ConfigError
from ..integrations import (
    PipelineRun,
    PipelineWarning,
    aanswer_with_langchain,
    aanswer_with_llamaindex,
)
from ..testset import Document

__all__ = ["FACTORY_OPTIONS", "FRAMEWORKS", "SpanLocator", "answer_with_factory", "framework_of", "load_factory"]

FRAMEWORKS = ("langchain", "llamaindex")
# [pipeline] keys passed to the adapter (see answer_with_langchain / answer_with_llamaindex)
FACTORY_OPTIONS = ("framework", "input_key", "answer_key", "ids")
# metadata keys that name a chunk's document, and its start offset, in the two libraries' loaders
_DOC_KEYS = ("doc_id", "source", "file_path", "file_name", "filename", "path")
_START_KEYS = ("start_index", "start_char_idx")
_MD_LINK = re.compile(r"!?\[([^\]]*)\]\([^)]*\)")
MIN_CHARS = 12  # a chunk with fewer letters and digits is not placed: it could be anywhere


def load_factory(spec: str) -> Callable[..., Any]:
    """``module:function`` imported (the current folder first on the path, like ``python -m``)."""
    module, _, attr = spec.partition(":")
    if not module or not attr:
        raise ConfigError(f"factory '{spec}': use module:function, e.g. my_rag:make_pipeline")
    if os.getcwd() not in sys.path and "" not in sys.path:
        sys.path.insert(0, os.getcwd())
    try:
        obj: Any = importlib.import_module(module)
    except ImportError as exc:
        raise ConfigError(f"factory '{spec}': cannot import module '{module}' ({exc})") from exc
    for part in attr.split("."):
        obj = getattr(obj, part, None)
        if obj is None:
            raise ConfigError(f"factory '{spec}': module '{module}' has no '{attr}'")
    if not callable(obj):
        raise ConfigError(f"factory '{spec}': '{attr}' is not callable")
    return obj


def framework_of(pipeline: Any, declared: str | None = None) -> str:
    """``langchain`` for a Runnable (``ainvoke``), ``llamaindex`` for a query engine (``aquery``)."""
    if declared is not None:
        return declared
    if hasattr(pipeline, "aquery"):
        return "llamaindex"
    if hasattr(pipeline, "ainvoke"):
        return "langchain"
    raise ConfigError(f"the factory returned a {type(pipeline).__name__}: return a LangChain runnable "
                      "(an LCEL chain, with ainvoke) or a LlamaIndex query engine (with aquery)")


async def build_pipeline(factory: Callable[..., Any], params: Mapping[str, Any], label: str) -> Any:
    """Call the factory with a configuration's settings (a sync factory in a worker thread: it may
    chunk and embed documents)."""
    try:
        if inspect.iscoroutinefunction(factory):
            return await factory(**params)
        built = await asyncio.to_thread(factory, **params)
        return await built if inspect.isawaitable(built) else built
    except TypeError as exc:
        raise ConfigError(f"the factory could not be called with the settings of configuration '{label}' "
                          f"({', '.join(params)}): {exc}") from exc


async def answer_with_factory(
    pipeline: Any, questions: Sequence[Mapping[str, Any]], options: Mapping[str, Any], concurrency: int,
) -> PipelineRun:
    """Ask a built pipeline every question through its framework's adapter. Questions that raise
    keep their row with the error (the sweep counts them); the adapter's warning is not repeated."""
    framework = framework_of(pipeline, options.get("framework"))
    ids = options.get("ids")
    with warnings.catch_warnings():  # the sweep reports failed questions per configuration itself
        warnings.simplefilter("ignore", PipelineWarning)
        if framework == "langchain":
            return await aanswer_with_langchain(
                pipeline, list(questions), input_key=options.get("input_key"),
                answer_key=options.get("answer_key"), ids=ids or "id", concurrency=concurrency)
        if options.get("input_key") or options.get("answer_key"):
            raise ConfigError("input_key and answer_key are LangChain options; a LlamaIndex query engine "
                              "takes the question and answers with its response")
        return await aanswer_with_llamaindex(pipeline, list(questions), ids=ids or "node", concurrency=concurrency)


# ---- where a retrieved chunk comes from ----------------------------------------------------------


def _normalise(text: str) -> tuple[str, list[int]]:
    """The letters and digits of ``text``, lower-cased, with each one's index in ``text``."""
    chars: list[str] = []
    where: list[int] = []
    for i, ch in enumerate(text):
        if ch.isalnum():
            chars.append(ch.lower())
            where.append(i)
    return "".join(chars), where


@dataclass(frozen=True)
class _Doc:
    doc: Document
    norm: str
    where: list[int]
    names: frozenset[str]


def _int(value: Any) -> int | None:
    return value if isinstance(value, int) and not isinstance(value, bool) else None


class SpanLocator:
    """Places retrieved chunks in the sweep's documents (see the module docstring)."""

    def __init__(self, documents: Sequence[Document]) -> None:
        self.docs: list[_Doc] = []
        for d in documents:
            norm, where = _normalise(d.text)
            p = PurePath(d.path)
            names = frozenset({d.id, d.path, os.path.abspath(d.path), p.name, p.stem})
            self.docs.append(_Doc(d, norm, where, names))
        self._memo: dict[tuple[str, str | None, int | None], dict[str, Any] | None] = {}

    def _named(self, hint: str | None) -> list[_Doc]:
        """The documents a chunk's metadata names (none when it names none of them)."""
        if not hint:
            return []
        h = str(hint)
        posix = h.replace("\\", "/")
        name = PurePath(posix).name
        return [d for d in self.docs if h in d.names or name in d.names or posix.endswith("/" + d.doc.id)]

    def span(self, document: Mapping[str, Any]) -> dict[str, Any] | None:
        """``{"doc_id", "start", "end"}`` for a captured document (``text`` and ``metadata``), or
        None when it cannot be placed."""
        meta = document.get("metadata") or {}
        start, end = _int(meta.get("start")), _int(meta.get("end"))
        if meta.get("doc_id") is not None and start is not None and end is not None and 0 <= start <= end:
            return {"doc_id": str(meta["doc_id"]), "start": start, "end": end}
        text = document.get("text")
        if not isinstance(text, str) or not self.docs:
            return None
        hint = next((str(meta[k]) for k in _DOC_KEYS if meta.get(k) not in (None, "")), None)
        offsets = document.get("offsets") or {}
        hint_start = next((_int(x) for x in (offsets.get("start"), *(meta.get(k) for k in _START_KEYS))
                           if _int(x) is not None), None)
        key = (text, hint, hint_start)
        if key not in self._memo:
            self._memo[key] = self._find(text, hint, hint_start)
        return self._memo[key]

    def _find(self, text: str, hint: str | None, hint_start: int | None) -> dict[str, Any] | None:
        named = self._named(hint)
        for candidate in (text, _MD_LINK.sub(r"\1", text)):
            needle, _ = _normalise(candidate)
            # a short chunk is placed only in the document it names: elsewhere it could be anywhere
            if not needle or (len(needle) < MIN_CHARS and not named):
                return None
            hits: list[tuple[_Doc, int]] = []
            for d in named or self.docs:
                at = d.norm.find(needle)
                while at >= 0:
                    hits.append((d, at))
                    at = d.norm.find(needle, at + 1)
            if not hits:
                continue
            if len({id(d) for d, _ in hits}) > 1:
                return None  # the same passage in two documents, and nothing says which
            d = hits[0][0]
            starts = [at for _, at in hits]
            if len(starts) > 1 and hint_start is None:
                return None  # repeated in its document, and no offset says which
            # the occurrence whose start is nearest the offset the chunk came with
            chosen = starts[0] if hint_start is None else min(starts, key=lambda at: abs(d.where[at] - hint_start))
            return {"doc_id": d.doc.id, "start": d.where[chosen], "end": d.where[chosen + len(needle) - 1] + 1}
        return None
