"""The store's texts: every distinct large text kept once, content-addressed and compressed.

A judge call's record is mostly text that other records repeat: a sample's contexts go into the
prompts of four or five steps, the prompt templates into every call, a claim list into the
verdict prompt after the extraction that produced it. The store keeps each such text once:

* ``texts``: one row per distinct text: the first 16 bytes of its SHA-256 (``hash``, unique) and
  where it lies (``pack``, ``start``, ``size`` in bytes of UTF-8). A record's own text that no
  other record repeats (a score's evidence, a call's list of message segments) has no hash: it is
  stored in its record's pack without being looked up by content;
* ``packs``: the texts first written by one transaction (a sample's save, a cache entry), one
  after the other, compressed together with zlib, with the store's preset dictionary (the first
  sample's texts) once it has one: the texts of one sample share words with each other (the
  claims of an answer, its verdicts, the evidence that quotes both) far more than with the rest
  of the store. A text written ahead of its sample (a cache entry's raw output, stored as soon
  as its step succeeds) sits alone in a *loose* pack until its sample is saved, which moves it
  into the sample's pack.

Records refer to texts by id (an integer). A message is stored as a list of segments, each either
a text id or a short literal: its content split into lines, each line of :data:`TEXT_MIN`
characters or more (its line break left out) a text of its own (a context, an instruction, a
claim), the rest (tags, blank lines, line breaks) kept inline. Joining the segments gives the
content back byte for byte.

JSON values (a sample's fields, a cache entry) are stored with their long strings replaced by
``{"$t": id}``; a dict of the value that has a key ``$t`` or ``$d`` is wrapped as ``{"$d": dict}``,
so the encoding is unambiguous for any JSON value.
"""

from __future__ import annotations

import hashlib
import json
import re
import sqlite3
import zlib
from collections import OrderedDict
from collections.abc import Iterable, Iterator, Sequence
from typing import Any

from ..dataset import strict_json
from ..errors import StoreError

__all__ = ["TEXT_MIN", "PackWriter", "TextStore", "join_segments", "long_strings", "split_segments", "text_hash"]

TEXT_MIN = 32  # characters: lines and strings this long or longer are texts of their own
_LINES = re.compile(r"(?<=\n)")
_PACK_CACHE = 64  # decompressed packs kept in memory per store
# Text hashes known to be stored, kept in memory per store: about 200 bytes each. A miss costs
# part of one batched query (PackWriter.prefetch). At 200,000 a resumed process grew by some
# 12 MB per 1,000 samples until it held 40 MB of hashes (a new run filled it when the run was
# created, so it looked flat); 16,384 hold the texts of the samples being saved.
_KNOWN_CACHE = 16_384
_DICT_MIN = 4096  # bytes: the first pack this large becomes the store's compression dictionary


def text_hash(text: str) -> bytes:
    return hashlib.sha256(text.encode("utf-8")).digest()[:16]


def split_segments(content: str) -> list[tuple[str, bool]]:
    """``content`` as ``(piece, is_text)`` pairs whose pieces concatenate to ``content``: each
    line of :data:`TEXT_MIN` characters or more (without its line break, so that it is the same
    text as the sample's field it came from) is a text of its own; everything between such lines
    (short lines, line breaks) is one literal."""
    out: list[tuple[str, bool]] = []
    literal = ""
    for line in _LINES.split(content):
        body = line[:-1] if line.endswith("\n") else line
        if len(body) >= TEXT_MIN:
            if literal:
                out.append((literal, False))
            out.append((body, True))
            literal = line[len(body):]
        else:
            literal += line
    if literal:
        out.append((literal, False))
    return out


def _rowid(cur: sqlite3.Cursor) -> int:
    assert cur.lastrowid is not None
    return int(cur.lastrowid)


def join_segments(segments: Sequence[int | str], texts: dict[int, str]) -> str:
    return "".join(s if isinstance(s, str) else texts[s] for s in segments)


class WrittenPacks:
    """What finished writers of one transaction leave for after its commit: the newest text ids
    (as many as the store remembers) and the loose packs they emptied, not their bytes. A run
    of 100,000 samples is created in one transaction by 1,563 writers; keeping them whole until
    the commit held every text of the data set (253 MB)."""

    def __init__(self, store: TextStore) -> None:
        self.store = store
        self.new: OrderedDict[bytes, int] = OrderedDict()
        self.moved: list[int] = []

    def add(self, writer: PackWriter) -> None:
        self.new.update(writer.new)
        while len(self.new) > _KNOWN_CACHE:
            self.new.popitem(last=False)
        self.moved.extend(writer.moved)

    def committed(self) -> None:
        self.store.remember(self.new)
        for pack in self.moved:
            self.store.forget_pack(pack)


