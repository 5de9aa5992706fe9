"""Human labels as calibration reads them: a label value as a number (yes/no words, booleans,
numbers), a labels file (JSONL, JSON or CSV) or rows keyed by sample id (or by a conversation's id
and turn), and the sample labels a store keeps for a run."""

from __future__ import annotations

import csv
import json
import math
import os
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from ..errors import InputError
from ..result import EvaluationResult
from ..store import ANY_METRIC, Label, Store

__all__ = ["load_labels", "split_labels", "store_labels"]

ID_FIELDS = ("id", "sample_id", "qid", "question_id")
_TRUE = {"1", "true", "yes", "y", "correct", "right", "pass", "positive"}
_FALSE = {"0", "false", "no", "n", "wrong", "incorrect", "fail", "negative"}


def _parse_label(value: Any) -> float | None:
    """A label as a number: booleans and yes/no words as 1/0, numbers as they are; ``None``
    for an empty value. Raises ValueError for anything else."""
    if value is None:
        return None
    if isinstance(value, bool):
        return 1.0 if value else 0.0
    if isinstance(value, (int, float)):
        x = float(value)
        if not math.isfinite(x):
            raise ValueError(f"label {value!r} is not a finite number")
        return x
    text = str(value).strip().lower()
    if text == "":
        return None
    if text in _TRUE:
        return 1.0
    if text in _FALSE:
        return 0.0
    try:
        x = float(text)
    except ValueError:
        raise ValueError(f"label {value!r} is neither a number nor yes/no") from None
    if not math.isfinite(x):
        raise ValueError(f"label {value!r} is not a finite number")
    return x


def _rows(path: Path) -> list[Mapping[str, Any]]:
    suffix = path.suffix.lower()
    try:
        if suffix == ".csv":
            with path.open(newline="", encoding="utf-8-sig") as f:
                return list(csv.DictReader(f))
        text = path.read_text(encoding="utf-8")
    except FileNotFoundError:
        raise InputError(f"labels file {path} does not exist") from None
    except OSError as exc:
        raise InputError(f"cannot read labels file {path}: {exc}") from None
    if suffix == ".json":
        try:
            data = json.loads(text)
        except json.JSONDecodeError as exc:
            raise InputError(f"{path}: not valid JSON ({exc})") from None
        if not isinstance(data, list):
            raise InputError(f"{path}: expected a JSON list of objects with 'id' and the label")
        return [r for r in data if isinstance(r, Mapping)]
    rows: list[Mapping[str, Any]] = []
    for lineno, line in enumerate(text.splitlines(), start=1):
        if not line.strip():
            continue
        try:
            row = json.loads(line)
        except json.JSONDecodeError as exc:
            raise InputError(f"{path}, line {lineno}: not valid JSON ({exc.msg})") from None
        if not isinstance(row, Mapping):
            raise InputError(f"{path}, line {lineno}: expected an object with 'id' and the label")
        rows.append(row)
    return rows


def _label_rows(rows: Sequence[Mapping[str, Any]], label_field: str, source: str) -> dict[str, Any]:
    out: dict[str, Any] = {}
    has_field = False
    for n, row in enumerate(rows, start=1):
        key = next((k for k in ID_FIELDS if k in row and row[k] not in (None, "")), None)
        turn_key = _turn_key(row)
        if key is None and turn_key is None:
            raise InputError(
                f"{source}, row {n}: no 'id' field; each label row needs the sample id "
                "(or, for a turn of a conversation, its conversation_id and turn)"
            )
        sid: str = str(row[key]) if key is not None else turn_key  # type: ignore[assignment]
        if sid in out:
            raise InputError(f"{source}: id '{sid}' is labelled twice; ids must be unique")
        has_field = has_field or label_field in row
        out[sid] = row.get(label_field)
    if rows and not has_field:
        fields = sorted({k for r in rows for k in r if k not in ID_FIELDS})
        raise InputError(f"{source} has no field '{label_field}'; its fields: {', '.join(fields)}")
    return out


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
    conversation, its ``conversation_id`` and ``turn`` do) and ``label_field``.
    """
    p = Path(path)
    return _label_rows(_rows(p), label_field, str(p))


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
    latest: dict[tuple[str, str], tuple[str, float]] = {}
    several = set()
    for lb in sample_level:
        at = (lb.sample_id or "", lb.metric)
        if at in latest:
            several.add(at)
            if lb.when < latest[at][0]:
                continue
        latest[at] = (lb.when, lb.value)
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
    return general, own, notes
