"""Samples and data sets: the frozen ``Sample`` type, loading and validation.

A data set can come from JSONL, JSON, CSV, Parquet, a pandas DataFrame, a list of dicts or of
objects (a ragas ``EvaluationDataset``, a Hugging Face ``datasets.Dataset``, DeepEval test
cases), all duck-typed. The field names and value shapes of other tools load unchanged
(``_shapes.py`` holds the rules; ``docs/data.md`` says them for users). No field is required: a
missing field only makes the metrics that need it ``skipped``. A row that cannot be used is
reported with its file, row and field, and the other rows still load; problems of one kind are
reported once, with their count and first rows.
"""

from __future__ import annotations

import codecs
import csv
import hashlib
import io
import json
import os
import re
import stat
import warnings
from array import array
from collections.abc import Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field, fields, replace
from pathlib import Path
from typing import Any

from ..errors import InputError, MissingExtraError
from ._conversation import Conversation, ToolCall, Turn
from ._conversations import conversation_shape, read_conversation
from ._rows import is_span, merge_phoenix_spans, read_row
from ._safety import MAX_DIGITS, HugeNumber, deepest_key
from ._shapes import FIELD_ALIASES, FieldError, is_missing, row_mapping, to_plain
from ._values import text

__all__ = ["FIELD_ALIASES", "Dataset", "ProblemGroup", "RowProblem", "Sample", "SampleWarning",
           "group_problems", "is_out_of_scope", "turn_samples"]

# A JSON or CSV file is read whole into memory: refuse beyond this size (a JSONL file this large
# is read row by row from the file, FileSamples).
MAX_TEXT_FILE_BYTES = 2 * 1024**3


class SampleWarning(UserWarning):
    """A data set loaded, but something in it looks like a mistake (e.g. a misspelt field)."""


_FALSE = {"false", "no", "0", "n", "f"}
_TRUE = {"true", "yes", "1", "y", "t"}


def _flag(value: Any) -> bool | None:
    """True / False from a bool, a number or the words CSV cells hold; None when unset."""
    if isinstance(value, bool):
        return value
    if isinstance(value, (int, float)) and not is_missing(value):
        return bool(value)
    if isinstance(value, str):
        v = value.strip().lower()
        if v in _TRUE:
            return True
        if v in _FALSE:
            return False
    return None


def is_out_of_scope(metadata: Mapping[str, Any]) -> bool:
    """The rule for an out-of-scope question (the documents do not answer it; the system
    should decline): ``metadata.question_type == "out_of_scope"`` (as ``ragsight generate``
    writes), ``answerable`` false, or ``out_of_scope`` true. A row's top-level ``answerable`` /
    ``out_of_scope`` / ``question_type`` fields land in metadata, so they count too."""
    if str(metadata.get("question_type", "")).strip().lower() in ("out_of_scope", "out-of-scope"):
        return True
    if _flag(metadata.get("answerable")) is False:
        return True
    return _flag(metadata.get("out_of_scope")) is True


