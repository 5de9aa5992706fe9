"""One row in, ragsight's fields out: the shapes other tools write (promptfoo, TruLens, Phoenix,
DeepEval), recognised by the row's keys, and Phoenix span tables merged into one row per trace.

The field names, the value rules and the safety checks each row goes through are in
``_shapes``, ``_values`` and ``_safety`` (their docstrings state the rules); ``docs/data.md`` is
the reader's version.
"""

from __future__ import annotations

import difflib
import json
import re
from collections.abc import Mapping, Sequence
from typing import Any

from ._safety import SURROGATE, check_safe
from ._shapes import (
    ALIAS_TO_FIELD,
    CONTENT_FIELDS,
    KNOWN_FOREIGN,
    FieldError,
    RowFields,
    canonical_field,
    is_missing,
    norm_key,
    to_plain,
)
from ._values import chunks, ids, metadata, norm_id, reference, relevant, text

__all__ = ["merge_phoenix_spans", "read_row"]

_REF_ASSERTS = ("context-recall", "factuality", "similar", "equals")


# ---- the shapes of other tools -----------------------------------------------------------------


def _decode_json_text(value: Any) -> Any:
    """TruLens stores main input/output JSON-encoded ('"What is X?"'); a JSON string decodes."""
    if isinstance(value, str) and value[:1] == '"':
        try:
            out = json.loads(value)
        except (json.JSONDecodeError, RecursionError):
            return value
        return out if isinstance(out, str) else value
    return value


def _trulens_contexts(record_json: Any) -> Any:
    """The return value of the last recorded call whose method name contains 'retriev'."""
    rec = record_json
    if isinstance(rec, str):
        try:
            rec = json.loads(rec)
        except (json.JSONDecodeError, RecursionError):
            return None
    if not isinstance(rec, Mapping):
        return None
    found = None
    for call in rec.get("calls") or ():
        if not isinstance(call, Mapping):
            continue
        stack = call.get("stack") or ()
        method = stack[-1].get("method") if stack and isinstance(stack[-1], Mapping) else None
        mname = method.get("name") if isinstance(method, Mapping) else None
        rets = call.get("rets")
        if isinstance(mname, str) and "retriev" in mname.lower() and isinstance(rets, list) and rets:
            found = rets
    return found


def _unwrap_io(value: Any) -> Any:
    """An OpenInference input/output value that is a JSON object with one obvious text field."""
    if isinstance(value, str) and value.lstrip()[:1] == "{":
        try:
            obj = json.loads(value)
        except (json.JSONDecodeError, RecursionError):
            return value
        if isinstance(obj, Mapping):
            for key in ("question", "query", "input", "answer", "output", "result", "response", "text"):
                if isinstance(obj.get(key), str):
                    return obj[key]
            strs = [v for v in obj.values() if isinstance(v, str)]
            if len(strs) == 1:
                return strs[0]
    return value


# Values other tools give in places of their own, under keys no row has.
_SYNTHETIC = {
    "__promptfoo_output": ("response", "response.output"),
    "__promptfoo_context": ("contexts", "response.output.context"),
    "__promptfoo_assert": ("reference", "assert[].value"),
    "__promptfoo_meta": ("metadata", "promptfoo result"),
    "__trulens_retrieval": ("contexts", "record_json (the retriever call's return value)"),
}
_PROMPTFOO_KEYS = frozenset({
    "vars", "testCase", "response", "prompt", "provider", "assert", "description", "testIdx", "promptIdx",
    "success", "score", "namedScores", "latencyMs", "error", "gradingResult", "id", "promptId",
    "failureReason", "cost", "metadata", "tokenUsage", "options",
})


