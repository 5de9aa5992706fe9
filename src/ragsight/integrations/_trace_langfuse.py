"""Langfuse's trace export to samples: traces with their observations (or observations alone,
grouped by ``traceId``), one sample per trace from its retriever observations' documents (in the
shapes LangChain, LlamaIndex and OpenInference store them), its input and its output or last
generation's; the trace's ``sessionId`` kept for grouping into conversations. A trace without a
retriever whose observations include TOOL calls is an agent's: a conversation row
(:mod:`._trace_langfuse_agent`). Langfuse's OpenTelemetry spans are read the same way, turned
into observations first (:func:`langfuse_spans`).
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from typing import Any

from ._trace_common import (
    _ANSWER_KEYS,
    _MAX_DEPTH,
    _QUESTION_KEYS,
    TraceImport,
    TraceProblem,
    _drop,
    _flatten,
    _id_text,
    _json_or_text,
    _kind,
    _number,
    _pick_text,
    _row,
    _score,
    _shown,
    _time,
    _too_deep,
)
from ._trace_langfuse_agent import langfuse_agent_row, langfuse_observations

_LF_RETRIEVER_NAMES = re.compile(r"retriev", re.I)


def _lf_document(item: Any) -> dict[str, Any] | None:
    """One document from a retriever observation's output, in the shapes Langfuse stores:
    a LangChain Document (page_content, metadata, id), a LlamaIndex NodeWithScore (node, score),
    an OpenInference document (document.content...), or {text|content, id, score}."""
    if isinstance(item, str):
        return {"content": item, "id": None, "score": None, "metadata": {}}
    if not isinstance(item, Mapping):
        return None
    if isinstance(item.get("node"), Mapping):  # LlamaIndex NodeWithScore
        node = item["node"]
        doc = _lf_document(node)
        if doc is not None:
            if doc["id"] is None:
                doc["id"] = node.get("id_")
            score = item.get("score")
            doc["score"] = score if isinstance(score, (int, float)) and not isinstance(score, bool) else doc["score"]
        return doc
    flat: dict[str, Any] = {}
    _flatten("", item, flat)
    content = next((item.get(k) for k in ("page_content", "text", "content", "document.content")
                    if isinstance(item.get(k), str)), None)
    if content is None:
        content = flat.get("document.content")
    if not isinstance(content, str):
        return None
    raw_meta = item.get("metadata")
    meta: Mapping[str, Any] = raw_meta if isinstance(raw_meta, Mapping) else {}
    # the chunk's own id only: a "source" file name is shared by all its chunks
    ident = next((v for v in (item.get("id"), item.get("id_"), flat.get("document.id"), meta.get("id"))
                  if v not in (None, "")), None)
    score = next((v for v in (item.get("score"), flat.get("document.score"), meta.get("score"))
                  if isinstance(v, (int, float)) and not isinstance(v, bool)), None)
    # the score as given (a number or None); _langfuse_row reads it with _score
    return {"content": content, "id": None if ident is None else _id_text(ident),
            "score": score, "metadata": dict(meta)}


def _lf_documents(output: Any) -> list[dict[str, Any]] | None:
    output = _json_or_text(output)
    if isinstance(output, Mapping):
        for key in ("documents", "nodes", "source_nodes", "retrieval.documents", "output"):
            if isinstance(output.get(key), list):
                output = output[key]
                break
    if not isinstance(output, list):
        return None
    docs = [_lf_document(item) for item in output]
    return None if any(d is None for d in docs) else [d for d in docs if d is not None]


def _lf_id(value: Any) -> str | None:
    """A Langfuse trace id as given (text or a whole number); None for anything else."""
    if isinstance(value, str) and value:
        return value
    if isinstance(value, int) and not isinstance(value, bool):
        return str(value)
    return None


def _langfuse(items: Sequence[Any], result: TraceImport) -> None:
    traces: dict[str, dict[str, Any]] = {}
    for n, item in enumerate(items, start=1):
        if not isinstance(item, Mapping):
            result.problems.append(TraceProblem(None, f"record {n} is not a Langfuse object"))
            continue
        if _too_deep(item):
            result.problems.append(TraceProblem(None, f"record {n} is nested more than {_MAX_DEPTH} levels deep"))
            continue
        if "observations" in item:
            tid = _lf_id(item.get("id"))
            if not tid:
                result.problems.append(TraceProblem(None, f"record {n}: a trace has no id (text)"))
                continue
            observations = item.get("observations")
            if not isinstance(observations, list):
                if observations is not None:
                    result.problems.append(TraceProblem(None, f"record {n} (trace {tid}): observations is "
                                                        f"{_kind(observations)}, not a list"))
                observations = []
            entry = traces.setdefault(tid, {"trace": {}, "observations": []})
            entry["trace"] = item
            for k, o in enumerate(observations):
                if isinstance(o, Mapping):
                    entry["observations"].append(o)
                else:
                    result.problems.append(TraceProblem(None, f"record {n} (trace {tid}): observations.{k} is "
                                                        f"{_kind(o)}, not an observation"))
        elif "traceId" in item:  # an observation exported alone
            tid = _lf_id(item["traceId"])
            if not tid:
                result.problems.append(TraceProblem(None, f"record {n}: traceId is {_shown(item['traceId'])}, "
                                                    "not a trace id"))
                continue
            traces.setdefault(tid, {"trace": {}, "observations": []})["observations"].append(item)
        else:
            result.problems.append(TraceProblem(None, f"record {n} is neither a Langfuse trace nor an "
                                                "observation"))
    result.traces = len(traces)
    for tid, entry in traces.items():
        row = _langfuse_row(tid, entry["trace"], entry["observations"], result)
        for o in entry["observations"]:
            for key in ("startTime", "endTime"):
                if o.get(key) not in (None, "") and _time(o.get(key)) is None:
                    result.problems.append(TraceProblem(tid, f"observation {_shown(o.get('id'))}: {key} "
                                                        f"{_shown(o.get(key))} is not a time; left out",
                                                        imported=row is not None))
        if row is not None:
            result.rows.append(row)
            session = entry["trace"].get("sessionId")
            starts = [t for o in entry["observations"] if (t := _time(o.get("startTime"))) is not None]
            start = _time(entry["trace"].get("timestamp")) or (min(starts) if starts else None)
            result.sessions[tid] = (_id_text(session) if session not in (None, "") else None, start)


def _latency(trace: Mapping[str, Any], obs: Sequence[Mapping[str, Any]], bad: Any) -> float | None:
    """The trace's latency in seconds (rounded), else from its observations' times; ``bad`` is
    told a given latency that is not a finite number."""
    given = trace.get("latency")
    latency = _number(given)
    if latency is None:
        if given is not None and bad is not None:
            bad(given)
        starts = [t for o in obs if (t := _time(o.get("startTime"))) is not None]
        ends = [t for o in obs if (t := _time(o.get("endTime"))) is not None]
        latency = _number(max(ends) - min(starts)) if starts and ends else None
    return round(float(latency), 6) if latency is not None else None


def _langfuse_row(trace_id: str, trace: Mapping[str, Any], observations: Sequence[Mapping[str, Any]],
                  result: TraceImport) -> dict[str, Any] | None:
    obs = sorted(observations, key=lambda o: _time(o.get("startTime")) or 0.0)
    roots = [o for o in obs if not o.get("parentObservationId")]
    root = roots[0] if roots else None
    # a failed request: its root observation's level is ERROR (LangChain's and LlamaIndex's
    # Langfuse handlers set it, with the exception in statusMessage)
    if root is not None and str(root.get("level") or "").upper() == "ERROR":
        detail = f": {root['statusMessage']}" if root.get("statusMessage") else ""
        result.skipped["the request failed (root observation level ERROR)"] += 1
        result.problems.append(TraceProblem(trace_id, f"the request failed{detail}"))
        return None
    retrievers = [o for o in obs if str(o.get("type", "")).upper() == "RETRIEVER"
                  or (str(o.get("type", "")).upper() == "SPAN" and _LF_RETRIEVER_NAMES.search(str(o.get("name") or "")))]
    generations = [o for o in obs if str(o.get("type", "")).upper() == "GENERATION"]
    if not retrievers:
        agent = langfuse_agent_row(trace_id, trace, obs, root, {
            "trace_id": trace_id, "trace_name": trace.get("name"), "latency_s": _latency(trace, obs, None),
            "source": "langfuse", **{k: trace[k] for k in ("sessionId", "userId") if trace.get(k)}})
        if agent is not None:  # an agent's tool calls: a conversation row
            return agent
        result.skipped["no retriever observation: not a RAG request"] += 1
        return None
    docs: list[dict[str, Any]] = []
    for o in retrievers:
        got = _lf_documents(o.get("output"))
        if got is None:
            _drop(result, trace_id, f"retriever observation {_shown(o.get('id'))} has no readable documents in "
                  "its output (a list of documents with page_content, text or content)")
            return None
        for i, d in enumerate(got):
            d["score"] = _score(d["score"], f"retriever observation {_shown(o.get('id'))}: document {i} score",
                                trace_id, result)
        docs.extend(got)
    question = _pick_text(trace.get("input"), _QUESTION_KEYS)
    if question is None and root is not None and root not in retrievers:
        question = _pick_text(root.get("input"), _QUESTION_KEYS)
    if question is None:
        question = _pick_text(retrievers[0].get("input"), _QUESTION_KEYS)
    if question is None:
        _drop(result, trace_id, "no question: the trace, its root observation and its retriever have no input")
        return None
    answer = _pick_text(trace.get("output"), _ANSWER_KEYS)
    if answer is None and root is not None and root not in retrievers:
        answer = _pick_text(root.get("output"), _ANSWER_KEYS)
    if answer is None and generations:
        answer = _pick_text(generations[-1].get("output"), _ANSWER_KEYS)
    if answer is None:
        result.problems.append(TraceProblem(trace_id, "no answer: no output on the trace, its root "
                                            "observation or a generation", imported=True))
    latency = _latency(trace, obs, lambda given: result.problems.append(TraceProblem(
        trace_id, f"latency {_shown(given)} is not a finite number; taken from the observations' times",
        imported=True, missing=False)))
    meta: dict[str, Any] = {
        "trace_id": trace_id, "trace_name": trace.get("name"),
        "retriever_observation_ids": [o.get("id") for o in retrievers],
        "generation_observation_id": generations[-1].get("id") if generations else None,
        "retrieval_scores": [d["score"] for d in docs],
        "documents": [{"id": d["id"], "score": d["score"], "metadata": d["metadata"]} for d in docs],
        "latency_s": latency,
        "source": "langfuse",
    }
    for key in ("sessionId", "userId"):
        if trace.get(key):
            meta[key] = trace[key]
    return _row(trace_id, question, docs, answer, meta)


def langfuse_spans(trace_id: str, spans: Sequence[Any], result: TraceImport) -> tuple[bool, dict[str, Any] | None]:
    """One trace's spans written by Langfuse's SDK (``langfuse.observation.type``) read as its
    export is: (whether they are Langfuse's, the row or None)."""
    got = langfuse_observations(spans)
    if got is None:
        return False, None
    trace, obs = got
    row = _langfuse_row(trace_id, trace, obs, result)
    if row is not None:
        session = trace.get("sessionId")
        result.sessions[trace_id] = (_id_text(session) if session not in (None, "") else None, spans[0].start)
    return True, row
