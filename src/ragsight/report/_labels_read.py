"""Human labels as calibration reads them: a label value as a number, a labels file (JSONL, JSON
or CSV) or rows keyed by sample id (or by a conversation's id and turn), and the sample labels a
store keeps for a run.

A labels file is read by the strict reader ``ragsight labels import`` uses (:mod:`._label_file`):
bytes that are not UTF-8, JSON nested too deeply or a CSV that does not parse are an error naming
the line; a label is read as documented and nothing else (``1_0`` or ``0x1`` is not a number here),
and an unreadable one is an error naming its line and field. A row with a ``claim`` is a claim
label (1 or 0): it is checked, and left out, since calibration compares scores of whole samples.
"""

from __future__ import annotations

import os
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from ..errors import InputError
from ..result import EvaluationResult
from ..store import ANY_METRIC, Label, Store
from ._label_file import parse_label_value, parse_when, read_label_file

__all__ = ["load_labels", "split_labels", "store_labels"]

ID_FIELDS = ("id", "sample_id", "qid", "question_id")
_SHOWN = 3  # unreadable labels named in the error


def _parse_label(value: Any) -> float | None:
    """A label as a number (:func:`parse_label_value`): booleans and yes/no words as 1/0, plain
    decimal numbers as they are; ``None`` for an empty value. Raises ValueError for anything else."""
    return parse_label_value(value)


def _is_claim(row: Mapping[str, Any]) -> bool:
    claim = row.get("claim")
    return claim is not None and str(claim).strip() != ""


def _label_rows(rows: Sequence[Mapping[str, Any]], label_field: str, source: str,
                lines: Sequence[int] | None = None) -> dict[str, Any]:
    """{sample id (or turn key): raw label} of label rows; ``lines``: where each row is in its
    file (its line, or its position in a JSON list), for the errors."""
    out: dict[str, Any] = {}
    first: dict[str, int] = {}
    has_field = False
    for n, row in enumerate(rows, start=1):
        at = lines[n - 1] if lines is not None else n
        key = next((k for k in ID_FIELDS if k in row and row[k] not in (None, "")), None)
        turn_key = _turn_key(row)
        if key is None and turn_key is None:
            raise InputError(
                f"{source}, {_where(source, at, lines is not None)}: no 'id' field; each label row needs the sample id "
                "(or, for a turn of a conversation, its conversation_id and turn)"
            )
        sid: str = str(row[key]) if key is not None else turn_key  # type: ignore[assignment]
        if sid in out:
            twice = f" ({_where(source, first[sid], True)} and {at})" if lines is not None else ""
            raise InputError(f"{source}: id '{sid}' is labelled twice{twice}; ids must be unique")
        has_field = has_field or label_field in row
        out[sid] = row.get(label_field)
        first[sid] = at
    if rows and not has_field:
        fields = sorted({k for r in rows for k in r if k not in ID_FIELDS})
        raise InputError(f"{source} has no field '{label_field}'; its fields: {', '.join(fields)}")
    return out


def _where(source: str, at: int, in_file: bool) -> str:
    """How a row is named: its line in a file (its item in a JSON list), else its position."""
    if not in_file:
        return f"row {at}"
    return f"item {at}" if source.lower().endswith(".json") else f"line {at}"


class TurnLabel(str):
    """A label's key that names a turn of a conversation (``conversation_id`` and ``turn``)
    rather than a sample id; :func:`calibrate` finds the turn's sample in the run."""

    conversation_id: str
    turn: str


def _turn_key(row: Mapping[str, Any]) -> TurnLabel | None:
    cid, turn = row.get("conversation_id"), row.get("turn")
    if cid in (None, "") or turn in (None, ""):
        return None
    try:
        t = str(int(float(turn)))  # a CSV cell '1', a JSON 1 or 1.0
    except (TypeError, ValueError):
        return None
    key = TurnLabel(f"conversation {cid} turn {t}")
    key.conversation_id, key.turn = str(cid), t
    return key


def _turn_ids(raw: Mapping[str, Any], result: EvaluationResult) -> dict[str, Any]:
    """Labels keyed by a turn (conversation id and turn) re-keyed by the turn's sample id in
    the run; a turn the run does not have keeps its key (and pairs with nothing)."""
    turns = {(s.conversation_id, str(s.turn)): s.id for s in result.samples
             if s.conversation_id is not None and s.turn is not None}
    out: dict[str, Any] = {}
    for key, value in raw.items():
        if isinstance(key, TurnLabel):
            key = turns.get((key.conversation_id, key.turn), str(key))
        out[key] = value
    return out


