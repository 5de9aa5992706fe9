"""Evaluate a LlamaIndex query engine directly (``pip install 'ragsight[llamaindex]'``).

Each question of a test set goes to the user's query engine while an event handler listens on
LlamaIndex's instrumentation dispatcher: every ``RetrievalEndEvent`` gives the nodes retrieved
(text, node id, source document id, score, metadata), so the sample holds what the engine
actually retrieved (after its node postprocessors when the engine reports them as the response's
source nodes). The answer is the engine's response text. Questions run concurrently; a context
variable routes each event to the question that caused it.

LlamaIndex is imported when the function is called, never at ``import ragsight``. Its default
tokenizer is tiktoken's, which downloads an encoding file on first use: a pipeline meant to run
offline sets ``Settings.tokenizer`` (see docs/integrations/llamaindex.md).
"""

from __future__ import annotations

import asyncio
import contextvars
from typing import Any

from ..errors import ConfigError, MissingExtraError
from ._pipeline import Capture, PipelineRun, answer_each

__all__ = ["aanswer_with_llamaindex", "answer_with_llamaindex"]

# the capture of the question being asked in this context (events arrive in the asking task)
_current: contextvars.ContextVar[list[Any] | None] = contextvars.ContextVar("ragsight_llamaindex", default=None)


def _import() -> tuple[Any, Any, Any]:
    try:
        from llama_index.core.instrumentation import get_dispatcher
        from llama_index.core.instrumentation.event_handlers import BaseEventHandler
        from llama_index.core.instrumentation.events.retrieval import RetrievalEndEvent
    except ImportError as exc:
        raise MissingExtraError("evaluating a LlamaIndex query engine", "llamaindex", "llama-index-core") from exc
    return get_dispatcher, BaseEventHandler, RetrievalEndEvent


def _handler(base: Any, retrieval_end: Any) -> Any:
    class RagsightCapture(base):
        """Sends each retrieval's nodes to the question being asked in the current context."""

        @classmethod
        def class_name(cls) -> str:
            return "RagsightCapture"

        def handle(self, event: Any, **kwargs: Any) -> None:
            box = _current.get()
            if box is not None and isinstance(event, retrieval_end):
                box.append(list(event.nodes or []))

    return RagsightCapture()


def _node(scored: Any, ids: str) -> dict[str, Any]:
    """A NodeWithScore as a captured document: its text, the id chosen by ``ids``, its score."""
    node = getattr(scored, "node", scored)
    try:
        from llama_index.core.schema import MetadataMode

        text = node.get_content(metadata_mode=MetadataMode.NONE)
    except (ImportError, AttributeError, TypeError):
        text = getattr(node, "text", None)
    if not isinstance(text, str):
        raise TypeError(f"a retrieved node ({type(node).__name__}) has no text")
    metadata = dict(getattr(node, "metadata", None) or {})
    if ids == "node":
        ident = getattr(node, "node_id", None)
    elif ids == "document":
        ident = getattr(node, "ref_doc_id", None)
    else:
        ident = metadata.get(ids)
    score = getattr(scored, "score", None)
    out = {"text": text, "id": None if ident in (None, "") else str(ident),
           "score": float(score) if isinstance(score, (int, float)) and not isinstance(score, bool) else None,
           "metadata": metadata}
    start, end = getattr(node, "start_char_idx", None), getattr(node, "end_char_idx", None)
    if isinstance(start, int) and isinstance(end, int):  # where the node sits in its source document
        out["offsets"] = {"start": start, "end": end}
    return out


async def aanswer_with_llamaindex(
    query_engine: Any, testset: Any, *, ids: str = "node", concurrency: int = 4,
) -> PipelineRun:
    """Async form of :func:`answer_with_llamaindex`."""
    get_dispatcher, base, retrieval_end = _import()
    if not hasattr(query_engine, "aquery"):
        raise ConfigError(f"cannot run {type(query_engine).__name__}: give a LlamaIndex query engine "
                          "(index.as_query_engine())")
    dispatcher = get_dispatcher()  # the root: events of every module propagate to it
    handler = _handler(base, retrieval_end)
    name = type(query_engine).__name__

    async def ask(question: str) -> Capture:
        box: list[Any] = []
        token = _current.set(box)
        try:
            response = await query_engine.aquery(question)
        finally:
            _current.reset(token)
        answer = getattr(response, "response", None)
        if answer is None and not hasattr(response, "response"):
            answer = str(response)
        if not isinstance(answer, str):
            raise ValueError(f"the query engine's response ({type(response).__name__}) has no text "
                             "(a streaming engine? evaluate with streaming=False)")
        sources = list(getattr(response, "source_nodes", None) or [])
        # what the generator saw: the response's source nodes (postprocessed) when it reports
        # them, else every retrieval's nodes
        nodes = sources if sources else [n for run in box for n in run]
        extra = {"retrievals": len(box), "contexts_from": "source_nodes" if sources else "retrieval_events",
                 "retrieved_before_postprocessing": [str(getattr(getattr(n, "node", n), "node_id", ""))
                                                     for run in box for n in run]}
        return Capture(answer, [_node(n, ids) for n in nodes], extra)

    dispatcher.add_event_handler(handler)
    try:
        return await answer_each(testset, ask, pipeline=f"llamaindex:{name}", concurrency=concurrency)
    finally:
        dispatcher.event_handlers = [h for h in dispatcher.event_handlers if h is not handler]


def answer_with_llamaindex(
    query_engine: Any, testset: Any, *, ids: str = "node", concurrency: int = 4,
) -> PipelineRun:
    """Ask a LlamaIndex query engine every question of ``testset`` and capture, through LlamaIndex's
    instrumentation events, the nodes it retrieved and its answer.

    ``testset``: a path (.jsonl, .json, .csv, .parquet), a list of dicts or a Dataset; its other
    fields (id, reference, relevant_ids...) are kept. ``ids`` picks the id that becomes
    ``retrieved_ids`` for the IR metrics: ``"node"`` (the chunk's node id), ``"document"`` (the
    source document's id, ``ref_doc_id``) or a metadata key.

    Example::

        run = answer_with_llamaindex(index.as_query_engine(), "testset.jsonl")
        result = ragsight.evaluate(run.rows, judge="openai:gpt-4o-mini")
    """
    return asyncio.run(aanswer_with_llamaindex(query_engine, testset, ids=ids, concurrency=concurrency))