class PackWriter:
    """The texts one transaction adds: :meth:`ref` gives a text's id, storing it when new;
    :meth:`finish` writes the pack and its texts' rows (at once, so that the pack's row is
    written whole and never grows in place). Only used inside the store's write transaction,
    one writer at a time."""

    def __init__(self, store: TextStore, loose: bool = False, dictionary_source: bool = False) -> None:
        self.store = store
        self.conn = store.conn
        self.loose = loose
        self.dictionary_source = dictionary_source and not loose
        self.pack: int | None = None
        self.parts: list[bytes] = []
        self.size = 0
        self.rows: list[tuple[int, bytes | None, int, int]] = []  # new texts: id, hash, start, size
        self.moves: list[tuple[int, int, int]] = []  # adopted texts: id, start, size
        self.sources: dict[int, int] = {}  # the loose packs they came from: bytes moved
        self.emptied: list[int] = []  # ... whose bytes have all moved
        self.new: dict[bytes, int] = {}  # hash -> id of the texts this writer stored
        self.moved: list[int] = []  # loose packs emptied into this one
        self.absent: set[bytes] = set()  # hashes looked up and not stored (this transaction)
        self._next_text = 0

    def prefetch(self, texts: Iterable[str]) -> None:
        """Look the texts about to be referenced up in one query (instead of one each): the
        stored ones become known, the others are known to be absent for this transaction."""
        wanted = {text_hash(t) for t in texts if len(t) >= TEXT_MIN}
        wanted = {h for h in wanted if h not in self.new and h not in self.store._known}
        found: dict[bytes, int] = {}
        hashes = sorted(wanted)
        for i in range(0, len(hashes), 500):
            chunk = hashes[i:i + 500]
            found.update((bytes(h), int(tid)) for h, tid in self.conn.execute(
                f"SELECT hash, id FROM texts WHERE hash IN ({','.join('?' * len(chunk))})", chunk))
        self.store.remember(found)
        self.absent |= wanted - set(found)

    def ref(self, text: str) -> int:
        h = text_hash(text)
        tid = self.new.get(h)
        if tid is None and h not in self.absent:
            tid = self.store.known_id(h)
        if tid is not None:
            return tid
        tid = self._append(h, text.encode("utf-8"))
        self.new[h] = tid
        return tid

    def put(self, text: str) -> int:
        """Store ``text`` as a text of its own, not looked up by content: for a record's own text
        that no other record repeats (a score's evidence, a call's message list), which saves the
        hash and its index entry."""
        return self._append(None, text.encode("utf-8"))

    def _open(self) -> None:
        if self.pack is None:
            # ids chosen here, rows written by finish(): the transaction holds the write lock
            self.pack = int(self.conn.execute(
                "SELECT MAX(COALESCE((SELECT seq FROM sqlite_sequence WHERE name='packs'), 0),"
                " COALESCE((SELECT MAX(id) FROM packs), 0)) + 1").fetchone()[0])
            self._next_text = int(self.conn.execute("SELECT COALESCE(MAX(id), 0) + 1 FROM texts").fetchone()[0])

    def _append(self, h: bytes | None, data: bytes) -> int:
        self._open()
        tid = self._next_text
        self._next_text += 1
        self.rows.append((tid, h, self.size, len(data)))
        self.parts.append(data)
        self.size += len(data)
        return tid

    def adopt(self, ids: Iterable[int]) -> None:
        """Move the texts among ``ids`` that sit in loose packs into this writer's pack (a
        sample's raw outputs, stored when their steps succeeded); the emptied loose packs are
        deleted by :meth:`finish`."""
        wanted = sorted(set(ids))
        if not wanted or self.loose:
            return
        rows = []
        for i in range(0, len(wanted), 500):
            chunk = wanted[i:i + 500]
            rows += self.conn.execute(
                "SELECT t.id, t.pack, t.start, t.size FROM texts t JOIN packs p ON p.id = t.pack"
                f" WHERE p.loose = 1 AND t.id IN ({','.join('?' * len(chunk))})", chunk).fetchall()
        for tid, pack, start, size in rows:
            self._open()
            whole = self.store.pack_bytes(pack)
            data = whole[start:start + size]
            self.moves.append((tid, self.size, len(data)))
            self.parts.append(data)
            self.size += len(data)
            # a pack's texts lie side by side and fill it: once their bytes have all moved, the
            # pack is empty (counted here, not looked up: texts has no index on pack)
            self.sources[pack] = self.sources.get(pack, 0) + len(data)
            if self.sources[pack] >= len(whole):
                self.emptied.append(pack)

    def finish(self) -> None:
        if self.pack is None:
            return
        raw = b"".join(self.parts)
        zdict = self.store.dictionary()
        if zdict is None:
            data, did = zlib.compress(raw, 9), None
        else:
            co = zlib.compressobj(9, zdict=zdict[1])
            data, did = co.compress(raw) + co.flush(), zdict[0]
        self.conn.execute("INSERT INTO packs (id, loose, dict, data) VALUES (?,?,?,?)",
                          (self.pack, int(self.loose), did, data))
        self.conn.executemany("INSERT INTO texts (id, hash, pack, start, size) VALUES (?,?,?,?,?)",
                              [(tid, h, self.pack, st, sz) for tid, h, st, sz in self.rows])
        self.conn.executemany("UPDATE texts SET pack=?, start=?, size=? WHERE id=?",
                              [(self.pack, st, sz, tid) for tid, st, sz in self.moves])
        for pack in self.emptied:
            self.conn.execute("DELETE FROM packs WHERE id=?", (pack,))
            self.moved.append(pack)
        if zdict is None and self.dictionary_source and len(raw) >= _DICT_MIN:
            self.store.make_dictionary(self.pack)

    def committed(self) -> None:
        """After the transaction committed: the new texts are known to the store."""
        self.store.remember(self.new)
        for pack in self.moved:
            self.store.forget_pack(pack)


