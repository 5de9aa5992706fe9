"""Row problems: a row that could not be used, or a field in it that looks wrong, and the
problems of one kind grouped (reported once, with their count and first rows)."""

from __future__ import annotations

import re
from collections.abc import Iterable
from dataclasses import dataclass

__all__ = ["ProblemGroup", "RowProblem", "group_problems"]


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