@dataclass(frozen=True)
class Sample:
    """One evaluation sample. Every field but ``id`` is optional.

    ``reference`` is one string, or a tuple of acceptable answers (aliases) any of which counts.
    ``relevant_ids`` is a tuple of ids, or a mapping of id to graded relevance (0, 1, 2, ...).
    The fields after ``metadata`` are set for a turn of a conversation (``ragsight.conversation``).
    """

    id: str
    question: str | None = None
    contexts: tuple[str, ...] | None = None
    response: str | None = None
    reference: str | tuple[str, ...] | None = None
    reference_contexts: tuple[str, ...] | None = None
    retrieved_ids: tuple[str, ...] | None = None
    relevant_ids: tuple[str, ...] | Mapping[str, float] | None = None
    metadata: Mapping[str, Any] = field(default_factory=dict)
    # A turn of a conversation (ragsight.conversation): ``turn`` is the 0-based index of the
    # assistant turn within its conversation, ``history`` the turns before this turn's question.
    # A conversation-level sample has ``conversation_id`` and ``turn`` None, its turns in history.
    conversation_id: str | None = None
    turn: int | None = None
    history: tuple[Turn, ...] | None = None
    tool_calls: tuple[ToolCall, ...] | None = None
    reference_tool_calls: tuple[ToolCall, ...] | None = None
    scenario: str | None = None
    expected_outcome: str | None = None
    system_role: str | None = None

    @property
    def reference_text(self) -> str | None:
        """The reference as one text (aliases joined with ' / '), for judge prompts."""
        if self.reference is None:
            return None
        if isinstance(self.reference, str):
            return self.reference
        return " / ".join(self.reference)

    @property
    def references(self) -> tuple[str, ...]:
        """All acceptable reference answers (one or more), or ()."""
        if self.reference is None:
            return ()
        if isinstance(self.reference, str):
            return (self.reference,)
        return tuple(self.reference)

    @property
    def out_of_scope(self) -> bool:
        """True when the question is marked out of scope (see :func:`is_out_of_scope`)."""
        return is_out_of_scope(self.metadata)

    def has(self, name: str) -> bool:
        """True when the field is present and not empty."""
        value = getattr(self, name)
        if value is None:
            return False
        if isinstance(value, str):
            return value.strip() != ""
        return len(value) > 0

    def to_dict(self) -> dict[str, Any]:
        out: dict[str, Any] = {}
        for f in fields(self):
            value = getattr(self, f.name)
            if isinstance(value, tuple):
                value = [v.to_dict() if isinstance(v, (Turn, ToolCall)) else v for v in value]
            elif isinstance(value, Mapping):
                value = dict(value)
            out[f.name] = value
        return out


def _calls(turns: Sequence[Turn]) -> tuple[ToolCall, ...]:
    return tuple(c for t in turns if t.role == "assistant" for c in t.tool_calls)


def _reference_calls(turns: Sequence[Turn]) -> tuple[ToolCall, ...] | None:
    given = [t.reference_tool_calls for t in turns if t.role == "assistant" and t.reference_tool_calls is not None]
    return None if not given else tuple(c for calls in given for c in calls)


def turn_samples(conversation: Conversation) -> list[Sample]:
    """The samples of a conversation: one per assistant turn (``conversation.assistant_turns``),
    then one conversation-level sample.

    A turn's sample: ``id`` ``CONV:K``, ``turn`` K (0-based among the assistant turns),
    ``question`` the user message it answers, ``response`` its content, ``contexts`` its own or,
    when it has none, the results of the tool calls made since that user message (agentic RAG
    retrieves through tools), ``reference``, ``tool_calls`` (every call made since the user
    message; ``()`` when none was), ``reference_tool_calls``, ``history`` (the turns before the
    user message). The conversation's sample: ``id`` ``CONV``, ``turn`` None, every turn in
    ``history``, every call in ``tool_calls``. Both carry the scenario, expected outcome and system
    role, and the conversation's metadata.
    """
    conv = conversation
    turns = conv.turns
    meta = dict(conv.metadata)
    common: dict[str, Any] = {"conversation_id": conv.id, "scenario": conv.scenario,
                              "expected_outcome": conv.expected_outcome, "system_role": conv.system_role}
    out: list[Sample] = []
    for k, pos in enumerate(conv.assistant_turns):
        t = turns[pos]
        user = next((i for i in range(pos - 1, -1, -1) if turns[i].role == "user"), None)
        start = 0 if user is None else user + 1
        exchange = turns[start:pos + 1]
        contexts, ids_ = t.contexts, t.retrieved_ids
        if contexts is None:
            results = tuple(u.content for u in exchange if u.role == "tool" and u.content.strip())
            contexts = results or None
        out.append(Sample(
            id=f"{conv.id}:{k}", question=None if user is None else turns[user].content, response=t.content,
            contexts=contexts, retrieved_ids=ids_, reference=t.reference, metadata=meta, turn=k,
            history=turns[:user] if user is not None else (), tool_calls=_calls(exchange),
            reference_tool_calls=_reference_calls(exchange), **common,
        ))
    out.append(Sample(id=conv.id, metadata=meta, history=turns, tool_calls=_calls(turns),
                      reference_tool_calls=conv.reference_tool_calls if conv.reference_tool_calls is not None
                      else _reference_calls(turns), **common))
    return out


_TURN_FIELDS = ("conversation_id", "turn", "history", "tool_calls", "reference_tool_calls", "scenario",
                "expected_outcome", "system_role")


