"""A large JSONL file of flat rows, not held in memory: ``FileSamples`` keeps where each usable
row is in the file and reads its sample again when asked for; ``jsonl_lazy`` reads the file so.
"""

from __future__ import annotations

import json
import os
from array import array
from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

from ..errors import InputError
from ._conversations import conversation_shape
from ._problems import RowProblem
from ._reading import RowReader, loads, row_sample
from ._rows import is_span
from ._safety import deepest_key
from ._sample import Sample
from ._shapes import FieldError, row_mapping

if TYPE_CHECKING:
    from ._dataset import Dataset

__all__ = ["FileSamples", "jsonl_lazy"]


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
        raw = row_mapping(loads(f.read(self.lengths[i]).decode("utf-8-sig" if line == 1 else "utf-8")))
        assert raw is not None
        return row_sample(raw, line, self.renamed.get(i))[0]

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


def jsonl_lazy(path: Path, src: str, dataset: type[Dataset]) -> Dataset | None:
    """A large JSONL file of flat rows, read without holding its samples; None when a row is
    a conversation or the file is a Phoenix span export (read whole, as before). ``dataset``:
    the Dataset class, which the data set is made of."""
    f = path.open("rb")
    with f:
        st = os.fstat(f.fileno())
        held = FileSamples(path, src, (st.st_size, st.st_mtime_ns))
        reader = RowReader(src)
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
                obj = loads(text)
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
    ds = reader.finish(dataset(held, reader.problems, src))
    ds.problems.sort(key=lambda p: p.row)
    return ds