def _promptfoo(raw: Mapping[str, Any]) -> tuple[dict[str, Any], dict[str, str]]:
    """A promptfoo result (EvaluateResult) or test case, as (items, overrides)."""
    test: Mapping[str, Any] = raw["testCase"] if isinstance(raw.get("testCase"), Mapping) else {}
    variables: Mapping[str, Any] = raw["vars"] if isinstance(raw.get("vars"), Mapping) else test.get("vars") or {}
    items: dict[str, Any] = {}
    overrides: dict[str, str] = {}
    for k, v in variables.items():
        items[k] = v
        if norm_key(k) == "context":  # promptfoo's context-* assertions read vars.context as retrieved
            overrides[k] = "contexts"
    resp = raw.get("response")
    if isinstance(resp, Mapping):
        out = resp.get("output")
        if isinstance(out, Mapping):  # a provider that returns {answer, context} (contextTransform)
            for key in ("answer", "output", "response"):
                if key in out:
                    items["__promptfoo_output"] = out[key]
                    break
            if "context" in out:
                items["__promptfoo_context"] = out["context"]
        elif out is not None:
            items["__promptfoo_output"] = out
    asserts = test.get("assert") if test else raw.get("assert")
    for a in asserts or ():
        if isinstance(a, Mapping) and a.get("type") in _REF_ASSERTS and isinstance(a.get("value"), str):
            items["__promptfoo_assert"] = a["value"]
            break
    meta: dict[str, Any] = {}
    provider = raw.get("provider")
    if isinstance(provider, Mapping):
        meta["provider"] = provider.get("label") or provider.get("id")
    elif isinstance(provider, str):
        meta["provider"] = provider
    prompt = raw.get("prompt")
    if isinstance(prompt, Mapping):
        meta["prompt"] = prompt.get("label") or prompt.get("raw")
    for key in ("description", "testIdx", "promptIdx", "success", "score", "namedScores", "latencyMs", "error"):
        src = raw if key in raw else test
        if src and not is_missing(src.get(key)):
            meta[key] = src.get(key)
    if meta:
        items["__promptfoo_meta"] = {"promptfoo": meta}
    if isinstance(test.get("metadata"), Mapping):
        items["metadata"] = test["metadata"]
    for k, v in raw.items():
        if k not in _PROMPTFOO_KEYS and k not in items:
            items[k] = v
    return items, overrides


def _shape_of(raw: Mapping[str, Any]) -> str:
    keys = {norm_key(k) for k in raw}
    if isinstance(raw.get("vars"), Mapping) and keys & {"test_case", "assert", "response", "prompt", "provider",
                                                         "prompt_idx", "test_idx", "grading_result"}:
        return "promptfoo"
    if "record_json" in keys:
        return "trulens"
    if keys & {"context.span_id", "context.trace_id"} or any(k.startswith("attributes.") for k in keys):
        return "phoenix"
    if keys & {"actual_output", "expected_output", "retrieval_context", "additional_metadata"}:
        return "deepeval"
    return "ragsight"


def _without_result_columns(raw: Mapping[str, Any]) -> dict[str, Any]:
    """The row without the results ragsight itself wrote beside the inputs, so that an export
    (``ragsight export``, ``--out``) or ``result.to_pandas()`` loads back as the same samples:
    per metric ``m``, ``m`` / ``m__outcome`` / ``m__reason``; JSONL's ``scores`` and ``evidence``
    objects; the ``run_id`` beside them. Columns of other tools' scores stay in metadata."""
    keys = {k for k in raw if isinstance(k, str)}
    metrics = {k[: -len("__outcome")] for k in keys if k.endswith("__outcome") and k[: -len("__outcome")] in keys}
    drop = {c for m in metrics for c in (m, f"{m}__outcome", f"{m}__reason")}
    if isinstance(raw.get("scores"), Mapping) and isinstance(raw.get("evidence"), Mapping) and "run_id" in keys:
        drop |= {"scores", "evidence"}
    if drop and "run_id" in keys:
        drop.add("run_id")
    return {k: v for k, v in raw.items() if k not in drop} if drop else dict(raw)


# A numpy array of numbers as str() writes it: '[ 7 12]', '[3 9]', '[ 7. 12.]' (Hugging Face
# ``datasets`` writes a list column so into CSV); '...' marks an array numpy shortened.
_NUMPY_NUMBERS = re.compile(r"\[\s*(?:[-+]?(?:\d+\.?\d*|\.\d+)(?:[eE][-+]?\d+)?\s*)+\]")
_NUMPY_SHORTENED = re.compile(r"\[\s*[-+\d.eE\s]*\.\.\.[-+\d.eE\s]*\]")


def _numpy_numbers(name: str, value: Any) -> Any:
    """Ids written as numpy prints an array of numbers (no commas) as a list of those numbers; an
    array numpy shortened with '...' is a FieldError (its middle ids are not in the text); any
    other value as it is."""
    if not isinstance(value, str):
        return value
    s = value.strip()
    if _NUMPY_NUMBERS.fullmatch(s) and "," not in s:
        return [float(t) if any(c in t for c in ".eE") else int(t) for t in s[1:-1].split()]
    if _NUMPY_SHORTENED.fullmatch(s):
        raise FieldError(name, "the ids are a numpy array shortened with '...' (numpy prints at most 1,000 "
                         "numbers): the ids in the middle are lost. Write the file as JSON lines or Parquet.")
    return value


