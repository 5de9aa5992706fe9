-- ragsight store, schema 2: the compact layout (store/_texts.py, docs/scale.md "The store").
-- Every distinct large text (a prompt line, a raw output, a sample's field, a score's evidence)
-- is kept once in `texts`, compressed in `packs`, and records refer to texts by id.
CREATE TABLE dictionaries (               -- zlib preset dictionaries, never changed once written
    id INTEGER PRIMARY KEY,
    pack INTEGER NOT NULL                  -- the last 32 kB of this pack's texts (the first sample's)
);
CREATE TABLE packs (
    id INTEGER PRIMARY KEY AUTOINCREMENT,  -- never reused: readers cache packs by id
    loose INTEGER NOT NULL DEFAULT 0,      -- 1: a text stored ahead of its sample (a cache entry)
    dict INTEGER,                          -- the dictionary it was compressed with, if any
    data BLOB NOT NULL                     -- zlib of the pack's texts, one after the other
);
CREATE TABLE texts (
    id INTEGER PRIMARY KEY,
    hash BLOB UNIQUE,                      -- first 16 bytes of the SHA-256 of the UTF-8 text,
                                           -- NULL for a record's own text (its evidence...)
    pack INTEGER NOT NULL,
    start INTEGER NOT NULL,                -- byte offset in the pack's uncompressed data
    size INTEGER NOT NULL                  -- bytes of UTF-8
);
CREATE TABLE samples_v2 (
    run_id TEXT NOT NULL,
    idx INTEGER NOT NULL,
    sample_id TEXT NOT NULL,
    data TEXT NOT NULL,                    -- JSON, long strings as {"$t": text id}
    finished INTEGER NOT NULL DEFAULT 0,
    PRIMARY KEY (run_id, sample_id)
) WITHOUT ROWID;
CREATE TABLE scores_v2 (
    run_id TEXT NOT NULL,
    sample_id TEXT NOT NULL,
    metric TEXT NOT NULL,
    outcome TEXT NOT NULL,
    value REAL,
    reason TEXT NOT NULL,
    evidence INTEGER NOT NULL,             -- text id of the evidence JSON
    created_at REAL NOT NULL,
    PRIMARY KEY (run_id, sample_id, metric)
) WITHOUT ROWID;
CREATE TABLE judge_calls_v2 (
    run_id TEXT NOT NULL,
    sample_id TEXT NOT NULL,               -- '' for a call of no sample
    id INTEGER NOT NULL,                   -- the text id of its message list: grows call by call
    step BLOB NOT NULL,                    -- the step's SHA-256, 32 bytes (hex in the API)
    attempt INTEGER NOT NULL,
    prompt_id TEXT NOT NULL,
    prompt_version TEXT NOT NULL,
    prompt_hash TEXT NOT NULL,
    judge TEXT NOT NULL,
    model TEXT NOT NULL,
    kind TEXT NOT NULL,
    messages INTEGER NOT NULL,             -- text id of [[role, [text id or literal, ...]], ...]
    raw_output INTEGER,                    -- text id
    parsed TEXT,                           -- JSON, NULL when it is the raw output parsed as JSON
    prompt_tokens INTEGER NOT NULL,
    completion_tokens INTEGER NOT NULL,
    latency_s REAL NOT NULL,
    cached INTEGER NOT NULL,
    error TEXT,
    structured TEXT,
    started_at REAL NOT NULL,
    PRIMARY KEY (run_id, sample_id, id)
) WITHOUT ROWID;
CREATE TABLE cache_v2 (
    key NOT NULL PRIMARY KEY,              -- a judge step: its SHA-256 in 32 bytes, others: text
    entry TEXT NOT NULL,                   -- JSON, a judge step's with its texts by id
    created_at REAL NOT NULL
) WITHOUT ROWID;
-- python: compact
DROP TABLE judge_calls;
DROP TABLE scores;
DROP TABLE samples;
DROP TABLE cache;
ALTER TABLE judge_calls_v2 RENAME TO judge_calls;
ALTER TABLE scores_v2 RENAME TO scores;
ALTER TABLE samples_v2 RENAME TO samples;
ALTER TABLE cache_v2 RENAME TO cache;
