"""Samples and data sets: the frozen ``Sample`` type, loading and validation.

A data set can come from JSONL, JSON, CSV, Parquet, a pandas DataFrame or a list of dicts. The
field names of other tools load unchanged (``user_input``, ``retrieved_contexts``, ``answer``,
``ground_truth``...). No field is required: a missing field only makes the metrics that need it
``skipped``. A row that cannot be used is reported with its file, row and field, and the other rows
still load.
"""

from __future__ import annotations

import csv
import difflib
import hashlib
import io
import json
import math
import os
import warnings
from collections.abc import Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field, fields, replace
from pathlib import Path
from typing import Any

from .errors import InputError, MissingExtraError

__all__ = ["Dataset", "RowProblem", "Sample", "SampleWarning"]


class SampleWarning(UserWarning):
    """A data set loaded, but something in it looks like a mistake (e.g. a misspelt field)."""


# canonical name -> accepted names (the canonical one first)
FIELD_ALIASES: dict[str, tuple[str, ...]] = {
    "id": ("id", "sample_id", "qid", "question_id"),
    "question": ("question", "user_input", "query", "input"),
    "contexts": ("contexts", "retrieved_contexts", "context", "retrieved_context"),
    "response": ("response", "answer", "output", "generated_answer"),
    "reference": ("reference", "ground_truth", "ground_truths", "reference_answer", "expected_output"),
    "reference_contexts": ("reference_contexts", "ground_truth_contexts"),
    "retrieved_ids": ("retrieved_ids", "retrieved_context_ids"),
    "relevant_ids": ("relevant_ids", "reference_context_ids", "relevant_context_ids"),
    "metadata": ("metadata",),
}
_ALIAS_TO_FIELD = {alias: name for name, aliases in FIELD_ALIASES.items() for alias in aliases}
_LIST_FIELDS = ("contexts", "reference_contexts", "retrieved_ids")
# the fields that carry something to evaluate (a row with none of them and unknown ones is a mistake)
_CONTENT_FIELDS = ("question", "contexts", "response", "reference", "reference_contexts",
                   "retrieved_ids", "relevant_ids")