def load_labels(path: str | os.PathLike[str], label_field: str) -> dict[str, Any]:
    """Read a labels file (.jsonl, .json or .csv) into {sample id: raw label value}.

    Each row needs an ``id`` (or ``sample_id``, ``qid``, ``question_id``; for a turn of a
    conversation, its ``conversation_id`` and ``turn`` do) and ``label_field``. The file is read
    strictly (see the module docstring): raises InputError naming the line (and the field) for
    a file or a label that cannot be read. Rows with a ``claim`` are claim labels: checked (1 or
    0), then left out.
    """
    p = Path(path)
    source = str(p)
    numbered = read_label_file(p)
    bad: list[str] = []
    for at, row in numbered:
        if label_field in row:
            try:
                parse_label_value(row[label_field], claim=_is_claim(row))
            except ValueError as exc:
                bad.append(f"{source}, {_where(source, at, True)}, field '{label_field}': {exc}")
    if bad:
        more = f" (and {len(bad) - _SHOWN} more)" if len(bad) > _SHOWN else ""
        raise InputError("; ".join(bad[:_SHOWN]) + more + ". Write a label as yes/no, true/false, "
                         "pass/fail, 1/0 or a plain decimal number (a claim label as 1 or 0), or leave it "
                         "empty for no label.")
    samples = [(at, row) for at, row in numbered if not _is_claim(row)]
    if numbered and not samples:
        raise InputError(f"{source} holds claim labels only (every row has a 'claim'); calibrate compares "
                         "scores with labels of whole samples: give rows without a claim, or import the "
                         "claim labels with 'ragsight labels import'.")
    return _label_rows([row for _, row in samples], label_field, source, [at for at, _ in samples])


def store_labels(store: Store, run_id: str, label_field: str
                 ) -> tuple[dict[str, float], dict[str, dict[str, float]], list[str]]:
    """The store's sample labels of field ``label_field`` for a run's samples: ({sample id:
    label of the whole sample}, {metric: {sample id: the metric's own label}}, notes). Claim
    labels are not read here. Where several people labelled the same sample for the same metric,
    the latest label counts (and a note says how often). Raises InputError when there is none."""
    found = store.labels(run_id, field=label_field)
    if not any(lb.claim is None for lb in found):
        fields = sorted({lb.field for lb in store.labels(run_id)})
        have = (f"its samples have labels {', '.join(repr(f) for f in fields)}" if fields
                else "its samples have no labels")
        raise InputError(
            f"no sample labels '{label_field}' in {store.path} for run {run_id} ({have}"
            f"{'; ' + str(len(found)) + ' claim labels' if found else ''}). Import a file with "
            f"'ragsight labels import FILE --run {run_id} --label {label_field}', or pass --labels FILE."
        )
    return split_labels(found, label_field)


def split_labels(labels: Sequence[Label], label_field: str
                 ) -> tuple[dict[str, float], dict[str, dict[str, float]], list[str]]:
    """Labels of one run (``Store.labels(run_id)``) as :func:`store_labels` gives them: the
    sample labels of ``label_field`` by sample id, the whole sample's and each metric's own."""
    sample_level = [lb for lb in labels if lb.claim is None and lb.field == label_field]
    latest: dict[tuple[str, str], tuple[tuple[bool, str], float]] = {}
    several = set()
    undated: dict[tuple[str, str], int] = {}
    for lb in sample_level:
        when = _when(lb.when)
        order = (when is not None, when or "")  # a date that cannot be read is never the latest
        at = (lb.sample_id or "", lb.metric)
        undated[at] = undated.get(at, 0) + (when is None)
        if at in latest:
            several.add(at)
            if order < latest[at][0]:
                continue
        latest[at] = (order, lb.value)
    general: dict[str, float] = {}
    own: dict[str, dict[str, float]] = {}
    for (sid, metric), (_, value) in latest.items():
        if metric == ANY_METRIC:
            general[sid] = value
        else:
            own.setdefault(metric, {})[sid] = value
    notes = [f"labels from the store ({len(sample_level)} of field '{label_field}')"]
    if several:
        notes.append(f"{len(several)} sample label(s) were given by several people: the latest counts")
    n_undated = sum(undated[at] for at in several)
    if n_undated:
        notes.append(f"{n_undated} label(s) have a date that is not ISO 8601 (or is in the future, as "
                     "'ragsight labels import' refuses): they count only where no other label of the "
                     "same sample has a date")
    return general, own, notes


def _when(value: str) -> str | None:
    """A label's date in UTC as the store writes it (:func:`parse_when`), or None when it is not
    one the import would take."""
    try:
        return parse_when(value)
    except ValueError:
        return None
