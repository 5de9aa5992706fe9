"""A large JSONL file of flat rows, not held in memory: ``FileSamples`` keeps where each usable
row is in the file and reads its sample again when asked for; ``jsonl_lazy`` reads the file so.
Every read checks that the file is still the one loaded (its size, time and inode, and a hash of
the row's bytes), so that a file changed under a run stops it rather than give changed text.
"""

from __future__ import annotations

import hashlib
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


def _stamp(st: os.stat_result) -> tuple[int, int, int, int]:
    """What tells a file from the same file changed or replaced: device, inode, size, time."""
    return st.st_dev, st.st_ino, st.st_size, st.st_mtime_ns


def _digest(data: bytes) -> int:
    """A row's bytes as one signed 64-bit number (kept in an ``array("q")``)."""
    return int.from_bytes(hashlib.blake2b(data, digest_size=8).digest(), "little", signed=True)


def _changed(source: str) -> InputError:
    return InputError(f"{source}: the file changed while ragsight was reading it; run again on a file that "
                      "is not being written.")


class FileSamples(Sequence[Sample]):
    """The samples of a JSONL file, read again from the file when asked for: the file's
    offset, length, line and a hash of each usable row are kept, not the samples. The file must
    not change while a run reads it: each read checks the file (its size, time and inode, as an
    open handle and by its path) and the row's bytes, and raises InputError naming the file when
    anything changed (an edit in place of the same size, a cut, a line added, a file replaced)."""

    def __init__(self, path: Path, source: str, stamp: tuple[int, int, int, int]) -> None:
        self.path, self.source, self.stamp = path, source, stamp
        self.offsets = array("q")
        self.lengths = array("q")
        self.lines = array("q")
        self.digests = array("q")
        self.renamed: dict[int, str] = {}  # position -> id, where loading changed a row's id

    def __len__(self) -> int:
        return len(self.offsets)

    def _check(self, f: Any) -> None:
        try:
            now = os.stat(self.path)
        except OSError:  # removed or renamed away
            raise _changed(self.source) from None
        if _stamp(os.fstat(f.fileno())) != self.stamp or _stamp(now) != self.stamp:
            raise _changed(self.source)

    def _open(self) -> Any:
        try:
            f = self.path.open("rb")
        except OSError:  # removed or renamed away (for now: renamed back, it is checked as any file)
            raise _changed(self.source) from None
        try:
            self._check(f)
        except BaseException:
            f.close()
            raise
        return f

    def _read(self, f: Any, i: int) -> Sample:
        self._check(f)
        f.seek(self.offsets[i])
        data = f.read(self.lengths[i])
        if len(data) != self.lengths[i] or _digest(data) != self.digests[i]:
            raise _changed(self.source)
        line = self.lines[i]
        raw = row_mapping(loads(data.decode("utf-8-sig" if line == 1 else "utf-8")))
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
        held = FileSamples(path, src, _stamp(st))
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
            held.digests.append(_digest(line))
            if reader.renamed:
                held.renamed[k] = sample.id
        if _stamp(os.fstat(f.fileno())) != held.stamp or offset != st.st_size:
            raise _changed(src)
    ds = reader.finish(dataset(held, reader.problems, src))
    ds.problems.sort(key=lambda p: p.row)
    return ds
