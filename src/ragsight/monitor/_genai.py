"""OpenLLMetry (Traceloop) and GenAI semantic-convention spans given the OpenInference names the
trace readers take, so one reader serves both:

- ``traceloop.span.kind`` ``workflow`` / ``task`` / ``agent`` / ``tool``: a CHAIN span whose
  ``input.value`` and ``output.value`` are ``traceloop.entity.input`` / ``.output``; a task whose
  ``traceloop.entity.name`` names a retrieval (``retriev...``) is a RETRIEVER span, its output's
  documents (text, or objects with ``page_content`` / ``text`` / ``content``, ``id``, ``score``,
  ``metadata``) its ``retrieval.documents``;
- a span with ``gen_ai.operation.name`` ``vector_db_retrieve`` (OpenLLMetry's retriever) is a
  RETRIEVER span the same way; the ``{"inputs": ...}`` / ``{"outputs": ...}`` wrappers of
  OpenLLMetry's entity input and output are taken off;
- a span with ``gen_ai.system``, ``gen_ai.operation.name`` or ``llm.request.type``: an LLM span,
  its answer the last ``gen_ai.completion.N.content`` or the last assistant message of
  ``gen_ai.output.messages``, its input the last user ``gen_ai.prompt.N.content`` or message of
  ``gen_ai.input.messages``.

A span that already has ``openinference.span.kind`` is left as it is.
"""

from __future__ import annotations

import json
import re
from collections.abc import Mapping
from typing import Any

__all__ = ["as_openinference"]

_RETRIEVAL = re.compile(r"retriev", re.I)
_RETRIEVE_OPERATIONS = ("vector_db_retrieve", "retrieve", "retrieval")
_PROMPT = re.compile(r"^gen_ai\.(prompt|completion)\.([0-9]+)\.(content|role)$")


def _value(v: Any) -> Any:
    if isinstance(v, Mapping):
        for key in ("stringValue", "intValue", "doubleValue", "boolValue"):
            if key in v:
                return v[key]
    return None


def _attr(key: str, value: Any) -> dict[str, Any]:
    if isinstance(value, bool):
        return {"key": key, "value": {"boolValue": value}}
    if isinstance(value, (int, float)):
        return {"key": key, "value": {"doubleValue": float(value)}}
    return {"key": key, "value": {"stringValue": value if isinstance(value, str) else json.dumps(value)}}


def _unwrapped(value: Any, key: str) -> Any:
    """OpenLLMetry's ``{"inputs": X, "tags": ...}`` / ``{"outputs": X}`` as X (JSON text kept
    JSON text)."""
    if not isinstance(value, str):
        return value
    try:
        parsed = json.loads(value)
    except ValueError:
        return value
    if isinstance(parsed, Mapping) and key in parsed:
        inner = parsed[key]
        return inner if isinstance(inner, str) else json.dumps(inner)
    return value


def _message_text(value: Any, roles: tuple[str, ...]) -> str | None:
    """The text of the last message of one of ``roles`` in GenAI's ``gen_ai.input.messages`` /
    ``gen_ai.output.messages`` (JSON: role, parts of type text)."""
    try:
        messages = json.loads(value) if isinstance(value, str) else value
    except ValueError:
        return None
    if not isinstance(messages, list):
        return None
    for m in reversed(messages):
        if isinstance(m, Mapping) and m.get("role") in roles:
            parts = m.get("parts")
            texts = [str(p["content"]) for p in parts if isinstance(p, Mapping) and isinstance(p.get("content"), str)] \
                if isinstance(parts, list) else []
            if not texts and isinstance(m.get("content"), str):
                texts = [m["content"]]
            if texts:
                return "".join(texts)
    return None


