"""One row into a ``Sample``: a turn of a conversation's fields read back, the automatic id of
a row without one, and the reader that takes rows one by one (unique ids, problems, which names
filled each field). The field names and value rules are in ``_shapes.py`` and ``_values.py``,
other tools' row shapes in ``_rows.py``.
"""

from __future__ import annotations

import hashlib
import json
import warnings
from collections.abc import Mapping, Sequence
from dataclasses import replace
from typing import TYPE_CHECKING, Any

from ._conversation import Conversation, ToolCall, Turn
from ._problems import RowProblem, group_problems
from ._rows import read_row
from ._safety import json_loads
from ._sample import Sample, SampleWarning, turn_samples
from ._shapes import FieldError, is_missing, row_mapping, to_plain
from ._values import text

if TYPE_CHECKING:
    from ._dataset import Dataset

__all__ = ["RowReader", "loads", "question_id", "row_sample", "sample_from_mapping", "split_turn_fields"]


_TURN_FIELDS = ("conversation_id", "turn", "history", "tool_calls", "reference_tool_calls", "scenario",
                "expected_outcome", "system_role")


def _tool_call(value: Any, reference: bool = False) -> ToolCall:
    """A call as ragsight writes it (``{name, args, id}``, arguments that are not JSON in
    ``raw_args``), or with OpenAI's arguments as JSON text: an agent's call whose text is not a
    JSON object is kept with it, a reference call's is a FieldError."""
    m = row_mapping(value)
    if m is None or not isinstance(m.get("name"), str):
        raise FieldError("tool_calls", "a tool call must be an object with a name and args.")
    args = m.get("args", m.get("arguments"))
    error = m.get("args_error")
    raw = m.get("raw_args") if isinstance(error, str) else None
    if isinstance(args, str) and error is None:  # OpenAI's arguments as JSON text
        raw = args
        try:
            args = json.loads(args) if args.strip() else {}
            error = None if isinstance(args, Mapping) else f"arguments are not a JSON object: {type(args).__name__}"
        except (json.JSONDecodeError, RecursionError) as exc:
            error = f"arguments are not JSON: {exc}"
    if reference and isinstance(error, str):
        raise FieldError("reference_tool_calls", f"the reference call of {m['name']}: {error}; give a JSON object.")
    return ToolCall(m["name"], dict(args) if isinstance(args, Mapping) and error is None else {},
                    None if m.get("id") is None else str(m["id"]),
                    raw_args=str(raw or "") if isinstance(error, str) else None,
                    args_error=error if isinstance(error, str) else None)


def _turn(value: Any) -> Turn:
    m = row_mapping(value)
    if m is None or not isinstance(m.get("role"), str):
        raise FieldError("history", "each turn of the history must be an object with a role and content.")

    def texts(key: str) -> tuple[str, ...] | None:
        v = m.get(key)
        return None if v is None else tuple(str(x) for x in v)

    refc = m.get("reference_tool_calls")
    return Turn(
        role=m["role"], content=str(m.get("content") or ""), contexts=texts("contexts"),
        retrieved_ids=texts("retrieved_ids"), reference=m.get("reference"),
        tool_calls=tuple(_tool_call(c) for c in m.get("tool_calls") or ()),
        reference_tool_calls=None if refc is None else tuple(_tool_call(c, True) for c in refc),
        tool_call_id=m.get("tool_call_id"), name=m.get("name"), is_error=m.get("is_error") is True,
    )


def _turn_json_text(raw: Mapping[str, Any]) -> Mapping[str, Any]:
    """A CSV or Parquet export writes a turn's history and tool calls as JSON text: read back,
    they are lists again. Only for a row with a ``conversation_id``; text that is not a JSON
    list is left as it is (a column of the user's own: it stays what it was)."""
    if is_missing(raw.get("conversation_id")):
        return raw
    parsed: dict[str, Any] = {}
    for key in ("history", "tool_calls", "reference_tool_calls"):
        v = raw.get(key)
        if v is not None and not isinstance(v, (list, tuple)) and is_missing(v):
            parsed[key] = None  # an empty cell of a DataFrame (NaN)
        elif isinstance(v, str):
            if not v.strip():
                parsed[key] = None
                continue
            try:
                got = json_loads(v)  # a number too long stays text, reported with its field
            except (ValueError, RecursionError):
                continue
            if isinstance(got, list):
                parsed[key] = got
    return {**raw, **parsed} if parsed else raw