def _tool_call(value: Any) -> ToolCall:
    m = row_mapping(value)
    if m is None or not isinstance(m.get("name"), str):
        raise FieldError("tool_calls", "a tool call must be an object with a name and args.")
    args = m.get("args")
    return ToolCall(m["name"], dict(args) if isinstance(args, Mapping) else {},
                    None if m.get("id") is None else str(m["id"]))


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
        reference_tool_calls=None if refc is None else tuple(_tool_call(c) for c in refc),
        tool_call_id=m.get("tool_call_id"), name=m.get("name"),
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
                got = json.loads(v)
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
            out[key] = None if v is None else tuple(_tool_call(c) for c in v)
    except TypeError:
        raise FieldError("history", "the turn's history or tool calls are not lists of objects.") from None
    for key in ("scenario", "expected_outcome", "system_role"):
        out[key] = text(key, raw.get(key)) if not is_missing(raw.get(key)) else None
    return {k: v for k, v in raw.items() if k not in _TURN_FIELDS}, out


@dataclass(frozen=True)
class RowProblem:
    """A row that could not be used, or a field in it that looks wrong."""

    source: str
    row: int  # 1-based row number in the source (line number for JSONL and CSV)
    field: str | None
    message: str

    def __str__(self) -> str:
        where = f"{self.source}, row {self.row}"
        if self.field:
            where += f", field '{self.field}'"
        return f"{where}: {self.message}"


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


@dataclass(frozen=True)
class ProblemGroup:
    """Row problems of one kind: the same field and the same message but for row-specific
    values (numbers, quoted names). ``rows`` are all the rows, in order."""

    source: str
    field: str | None
    message: str  # the first occurrence's message
    rows: tuple[int, ...]
    warning: bool

    def __str__(self) -> str:
        return self.line()

    def line(self, shown: int = 5) -> str:
        """One line: the rows (the first ``shown`` of them and the count), the field, the message."""
        msg = self.message.removeprefix("warning: ")
        where = f"{self.source}, row {self.rows[0]}"
        if len(self.rows) > 1:
            first = ", ".join(str(r) for r in self.rows[:shown])
            more = f", ... ({len(self.rows):,} rows)" if len(self.rows) > shown else ""
            where = f"{self.source}, rows {first}{more}"
        if self.field:
            where += f", field '{self.field}'"
        if len(msg) > 400:
            msg = msg[:400] + " [...]"
        return f"{where}: {msg}"


_VARYING = re.compile(r"'[^']*'|\"[^\"]*\"|\d[\d,.]*")


def group_problems(problems: Iterable[RowProblem]) -> list[ProblemGroup]:
    """Problems grouped by kind (source, field, message with its row-specific values masked),
    in the order each kind first appears."""
    groups: dict[tuple[str, str | None, str], list[RowProblem]] = {}
    for p in problems:
        key = (p.source, p.field, _VARYING.sub("#", p.message))
        groups.setdefault(key, []).append(p)
    return [ProblemGroup(ps[0].source, ps[0].field, ps[0].message, tuple(p.row for p in ps),
                         ps[0].message.startswith("warning:"))
            for ps in groups.values()]


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


def _looks_binary(head: bytes) -> bool:
    """NUL bytes and not UTF-8 (a text file may hold a NUL character; a binary one is rarely
    valid UTF-8), or NUL bytes in more than a tenth of it (UTF-16 and the like)."""
    nul = head.count(b"\x00")
    if not nul:
        return False
    if nul * 10 > len(head):
        return True
    try:
        codecs.getincrementaldecoder("utf-8")().decode(head, final=False)
    except UnicodeDecodeError:
        return True
    return False


def _parse_int(text: str) -> int | HugeNumber:
    """json's parse_int: a number too long for int() stays text, reported by field later."""
    return int(text) if len(text) <= MAX_DIGITS else HugeNumber(text)


def _loads(text: str) -> Any:
    return json.loads(text, parse_int=_parse_int)


