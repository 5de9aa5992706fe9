"""Spans grouped into samples by the OpenInference conventions: the spans of one trace are one
RAG request, read from its request span (the top-most one with an ``openinference.span.kind``),
its RETRIEVER and RERANKER spans' documents and its LLM span's answer; an agent's trace with
TOOL spans and no retriever becomes a conversation of its calls and results (``_trace_agent``); a
failed request, a trace with neither and parent links that loop are skipped and said.
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from typing import Any

from ._trace_agent import agent_row
from ._trace_common import (
    _ANSWER_KEYS,
    _QUESTION_KEYS,
    TraceImport,
    TraceProblem,
    _drop,
    _id_text,
    _json_or_text,
    _number,
    _pick_text,
    _row,
    _score,
    _shown,
)
from ._trace_langfuse import langfuse_spans
from ._trace_spans import _Span

_DOC_KEY = re.compile(r"^(retrieval\.documents|reranker\.output_documents)\.([0-9]+)\.document\.(\w+)$")
_LLM_MESSAGE_KEY = re.compile(r"^llm\.output_messages\.([0-9]+)\.message\.content$")
_MAX_INDEX = 100_000  # a document number beyond this is not a retriever's list


def _documents(span: _Span, prefix: str, result: TraceImport) -> list[dict[str, Any]] | None:
    """The documents of a retriever (``retrieval.documents``) or reranker
    (``reranker.output_documents``) span, in order; None when a document has no content."""
    found: dict[int, dict[str, Any]] = {}
    for key, value in span.attributes.items():
        m = _DOC_KEY.match(key)
        if m and m.group(1) == prefix:
            if len(m.group(2)) > len(str(_MAX_INDEX)) or int(m.group(2)) > _MAX_INDEX:
                _drop(result, span.trace_id, f"{span.kind.lower()} span {span.span_id} has a document "
                      f"numbered {_shown(int(m.group(2)) if len(m.group(2)) < 40 else m.group(2))} "
                      f"(attribute {_shown(key, 60)}); more than {_MAX_INDEX:,} is not a retriever's list")
                return None
            found.setdefault(int(m.group(2)), {})[m.group(3)] = value
    docs = []
    for index in range(max(found) + 1 if found else 0):
        doc = found.get(index)
        if doc is None:
            _drop(result, span.trace_id, f"{span.kind.lower()} span {span.span_id} has no {prefix}.{index} "
                  f"(documents {sorted(found)} are there)")
            return None
        if not isinstance(doc.get("content"), str) or not doc["content"].strip():
            _drop(result, span.trace_id, f"{span.kind.lower()} span {span.span_id} has no text at "
                  f"{prefix}.{index}.document.content")
            return None
        meta = _json_or_text(doc.get("metadata"))
        score = _score(doc.get("score"), f"{span.kind.lower()} span {span.span_id}: "
                       f"{prefix}.{index}.document.score", span.trace_id, result)
        ident = doc.get("id")
        docs.append({"content": doc["content"], "id": None if ident is None else _id_text(ident),
                     "score": score,
                     "metadata": meta if isinstance(meta, Mapping) else ({} if meta is None else {"value": meta})})
    return docs


def _llm_answer(span: _Span) -> str | None:
    messages = sorted(  # by number, compared as digit strings (any length)
        (len(m.group(1).lstrip("0")), m.group(1).lstrip("0"), v) for k, v in span.attributes.items()
        if (m := _LLM_MESSAGE_KEY.match(k)) and isinstance(v, str)
    )
    if messages:
        return messages[-1][2]
    return _pick_text(span.attributes.get("output.value"), _ANSWER_KEYS)


def _openinference(spans: Sequence[_Span], result: TraceImport) -> None:
    by_trace: dict[str, list[_Span]] = {}
    for span in spans:
        by_trace.setdefault(span.trace_id, []).append(span)
    result.traces = len(by_trace)
    for trace_id, trace in by_trace.items():
        trace.sort(key=lambda s: (s.start if s.start is not None else float("inf")))
        if not any(s.kind for s in trace):
            langfuse, row = langfuse_spans(trace_id, trace, result)  # Langfuse's SDK wrote them
            if langfuse:
                _span_notes(trace_id, trace, result, imported=row is not None)
                if row is not None:
                    result.rows.append(row)
                continue
            result.skipped["no OpenInference span (openinference.span.kind) in the trace"] += 1
            _span_notes(trace_id, trace, result, imported=False)
            continue
        by_id = {s.span_id: s for s in trace}
        above, loop = _kinded_above(by_id)
        if loop:
            shown = " -> ".join([*loop, loop[0]]) if len(loop) <= 4 else \
                " -> ".join(loop[:3]) + f" -> ... ({len(loop)} spans) -> {loop[0]}"
            _drop(result, trace_id, f"the parent links of its spans loop ({shown}): not a tree of spans")
            _span_notes(trace_id, trace, result, imported=False)
            continue
        row = _trace_row(trace_id, trace, result, by_id, above)
        _span_notes(trace_id, trace, result, imported=row is not None)
        if row is not None:
            result.rows.append(row)
            session = next((_id_text(v) for sp in trace if (v := sp.attributes.get("session.id")) not in (None, "")), None)
            result.sessions[trace_id] = (session, trace[0].start)


def _span_notes(trace_id: str, trace: Sequence[_Span], result: TraceImport, imported: bool) -> None:
    for span in trace:
        for note in span.notes:
            result.problems.append(TraceProblem(trace_id, f"span {span.span_id}: {note}", imported=imported,
                                                missing=True))


def _kinded_above(by_id: Mapping[str, _Span]) -> tuple[dict[str, str | None], list[str]]:
    """For each span id, the id of its nearest ancestor with an OpenInference kind (None: it has
    none), found in one walk over the parent links (linear in the spans, however long a chain);
    or, when the parent links loop, the ids of the loop (second value)."""
    above: dict[str, str | None] = {}
    for start in by_id:
        path: list[str] = []
        on_path: set[str] = set()
        sid: str | None = start
        while sid is not None and sid in by_id and sid not in above:
            if sid in on_path:
                return above, path[path.index(sid):]
            on_path.add(sid)
            path.append(sid)
            sid = by_id[sid].parent_id
        for x in reversed(path):
            parent = by_id[x].parent_id
            if parent is None or parent not in by_id:
                above[x] = None
            else:
                above[x] = parent if by_id[parent].kind else above[parent]
    return above, []


def _request_span(trace_id: str, trace: list[_Span], result: TraceImport, above: Mapping[str, str | None],
                  roots: list[_Span]) -> _Span:
    """The span of the RAG request: the top-most OpenInference span. A span of other
    instrumentation above it (an HTTP server span of the web framework, a job's span) has no
    ``input.value``, and would make the retriever's rewritten query pass for the question."""
    if len(roots) > 1:
        result.problems.append(TraceProblem(trace_id, f"{len(roots)} root spans (parents missing from the "
                                            f"file); the earliest, {roots[0].span_id}, is taken as the request",
                                            imported=True, missing=False))
    if roots[0].kind:
        return roots[0]
    tops = [s for s in trace if s.kind and above.get(s.span_id) is None]  # in start order
    if not tops:
        return roots[0]
    # several (a question-rewriting chain, then the RAG chain): the one the retrieval ran under,
    # which is the top-most span with a kind among the retrieval's ancestors
    retrieval = next((s for s in trace if s.kind in ("RETRIEVER", "RERANKER")), None)
    top_id: str | None = None
    at = above.get(retrieval.span_id) if retrieval is not None else None
    while at is not None:
        top_id, at = at, above.get(at)
    return next((s for s in tops if top_id is not None and s.span_id == top_id),
                next((s for s in tops if s.kind != "RETRIEVER"), tops[0]))


def _failed(span: _Span) -> bool:
    return span.status in ("ERROR", "STATUS_CODE_ERROR", "2")


def _trace_row(trace_id: str, trace: list[_Span], result: TraceImport, by_id: Mapping[str, _Span],
               above: Mapping[str, str | None]) -> dict[str, Any] | None:
    roots = [s for s in trace if s.parent_id is None or s.parent_id not in by_id]  # one at least: no loop
    outer = roots[0]
    root = _request_span(trace_id, trace, result, above, roots)
    failed = next((s for s in (root, outer) if _failed(s)), None)  # the web server's span may say so
    if failed is not None:
        detail = f": {failed.status_message}" if failed.status_message else ""
        result.skipped["the request failed (root span status ERROR)"] += 1
        result.problems.append(TraceProblem(trace_id, f"the request failed{detail}"))
        return None
    retrievers = [s for s in trace if s.kind == "RETRIEVER"]
    rerankers = [s for s in trace if s.kind == "RERANKER"]
    llms = [s for s in trace if s.kind == "LLM"]
    if not retrievers and not rerankers:
        latency = _number(root.end - root.start) if root.start is not None and root.end is not None else None
        agent = agent_row(trace_id, trace, root, {  # an agent's tool calls: a conversation row
            "trace_id": trace_id, "span_id": root.span_id, "trace_name": root.name,
            "tool_span_ids": [s.span_id for s in trace if s.kind == "TOOL"],
            "latency_s": round(latency, 6) if latency is not None else None, "source": "openinference"})
        if agent is not None:
            return agent
        result.skipped["no RETRIEVER span: not a RAG request"] += 1
        return None
    docs: list[dict[str, Any]] = []
    for span in retrievers:
        got = _documents(span, "retrieval.documents", result)
        if got is None:
            return None
        docs.extend(got)
    source = "retriever"
    if rerankers:
        got = _documents(rerankers[-1], "reranker.output_documents", result)
        if got is None:
            return None
        if got:
            docs, source = got, "reranker"
    question = _pick_text(root.attributes.get("input.value"), _QUESTION_KEYS)
    if question is None and retrievers:
        question = _pick_text(retrievers[0].attributes.get("input.value"), _QUESTION_KEYS)
        if question is not None and retrievers[0] is not root:
            result.problems.append(TraceProblem(
                trace_id, f"no input.value on the request span {root.span_id}: the question is the "
                f"retriever's query (span {retrievers[0].span_id}), which may be a rewritten one",
                imported=True, missing=False))
    if question is None:
        _drop(result, trace_id, f"no question: neither the root span {root.span_id} nor the retriever "
              "span has input.value")
        return None
    answer = None if root.kind == "RETRIEVER" else _pick_text(root.attributes.get("output.value"), _ANSWER_KEYS)
    llm = llms[-1] if llms else None
    if answer is None and llm is not None:
        answer = _llm_answer(llm)
    if answer is None:
        result.problems.append(TraceProblem(trace_id, "no answer: no output.value on the root span "
                                            f"{root.span_id} and no LLM span output", imported=True))
    if not docs:
        result.problems.append(TraceProblem(trace_id, "the retriever returned no documents", imported=True))
    latency = _number(root.end - root.start) if root.start is not None and root.end is not None else None
    meta: dict[str, Any] = {
        "trace_id": trace_id, "span_id": root.span_id, "trace_name": root.name,
        "retriever_span_ids": [s.span_id for s in retrievers],
        "llm_span_id": llm.span_id if llm else None,
        "contexts_from": source,
        "retrieval_scores": [d["score"] for d in docs],
        "documents": [{"id": d["id"], "score": d["score"], "metadata": d["metadata"]} for d in docs],
        "latency_s": round(latency, 6) if latency is not None else None,
        "source": "openinference",
    }
    return _row(trace_id, question, docs, answer, meta)
