"""Human labels kept in the store: a person's (or another tool's) judgement of a sample or of
one claim verdict, for one metric.

A label refers to its sample by the sample's *content* (:func:`sample_key`: question, contexts,
response, reference), not by run or row, so the labels given on one run apply to every run of
the same data. A claim label refers to its claim by the claim's text (:func:`claim_key`).
``LabelsMixin`` holds the Store's label methods.
"""

from __future__ import annotations

import hashlib
import json
import logging
import math
import re
import sqlite3
import unicodedata
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, replace
from datetime import datetime, timezone
from typing import Any

from ..dataset import Sample
from ..errors import InputError, StoreError
from ._scores import ScoresMixin

__all__ = ["ANY_METRIC", "Label", "LabelsMixin", "claim_key", "name_problem", "sample_key", "shown_name"]

log = logging.getLogger(__name__)

ANY_METRIC = "*"
"""The metric of a label that judges the whole sample (it stands for every metric of it)."""


# Characters a reviewer's name may not hold: control characters, line and paragraph separators,
# lone surrogates, and format characters (Unicode category Cf: the bidirectional overrides,
# embeddings, isolates and marks that turn the text after them around, U+202E "right-to-left
# override" among them, and the characters that print nothing, so that two names that look the
# same are not two reviewers). The zero-width joiner and non-joiner are kept: Persian and Indic
# names, and emoji, are written with them.
_NAME_CATEGORIES = frozenset({"Cc", "Cf", "Zl", "Zp", "Cs"})
_JOINERS = frozenset({"\u200c", "\u200d"})


def _hidden(c: str) -> bool:
    return c not in _JOINERS and unicodedata.category(c) in _NAME_CATEGORIES


def name_problem(name: str) -> str | None:
    """Why ``name`` cannot be a reviewer's name: the first character it holds that reorders or
    hides how text is shown (see above), by code and Unicode name; None when it can be."""
    for i, c in enumerate(name):
        if _hidden(c):
            what = unicodedata.name(c, "") or {"Cc": "a control character", "Cs": "a lone surrogate"}.get(
                unicodedata.category(c), "a format character")
            return (f"holds U+{ord(c):04X} ({what}) at character {i + 1}: a name may not hold control or "
                    "format characters, which reorder or hide how the names beside it are shown")
    return None


def shown_name(name: str) -> str:
    """``name`` as it may be shown beside others: every character :func:`name_problem` refuses
    written as ``\\uXXXX`` (a name stored before names were checked)."""
    if not any(_hidden(c) for c in name):
        return name
    return "".join(f"\\u{ord(c):04x}" if _hidden(c) else c for c in name)


@dataclass(frozen=True)
class Label:
    """One label. ``claim`` is None for a sample label (the metric's verdict on the sample), or
    the :func:`claim_key` of the claim whose verdict it judges. ``metric`` is a metric's key,
    or :data:`ANY_METRIC` for a label of the whole sample. ``value``: 1 right / 0 wrong for
    a claim label; for a sample label, 1/0 or a grade. ``field`` names the kind of label
    ("human", "expert"...), ``who`` the person; ``when`` (ISO 8601 UTC) is filled on write when
    empty. ``run_id``/``sample_id`` say where the label was given; labels read for a run name
    that run's sample instead (see :meth:`ragsight.store.Store.labels`)."""

    sample_key: str
    metric: str
    value: float
    field: str = "human"
    claim: str | None = None
    who: str = ""
    when: str = ""
    run_id: str | None = None
    sample_id: str | None = None
    note: str | None = None


def _text(value: Any) -> Any:
    if isinstance(value, str):
        return value.strip()
    if isinstance(value, (tuple, list)):
        return [_text(v) for v in value]
    return value