def split_turn_fields(raw: Mapping[str, Any]) -> tuple[Mapping[str, Any], dict[str, Any]]:
    """A row of a turn of a conversation, as ``Sample.to_dict`` and the exports write it: the
    row without the turn's fields, and those fields read back (Turn / ToolCall). A row without
    a ``conversation_id``, or with one but neither a ``turn`` nor a ``history`` list, is not a
    turn (a single-turn row may have a ``conversation_id`` column: it stays metadata)."""
    cid = raw.get("conversation_id")
    turn = raw.get("turn")
    if (isinstance(turn, float) and turn.is_integer()) or (isinstance(turn, str) and turn.strip().isdigit()):  # a pandas column with empty cells
        turn = int(turn)
    raw = _turn_json_text(raw)
    history = raw.get("history")
    is_turn = isinstance(turn, int) and not isinstance(turn, bool) and turn >= 0
    if is_missing(cid) or not (is_turn or isinstance(history, (list, tuple))):
        if all(k in raw and raw[k] is None for k in _TURN_FIELDS):  # Sample.to_dict of a single-turn sample
            return {k: v for k, v in raw.items() if k not in _TURN_FIELDS}, {}
        if not is_missing(cid) and "turn" in raw and is_missing(to_plain(turn)) and str(raw.get("id")) == str(cid):
            # a conversation's own row of a CSV / Parquet export: its messages are not in it
            raise FieldError("history", f"conversation '{cid}': a conversation's own row without its messages "
                             "(a CSV or Parquet export written before exports held the history has only the "
                             "turns' conversation_id and turn). Export the run again, or load the JSONL export "
                             "or the conversations themselves to evaluate it again.")
        return raw, {}
    out: dict[str, Any] = {"conversation_id": str(cid), "turn": turn if is_turn else None}
    try:
        out["history"] = None if history is None else tuple(_turn(t) for t in history)
        for key in ("tool_calls", "reference_tool_calls"):
            v = raw.get(key)
            out[key] = None if v is None else tuple(_tool_call(c, key == "reference_tool_calls") for c in v)
    except TypeError:
        raise FieldError("history", "the turn's history or tool calls are not lists of objects.") from None
    for key in ("scenario", "expected_outcome", "system_role"):
        out[key] = text(key, raw.get(key)) if not is_missing(raw.get(key)) else None
    return {k: v for k, v in raw.items() if k not in _TURN_FIELDS}, out


def question_id(question: str | None, reference: str | Sequence[str] | None) -> str | None:
    """The automatic id of a row without one: it names the *question* (its text and its
    reference), never the system's output, so two runs that answer the same questions
    differently pair up sample by sample. None when the row has neither (the caller then uses
    the row's position)."""
    if not question and not reference:
        return None
    ref = list(reference) if isinstance(reference, (tuple, list)) else reference
    basis = {"question": question, "reference": ref}
    digest = hashlib.sha256(json.dumps(basis, sort_keys=True, ensure_ascii=False).encode())
    return "q-" + digest.hexdigest()[:12]


def sample_from_mapping(
    raw: Mapping[str, Any], *, from_csv: bool = False, row: int | None = None
) -> tuple[Sample, list[tuple[str, str]]]:
    """Build a Sample from one row. Returns it with (field, warning) notes.

    A row without an id gets :func:`question_id`, or ``row-N`` (its 1-based position, ``row``)
    when it has neither a question nor a reference. Raises FieldError for an unusable field.
    ``from_csv`` is kept for callers; every source is read by the same rules.
    """
    raw, turn_fields = split_turn_fields(raw)
    got = read_row(raw)
    v = got.values
    sid = v["id"] or question_id(v["question"], v["reference"]) or f"row-{row if row is not None else 0}"
    sample = Sample(
        **turn_fields,
        id=sid,
        question=v["question"],
        contexts=v["contexts"],
        response=v["response"],
        reference=v["reference"],
        reference_contexts=v["reference_contexts"],
        retrieved_ids=v["retrieved_ids"],
        relevant_ids=v["relevant_ids"],
        metadata=got.metadata,
    )
    return sample, got.notes


def loads(text: str) -> Any:
    return json_loads(text)


