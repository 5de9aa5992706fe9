"""The records of the compact store (schema 2): how a judge call, a score's evidence, a sample's
fields and a cache entry are written with their texts kept once (``_texts.py``) and read back
exactly; and the migration that converts a schema-1 store.

A judge call reads back byte for byte: each message's content is the concatenation of its stored
segments, the raw output is the stored text, and the parsed output is the stored JSON, or, when
the store left it out, the raw output parsed as JSON, which the writer checked gives the same
value.
"""

from __future__ import annotations

import json
import re
import sqlite3
from collections.abc import Iterable, Iterator, Sequence
from typing import Any

from ..dataset import strict_json
from ..judge import JudgeCall
from ._texts import PackWriter, TextStore, split_segments

__all__ = [
    "call_row",
    "call_texts",
    "compact_v1",
    "decode_cache_entry",
    "encode_cache_entry",
    "is_step_key",
    "read_calls",
    "step_key_db",
]

_HEX64 = re.compile(r"[0-9a-f]{64}")
_SAMPLES_PER_PACK = 64  # a run's sample fields are packed in groups: a read decompresses one group


def _compact_json(value: Any) -> str:
    return strict_json(value, separators=(",", ":"))


def is_step_key(key: str) -> bool:
    return bool(_HEX64.fullmatch(key))


def step_key_db(key: str) -> str | bytes:
    """A cache key or step as stored: a judge step's hex SHA-256 as its 32 bytes, others as is."""
    return bytes.fromhex(key) if is_step_key(key) else key


def _step_hex(value: Any) -> str:
    return value.hex() if isinstance(value, (bytes, bytearray)) else str(value)


def _parses_to(raw: str | None, parsed: Any) -> bool:
    """Whether ``parsed`` is exactly what parsing ``raw`` as JSON gives (then it need not be
    stored)."""
    if raw is None or parsed is None:
        return False
    try:
        again = json.loads(raw)
    except ValueError:
        return False
    return bool(again == parsed and _compact_json(again) == _compact_json(parsed))


# ---- judge calls ----------------------------------------------------------------------------


def encode_messages(messages: Sequence[tuple[str, str]], w: PackWriter) -> int:
    """The text id of a call's message list: [[role, [text id or literal, ...]], ...]."""
    body = [[role, [w.ref(seg) if is_text else seg for seg, is_text in split_segments(content)]]
            for role, content in messages]
    return w.put(_compact_json(body))


def call_texts(calls: Iterable[JudgeCall]) -> Iterator[str]:
    """The texts :func:`call_row` will look up for these calls (to look them up at once)."""
    for c in calls:
        for m in c.messages:
            for seg, is_text in split_segments(m.content):
                if is_text:
                    yield seg
        if c.raw_output is not None:
            yield c.raw_output


def call_row(run_id: str, sample_id: str | None, call: JudgeCall | dict[str, Any], w: PackWriter) -> tuple[Any, ...]:
    """The ``judge_calls`` row of one call (a JudgeCall, or a schema-1 row as a dict)."""
    if isinstance(call, JudgeCall):
        c: dict[str, Any] = {
            "step": call.step, "attempt": call.attempt, "prompt_id": call.prompt_id,
            "prompt_version": call.prompt_version, "prompt_hash": call.prompt_hash, "judge": call.judge,
            "model": call.model, "kind": call.kind,
            "messages": [(m.role, m.content) for m in call.messages],
            "raw_output": call.raw_output, "parsed": call.parsed, "prompt_tokens": call.prompt_tokens,
            "completion_tokens": call.completion_tokens, "latency_s": call.latency_s,
            "cached": int(call.cached), "error": call.error, "structured": call.structured,
            "started_at": call.started_at,
        }
    else:
        c = call
    raw = c["raw_output"]
    parsed = c["parsed"]
    stored_parsed = None if _parses_to(raw, parsed) else _compact_json(parsed)
    messages = encode_messages(c["messages"], w)  # a text of its own: its id is the call's id
    return (run_id, sample_id or "", messages, step_key_db(c["step"]), c["attempt"], c["prompt_id"],
            c["prompt_version"], c["prompt_hash"], c["judge"], c["model"], c["kind"], messages,
            w.ref(raw) if raw is not None else None, stored_parsed, c["prompt_tokens"], c["completion_tokens"],
            c["latency_s"], int(c["cached"]), c["error"], c["structured"], c["started_at"])