class _RowReader:
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
        return conv_samples

    def row(self, raw: Mapping[str, Any], rown: int) -> Sample | None:
        source = self.source
        self.renamed = False  # set when the row's id is taken and a suffix makes it unique
        try:
            sample, got = _row_sample(raw, rown)
        except FieldError as exc:
            self.problems.append(RowProblem(source, rown, exc.field_name, exc.message))
            return None
        except (RecursionError, MemoryError):
            self.problems.append(RowProblem(source, rown, None, "the row nests too deeply to read; flatten it."))
            return None
        for fname, note in got.notes:
            self.problems.append(RowProblem(source, rown, fname, "warning: " + note))
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


def _row_sample(raw: Mapping[str, Any], rown: int, sid: str | None = None) -> tuple[Sample, Any]:
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


# A JSONL file of this size or more is not held in memory: its rows are read from the file
# each time the samples are gone through (a 100,000-sample file held as samples took 416 MB).
LAZY_FILE_BYTES = 8 * 1024**2


class _NotFlat(Exception):
    """A row the file-backed reading does not take (a conversation, a Phoenix span)."""


class FileSamples(Sequence[Sample]):
    """The samples of a JSONL file, read again from the file when asked for: the file's
    offset, length and line of each usable row are kept, not the samples. The file must not
    change while a run reads it (InputError when its size or time changed)."""

    def __init__(self, path: Path, source: str, stamp: tuple[int, int]) -> None:
        self.path, self.source, self.stamp = path, source, stamp
        self.offsets = array("q")
        self.lengths = array("q")
        self.lines = array("q")
        self.renamed: dict[int, str] = {}  # position -> id, where loading changed a row's id

    def __len__(self) -> int:
        return len(self.offsets)

    def _open(self) -> Any:
        f = self.path.open("rb")
        st = os.fstat(f.fileno())
        if (st.st_size, st.st_mtime_ns) != self.stamp:
            f.close()
            raise InputError(f"{self.source}: the file changed while ragsight was reading it; run again "
                             "on a file that is not being written.")
        return f

    def _read(self, f: Any, i: int) -> Sample:
        f.seek(self.offsets[i])
        line = self.lines[i]
        raw = row_mapping(_loads(f.read(self.lengths[i]).decode("utf-8-sig" if line == 1 else "utf-8")))
        assert raw is not None
        return _row_sample(raw, line, self.renamed.get(i))[0]

    def __getitem__(self, i: Any) -> Any:
        if isinstance(i, slice):
            with self._open() as f:
                return [self._read(f, k) for k in range(*i.indices(len(self)))]
        n = len(self)
        k = i + n if i < 0 else i
        if not 0 <= k < n:
            raise IndexError(i)
        with self._open() as f:
            return self._read(f, k)

    def __iter__(self) -> Iterator[Sample]:
        with self._open() as f:
            for k in range(len(self)):
                yield self._read(f, k)

    def __repr__(self) -> str:
        return f"<{len(self):,} samples read from {self.source}>"


def _jsonl_lazy(path: Path, src: str) -> Dataset | None:
    """A large JSONL file of flat rows, read without holding its samples; None when a row is
    a conversation or the file is a Phoenix span export (read whole, as before)."""
    f = path.open("rb")
    with f:
        st = os.fstat(f.fileno())
        held = FileSamples(path, src, (st.st_size, st.st_mtime_ns))
        reader = _RowReader(src)
        first = True
        offset = 0
        for n, line in enumerate(f, start=1):
            at, offset = offset, offset + len(line)
            try:
                text = line.decode("utf-8-sig" if n == 1 else "utf-8")
            except UnicodeDecodeError as exc:
                reader.problems.append(RowProblem(
                    src, n, None, f"not valid UTF-8 (byte 0x{line[exc.start]:02x} at column {exc.start + 1}). "
                    "Save the file as UTF-8, e.g. iconv -f latin1 -t utf-8 in > out."))
                continue
            if not text.strip():
                continue
            try:
                obj = _loads(text)
            except json.JSONDecodeError as exc:
                reader.problems.append(RowProblem(src, n, None, f"not valid JSON ({exc.msg} at column {exc.colno}). "
                                                  "Each line must be one JSON object."))
                continue
            except RecursionError:
                key, _ = deepest_key(text)
                reader.problems.append(RowProblem(src, n, key, "nests deeper than Python's JSON reader allows "
                                                  f"({'field ' + repr(key) if key else 'the row'}); flatten it."))
                continue
            raw = row_mapping(obj)
            if raw is None:
                reader.problems.append(RowProblem(
                    src, n, None, f"expected an object with fields, got {type(obj).__name__}. "
                    'Each row must be an object such as {"question": "...", "response": "..."}.'))
                continue
            try:
                if (first and is_span(raw)) or conversation_shape(raw) is not None:
                    return None
            except FieldError:
                return None
            first = False
            sample = reader.row(raw, n)
            if sample is None:
                continue
            k = len(held)
            held.offsets.append(at)
            held.lengths.append(len(line))
            held.lines.append(n)
            if reader.renamed:
                held.renamed[k] = sample.id
        if os.fstat(f.fileno()).st_mtime_ns != st.st_mtime_ns or offset != st.st_size:
            raise InputError(f"{src}: the file changed while ragsight was reading it; run again on a file "
                             "that is not being written.")
    ds = reader.finish(Dataset(held, reader.problems, src))
    ds.problems.sort(key=lambda p: p.row)
    return ds