class RowReader:
    """What loading rows one by one keeps: the ids so far, the problems, which names filled
    each field, the columns seen. ``row`` makes one flat row's Sample (None: a problem is
    listed), ``conversation`` a conversation's samples; ``finish`` sets them on the data set."""

    def __init__(self, source: str) -> None:
        self.source = source
        self.problems: list[RowProblem] = []
        self.ids: dict[str, int] = {}
        self.explicit: set[str] = set()
        self.by_position: list[int] = []
        self.sources: dict[str, dict[str, None]] = {}
        self.misnamed: dict[str, str] = {}
        self.columns: dict[str, None] = {}
        self.renamed = False

    def conversation(self, conv: Conversation, rown: int) -> list[Sample]:
        try:
            conv_samples = turn_samples(conv)
        except FieldError as exc:
            self.problems.append(RowProblem(self.source, rown, exc.field_name, exc.message))
            return []
        clash = next((x.id for x in conv_samples if x.id in self.ids), None)
        if clash is not None:
            self.problems.append(RowProblem(
                self.source, rown, "id", f"conversation '{conv.id}': the id '{clash}' was already used by "
                f"row {self.ids[clash]}; ids must be unique. Give this conversation another id."))
            return []
        for x in conv_samples:
            self.ids[x.id] = rown
            self.explicit.add(x.id)
        for i, turn in enumerate(conv.turns):  # an agent's call with broken arguments: kept, counted
            for j, call in enumerate(turn.tool_calls):
                if call.malformed:
                    self.problems.append(RowProblem(
                        self.source, rown, "tool_calls.arguments",
                        f"warning: conversation '{conv.id}', message {i}, call {j}: the '{call.name}' call's "
                        f"{call.args_error}; the call is kept with its text, counted invalid by "
                        "tool_argument_validity and matching no reference call"))
        return conv_samples

    def row(self, raw: Mapping[str, Any], rown: int) -> Sample | None:
        source = self.source
        self.renamed = False  # set when the row's id is taken and a suffix makes it unique
        try:
            sample, got = row_sample(raw, rown)
        except FieldError as exc:
            self.problems.append(RowProblem(source, rown, exc.field_name, exc.message))
            return None
        except (RecursionError, MemoryError):
            self.problems.append(RowProblem(source, rown, None, "the row nests too deeply to read; flatten it."))
            return None
        for fname, note in got.notes:
            self.problems.append(RowProblem(source, rown, fname, "warning: " + note))
        for j, call in enumerate(sample.tool_calls or ()):  # a turn row's call with broken arguments
            if call.malformed:
                self.problems.append(RowProblem(source, rown, "tool_calls.arguments", (
                    f"warning: sample '{sample.id}', call {j}: the '{call.name}' call's {call.args_error}; the call "
                    "is kept with its text, counted invalid by tool_argument_validity and matching no reference "
                    "call")))
        for column, meant in got.misnamed:
            self.misnamed.setdefault(column, meant)
        self.columns.update((str(k), None) for k in raw)
        for name, src in got.sources.items():
            self.sources.setdefault(name, {})[src] = None
        has_explicit_id = got.values["id"] is not None
        if sample.id in self.ids:
            if has_explicit_id or sample.id in self.explicit:
                self.problems.append(
                    RowProblem(source, rown, "id", f"id '{sample.id}' was already used by row {self.ids[sample.id]}; "
                               "ids must be unique. Give this row another id, or remove the duplicate row.")
                )
                return None
            k = 2
            while f"{sample.id}-{k}" in self.ids:
                k += 1
            sample = replace(sample, id=f"{sample.id}-{k}")
            self.renamed = True
        self.ids[sample.id] = rown
        if has_explicit_id:
            self.explicit.add(sample.id)
        elif sample.id.startswith("row-"):
            self.by_position.append(rown)
        return sample

    def finish(self, ds: Dataset) -> Dataset:
        if self.by_position:
            rows = self.by_position
            shown = ", ".join(str(r) for r in rows[:5]) + (", ..." if len(rows) > 5 else "")
            ds.problems.append(RowProblem(
                self.source, rows[0], "id",
                f"warning: {len(rows)} row(s) have no id, question or reference (rows {shown}): "
                "their ids are their row numbers (row-N), so another run of this data pairs with "
                "them by position only. Give each row an id to pair them safely."))
        ds.sources = {name: tuple(srcs) for name, srcs in self.sources.items()}
        ds.misnamed, ds.columns = self.misnamed, tuple(self.columns)
        for g in group_problems(p for p in ds.problems if p.message.startswith("warning:")):
            warnings.warn(g.line(), SampleWarning, stacklevel=3)
        return ds


def row_sample(raw: Mapping[str, Any], rown: int, sid: str | None = None) -> tuple[Sample, Any]:
    """One flat row's Sample and what ``read_row`` found; ``sid`` replaces the row's own id."""
    raw, turn_fields = split_turn_fields(raw)
    got = read_row(raw)
    v = got.values
    sample = Sample(id=sid or v["id"] or question_id(v["question"], v["reference"]) or f"row-{rown}",
                    question=v["question"], contexts=v["contexts"], response=v["response"],
                    reference=v["reference"], reference_contexts=v["reference_contexts"],
                    retrieved_ids=v["retrieved_ids"], relevant_ids=v["relevant_ids"],
                    metadata=got.metadata, **turn_fields)
    return sample, got
