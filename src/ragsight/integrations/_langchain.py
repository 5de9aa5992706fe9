"""Evaluate a LangChain pipeline directly (``pip install 'ragsight[langchain]'``).

Each question of a test set is given to the user's runnable (an LCEL chain with a retriever in
it, or any Runnable) with a callback handler of LangChain's own callback system attached: the
handler records every retriever run's documents (``on_retriever_end``) and the LLM outputs, so
the sample holds exactly the documents the chain retrieved, with their ids and metadata. The
answer is the chain's output (a string, a message, or a dict's ``answer`` / ``output`` /
``result`` / ``response`` / ``text``), else the last LLM output.

LangChain is imported when the function is called, never at ``import ragsight``. Nothing here
turns on LangSmith tracing; a chain the user configured to trace still does.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable, Mapping
from typing import Any

from ..errors import ConfigError, MissingExtraError
from ._pipeline import Capture, PipelineRun, answer_each

__all__ = ["aanswer_with_langchain", "answer_with_langchain"]

_ANSWER_KEYS = ("answer", "output", "result", "response", "text", "content")


def _import() -> Any:
    try:
        from langchain_core.callbacks import BaseCallbackHandler
    except ImportError as exc:
        raise MissingExtraError("evaluating a LangChain pipeline", "langchain", "langchain-core") from exc
    return BaseCallbackHandler


def _handler_class() -> type:
    base = _import()

    class RagsightCapture(base):  # type: ignore[misc, valid-type]
        """Records what one invocation retrieved and generated."""

        raise_error = False
        run_inline = True

        def __init__(self) -> None:
            super().__init__()
            self.retrievals: list[list[Any]] = []
            self.llm_texts: list[str] = []
            self.root_run_id: str | None = None

        def on_chain_start(self, serialized: Any, inputs: Any, *, run_id: Any,
                           parent_run_id: Any = None, **kwargs: Any) -> None:
            if parent_run_id is None and self.root_run_id is None:
                self.root_run_id = str(run_id)

        def on_retriever_end(self, documents: Any, *, run_id: Any, parent_run_id: Any = None,
                             **kwargs: Any) -> None:
            self.retrievals.append(list(documents))

        def on_llm_end(self, response: Any, *, run_id: Any, parent_run_id: Any = None,
                       **kwargs: Any) -> None:
            generations = getattr(response, "generations", None) or []
            if generations and generations[-1]:
                text = getattr(generations[-1][-1], "text", None)
                if isinstance(text, str):
                    self.llm_texts.append(text)

    return RagsightCapture


def _document(doc: Any, ids: str) -> dict[str, Any]:
    """A LangChain Document (page_content, metadata, id) as a captured document."""
    text = getattr(doc, "page_content", None)
    if not isinstance(text, str):
        raise TypeError(f"the retriever returned a {type(doc).__name__}, not a Document with page_content")
    metadata = dict(getattr(doc, "metadata", None) or {})
    ident = getattr(doc, "id", None) if ids == "id" else metadata.get(ids)
    score = metadata.get("score")
    return {"text": text, "id": None if ident in (None, "") else str(ident),
            "score": float(score) if isinstance(score, (int, float)) and not isinstance(score, bool) else None,
            "metadata": metadata}


def _answer_of(output: Any, answer_key: str | None) -> str | None:
    if answer_key is not None:
        if not isinstance(output, Mapping) or answer_key not in output:
            raise ValueError(f"the chain's output has no '{answer_key}' (answer_key); it is {type(output).__name__}"
                             + (f" with keys {sorted(output)}" if isinstance(output, Mapping) else ""))
        output = output[answer_key]
    if isinstance(output, str):
        return output
    content = getattr(output, "content", None)  # an AIMessage
    if isinstance(content, str):
        return content
    if isinstance(output, Mapping):
        for key in _ANSWER_KEYS:
            if key in output:
                return _answer_of(output[key], None)
    return None


async def aanswer_with_langchain(
    runnable: Any,
    testset: Any,
    *,
    input_key: str | None = None,
    make_input: Callable[[str], Any] | None = None,
    answer_key: str | None = None,
    ids: str = "id",
    concurrency: int = 4,
    config: Mapping[str, Any] | None = None,
) -> PipelineRun:
    """Async form of :func:`answer_with_langchain`."""
    handler_class = _handler_class()
    if not hasattr(runnable, "ainvoke"):
        raise ConfigError(f"cannot run {type(runnable).__name__}: give a LangChain Runnable (an LCEL chain)")
    if input_key is not None and make_input is not None:
        raise ConfigError("give input_key or make_input, not both")
    name = getattr(runnable, "name", None) or type(runnable).__name__

    async def ask(question: str) -> Capture:
        handler = handler_class()
        value = make_input(question) if make_input else ({input_key: question} if input_key else question)
        cfg = dict(config or {})
        cfg["callbacks"] = [*list(cfg.get("callbacks") or []), handler]
        output = await runnable.ainvoke(value, config=cfg)
        answer = _answer_of(output, answer_key)
        if answer is None and handler.llm_texts:
            answer = handler.llm_texts[-1]
        if answer is None:
            raise ValueError(f"no answer in the chain's output ({type(output).__name__}) and no LLM output "
                             "seen; give answer_key=")
        documents = [_document(d, ids) for run in handler.retrievals for d in run]
        extra = {"langchain_run_id": handler.root_run_id, "retriever_runs": len(handler.retrievals)}
        return Capture(answer, documents, extra)

    return await answer_each(testset, ask, pipeline=f"langchain:{name}", concurrency=concurrency)


def answer_with_langchain(
    runnable: Any,
    testset: Any,
    *,
    input_key: str | None = None,
    make_input: Callable[[str], Any] | None = None,
    answer_key: str | None = None,
    ids: str = "id",
    concurrency: int = 4,
    config: Mapping[str, Any] | None = None,
) -> PipelineRun:
    """Ask a LangChain runnable every question of ``testset`` and capture, through LangChain's
    callbacks, the documents its retrievers returned and its answer.

    ``testset``: a path (.jsonl, .json, .csv, .parquet), a list of dicts or a Dataset; its other
    fields (id, reference, relevant_ids...) are kept. The runnable gets the question string,
    ``{input_key: question}``, or ``make_input(question)``. ``answer_key`` picks the answer from a
    dict output. ``ids`` names where a document's id is read: ``"id"`` (``Document.id``) or a
    metadata key; the ids become ``retrieved_ids`` for the IR metrics when every document has
    one. ``config`` is passed to ``ainvoke`` (with the capturing callback added).

    Example::

        run = answer_with_langchain(chain, "testset.jsonl")
        result = ragsight.evaluate(run.rows, judge="openai:gpt-4o-mini")
    """
    return asyncio.run(aanswer_with_langchain(
        runnable, testset, input_key=input_key, make_input=make_input, answer_key=answer_key, ids=ids,
        concurrency=concurrency, config=config))