class Dataset:
    """An ordered collection of samples with unique ids, plus the problems found while loading.

    Rows that cannot be used are not in the data set; they are listed in ``problems`` (file, row,
    field, how to fix) so a run can report them. ``sources`` says which of the data's names
    filled each ragsight field (``{"response": ("actual_output",), ...}``). Use
    ``Dataset.load(data)`` or ``Dataset.from_records(rows)``.
    """

    def __init__(self, samples: Iterable[Sample], problems: Iterable[RowProblem] = (), source: str = "<data>") -> None:
        # a large JSONL file's samples stay in the file (FileSamples); ids were checked as it loaded
        self.samples: Sequence[Sample] = samples if isinstance(samples, FileSamples) else list(samples)
        self.problems: list[RowProblem] = list(problems)
        self.source = source
        self.sources: dict[str, tuple[str, ...]] = {}
        # unknown columns that most likely mean a field no row has (column -> field), and every
        # column the rows had: evaluate() stops on them before a run is made
        self.misnamed: dict[str, str] = {}
        self.columns: tuple[str, ...] = ()
        seen: set[str] = set()
        for s in () if isinstance(self.samples, FileSamples) else self.samples:
            if s.id in seen:
                raise InputError(f"{source}: sample id '{s.id}' appears twice; ids must be unique.")
            seen.add(s.id)

    def __len__(self) -> int:
        return len(self.samples)

    def __iter__(self) -> Iterator[Sample]:
        return iter(self.samples)

    def __getitem__(self, i: int) -> Sample:
        return self.samples[i]

    def ids(self) -> list[str]:
        return [s.id for s in self.samples]

    def by_id(self, sample_id: str) -> Sample:
        for s in self.samples:
            if s.id == sample_id:
                return s
        raise KeyError(sample_id)

    def misnamed_message(self) -> str | None:
        """What to rename when an unknown column most likely means a field no row has, else None."""
        if not self.misnamed:
            return None
        what = "; ".join(
            f"'{col}' holds texts: name it 'contexts' (the retrieved chunks)" if meant == "contexts"
            else f"'{col}': did you mean '{meant}'?" for col, meant in self.misnamed.items())
        found = ", ".join(self.columns[:12]) + (", ..." if len(self.columns) > 12 else "")
        return (f"{self.source}: unknown column(s): {what}. Columns found: {found}. The columns ragsight "
                "reads: id, question, contexts, response, reference, reference_contexts, retrieved_ids, "
                "relevant_ids, metadata (other tools' names work too: user_input, retrieved_contexts, "
                "answer, ground_truth...). Rename the column; nothing was run.")

    @property
    def errors(self) -> list[RowProblem]:
        """Problems that made a row unusable (the row is not in the data set)."""
        return [p for p in self.problems if not p.message.startswith("warning:")]

    # ---- constructors -------------------------------------------------------------------

    @classmethod
    def from_records(
        cls, rows: Iterable[Any], source: str = "<records>", *, from_csv: bool = False,
        row_numbers: Sequence[int] | None = None,
    ) -> Dataset:
        """Build a data set from dict-like rows (or objects with ``to_dict()`` /
        ``model_dump()``). Bad rows are reported, not raised."""
        rows = list(rows)
        numbers = list(row_numbers) if row_numbers is not None else list(range(1, len(rows) + 1))
        rows, numbers = merge_phoenix_spans(rows, numbers)
        reader = _RowReader(source)
        samples: list[Sample] = []
        for obj, rown in zip(rows, numbers):
            conv = obj if isinstance(obj, Conversation) else None
            raw = None if conv is not None else row_mapping(obj)
            if conv is None and raw is None:
                reader.problems.append(RowProblem(
                    source, rown, None, f"expected an object with fields, got {type(obj).__name__}. "
                    'Each row must be an object such as {"question": "...", "response": "..."}.'))
                continue
            try:
                if conv is None and raw is not None and (shape := conversation_shape(raw)) is not None:
                    conv = read_conversation(raw, shape)
                    reader.sources.setdefault("conversation", {})[shape] = None
            except FieldError as exc:
                reader.problems.append(RowProblem(source, rown, exc.field_name, exc.message))
                continue
            except (RecursionError, MemoryError):
                reader.problems.append(RowProblem(source, rown, None, "the row nests too deeply to read; flatten it."))
                continue
            if conv is not None:
                samples.extend(reader.conversation(conv, rown))
                continue
            assert raw is not None
            sample = reader.row(raw, rown)
            if sample is not None:
                samples.append(sample)
        return reader.finish(cls(samples, reader.problems, source))

    @classmethod
    def from_pandas(cls, df: Any, source: str = "<DataFrame>") -> Dataset:
        names = [n for n in getattr(df.index, "names", None) or () if n is not None]
        if names:  # a named index (Phoenix's context.span_id, a user's id) is data: keep it
            df = df.reset_index()
        records = df.to_dict(orient="records")
        return cls.from_records(records, source)

    @classmethod
    def load(cls, data: Any) -> Dataset:
        """Load from a path (.jsonl, .json, .csv, .parquet), a pandas DataFrame, a list of dicts
        or of row objects, a ragas ``EvaluationDataset`` or a Hugging Face ``datasets.Dataset``
        (duck-typed: ``to_list()`` / ``to_pandas()``), or a Dataset."""
        if isinstance(data, Dataset):
            return data
        if isinstance(data, (str, os.PathLike)):
            return cls.from_file(Path(data))
        if isinstance(data, Conversation):
            return cls.from_records([data], "<conversation>")
        kind = type(data).__name__
        if kind == "DataFrame" and hasattr(data, "to_dict"):
            return cls.from_pandas(data)
        if isinstance(data, Mapping):
            splits = [k for k, v in data.items() if callable(getattr(v, "to_list", None))]
            if splits and len(splits) == len(data):
                raise InputError(f"this is a {kind} of splits ({', '.join(map(str, splits))}); give one split, "
                                 f"e.g. data[{splits[0]!r}].")
            return cls.from_records(_columns_to_rows(data, "<dict>"), "<dict>")
        to_list = getattr(data, "to_list", None)
        if callable(to_list):  # ragas EvaluationDataset, datasets.Dataset
            return cls.from_records(to_list(), f"<{kind}>")
        to_pandas = getattr(data, "to_pandas", None)
        if callable(to_pandas):
            return cls.from_pandas(to_pandas(), f"<{kind}>")
        if isinstance(data, Iterable):
            rows = list(data)
            if rows and all(isinstance(r, Sample) for r in rows):
                return cls(rows, source="<samples>")
            return cls.from_records(rows, "<records>")
        raise InputError(f"cannot load a data set from {kind}; give a file path, a DataFrame, a list of dicts, "
                         "a ragas EvaluationDataset or a Hugging Face Dataset.")

    @classmethod
    def from_file(cls, path: Path) -> Dataset:
        try:
            st = path.stat()
        except FileNotFoundError:
            raise InputError(f"{path}: no such file. Check the path.") from None
        except OSError as exc:
            raise InputError(f"{path}: cannot be read ({exc.strerror or exc}).") from None
        if stat.S_ISDIR(st.st_mode):
            raise InputError(f"{path}: is a folder; give a .jsonl, .json, .csv or .parquet file.")
        suffix = path.suffix.lower()
        src = str(path)
        if suffix not in (".jsonl", ".ndjson", ".json", ".csv", ".tsv", ".parquet"):
            raise InputError(f"{src}: unknown file type '{suffix}'. Use .jsonl, .json, .csv or .parquet.")
        if not stat.S_ISREG(st.st_mode):
            raise InputError(f"{src}: not a regular file (a device, pipe or socket); save the data to a file "
                             "and give its path.")
        if suffix == ".parquet":
            try:
                import pandas as pd
            except ImportError as exc:
                raise MissingExtraError("reading Parquet", "parquet", "pandas") from exc
            try:
                df = pd.read_parquet(path)
            except ImportError as exc:
                raise MissingExtraError("reading Parquet", "parquet", "pyarrow") from exc
            except Exception as exc:
                raise InputError(f"{src}: not a readable Parquet file ({exc}).") from exc
            return cls.from_pandas(df, src)
        too_large = InputError(
            f"{src}: {st.st_size / 1024**3:.1f} GiB is more than ragsight reads whole from a text file "
            f"({MAX_TEXT_FILE_BYTES / 1024**3:.0f} GiB); split it, or write flat rows as JSONL (read row by row).")
        if st.st_size > MAX_TEXT_FILE_BYTES and suffix not in (".jsonl", ".ndjson"):  # JSONL is streamed
            raise too_large
        with path.open("rb") as f:
            head = f.read(65536)
            if _looks_binary(head):
                raise InputError(f"{src}: the file is binary (NUL bytes in its first 64 KiB, and not UTF-8 "
                                 f"text), not {suffix[1:].upper()}. Check the path; give a UTF-8 text file.")
            if (suffix in (".jsonl", ".ndjson") and st.st_size >= LAZY_FILE_BYTES
                    and (lazy := _jsonl_lazy(path, src)) is not None):
                if not lazy.samples and not lazy.problems:
                    raise InputError(f"{src}: the file is empty. Give a file with one sample per row.")
                return lazy
            if st.st_size > MAX_TEXT_FILE_BYTES:  # conversations or spans: read whole
                raise too_large
            raw = head + f.read()
        if not raw.strip().lstrip(b"\xef\xbb\xbf").strip():
            raise InputError(f"{src}: the file is empty. Give a file with one sample per row.")
        if suffix in (".jsonl", ".ndjson"):
            # one row per line: a line that is not UTF-8 is a bad row, not a bad file
            return cls._from_jsonl_bytes(raw, src)
        try:
            text = raw.decode("utf-8-sig")
        except UnicodeDecodeError as exc:
            line = raw[: exc.start].count(b"\n") + 1
            raise InputError(
                f"{src}, line {line}: the file is not valid UTF-8 (byte 0x{raw[exc.start]:02x} at offset {exc.start}). "
                "Save it as UTF-8, e.g. iconv -f latin1 -t utf-8 in > out."
            ) from exc
        if suffix == ".json":
            return cls._from_json(text, src)
        return cls._from_csv(text, src, "\t" if suffix == ".tsv" else ",")

    @classmethod
    def _from_jsonl_bytes(cls, raw: bytes, src: str) -> Dataset:
        lines: list[str] = []
        problems: list[RowProblem] = []
        for n, line in enumerate(raw.split(b"\n"), start=1):
            try:
                lines.append(line.decode("utf-8-sig" if n == 1 else "utf-8"))
            except UnicodeDecodeError as exc:
                lines.append("")
                problems.append(RowProblem(
                    src, n, None,
                    f"not valid UTF-8 (byte 0x{line[exc.start]:02x} at column {exc.start + 1}). Save the "
                    "file as UTF-8, e.g. iconv -f latin1 -t utf-8 in > out.",
                ))
        return cls._from_jsonl("\n".join(lines), src, problems)

    @classmethod
    def _from_jsonl(cls, text: str, src: str, problems: Sequence[RowProblem] = ()) -> Dataset:
        rows: list[Any] = []
        numbers: list[int] = []
        problems = list(problems)
        for n, line in enumerate(text.split("\n"), start=1):
            if not line.strip():
                continue
            try:
                rows.append(_loads(line))
                numbers.append(n)
            except json.JSONDecodeError as exc:
                problems.append(RowProblem(src, n, None, f"not valid JSON ({exc.msg} at column {exc.colno}). Each line must be one JSON object."))
            except RecursionError:
                key, _ = deepest_key(line)
                problems.append(RowProblem(src, n, key, f"nests deeper than Python's JSON reader allows "
                                           f"({'field ' + repr(key) if key else 'the row'}); flatten it."))
        ds = cls.from_records(rows, src, row_numbers=numbers)
        ds.problems = problems + ds.problems
        ds.problems.sort(key=lambda p: p.row)
        return ds

    @classmethod
    def _from_json(cls, text: str, src: str) -> Dataset:
        try:
            data = _loads(text)
        except json.JSONDecodeError as exc:
            raise InputError(f"{src}, line {exc.lineno}: not valid JSON ({exc.msg}). If it is one object per line, name it .jsonl.") from exc
        except RecursionError:
            key, line = deepest_key(text, limit=200)
            raise InputError(f"{src}, line {line}: the JSON nests too deeply to read"
                             f"{' (field ' + repr(key) + ')' if key else ''}; flatten it, or write one object "
                             "per line as .jsonl so the other rows still load.") from None
        if isinstance(data, Mapping):
            inner = data.get("results")
            if isinstance(inner, Mapping) and isinstance(inner.get("results"), list):
                return cls.from_records(inner["results"], src)  # promptfoo eval --output results.json
            # testCases: a DeepEval test run (.deepeval/.latest_test_run.json, TestRun by alias),
            # its conversations under conversationalTestCases, beside the single-turn cases or alone
            convs = next((data[k] for k in ("conversationalTestCases", "conversational_test_cases")
                          if isinstance(data.get(k), list)), None)
            if convs is not None:
                single: list[Any] = next((data[k] for k in ("testCases", "test_cases")
                                          if isinstance(data.get(k), list)), [])
                return cls.from_records([*single, *convs], src)
            for key in ("samples", "data", "rows", "records", "results", "test_cases", "testCases", "goldens"):
                if isinstance(data.get(key), list):
                    return cls.from_records(data[key], src)
            return cls.from_records(_columns_to_rows(data, src), src)
        if isinstance(data, list):
            return cls.from_records(data, src)
        raise InputError(f"{src}: expected a list of objects, got {type(data).__name__}.")

    @classmethod
    def _from_csv(cls, text: str, src: str, delimiter: str) -> Dataset:
        # strict: an unclosed quote is an error, not a cell that swallows the rest of the file
        reader = csv.DictReader(io.StringIO(text, newline=""), delimiter=delimiter, strict=True)
        rows: list[dict[str, Any]] = []
        numbers: list[int] = []
        problems: list[RowProblem] = []
        line = 1  # the header
        # a cell can be as long as the file (csv's default limit is 131,072 characters)
        old_limit = csv.field_size_limit(max(csv.field_size_limit(), min(len(text) + 1, 2**31 - 1)))
        try:
            for row in reader:
                line = reader.line_num
                if None in row:
                    problems.append(RowProblem(src, line, None, "more cells than header columns; quote cells that contain the delimiter."))
                    continue
                rows.append({k: (None if v == "" else v) for k, v in row.items()})
                numbers.append(line)
        except csv.Error as exc:
            msg = str(exc)
            if "NUL" in msg:
                hint = "The file holds NUL bytes: it is binary, or saved as UTF-16; save it as UTF-8 text."
            else:
                hint = ('Look for an unclosed quote: a cell that holds quotes, commas or line breaks must be '
                        'quoted, with quotes inside it doubled ("").')
            raise InputError(f"{src}, line {line + 1}: the CSV does not parse ({msg}). {hint}") from exc
        finally:
            csv.field_size_limit(old_limit)
        if not rows and not problems:
            raise InputError(f"{src}: the file has a header row and no samples under it.")
        ds = cls.from_records(rows, src, from_csv=True, row_numbers=numbers)
        ds.problems = problems + ds.problems
        return ds


def _columns_to_rows(data: Mapping[str, Any], src: str) -> list[dict[str, Any]]:
    """{"question": [...], "answer": [...]} (columns) to a list of rows."""
    lengths = {k: len(v) for k, v in data.items() if isinstance(v, list)}
    if not lengths or len(set(lengths.values())) != 1 or len(lengths) != len(data):
        raise InputError(f"{src}: expected a list of samples, or an object of equal-length columns.")
    n = next(iter(lengths.values()))
    return [{k: data[k][i] for k in data} for i in range(n)]