def _documents(output: Any) -> list[dict[str, Any]]:
    """Documents from a retrieval task's output (JSON text or a value)."""
    if isinstance(output, str):
        try:
            output = json.loads(output)
        except ValueError:
            return []
    if isinstance(output, Mapping):
        for key in ("documents", "nodes", "source_nodes", "output", "result"):
            if isinstance(output.get(key), list):
                output = output[key]
                break
    if not isinstance(output, list):
        return []
    docs = []
    for item in output:
        if isinstance(item, str):
            docs.append({"content": item})
            continue
        if not isinstance(item, Mapping):
            continue
        inner = item.get("node")
        node: Mapping[str, Any] = inner if isinstance(inner, Mapping) else item
        dumped = node.get("kwargs")
        kwargs: Mapping[str, Any] = dumped if isinstance(dumped, Mapping) else node  # LangChain's dump
        text = next((kwargs.get(k) for k in ("page_content", "text", "content") if isinstance(kwargs.get(k), str)), None)
        if text is None:
            continue
        doc: dict[str, Any] = {"content": text}
        ident = kwargs.get("id") or kwargs.get("id_")
        if ident is not None:
            doc["id"] = str(ident)
        score = item.get("score")
        if isinstance(score, (int, float)) and not isinstance(score, bool):
            doc["score"] = score
        if isinstance(kwargs.get("metadata"), Mapping):
            doc["metadata"] = json.dumps(kwargs["metadata"])
        docs.append(doc)
    return docs


def _map_span(span: dict[str, Any]) -> None:
    attrs = span.get("attributes")
    if not isinstance(attrs, list):
        return
    flat = {a.get("key"): _value(a.get("value")) for a in attrs if isinstance(a, Mapping)}
    if "openinference.span.kind" in flat:
        return
    added: list[dict[str, Any]] = []
    kind = str(flat.get("traceloop.span.kind") or "").lower()
    operation = str(flat.get("gen_ai.operation.name") or "").lower()
    if kind in ("workflow", "task", "agent", "tool") or operation in _RETRIEVE_OPERATIONS:
        name = str(flat.get("traceloop.entity.name") or span.get("name") or "")
        inp = _unwrapped(flat.get("traceloop.entity.input"), "inputs")
        out = _unwrapped(flat.get("traceloop.entity.output"), "outputs")
        if operation in _RETRIEVE_OPERATIONS or (kind == "task" and _RETRIEVAL.search(name)):
            added.append(_attr("openinference.span.kind", "RETRIEVER"))
            for i, doc in enumerate(_documents(out)):
                added += [_attr(f"retrieval.documents.{i}.document.{k}", v) for k, v in doc.items()]
        else:
            added.append(_attr("openinference.span.kind", "CHAIN"))
            if out is not None:
                added.append(_attr("output.value", out))
        if inp is not None:
            added.append(_attr("input.value", inp))
    elif any(k in flat for k in ("gen_ai.system", "gen_ai.operation.name", "llm.request.type")):
        added.append(_attr("openinference.span.kind", "LLM"))
        parts: dict[tuple[str, int], dict[str, Any]] = {}
        for key, v in flat.items():
            m = _PROMPT.match(str(key))
            if m:
                parts.setdefault((m.group(1), int(m.group(2))), {})[m.group(3)] = v
        completions = [p["content"] for (w, _), p in sorted(parts.items()) if w == "completion"
                       and isinstance(p.get("content"), str)]
        answer = completions[-1] if completions else _message_text(flat.get("gen_ai.output.messages"), ("assistant",))
        if answer is not None:
            added.append(_attr("llm.output_messages.0.message.content", answer))
        users = [p["content"] for (w, _), p in sorted(parts.items()) if w == "prompt"
                 and p.get("role") in ("user", None) and isinstance(p.get("content"), str)]
        asked = users[-1] if users else _message_text(flat.get("gen_ai.input.messages"), ("user",))
        if asked is not None:
            added.append(_attr("input.value", asked))
    attrs.extend(added)


def as_openinference(doc: dict[str, Any]) -> dict[str, Any]:
    """An OTLP JSON document with OpenLLMetry / GenAI spans given OpenInference names (in place;
    returned for convenience)."""
    for rs in doc.get("resourceSpans", []):
        for ss in rs.get("scopeSpans", []):
            for span in ss.get("spans", []):
                if isinstance(span, dict):
                    _map_span(span)
    return doc