_TEXTS_NAME = re.compile(r"chunk|passage|context|retriev|snippet|excerpt|^docs$|^documents$|_docs$|_documents$")


_PANDAS_INDEX = re.compile(r"|Unnamed: \d+")


def _holds_texts(key: str, value: Any) -> bool:
    """Whether an unknown column looks like the retrieved chunks: a list of texts (at least one
    with a space: sentences, not ids), or text under a name such as 'passages' or 'docs'."""
    if isinstance(value, list) and value and all(isinstance(v, str) for v in value):
        return any(" " in v.strip() for v in value) or bool(_TEXTS_NAME.search(key))
    return isinstance(value, str) and " " in value.strip() and bool(_TEXTS_NAME.search(key))


def read_row(raw: Mapping[str, Any]) -> RowFields:
    """Read one row into ragsight's fields. Raises FieldError for an unusable field."""
    for key in raw:
        if isinstance(key, str) and SURROGATE.search(key):
            shown = key.encode("utf-8", "backslashreplace").decode("ascii", "replace")
            raise FieldError(shown, f"the field name '{shown}' holds a lone surrogate, half of a character cut "
                             "in two; rename the field.")
    out = RowFields(shape=_shape_of(raw))
    overrides: dict[str, str] = {}
    items: dict[str, Any] = _without_result_columns(raw)
    if out.shape == "promptfoo":
        items, overrides = _promptfoo(raw)
    elif out.shape == "trulens":
        for k in ("input", "output"):
            if k in items:
                items[k] = _decode_json_text(items[k])
        if not any(canonical_field(k) == "contexts" for k in items):
            found = _trulens_contexts(raw.get("record_json"))
            if found is not None:
                items["__trulens_retrieval"] = found
    elif out.shape == "phoenix":
        for k in list(items):
            nk = norm_key(k)
            if nk in ("reference", "context"):
                overrides[k] = "contexts"
            elif canonical_field(nk) in ("question", "response"):
                items[k] = _unwrap_io(items[k])

    canon: dict[str, Any] = {}
    extra: dict[str, Any] = {}
    metas: list[tuple[str, Any]] = []
    for key, value in items.items():
        key_s = str(key)
        if _PANDAS_INDEX.fullmatch(key_s):
            continue  # the unnamed index column pandas writes (to_csv) and reads back ("Unnamed: 0")
        nk = norm_key(key_s)
        synthetic = _SYNTHETIC.get(key_s)
        name = synthetic[0] if synthetic else overrides.get(key_s) or ALIAS_TO_FIELD.get(nk)
        if name is None:
            extra[key_s] = value
            if nk not in KNOWN_FOREIGN and not nk.startswith("attributes."):
                close = difflib.get_close_matches(nk, list(ALIAS_TO_FIELD), n=1, cutoff=0.8)
                meant = "contexts" if _holds_texts(nk, value) else ALIAS_TO_FIELD[close[0]] if close else None
                if meant is not None and not any(ALIAS_TO_FIELD.get(norm_key(k)) == meant for k in items):
                    out.misnamed.append((key_s, meant))  # evaluate() stops on it
                if meant == "contexts" and not close:
                    out.notes.append((key_s, f"unknown field '{key_s}' holds texts, kept in metadata; did "
                                      "you mean 'contexts'?"))
                elif close:
                    out.notes.append((key_s, f"unknown field '{key_s}' kept in metadata; did you mean "
                                      f"'{close[0] if meant != 'contexts' else 'contexts'}'?"))
            continue
        if name == "metadata":
            metas.append((key_s, value))
            continue
        if name in canon and not is_missing(canon[name]):
            if not is_missing(value):
                shown = out.sources[name]
                out.notes.append((key_s, f"'{key_s}' duplicates '{shown}' (both give the {name}); "
                                  f"'{shown}' is used."))
            continue
        canon[name] = value
        out.sources[name] = synthetic[1] if synthetic else key_s

    if extra and not any(n in canon for n in CONTENT_FIELDS):
        got = ", ".join(f"'{k}'" for k in list(extra)[:8])
        raise FieldError(
            None,
            f"none of this row's fields is known ({got}). Name them question, contexts, response, "
            "reference (the names of other tools work too: user_input, retrieved_contexts, answer, "
            "ground_truth, actual_output...).",
        )
    if out.shape == "ragsight" and "contexts" not in canon and \
            norm_key(out.sources.get("reference_contexts", "")) == "context":
        out.notes.append(("context", "'context' is read as the gold (reference) context, as DeepEval means "
                          "it; if it holds the retrieved chunks, name it 'contexts' or 'retrieved_contexts'."))

    meta: dict[str, Any] = {}
    for key_s, value in metas:
        try:
            m = metadata(check_safe(key_s, value))
        except FieldError as exc:
            raise FieldError(key_s, exc.message.replace("'metadata'", f"'{key_s}'")) from None
        for k, v in m.items():
            meta.setdefault(k, check_safe(key_s, v, f"{key_s}.{k}", depth=1, nan_to_none=True))
    for k, v in extra.items():
        meta.setdefault(k, check_safe(k, v, depth=1, nan_to_none=True))
    out.metadata = meta

    def split_for(name: str) -> str | None:
        src = norm_key(out.sources.get(name, ""))
        return "|" if out.shape == "deepeval" and src in ("retrieval_context", "context") else None

    def safe(name: str) -> Any:
        return check_safe(out.sources.get(name, name), canon.get(name))

    def fail_as_source(name: str, fn: Any, *args: Any) -> Any:
        try:
            return fn(*args)
        except FieldError as exc:
            src = out.sources.get(name, name)
            raise FieldError(src, exc.message.replace(f"'{name}'", f"'{src}'")) from None

    v = out.values
    for name in ("question", "response"):
        v[name] = fail_as_source(name, text, name, safe(name))
    v["reference"] = fail_as_source("reference", reference, safe("reference"))
    got = fail_as_source("contexts", chunks, "contexts", safe("contexts"), split_for("contexts"))
    v["contexts"], ctx_ids = got if got else (None, None)
    got = fail_as_source("reference_contexts", chunks, "reference_contexts", safe("reference_contexts"),
                         split_for("reference_contexts"))
    v["reference_contexts"], ref_ids = got if got else (None, None)
    v["retrieved_ids"] = fail_as_source("retrieved_ids", lambda x: ids("retrieved_ids", _numpy_numbers(
        "retrieved_ids", x)), safe("retrieved_ids"))
    v["relevant_ids"] = fail_as_source("relevant_ids", lambda x: relevant(_numpy_numbers("relevant_ids", x)),
                                       safe("relevant_ids"))
    if v["retrieved_ids"] is None and ctx_ids is not None:
        v["retrieved_ids"] = ctx_ids
        out.sources["retrieved_ids"] = f"{out.sources['contexts']}[].id"
    if v["relevant_ids"] is None and ref_ids is not None:
        v["relevant_ids"] = ref_ids
        out.sources["relevant_ids"] = f"{out.sources['reference_contexts']}[].id"
    raw_id = safe("id")
    v["id"] = None if is_missing(to_plain(raw_id)) else fail_as_source("id", norm_id, "id", raw_id)
    return out