def sample_key(sample: Sample, *, memo: dict[int, tuple[Any, bytes]] | None = None) -> str:
    """The content key of a sample: a hash of its question, contexts, response and reference
    (outer white space ignored), and for a turn of a conversation its history, never of its id,
    row or run. Two runs of the same data give their samples the same keys, so labels follow the
    content.

    The hash is of ``json.dumps(basis, sort_keys=True, ensure_ascii=False)``, fed to it piece by
    piece: ``memo`` (kept by the caller across the samples of a run) holds each message's JSON,
    so a conversation's messages are written once, not once per turn that has them."""
    basis: dict[str, Any] = {name: _text(getattr(sample, name))
                             for name in ("question", "contexts", "response", "reference")}
    history = getattr(sample, "history", None)
    if not history:
        digest = hashlib.sha256(json.dumps(basis, sort_keys=True, ensure_ascii=False).encode())
        return "s-" + digest.hexdigest()[:20]
    # a turn of a conversation: the same question after other turns is another sample. Its
    # "history" sorts between "contexts" and "question".
    memo = {} if memo is None else memo
    head = json.dumps({"contexts": basis.pop("contexts")}, ensure_ascii=False)[:-1]
    tail = json.dumps(basis, sort_keys=True, ensure_ascii=False)[1:]
    digest = hashlib.sha256(head.encode())
    digest.update(b', "history": [')
    digest.update(b", ".join(_message_json(t, memo) for t in history))
    digest.update(b"], ")
    digest.update(tail.encode())
    return "s-" + digest.hexdigest()[:20]


def _message_json(turn: Any, memo: dict[int, tuple[Any, bytes]]) -> bytes:
    got = memo.get(id(turn))
    if got is None or got[0] is not turn:
        got = (turn, json.dumps(turn.to_dict(), sort_keys=True, ensure_ascii=False).encode())
        memo[id(turn)] = got  # the message kept beside its JSON: its id is not reused meanwhile
    return got[1]


_SPACE = re.compile(r"\s+")


def claim_key(text: str) -> str:
    """The key of a claim's text (white space runs collapsed, case kept)."""
    digest = hashlib.sha256(_SPACE.sub(" ", text).strip().encode())
    return "c-" + digest.hexdigest()[:16]


