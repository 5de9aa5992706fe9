"""A large run's samples and scores read from its store file when asked: the run's connection
and page cache (:class:`StoredRun`), and the sequence and mapping a result holds in place of its
list of samples and dict of scores (:class:`StoredSamples`, :class:`StoredScores`).
"""

from __future__ import annotations

from collections import OrderedDict
from collections.abc import ItemsView, Iterator, Mapping, Sequence, ValuesView
from pathlib import Path
from typing import Any, overload

from .._score import Score
from ..dataset import Sample
from ..errors import StoreError
from ..store import Store

__all__ = ["StoredRun", "StoredSamples", "StoredScores"]


class StoredRun:
    """A finished run's samples and scores, read from its store file on demand: a connection
    of its own, opened at the first read; a few pages of samples kept (:data:`_PAGES`). The
    first read of a sample by index takes the run's sample ids (about 60 bytes a sample), so
    that a page is read by its keys wherever it lies."""

    _PAGE = 256
    _PAGES = 4

    def __init__(self, path: str, run_id: str) -> None:
        self.path = path
        self.run_id = run_id
        self._store: Store | None = None
        self._pages: OrderedDict[int, list[Sample]] = OrderedDict()
        self._ids: list[str] | None = None
        n, _ = self.store.sample_counts(run_id).get(run_id, (0, 0))
        self.n_samples = n
        self.n_scored = int(self.store.conn.execute(
            "SELECT COUNT(DISTINCT sample_id) FROM scores WHERE run_id=?", (run_id,)).fetchone()[0])

    @property
    def store(self) -> Store:
        if self._store is None:
            if not Path(self.path).is_file():  # Store() would make a new, empty one
                raise StoreError(f"the store {self.path} that holds run {self.run_id} is gone; the result "
                                 "reads its samples and scores from there")
            self._store = Store(self.path, create=False)
        return self._store

    def close(self) -> None:
        if self._store is not None:
            self._store.close()
            self._store = None

    def __getstate__(self) -> dict[str, Any]:
        # pickled (a result sent to another process): the path and counts, not the connection
        return {**self.__dict__, "_store": None, "_pages": OrderedDict(), "_ids": None}

    def sample_at(self, i: int) -> Sample:
        page = i // self._PAGE
        got = self._pages.get(page)
        if got is None:
            if self._ids is None:
                self._ids = self.store.sample_ids(self.run_id)
            start = page * self._PAGE
            got = self.store.samples_by_id(self.run_id, self._ids[start:start + self._PAGE])
            self._pages[page] = got
            while len(self._pages) > self._PAGES:
                self._pages.popitem(last=False)
        else:
            self._pages.move_to_end(page)
        return got[i % self._PAGE]


class StoredSamples(Sequence[Sample]):
    """A stored run's samples in data order, decoded when read (a sequence, like the list a
    small run's result holds; equal to a list or tuple of the same samples)."""

    def __init__(self, run: StoredRun) -> None:
        self._run = run

    def __len__(self) -> int:
        return self._run.n_samples

    @overload
    def __getitem__(self, i: int) -> Sample: ...
    @overload
    def __getitem__(self, i: slice) -> list[Sample]: ...
    def __getitem__(self, i: int | slice) -> Sample | list[Sample]:
        if isinstance(i, slice):
            return [self[j] for j in range(*i.indices(len(self)))]
        n = len(self)
        if not isinstance(i, int) or isinstance(i, bool):
            raise TypeError(f"sample indices must be integers or slices, not {type(i).__name__}")
        if not -n <= i < n:
            raise IndexError("sample index out of range")
        return self._run.sample_at(i % n)

    def __iter__(self) -> Iterator[Sample]:
        return self._run.store.iter_samples(self._run.run_id)

    def __eq__(self, other: object) -> bool:
        if isinstance(other, (StoredSamples, list, tuple)):
            return len(self) == len(other) and all(a == b for a, b in zip(self, other))
        return NotImplemented

    __hash__ = None  # type: ignore[assignment]

    def __repr__(self) -> str:
        return f"<{len(self)} samples of run {self._run.run_id}, read from {self._run.path}>"


class _StoredItems(ItemsView[str, dict[str, Score]]):
    _mapping: StoredScores

    def __iter__(self) -> Iterator[tuple[str, dict[str, Score]]]:
        return self._mapping._run.store.iter_scores(self._mapping._run.run_id)


class _StoredValues(ValuesView[dict[str, Score]]):
    _mapping: StoredScores

    def __iter__(self) -> Iterator[dict[str, Score]]:
        return (per for _, per in self._mapping._run.store.iter_scores(self._mapping._run.run_id))


class StoredScores(Mapping[str, dict[str, Score]]):
    """A stored run's scores, sample id -> metric key -> Score, read when asked: the same keys,
    order and values as the dict a small run's result holds (each read is a new dict)."""

    def __init__(self, run: StoredRun) -> None:
        self._run = run

    def __getitem__(self, sample_id: str) -> dict[str, Score]:
        got = self._run.store.scores(self._run.run_id, sample_id).get(sample_id) if isinstance(sample_id, str) \
            else None
        if not got:
            raise KeyError(sample_id)
        return got

    def __contains__(self, sample_id: object) -> bool:
        return isinstance(sample_id, str) and self._run.store.has_scores(self._run.run_id, sample_id)

    def __iter__(self) -> Iterator[str]:
        return self._run.store.scored_sample_ids(self._run.run_id)

    def __len__(self) -> int:
        return self._run.n_scored

    def items(self) -> _StoredItems:
        return _StoredItems(self)

    def values(self) -> _StoredValues:
        return _StoredValues(self)

    def __repr__(self) -> str:
        return f"<scores of {len(self)} samples of run {self._run.run_id}, read from {self._run.path}>"