# ---- Phoenix spans: one sample per trace ---------------------------------------------------------


def is_span(row: Any) -> bool:
    """Whether ``row`` is a row of a Phoenix spans DataFrame."""
    return isinstance(row, Mapping) and "context.trace_id" in row and (
        "span_kind" in row or "attributes.openinference.span.kind" in row)



def _top_openinference_span(spans: Sequence[Mapping[str, Any]], kind: Any) -> Mapping[str, Any] | None:
    """The earliest span with an OpenInference kind and none above it (not a retriever when
    another one qualifies)."""
    by_id = {str(r.get("context.span_id")): r for r in spans if not is_missing(r.get("context.span_id"))}

    def known_above(r: Mapping[str, Any]) -> bool:
        seen: set[str] = set()
        parent = r.get("parent_id")
        while not is_missing(parent) and str(parent) in by_id and str(parent) not in seen:
            seen.add(str(parent))
            if kind(by_id[str(parent)]) not in ("", "UNKNOWN"):
                return True
            parent = by_id[str(parent)].get("parent_id")
        return False

    ordered = sorted(spans, key=lambda r: str(r.get("start_time") or ""))
    tops = [r for r in ordered if kind(r) not in ("", "UNKNOWN") and not known_above(r)]
    return next((r for r in tops if kind(r) != "RETRIEVER"), tops[0] if tops else None)


