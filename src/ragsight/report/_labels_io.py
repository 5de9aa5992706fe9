"""Label files in and out of the store (``ragsight labels import|export``).

A label file is what people and other tools write: JSONL, JSON (a list of objects) or CSV, one
row per label, with the sample's id (``id``, ``sample_id``, ``qid`` or ``question_id``), its
content key (``sample_key``, as exported) or its ``question``, and the label in a column named
after its field (``--label correct``: the column ``correct``). Optional columns: ``metric`` (else
the label is one of the whole sample, for every metric: :data:`ANY_METRIC`), ``claim`` (a claim's
text or key: a claim label), ``who``, ``when``, ``note``. An exported file has ``field`` and
``value`` columns instead, and reads back with ``--label FIELD``.
"""

from __future__ import annotations

import dataclasses
import os
import re
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from ..dataset import atomic_write, check_writable_target, strict_json
from ..errors import InputError
from ..store import ANY_METRIC, Label, Store, claim_key, name_problem, shown_name
from ._label_file import parse_label_value, parse_when, read_label_file
from ._labels_read import ID_FIELDS

__all__ = ["LabelImport", "export_labels", "import_labels", "label_rows"]

_CLAIM_KEY = re.compile(r"^c-[0-9a-f]{16}$")


@dataclass(frozen=True)
class LabelImport:
    """What :func:`import_labels` did: ``written`` labels, and the rows it left out with why
    (``(row, reason)``; a row is its line in a JSONL or CSV file, its position in a JSON list): no
    such sample, a metric the run (or the sample's runs) lacks, an unreadable or empty label, an
    unreadable date, another field. ``duplicates``: rows that gave a label another row of the file
    gives again (same sample, metric, claim and person); the last of each is kept, so ``written``
    counts each label once."""

    source: str
    field: str
    rows: int
    written: int
    skipped: tuple[tuple[int, str], ...]
    duplicates: int = 0

    def to_dict(self) -> dict[str, Any]:
        return dataclasses.asdict(self)


def _text(value: Any) -> str | None:
    if value is None:
        return None
    text = str(value).strip()
    return text or None


def _targets(store: Store, run_id: str | None) -> tuple[dict[str, str], dict[str, list[str]], dict[str, set[str]]]:
    """Sample id -> key and question -> ids of the run (empty without a run), and every sample key
    a label may name -> the metrics of its runs: the run's, or without a run every run's in the
    store."""
    by_id: dict[str, str] = {}
    by_question: dict[str, list[str]] = {}
    metrics: dict[str, set[str]] = {}
    if run_id is not None:
        keys = store.sample_keys(run_id)
        for sample in store.samples(run_id):
            by_id[sample.id] = keys[sample.id]
            if sample.question:
                by_question.setdefault(sample.question.strip(), []).append(sample.id)
        runs = [run_id]
    else:
        runs = [info.id for info in store.runs()]
    for rid in runs:
        known = set(store.run(rid).metric_keys)
        for key in store.sample_keys(rid).values():
            metrics.setdefault(key, set()).update(known)
    return by_id, by_question, metrics