RAW_OUTPUT = 12  # the position of the raw output's text id in a call_row
CALL_COLUMNS = ("run_id, sample_id, id, step, attempt, prompt_id, prompt_version, prompt_hash, judge, model,"
                " kind, messages, raw_output, parsed, prompt_tokens, completion_tokens, latency_s, cached, error,"
                " structured, started_at")
INSERT_CALL = f"INSERT INTO judge_calls ({CALL_COLUMNS}) VALUES ({','.join('?' * 21)})"


# the keys of a call record, in the order of the schema-1 table (as the API always returned them)
_API_ORDER = ("id", "run_id", "sample_id", "step", "attempt", "prompt_id", "prompt_version", "prompt_hash",
              "judge", "model", "kind", "messages", "raw_output", "parsed", "prompt_tokens", "completion_tokens",
              "latency_s", "cached", "error", "structured", "started_at")


def read_calls(texts: TextStore, rows: Iterable[dict[str, Any]]) -> list[dict[str, Any]]:
    """Schema-2 ``judge_calls`` rows (as dicts) to the records the API returns: step in hex,
    messages as [{"role", "content"}], raw output and parsed output as they were."""
    rows = list(rows)
    first = texts.get_many([r["messages"] for r in rows] + [r["raw_output"] for r in rows if r["raw_output"]])
    bodies = {r["messages"]: json.loads(first[r["messages"]]) for r in rows}
    seg_ids = [s for body in bodies.values() for _, segs in body for s in segs if isinstance(s, int)]
    segs = texts.get_many(seg_ids)
    out = []
    for r in rows:
        d = {k: r[k] for k in _API_ORDER}
        d["sample_id"] = r["sample_id"] or None
        d["step"] = _step_hex(r["step"])
        d["messages"] = [{"role": role, "content": "".join(s if isinstance(s, str) else segs[s] for s in parts)}
                         for role, parts in bodies[r["messages"]]]
        d["raw_output"] = first[r["raw_output"]] if r["raw_output"] else None
        if r["parsed"] is None:
            d["parsed"] = json.loads(d["raw_output"]) if d["raw_output"] is not None else None
        else:
            d["parsed"] = json.loads(r["parsed"])
        out.append(d)
    return out


# ---- cache entries --------------------------------------------------------------------------


# A judge step's entry as the Judge writes it; stored as a list in this order (other entries as
# an object), its raw output as a text and its parsed output left out when it is the raw output
# parsed as JSON.
_ENTRY_FIELDS = ("raw_output", "parsed", "prompt_tokens", "completion_tokens", "model", "prompt_id",
                 "prompt_version")


def encode_cache_entry(key: str, entry: dict[str, Any], texts: TextStore, w: PackWriter) -> str:
    """A judge step's entry, compact (see ``_ENTRY_FIELDS``); any other entry as plain JSON."""
    if not is_step_key(key):
        return strict_json(entry)
    raw = entry.get("raw_output")
    if set(entry) == set(_ENTRY_FIELDS) and isinstance(raw, str):
        parsed = 0 if _parses_to(raw, entry["parsed"]) else {"v": entry["parsed"]}
        row = [w.ref(raw), parsed, *(entry[k] for k in _ENTRY_FIELDS[2:])]
        return _compact_json(row)
    return _compact_json({"entry": json.loads(texts.encode_json(entry, w))})


def decode_cache_entry(key: str, stored: str, texts: TextStore) -> dict[str, Any]:
    raw = json.loads(stored)
    if not is_step_key(key):
        return dict(raw)
    if isinstance(raw, list):
        out = dict(zip(_ENTRY_FIELDS, raw))
        out["raw_output"] = texts.get(raw[0])
        out["parsed"] = json.loads(out["raw_output"]) if raw[1] == 0 else raw[1]["v"]
        return out
    entry: dict[str, Any] = texts.decode_json(json.dumps(raw["entry"]))
    return entry


# ---- the migration from schema 1 ------------------------------------------------------------