def merge_phoenix_spans(rows: Sequence[Any], numbers: Sequence[int]) -> tuple[list[Any], list[int]]:
    """A Phoenix spans DataFrame (``get_spans_dataframe()``) as one row per trace: the root
    span's input and output, the documents of the trace's retriever spans in order. Rows that
    are not spans pass unchanged."""
    if not rows or not all(is_span(r) for r in rows):
        return list(rows), list(numbers)
    traces: dict[Any, list[tuple[int, Mapping[str, Any]]]] = {}
    for n, r in zip(numbers, rows):
        traces.setdefault(r["context.trace_id"], []).append((n, r))
    out: list[Any] = []
    nums: list[int] = []
    sessions: list[tuple[str | None, str]] = []  # per trace row: its session, its request's start
    for trace_id, spans in traces.items():
        def kind(r: Mapping[str, Any]) -> str:
            return str(r.get("span_kind") or r.get("attributes.openinference.span.kind") or "").upper()

        roots = [r for _, r in spans if is_missing(r.get("parent_id"))]
        root = roots[0] if roots else spans[0][1]
        if kind(root) in ("", "UNKNOWN"):  # a web server's span above the RAG chain: the request is
            root = _top_openinference_span([r for _, r in spans], kind) or root  # the chain below it
        docs: list[Any] = []
        for _, r in sorted(spans, key=lambda p: str(p[1].get("start_time") or "")):
            if kind(r) == "RETRIEVER":
                found = to_plain(r.get("attributes.retrieval.documents"))
                if isinstance(found, list):
                    docs.extend(found)
        row: dict[str, Any] = {
            "question": _unwrap_io(root.get("attributes.input.value")),
            "response": _unwrap_io(root.get("attributes.output.value")),
            "metadata": {"trace_id": trace_id, "span_id": root.get("context.span_id"), "spans": len(spans)},
        }
        if docs:
            row["contexts"] = docs
        out.append(row)
        nums.append(spans[0][0])
        sessions.append((_session_of([r for _, r in spans]), str(root.get("start_time") or "")))
    return _group_sessions(out, nums, sessions)


# ---- Phoenix spans of one session: one conversation -----------------------------------------------


def _session_of(spans: Sequence[Mapping[str, Any]]) -> str | None:
    """The trace's chat session: OpenInference's ``session.id`` on any of its spans, as a Phoenix
    spans DataFrame holds it (the ``attributes.session.id`` column, or nested in an
    ``attributes`` / ``attributes.session`` mapping)."""
    for r in spans:
        attrs = to_plain(r.get("attributes"))
        session = to_plain(r.get("attributes.session"))
        found = [r.get("attributes.session.id"), session.get("id") if isinstance(session, Mapping) else None]
        if isinstance(attrs, Mapping):
            nested = attrs.get("session")
            found += [attrs.get("session.id"), nested.get("id") if isinstance(nested, Mapping) else None]
        for value in found:
            value = to_plain(value)
            if not is_missing(value) and not isinstance(value, (Mapping, list)) and str(value).strip():
                return str(value).strip()
    return None


def _group_sessions(rows: list[Any], numbers: list[int], sessions: Sequence[tuple[str | None, str]]
                    ) -> tuple[list[Any], list[int]]:
    """The traces of one session (two or more) as one conversation row, as ``ragsight
    import-traces`` writes it: each trace's question a user turn, its answer with its documents
    the assistant turn, in the order the requests started; the session id is the conversation's
    id, each trace's metadata in ``metadata.traces``. A session of one trace stays a sample."""
    members: dict[str, list[int]] = {}
    for i, (sid, _) in enumerate(sessions):
        if sid is not None:
            members.setdefault(sid, []).append(i)
    grouped = {sid: idx for sid, idx in members.items() if len(idx) > 1}
    if not grouped:
        return rows, numbers
    first = {idx[0]: sid for sid, idx in grouped.items()}
    out: list[Any] = []
    nums: list[int] = []
    for i, (row, n) in enumerate(zip(rows, numbers)):
        sid = sessions[i][0]
        if sid not in grouped:
            out.append(row)
            nums.append(n)
        elif i in first:
            order = sorted(grouped[sid], key=lambda k: (sessions[k][1], k))
            out.append(_conversation_row(sid, [rows[k] for k in order]))
            nums.append(n)
    return out, nums


def _conversation_row(sid: str, traces: Sequence[Mapping[str, Any]]) -> dict[str, Any]:
    turns: list[dict[str, Any]] = []
    for t in traces:
        # as read: a question or answer that is not text is reported by the conversation reader
        turns.append({"role": "user", "content": t.get("question")})
        answer: dict[str, Any] = {"role": "assistant", "content": t.get("response")}
        if "contexts" in t:
            answer["contexts"] = t["contexts"]
        turns.append(answer)
    return {"id": sid, "turns": turns, "metadata": {
        "session_id": sid, "trace_ids": [t["metadata"]["trace_id"] for t in traces],
        "traces": [t["metadata"] for t in traces]}}