def now_iso() -> str:
    return datetime.now(timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ")


def _checked(label: Label, n: int) -> Label:
    if not isinstance(label, Label):
        raise InputError(f"label {n}: expected a Label, got {type(label).__name__}")
    where = f"label {n} ({label.metric or '?'} of sample {label.sample_id or label.sample_key or '?'})"
    for name in ("sample_key", "metric", "field"):
        value = getattr(label, name)
        if not isinstance(value, str) or not value.strip():
            raise InputError(f"{where}: '{name}' is empty")
    if isinstance(label.value, bool) or not isinstance(label.value, (int, float)) or not math.isfinite(label.value):
        raise InputError(f"{where}: value {label.value!r} is not a finite number")
    if label.claim is not None and not label.claim:
        raise InputError(f"{where}: 'claim' is an empty key (None means a sample label)")
    why = name_problem(label.who) if isinstance(label.who, str) else "is not a text"
    if why is not None:
        raise InputError(f"{where}: 'who' {why}")
    return label if label.when else replace(label, when=now_iso())


_UPSERT = (
    "INSERT INTO labels (sample_key, metric, claim, field, who, value, made_at, run_id, sample_id, note)"
    " VALUES (?,?,?,?,?,?,?,?,?,?) ON CONFLICT (sample_key, metric, claim, field, who) DO UPDATE SET"
    " value=excluded.value, made_at=excluded.made_at, run_id=excluded.run_id,"
    " sample_id=excluded.sample_id, note=excluded.note"
)


def add_labels(conn: sqlite3.Connection, labels: Iterable[Label]) -> int:
    rows = []
    for n, label in enumerate(labels, start=1):
        lb = _checked(label, n)
        rows.append((lb.sample_key, lb.metric, lb.claim or "", lb.field, lb.who, float(lb.value), lb.when,
                     lb.run_id, lb.sample_id, lb.note))
    conn.executemany(_UPSERT, rows)
    return len(rows)


_COLUMNS = "l.sample_key, l.metric, l.value, l.field, l.claim, l.who, l.made_at, l.run_id, l.sample_id, l.note"


def _label(row: Sequence[Any]) -> Label:
    key, metric, value, field, claim, who, when, run_id, sample_id, note = row
    return Label(key, metric, float(value), field, claim or None, who, when, run_id, sample_id, note)


def read_labels(conn: sqlite3.Connection, run_id: str | None, metric: str | None, field: str | None,
                key: str | None) -> list[Label]:
    where, args = [], []
    for column, value in (("l.metric", metric), ("l.field", field), ("l.sample_key", key)):
        if value is not None:
            where.append(f"{column} = ?")
            args.append(value)
    if run_id is None:
        q = f"SELECT {_COLUMNS} FROM labels l"
        order = " ORDER BY l.sample_key, l.metric, l.claim, l.field, l.who"
    else:
        q = (f"SELECT {_COLUMNS.replace('l.run_id, l.sample_id', 'k.run_id, k.sample_id')} FROM labels l"
             " JOIN sample_keys k ON k.sample_key = l.sample_key JOIN samples p"
             " ON p.run_id = k.run_id AND p.sample_id = k.sample_id")
        where.insert(0, "k.run_id = ?")
        args.insert(0, run_id)
        order = " ORDER BY p.idx, l.metric, l.claim, l.field, l.who"
    if where:
        q += " WHERE " + " AND ".join(where)
    return [_label(r) for r in conn.execute(q + order, args).fetchall()]


def delete_label(conn: sqlite3.Connection, key: str, metric: str, claim: str | None, field: str, who: str) -> bool:
    cur = conn.execute("DELETE FROM labels WHERE sample_key=? AND metric=? AND claim=? AND field=? AND who=?",
                       (key, metric, claim or "", field, who))
    return bool(cur.rowcount)


class LabelsMixin(ScoresMixin):
    """The Store's labels."""

    def sample_keys(self, run_id: str) -> dict[str, str]:
        """sample id -> content key (:func:`~ragsight.store.sample_key`) of the run's samples, in
        sample order. A run written before labels existed has its keys computed and kept now."""
        rows = self.conn.execute("SELECT p.sample_id, k.sample_key FROM samples p LEFT JOIN sample_keys k"
                                 " ON k.run_id = p.run_id AND k.sample_id = p.sample_id WHERE p.run_id=?"
                                 " ORDER BY p.idx", (run_id,)).fetchall()
        if all(key is not None for _, key in rows):
            return {sid: key for sid, key in rows}
        messages: dict[int, Any] = {}
        keys = {s.id: sample_key(s, memo=messages) for s in self.samples(run_id)}
        try:
            with self._tx():
                self.conn.executemany("INSERT OR REPLACE INTO sample_keys (run_id, sample_id, sample_key)"
                                      " VALUES (?,?,?)", [(run_id, sid, key) for sid, key in keys.items()])
        except StoreError as exc:  # a read-only store: the keys are computed again next time
            log.info("%s: sample keys of run %s not kept: %s", self.path, run_id, exc)
        return keys

    def add_labels(self, labels: Iterable[Label]) -> int:
        """Add or replace labels (one per sample key, metric, claim, field and who), in one
        transaction; returns how many were written. A bad label (empty key, metric or field, a
        value that is not a finite number) raises InputError and writes none."""
        with self._tx():
            return add_labels(self.conn, labels)

    def labels(self, run_id: str | None = None, *, metric: str | None = None, field: str | None = None,
               sample_key: str | None = None) -> list[Label]:
        """The stored labels, optionally of one metric, field or sample key. With ``run_id``: the
        labels whose sample key is that of a sample of the run, in sample order, each naming that
        run and that sample in ``run_id`` and ``sample_id`` (a label applies to every sample of the
        run with the same content)."""
        if run_id is not None and self._keys_missing(run_id):
            self.sample_keys(run_id)  # a run older than the labels gets its keys
        return read_labels(self.conn, run_id, metric, field, sample_key)

    def _keys_missing(self, run_id: str) -> bool:
        """Whether a sample of the run has no content key yet (counted in SQLite: reading the
        keys of 20,000 samples into Python for this took 0.17 s a call)."""
        return bool(self.conn.execute(
            "SELECT EXISTS (SELECT 1 FROM samples p LEFT JOIN sample_keys k ON k.run_id = p.run_id"
            " AND k.sample_id = p.sample_id WHERE p.run_id=? AND k.sample_key IS NULL)", (run_id,)).fetchone()[0])

    def delete_label(self, label: Label | str, metric: str | None = None, *, claim: str | None = None,
                     field: str = "human", who: str = "") -> bool:
        """Delete one label, given as a :class:`Label` (its value is not compared) or by its key
        (sample key, metric, claim, field, who). True when there was one."""
        if isinstance(label, Label):
            key, metric, claim, field, who = label.sample_key, label.metric, label.claim, label.field, label.who
        else:
            key = label
        if metric is None:
            raise TypeError("delete_label needs the metric when the label is given by its sample key")
        with self._tx():
            return delete_label(self.conn, key, metric, claim, field, who)