@dataclass(frozen=True)
class Sample:
    """One evaluation sample. Every field but ``id`` is optional.

    ``reference`` is one string, or a tuple of acceptable answers (aliases) any of which counts.
    ``relevant_ids`` is a tuple of ids, or a mapping of id to graded relevance (0, 1, 2, ...).
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
                value = list(value)
            elif isinstance(value, Mapping):
                value = dict(value)
            out[f.name] = value
        return out


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


def _is_missing(value: Any) -> bool:
    if value is None:
        return True
    return isinstance(value, float) and math.isnan(value)


def _to_plain(value: Any) -> Any:
    """numpy / pandas / pyarrow scalars and arrays to plain Python values."""
    if hasattr(value, "tolist") and not isinstance(value, (str, bytes)):
        return value.tolist()
    return value


class _RowError(Exception):
    def __init__(self, field_name: str | None, message: str) -> None:
        super().__init__(message)
        self.field_name = field_name
        self.message = message


def _text(name: str, value: Any) -> str | None:
    if _is_missing(value):
        return None
    if isinstance(value, (int, float)) and not isinstance(value, bool):
        return str(value)
    if not isinstance(value, str):
        raise _RowError(name, f"expected text, got {type(value).__name__}. Give '{name}' as a string.")
    return value


def _text_list(name: str, value: Any, from_csv: bool) -> tuple[str, ...] | None:
    value = _to_plain(value)
    if _is_missing(value):
        return None
    if isinstance(value, str):
        if from_csv and value.strip().startswith("["):
            try:
                value = json.loads(value)
            except json.JSONDecodeError as exc:
                raise _RowError(
                    name, f"the cell starts like a JSON list but does not parse ({exc.msg}). "
                    f'Write it as a JSON array of strings, e.g. ["first chunk", "second chunk"].'
                ) from exc
        elif from_csv and value.strip() == "":
            return None
        else:
            how = (
                'in a CSV cell, as a JSON array: ["chunk one", "chunk two"]'
                if from_csv
                else 'as a list of strings: ["chunk one", "chunk two"]'
            )
            raise _RowError(
                name,
                f"'{name}' is one string, but it must be a list of strings (one per chunk). "
                f"Give it {how}; a single chunk is a list of one.",
            )
    if not isinstance(value, (list, tuple)):
        raise _RowError(
            name, f"expected a list of strings, got {type(value).__name__}. Give '{name}' as a "
            'list of strings, e.g. ["chunk one", "chunk two"].'
        )
    out = []
    for i, item in enumerate(value):
        item = _to_plain(item)
        if isinstance(item, (int, float)) and not isinstance(item, bool) and name.endswith("ids"):
            item = str(item)
        if not isinstance(item, str):
            raise _RowError(
                name, f"item {i} is {type(item).__name__}, not a string. Every item must be text."
            )
        out.append(item)
    return tuple(out)


def _reference(value: Any, from_csv: bool) -> str | tuple[str, ...] | None:
    value = _to_plain(value)
    if _is_missing(value):
        return None
    if isinstance(value, str):
        if from_csv and value.strip().startswith('["'):
            try:
                parsed = json.loads(value)
            except json.JSONDecodeError:
                return value
            return _reference(parsed, False)
        return value
    if isinstance(value, (list, tuple)):
        # blank aliases accept nothing: drop them; a list of blanks is a missing reference
        items = tuple(a for a in (_text_list("reference", value, False) or ()) if a.strip())
        if not items:
            return None
        return items[0] if len(items) == 1 else items
    if isinstance(value, (int, float)) and not isinstance(value, bool):
        return str(value)
    raise _RowError(
        "reference", f"expected text or a list of acceptable answers, got {type(value).__name__}. "
        'Give the reference as a string, or a list of strings when several answers are acceptable.'
    )


def _relevant_ids(value: Any, from_csv: bool) -> tuple[str, ...] | dict[str, float] | None:
    value = _to_plain(value)
    if _is_missing(value):
        return None
    if isinstance(value, str) and from_csv and value.strip()[:1] in "[{":
        try:
            value = json.loads(value)
        except json.JSONDecodeError as exc:
            raise _RowError("relevant_ids", f"the cell does not parse as JSON ({exc.msg}).") from exc
    if isinstance(value, Mapping):
        grades: dict[str, float] = {}
        for k, g in value.items():
            if isinstance(g, bool) or not isinstance(g, (int, float)) or not math.isfinite(g) or g < 0:
                raise _RowError(
                    "relevant_ids",
                    f"grade of '{k}' is {g!r}; grades must be numbers >= 0 (0 = not relevant).",
                )
            grades[str(k)] = float(g)
        return grades
    return _text_list("relevant_ids", value, from_csv)


def _metadata(value: Any) -> dict[str, Any]:
    value = _to_plain(value)
    if _is_missing(value):
        return {}
    if isinstance(value, str):
        try:
            parsed = json.loads(value)
        except json.JSONDecodeError:
            return {"value": value}
        value = parsed
    if not isinstance(value, Mapping):
        raise _RowError(
            "metadata", f"expected an object (mapping), got {type(value).__name__}. Give metadata as "
            'an object, e.g. {"chunk_size": 512, "generator": "my-model"}.'
        )
    return dict(value)


def sample_from_mapping(
    raw: Mapping[str, Any], *, from_csv: bool = False, row: int | None = None
) -> tuple[Sample, list[tuple[str, str]]]:
    """Build a Sample from one row. Returns it with (field, warning) notes.

    A row without an id gets :func:`question_id`, or ``row-N`` (its 1-based position, ``row``)
    when it has neither a question nor a reference. Raises _RowError for an unusable field.
    """
    notes: list[tuple[str, str]] = []
    canon: dict[str, Any] = {}
    extra: dict[str, Any] = {}
    for key, value in raw.items():
        key_s = str(key)
        name = _ALIAS_TO_FIELD.get(key_s) or _ALIAS_TO_FIELD.get(key_s.strip().lower())
        if name is None:
            extra[key_s] = _to_plain(value)
            close = difflib.get_close_matches(key_s.lower(), list(_ALIAS_TO_FIELD), n=1, cutoff=0.8)
            if close:
                notes.append(
                    (key_s, f"unknown field '{key_s}' kept in metadata; did you mean '{close[0]}'?")
                )
            continue
        if name in canon and not _is_missing(canon[name]):
            if not _is_missing(value):
                notes.append((key_s, f"'{key_s}' duplicates '{name}'; the first one is used."))
            continue
        canon[name] = value

    if extra and not any(name in canon for name in _CONTENT_FIELDS):
        got = ", ".join(f"'{k}'" for k in list(extra)[:8])
        raise _RowError(
            None,
            f"none of this row's fields is known ({got}). Name them question, contexts, response, "
            "reference (the names of other tools work too: user_input, retrieved_contexts, answer, "
            "ground_truth...).",
        )
    meta = _metadata(canon.get("metadata"))
    if extra:
        meta = {**extra, **meta}
    raw_id = canon.get("id")
    sid = None if _is_missing(raw_id) else str(_to_plain(raw_id)).strip()
    question = _text("question", canon.get("question"))
    contexts = _text_list("contexts", canon.get("contexts"), from_csv)
    response = _text("response", canon.get("response"))
    reference = _reference(canon.get("reference"), from_csv)
    ref_contexts = _text_list("reference_contexts", canon.get("reference_contexts"), from_csv)
    retrieved_ids = _text_list("retrieved_ids", canon.get("retrieved_ids"), from_csv)
    relevant_ids = _relevant_ids(canon.get("relevant_ids"), from_csv)
    if not sid:
        sid = question_id(question, reference) or f"row-{row if row is not None else 0}"
    sample = Sample(
        id=sid,
        question=question,
        contexts=contexts,
        response=response,
        reference=reference,
        reference_contexts=ref_contexts,
        retrieved_ids=retrieved_ids,
        relevant_ids=relevant_ids,
        metadata=meta,
    )
    return sample, notes


class Dataset:
    """An ordered collection of samples with unique ids, plus the problems found while loading.

    Rows that cannot be used are not in the data set; they are listed in ``problems`` (file, row,
    field, how to fix) so a run can report them. Use ``Dataset.load(path)`` or
    ``Dataset.from_records(rows)``.
    """

    def __init__(self, samples: Iterable[Sample], problems: Iterable[RowProblem] = (), source: str = "<data>") -> None:
        self.samples: list[Sample] = list(samples)
        self.problems: list[RowProblem] = list(problems)
        self.source = source
        seen: set[str] = set()
        for s in self.samples:
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

    @property
    def errors(self) -> list[RowProblem]:
        """Problems that made a row unusable (the row is not in the data set)."""
        return [p for p in self.problems if not p.message.startswith("warning:")]

    # ---- constructors -------------------------------------------------------------------

    @classmethod
    def from_records(
        cls, rows: Iterable[Mapping[str, Any]], source: str = "<records>", *, from_csv: bool = False,
        row_numbers: Sequence[int] | None = None,
    ) -> Dataset:
        """Build a data set from dict-like rows. Bad rows are reported, not raised."""
        samples: list[Sample] = []
        problems: list[RowProblem] = []
        ids: dict[str, int] = {}
        explicit: set[str] = set()
        by_position: list[int] = []
        for i, raw in enumerate(rows):
            rown = row_numbers[i] if row_numbers is not None else i + 1
            if not isinstance(raw, Mapping):
                problems.append(RowProblem(
                    source, rown, None, f"expected an object with fields, got {type(raw).__name__}. "
                    'Each row must be an object such as {"question": "...", "response": "..."}.'))
                continue
            try:
                sample, notes = sample_from_mapping(raw, from_csv=from_csv, row=rown)
            except _RowError as exc:
                problems.append(RowProblem(source, rown, exc.field_name, exc.message))
                continue
            for fname, note in notes:
                problems.append(RowProblem(source, rown, fname, "warning: " + note))
            has_explicit_id = any(not _is_missing(raw.get(a)) for a in FIELD_ALIASES["id"])
            if sample.id in ids:
                if has_explicit_id or sample.id in explicit:
                    problems.append(
                        RowProblem(source, rown, "id", f"id '{sample.id}' was already used by row {ids[sample.id]}; "
                                   "ids must be unique. Give this row another id, or remove the duplicate row.")
                    )
                    continue
                k = 2
                while f"{sample.id}-{k}" in ids:
                    k += 1
                sample = replace(sample, id=f"{sample.id}-{k}")
            ids[sample.id] = rown
            if has_explicit_id:
                explicit.add(sample.id)
            elif sample.id.startswith("row-"):
                by_position.append(rown)
            samples.append(sample)
        if by_position:
            shown = ", ".join(str(r) for r in by_position[:5]) + (", ..." if len(by_position) > 5 else "")
            problems.append(RowProblem(
                source, by_position[0], "id",
                f"warning: {len(by_position)} row(s) have no id, question or reference (rows {shown}): "
                "their ids are their row numbers (row-N), so another run of this data pairs with "
                "them by position only. Give each row an id to pair them safely."))
        ds = cls(samples, problems, source)
        for p in problems:
            if p.message.startswith("warning:"):
                warnings.warn(str(p).replace("warning: ", ""), SampleWarning, stacklevel=2)
        return ds

    @classmethod
    def from_pandas(cls, df: Any, source: str = "<DataFrame>") -> Dataset:
        records = df.to_dict(orient="records")
        return cls.from_records(records, source)

    @classmethod
    def load(cls, data: Any) -> Dataset:
        """Load from a path (.jsonl, .json, .csv, .parquet), a DataFrame, a list of dicts, or a Dataset."""
        if isinstance(data, Dataset):
            return data
        if isinstance(data, (str, os.PathLike)):
            return cls.from_file(Path(data))
        if type(data).__name__ == "DataFrame" and hasattr(data, "to_dict"):
            return cls.from_pandas(data)
        if isinstance(data, Mapping):
            return cls.from_records(_columns_to_rows(data, "<dict>"), "<dict>")
        if isinstance(data, Iterable):
            rows = list(data)
            if rows and all(isinstance(r, Sample) for r in rows):
                return cls(rows, source="<samples>")
            return cls.from_records(rows, "<records>")
        raise InputError(f"cannot load a data set from {type(data).__name__}; give a file path, a DataFrame or a list of dicts.")

    @classmethod
    def from_file(cls, path: Path) -> Dataset:
        if not path.exists():
            raise InputError(f"{path}: no such file. Check the path.")
        if path.is_dir():
            raise InputError(f"{path}: is a folder; give a .jsonl, .json, .csv or .parquet file.")
        suffix = path.suffix.lower()
        src = str(path)
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
        raw = path.read_bytes()
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
        if suffix in (".csv", ".tsv"):
            return cls._from_csv(text, src, "\t" if suffix == ".tsv" else ",")
        raise InputError(f"{src}: unknown file type '{suffix}'. Use .jsonl, .json, .csv or .parquet.")

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
                rows.append(json.loads(line))
                numbers.append(n)
            except json.JSONDecodeError as exc:
                problems.append(RowProblem(src, n, None, f"not valid JSON ({exc.msg} at column {exc.colno}). Each line must be one JSON object."))
        ds = cls.from_records(rows, src, row_numbers=numbers)
        ds.problems = problems + ds.problems
        ds.problems.sort(key=lambda p: p.row)
        return ds

    @classmethod
    def _from_json(cls, text: str, src: str) -> Dataset:
        try:
            data = json.loads(text)
        except json.JSONDecodeError as exc:
            raise InputError(f"{src}, line {exc.lineno}: not valid JSON ({exc.msg}). If it is one object per line, name it .jsonl.") from exc
        if isinstance(data, Mapping):
            for key in ("samples", "data", "rows", "records"):
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
        try:
            for row in reader:
                line = reader.line_num
                if None in row:
                    problems.append(RowProblem(src, line, None, "more cells than header columns; quote cells that contain the delimiter."))
                    continue
                rows.append({k: (None if v == "" else v) for k, v in row.items()})
                numbers.append(line)
        except csv.Error as exc:
            raise InputError(
                f"{src}, line {line + 1}: the CSV does not parse ({exc}). Look for an unclosed "
                'quote: a cell that holds quotes, commas or line breaks must be quoted, with quotes '
                'inside it doubled ("").'
            ) from exc
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