class TextStore:
    """Reading and writing the texts of one store connection."""

    def __init__(self, conn: sqlite3.Connection) -> None:
        self.conn = conn
        self._known: OrderedDict[bytes, int] = OrderedDict()
        self._packs: OrderedDict[int, bytes] = OrderedDict()
        self._dicts: dict[int, bytes] = {}
        self._dict: tuple[int, bytes] | None = None

    # ---- the compression dictionary ---------------------------------------------------------

    def dictionary(self) -> tuple[int, bytes] | None:
        """The store's zlib dictionary (id, bytes), once it has one: the last 32 kB of the texts
        of the first sample saved with :data:`_DICT_MIN` bytes or more (its pack is the
        dictionary; packs never change). The texts of later samples (their prompts' templates,
        their outputs' and evidence's JSON keys, words of the same domain) then compress by a
        third more than alone."""
        if self._dict is None:
            row = self.conn.execute("SELECT id FROM dictionaries ORDER BY id LIMIT 1").fetchone()
            if row is not None:
                self._dict = (int(row[0]), self._dictionary(int(row[0])))
        return self._dict

    def make_dictionary(self, pack: int) -> None:
        """Inside a write transaction with no dictionary yet: make ``pack`` the store's."""
        if self.conn.execute("SELECT 1 FROM dictionaries LIMIT 1").fetchone() is None:
            self.conn.execute("INSERT INTO dictionaries (pack) VALUES (?)", (pack,))
        # used from the next transaction on (this one may still roll back)

    # ---- writing --------------------------------------------------------------------------

    def writer(self, loose: bool = False, dictionary_source: bool = False) -> PackWriter:
        """A writer for one transaction's texts. ``loose``: a text written ahead of its record;
        ``dictionary_source``: a sample's pack, which may become the store's dictionary."""
        return PackWriter(self, loose, dictionary_source)

    def known_id(self, h: bytes) -> int | None:
        tid = self._known.get(h)
        if tid is not None:
            self._known.move_to_end(h)
            return tid
        row = self.conn.execute("SELECT id FROM texts WHERE hash=?", (h,)).fetchone()
        return int(row[0]) if row is not None else None

    def remember(self, new: dict[bytes, int]) -> None:
        self._known.update(new)
        while len(self._known) > _KNOWN_CACHE:
            self._known.popitem(last=False)

    def forget_pack(self, pack: int) -> None:
        self._packs.pop(pack, None)

    # ---- reading --------------------------------------------------------------------------

    def pack_bytes(self, pack: int) -> bytes:
        data = self._packs.get(pack)
        if data is not None:
            self._packs.move_to_end(pack)
            return data
        row = self.conn.execute("SELECT data, dict FROM packs WHERE id=?", (pack,)).fetchone()
        if row is None:
            raise self.damaged(f"text pack {pack} is missing")
        try:
            if not row[0]:
                data = b""
            elif row[1] is None:
                data = zlib.decompress(row[0])
            else:
                do = zlib.decompressobj(zdict=self._dictionary(int(row[1])))
                data = do.decompress(row[0]) + do.flush()
                if not do.eof:
                    raise zlib.error("the compressed data ends early")
        except (zlib.error, TypeError, ValueError) as exc:
            raise self.damaged(f"text pack {pack} cannot be decompressed ({exc})") from None
        if data:  # an empty pack is one being written: never cached
            self._packs[pack] = data
            while len(self._packs) > _PACK_CACHE:
                self._packs.popitem(last=False)
        return data

    def _dictionary(self, did: int) -> bytes:
        if did not in self._dicts:
            row = self.conn.execute("SELECT pack FROM dictionaries WHERE id=?", (did,)).fetchone()
            if row is None:
                raise self.damaged(f"compression dictionary {did} is missing")
            self._dicts[did] = self.pack_bytes(int(row[0]))[-32768:]
        return self._dicts[did]

    def get_many(self, ids: Iterable[int]) -> dict[int, str]:
        wanted = sorted({i for i in ids if isinstance(i, int)})
        out: dict[int, str] = {}
        for i in range(0, len(wanted), 500):
            chunk = wanted[i:i + 500]
            rows = self.conn.execute(
                f"SELECT id, pack, start, size FROM texts WHERE id IN ({','.join('?' * len(chunk))})", chunk).fetchall()
            for tid, pack, start, size in sorted(rows, key=lambda r: r[1]):
                data = self.pack_bytes(pack)
                if start + size > len(data):
                    raise self.damaged(f"text {tid} lies beyond the end of its pack {pack}")
                try:
                    out[int(tid)] = data[start:start + size].decode("utf-8")
                except UnicodeDecodeError:
                    raise self.damaged(f"text {tid} in pack {pack} is not UTF-8") from None
        missing = [i for i in wanted if i not in out]
        if missing:
            raise self.damaged(f"text(s) {missing[:5]} are missing")
        return out

    def damaged(self, what: str) -> StoreError:
        """The error for a store whose texts cannot be read: what, where, and what to do."""
        try:
            path = next((r[2] for r in self.conn.execute("PRAGMA database_list") if r[1] == "main"), "")
        except sqlite3.Error:
            path = ""
        where = f"the store {path}" if path else "the store"
        fix = (f" Copy what can be read with 'sqlite3 {path} .recover | sqlite3 recovered.db', or use "
               "another --store." if path else "")
        return StoreError(f"{where} is damaged: {what}.{fix}")

    def get(self, tid: int) -> str:
        return self.get_many([tid])[tid]

    # ---- JSON values with their long strings as texts ---------------------------------------

    def encode_json(self, value: Any, writer: PackWriter) -> str:
        return strict_json(self._enc(value, writer), separators=(",", ":"))

    def _enc(self, v: Any, w: PackWriter) -> Any:
        if isinstance(v, str):
            return {"$t": w.ref(v)} if len(v) >= TEXT_MIN else v
        if isinstance(v, (list, tuple)):
            return [self._enc(x, w) for x in v]
        if isinstance(v, dict):
            d = {k: self._enc(x, w) for k, x in v.items()}
            return {"$d": d} if ("$t" in v or "$d" in v) else d
        return v

    def decode_json(self, text: str) -> Any:
        raw = json.loads(text)
        ids: list[int] = []
        _collect(raw, ids)
        texts = self.get_many(ids) if ids else {}
        return _dec(raw, texts)


def long_strings(v: Any) -> Iterator[str]:
    """The strings of a JSON value that :meth:`TextStore.encode_json` stores as texts."""
    if isinstance(v, str):
        if len(v) >= TEXT_MIN:
            yield v
    elif isinstance(v, (list, tuple)):
        for x in v:
            yield from long_strings(x)
    elif isinstance(v, dict):
        for x in v.values():
            yield from long_strings(x)


def _collect(v: Any, ids: list[int]) -> None:
    if isinstance(v, list):
        for x in v:
            _collect(x, ids)
    elif isinstance(v, dict):
        if len(v) == 1 and "$t" in v:
            ids.append(v["$t"])
        elif len(v) == 1 and "$d" in v:
            for x in v["$d"].values():
                _collect(x, ids)
        else:
            for x in v.values():
                _collect(x, ids)


def _dec(v: Any, texts: dict[int, str]) -> Any:
    if isinstance(v, list):
        return [_dec(x, texts) for x in v]
    if isinstance(v, dict):
        if len(v) == 1 and "$t" in v:
            return texts[v["$t"]]
        if len(v) == 1 and "$d" in v:
            return {k: _dec(x, texts) for k, x in v["$d"].items()}
        return {k: _dec(x, texts) for k, x in v.items()}
    return v
