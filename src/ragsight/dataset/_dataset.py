"""Data sets: the ``Dataset`` type, loading and validation.

A data set can come from JSONL, JSON, CSV, Parquet, a pandas DataFrame, a list of dicts or of
objects (a ragas ``EvaluationDataset``, a Hugging Face ``datasets.Dataset``, DeepEval test
cases), all duck-typed. The field names and value shapes of other tools load unchanged
(``_shapes.py`` holds the rules; ``docs/data.md`` says them for users). No field is required: a
missing field only makes the metrics that need it ``skipped``. A row that cannot be used is
reported with its file, row and field, and the other rows still load; problems of one kind are
reported once, with their count and first rows.

Rows become samples in ``_reading.py``; a large JSONL file is read row by row (``_lazy.py``).
"""

from __future__ import annotations

import codecs
import csv
import io
import json
import os
import stat
from collections.abc import Iterable, Iterator, Mapping, Sequence
from pathlib import Path
from typing import Any

from ..errors import InputError, MissingExtraError
from ._conversation import Conversation
from ._conversations import conversation_shape, read_conversation
from ._lazy import FileSamples, jsonl_lazy
from ._problems import RowProblem
from ._reading import RowReader, loads
from ._rows import merge_phoenix_spans
from ._safety import deepest_key
from ._sample import Sample
from ._shapes import FieldError, row_mapping

__all__ = ["Dataset"]

# A JSON or CSV file is read whole into memory: refuse beyond this size (a JSONL file this large
# is read row by row from the file, FileSamples).
MAX_TEXT_FILE_BYTES = 2 * 1024**3

# A JSONL file of this size or more is not held in memory: its rows are read from the file
# each time the samples are gone through (a 100,000-sample file held as samples took 416 MB).
LAZY_FILE_BYTES = 8 * 1024**2


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
        reader = RowReader(source)
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
                    and (lazy := jsonl_lazy(path, src, Dataset)) is not None):
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
                rows.append(loads(line))
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
            data = loads(text)
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