def import_labels(store: Store, path: str | os.PathLike[str], field: str, run: str | None = None, *,
                  metric: str | None = None, who: str | None = None) -> LabelImport:
    """Read a label file into the store (see the module's docstring for its columns).

    ``run`` (an id, prefix or 'last') is the run whose samples the rows name by id or question;
    it may be left out only when every row carries a ``sample_key``. ``metric`` and ``who`` are
    used for rows without those columns. Rows that name no sample of the run (or, by
    ``sample_key``, no sample in the store), a metric its runs do not have, an empty or
    unreadable label (a claim label must be 1/0), a date that is not ISO 8601, or a ``who`` that
    holds control or format characters (a right-to-left override) are left out and
    listed; the rest are written in one transaction, a label given twice once (the last row).
    Raises InputError when the file cannot be read (naming the line), no row has the label
    column, or nothing is left."""
    why = name_problem(who) if who else None
    if why is not None:
        raise InputError(f"--who {why}")
    p = Path(path)
    source = str(p)
    numbered = read_label_file(p)
    rows = [row for _, row in numbered]
    if not rows:
        raise InputError(f"{source} holds no label rows")
    if not any(field in r or r.get("field") == field for r in rows):
        fields = sorted({str(k) for r in rows for k in r} | {str(r["field"]) for r in rows if r.get("field")})
        raise InputError(f"{source} has no label '{field}' (no column '{field}', no row with field "
                         f"'{field}'); its columns and fields: {', '.join(fields)}")
    run_id = store.resolve_run(run) if run is not None else None
    by_id, by_question, metrics_of = _targets(store, run_id)
    where = f"run {run_id}" if run_id is not None else "the store"
    labels: dict[tuple[str, str, str | None, str], Label] = {}
    duplicates = 0
    skipped: list[tuple[int, str]] = []
    for n, row in numbered:
        if field in row:
            raw = row[field]
        elif row.get("field") == field:
            raw = row.get("value")
        else:
            skipped.append((n, f"a label of field '{row.get('field')}', not '{field}'"))
            continue
        claim = _text(row.get("claim"))
        try:
            value = parse_label_value(raw, claim=claim is not None)
        except ValueError as exc:
            skipped.append((n, f"field '{field}': {exc}"))
            continue
        if value is None:
            skipped.append((n, f"field '{field}' is empty"))
            continue
        try:
            when = parse_when(row.get("when"))
        except ValueError as exc:
            skipped.append((n, str(exc)))
            continue
        sid = next((str(row[k]) for k in ID_FIELDS if _text(row.get(k))), None)
        key = _text(row.get("sample_key"))
        if key is None and run_id is None:
            raise InputError(f"{source}, row {n}: no 'sample_key'; give --run RUN so that rows are "
                             "matched to its samples by id or question")
        if key is not None:
            if key not in metrics_of:
                skipped.append((n, f"no sample with the key '{key[:40]}' in {where}"))
                continue
        elif sid is not None:
            key = by_id.get(sid)
            if key is None:
                skipped.append((n, f"no sample with id '{sid}' in run {run_id}"))
                continue
        else:
            question = _text(row.get("question"))
            if question is None:
                skipped.append((n, "no 'id' and no 'question' to find the sample by"))
                continue
            found = by_question.get(question, [])
            if len(found) != 1:
                skipped.append((n, f"{'no' if not found else len(found)} sample(s) of run {run_id} "
                                   f"with the question {question[:60]!r}"))
                continue
            sid, key = found[0], by_id[found[0]]
        name = _text(row.get("metric")) or metric or ANY_METRIC
        if name != ANY_METRIC and name not in metrics_of[key]:
            skipped.append((n, f"metric '{name[:60]}' is not one of {where}'s metrics for this sample "
                               f"({', '.join(sorted(metrics_of[key])) or 'none'})"))
            continue
        if claim is not None and not _CLAIM_KEY.match(claim):
            claim = claim_key(claim)
        label = Label(
            sample_key=key, metric=name, value=value, field=field, claim=claim,
            who=_text(row.get("who")) or who or "", when=when or "",
            run_id=_text(row.get("run_id")) or run_id, sample_id=sid, note=_text(row.get("note")))
        why = name_problem(label.who)
        if why is not None:
            skipped.append((n, f"'who' {why}"))
            continue
        identity = (key, name, claim, label.who)
        if identity in labels:
            duplicates += 1
            del labels[identity]  # the last row counts, and is written in its place in the file
        labels[identity] = label
    if not labels:
        shown = "; ".join(f"row {n}: {why}" for n, why in skipped[:3])
        raise InputError(f"{source}: none of its {len(rows)} rows gave a label ({shown})")
    written = store.add_labels(labels.values())
    return LabelImport(source, field, len(rows), written, tuple(skipped), duplicates)


def label_rows(store: Store, run: str | None = None) -> list[dict[str, Any]]:
    """The store's labels (a run's, when given) as export rows: the columns of a label file."""
    run_id = store.resolve_run(run) if run is not None else None
    questions: dict[str, str | None] = {}
    if run_id is not None:
        questions = {s.id: s.question for s in store.samples(run_id)}
    out = []
    for lb in store.labels(run_id):
        row: dict[str, Any] = {"sample_key": lb.sample_key, "sample_id": lb.sample_id, "run_id": lb.run_id}
        if run_id is not None:
            row["question"] = questions.get(lb.sample_id or "")
        row.update({"metric": lb.metric, "claim": lb.claim, "field": lb.field, "value": lb.value,
                    "who": shown_name(lb.who), "when": lb.when, "note": lb.note})
        out.append(row)
    return out


def export_labels(store: Store, out: str | os.PathLike[str] | None, run: str | None = None) -> int:
    """Write the store's labels (a run's, when given) as JSONL to ``out`` (standard output when
    None) and return how many; the file reads back with ``ragsight labels import FILE --label
    FIELD``."""
    if out is not None:
        try:
            check_writable_target(out, "labels file")
        except OSError as exc:
            raise InputError(str(exc)) from None
    rows = label_rows(store, run)
    text = "".join(strict_json(r, ensure_ascii=False) + "\n" for r in rows)
    if out is None:
        sys.stdout.write(text)
    else:
        with atomic_write(out) as f:
            f.write(text)
    return len(rows)