def compact_v1(conn: sqlite3.Connection) -> None:
    """Copy a schema-1 store into the schema-2 tables (created by 002_compact.sql before this
    runs; the old tables are dropped after): each sample's calls, scores and evidence in one pack,
    a run's sample fields in packs of 64 samples, the cache entries of steps no call holds in
    packs of 64 entries. Raw outputs kept only in the cache (schema 1 stored a call's answer once,
    there) are read back from it."""
    texts = TextStore(conn)
    cache: dict[str, tuple[dict[str, Any], float]] = {
        k: (json.loads(e), t) for k, e, t in conn.execute("SELECT key, entry, created_at FROM cache")}
    done_keys: set[str] = set()
    call_cols = [d[0] for d in conn.execute("SELECT * FROM judge_calls LIMIT 0").description]
    for (run_id,) in conn.execute("SELECT id FROM runs ORDER BY created_at, rowid").fetchall():
        samples = conn.execute("SELECT idx, sample_id, data, finished FROM samples WHERE run_id=? ORDER BY idx",
                               (run_id,)).fetchall()
        for i in range(0, len(samples), _SAMPLES_PER_PACK):
            w = texts.writer()
            rows = [(run_id, idx, sid, texts.encode_json(json.loads(data), w), fin)
                    for idx, sid, data, fin in samples[i:i + _SAMPLES_PER_PACK]]
            w.finish()
            conn.executemany("INSERT INTO samples_v2 (run_id, idx, sample_id, data, finished) VALUES (?,?,?,?,?)", rows)
            texts.remember(w.new)
        groups: dict[str | None, list[dict[str, Any]]] = {}
        for r in conn.execute("SELECT * FROM judge_calls WHERE run_id=? ORDER BY id", (run_id,)):
            d = dict(zip(call_cols, r))
            groups.setdefault(d["sample_id"], []).append(d)
        scored: dict[str, list[tuple[Any, ...]]] = {}
        for r in conn.execute("SELECT sample_id, metric, outcome, value, reason, evidence, created_at FROM scores"
                              " WHERE run_id=?", (run_id,)):
            scored.setdefault(r[0], []).append(r)
        # samples in the order they were saved (their calls' old ids), so that the calls keep
        # their order across the run; samples with no call after them, in data order
        order = sorted(groups, key=lambda k: groups[k][0]["id"])
        for sid in list(dict.fromkeys(order + [s[1] for s in samples] + list(scored))):
            w = texts.writer(dictionary_source=True)
            call_rows = []
            for d in groups.get(sid, []):
                d["messages"] = [(m["role"], m["content"]) for m in json.loads(d["messages"])]
                d["parsed"] = json.loads(d["parsed"]) if d["parsed"] is not None else None
                if d["raw_output"] is None and d["error"] is None and d["step"] in cache:
                    entry = cache[d["step"]][0]  # kept once, in the cache
                    d["raw_output"] = entry.get("raw_output")
                    if d["parsed"] is None:
                        d["parsed"] = entry.get("parsed")
                call_rows.append(call_row(run_id, sid, d, w))
            score_rows = [(run_id, s, m, oc, v, reason, w.put(ev), t) for s, m, oc, v, reason, ev, t in scored.get(sid, [])]
            cache_rows: list[tuple[Any, ...]] = []
            for d in groups.get(sid, []):
                k = d["step"]
                if k in cache and k not in done_keys:
                    done_keys.add(k)
                    entry, t = cache[k]
                    cache_rows.append((step_key_db(k), encode_cache_entry(k, entry, texts, w), t))
            w.finish()
            conn.executemany(INSERT_CALL.replace("judge_calls", "judge_calls_v2"), call_rows)
            conn.executemany("INSERT INTO scores_v2 (run_id, sample_id, metric, outcome, value, reason, evidence,"
                             " created_at) VALUES (?,?,?,?,?,?,?,?)", score_rows)
            conn.executemany("INSERT INTO cache_v2 (key, entry, created_at) VALUES (?,?,?)", cache_rows)
            texts.remember(w.new)
    rest = [k for k in cache if k not in done_keys]
    for i in range(0, len(rest), 64):
        w = texts.writer()
        entries: list[tuple[Any, ...]] = [(step_key_db(k), encode_cache_entry(k, cache[k][0], texts, w), cache[k][1])
                                          for k in rest[i:i + 64]]
        w.finish()
        conn.executemany("INSERT INTO cache_v2 (key, entry, created_at) VALUES (?,?,?)", entries)
        texts.remember(w.new)

